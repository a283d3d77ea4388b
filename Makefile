# gpuonboard: `make demo` (first thing to run), `make test` (what CI runs).
VENV ?= .venv
PY := $(VENV)/bin/python
INVOKE := $(VENV)/bin/invoke
SIM := .gpuonboard/sim

.PHONY: demo test lint bootstrap clean

bootstrap:
	@bash scripts/bootstrap.sh

# The simulated box has GPUs but no container engine of its own: the demo skips `container`.
demo: bootstrap
	@$(INVOKE) sim.down --base $(SIM) >/dev/null 2>&1 || true
	@$(INVOKE) sim.up --name demo-a100 --profile a100-8x-nvlink --base $(SIM)
	@status=0; $(INVOKE) provision --host demo-a100 --inventory $(SIM)/inventory --skip container || status=$$?; \
	  $(INVOKE) sim.down --base $(SIM); exit $$status

lint: bootstrap
	$(VENV)/bin/ruff check src tests tasks.py bench
	$(VENV)/bin/ruff format --check src tests tasks.py bench
	$(VENV)/bin/mypy

test: lint
	@BOOTSTRAP_TESTS=1 bash scripts/bootstrap.sh
	$(VENV)/bin/pytest -q -p no:cacheprovider tests

clean:
	@$(INVOKE) sim.down --base $(SIM) >/dev/null 2>&1 || true
	rm -rf .gpuonboard reports
