# gpuonboard: `make demo` (first thing to run), `make test` (what CI runs).
VENV ?= .venv
# test processes (pytest-xdist): 2 cut the suite's wall time by ~40 % on a 2-CPU machine, where most
# of a test's time is spent waiting on sshd, rsync, podman and timeouts, not computing; 3 overlap
# more of those waits: test_dataset.py with tests/unit/facts took 17, 39 and 4 % less wall time
# than with 2, in turns, for the same CPU-s (docs/benchmarks.md, "Test-suite time")
TEST_WORKERS ?= 3
# xdist's default scheduling (--dist load) hands each worker a first chunk of a quarter of its share
# of the tests in collection order: 846 of ~10,150, so the first worker got all ~520 tests of
# tests/integration (collected first) and ran them one after another while the others took the
# unit tests, then waited idle (docs/benchmarks.md, "Test-suite time (2026-12-06, round 26)").
# At most 2 tests a step: the slow integration tests are shared among the workers as each frees up.
TEST_SCHED ?= --maxschedchunk 2
PY := $(VENV)/bin/python
INVOKE := $(VENV)/bin/invoke
SIM := .gpuonboard/sim

.PHONY: demo test lint bootstrap clean

bootstrap:
	@bash scripts/bootstrap.sh

# Where podman, runc, docker-registry and busybox are installed, sim.up gives the simulated box a
# container runtime (podman as docker, the NVIDIA toolkit simulated, a local registry mirror) and
# the demo runs the container step; elsewhere sim.up says in one line why, and the demo skips it.
# It replaces only its own server (demo-a100): other simulated servers keep running and listed.
demo: bootstrap
	@$(INVOKE) sim.down --name demo-a100 --base $(SIM) >/dev/null 2>&1 || true
	@$(INVOKE) sim.up --name demo-a100 --profile a100-8x-nvlink --base $(SIM) --no-hint
	@skip="--skip container"; [ -e $(SIM)/hosts/demo-a100/docker-info.json ] && skip=; \
	  status=0; $(INVOKE) provision --host demo-a100 --inventory $(SIM)/inventory $$skip || status=$$?; \
	  $(INVOKE) sim.down --name demo-a100 --base $(SIM); exit $$status

lint:
	@BOOTSTRAP_LINT=1 bash scripts/bootstrap.sh
	$(VENV)/bin/ruff check src tests tasks.py bench
	$(VENV)/bin/ruff format --check src tests tasks.py bench
	$(VENV)/bin/mypy
	# the scripts run on hosts (src/gpuonboard/sh/; the rendered autostop script: tests/unit/sh/test_sh.py)
	shellcheck src/gpuonboard/sh/*.sh
	# the layering rules of docs/architecture.md: contracts in pyproject.toml [tool.importlinter]
	$(VENV)/bin/lint-imports
	# the docs site: strict, so a broken link or anchor fails (site in build/, git-ignored)
	$(VENV)/bin/mkdocs build --strict --quiet --site-dir build/site

# bytecode is written even where the shell sets PYTHONDONTWRITEBYTECODE=1: else each test worker
# rewrites the asserts of all ~430 test modules again at every run (collection: 13 -> 6 CPU-s a
# worker) and each CLI a test starts compiles gpuonboard again (__pycache__/ is git-ignored)
test: lint
	@BOOTSTRAP_TESTS=1 bash scripts/bootstrap.sh
	PYTHONDONTWRITEBYTECODE= $(VENV)/bin/pytest -q -p no:cacheprovider -n $(TEST_WORKERS) $(TEST_SCHED) tests

clean:
	@$(INVOKE) sim.down --base $(SIM) >/dev/null 2>&1 || true
	rm -rf .gpuonboard reports
