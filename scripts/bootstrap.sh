#!/usr/bin/env bash
# Bootstrap for `make bootstrap` / `make demo` / `make lint` / `make test`: system packages (only
# where missing, only as root with apt), then a virtualenv with the package and its test extra.
# Idempotent and quiet. A user install needs only the OpenSSH client and rsync (any user, Linux
# or macOS); BOOTSTRAP_LINT=1 (`make lint`) adds shellcheck, BOOTSTRAP_TESTS=1 (`make test`)
# adds what the test suite's real parts need.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}

need_pkgs=()
command -v ssh >/dev/null 2>&1 || need_pkgs+=(openssh-client)
command -v ssh-keygen >/dev/null 2>&1 || need_pkgs+=(openssh-client)
command -v rsync >/dev/null 2>&1 || need_pkgs+=(rsync)
if [ "${BOOTSTRAP_LINT:-0}" = 1 ] || [ "${BOOTSTRAP_TESTS:-0}" = 1 ]; then
  # `make lint` checks the scripts run on hosts (src/gpuonboard/sh/*.sh)
  command -v shellcheck >/dev/null 2>&1 || need_pkgs+=(shellcheck)
fi
if [ "${BOOTSTRAP_TESTS:-0}" = 1 ]; then
  # what the test suite's real parts need: test hosts (sshd), containers, a registry, cron, age, chromium
  [ -x /usr/sbin/sshd ] || need_pkgs+=(openssh-server)
  command -v podman >/dev/null 2>&1 || need_pkgs+=(podman podman-docker)
  command -v runc >/dev/null 2>&1 || need_pkgs+=(runc)
  [ -x /usr/bin/docker-registry ] || need_pkgs+=(docker-registry)
  [ -x /bin/busybox ] || need_pkgs+=(busybox-static)
  command -v crontab >/dev/null 2>&1 || need_pkgs+=(cron)
  command -v age >/dev/null 2>&1 || need_pkgs+=(age)
  # the network step's iperf3 test between two test hosts (tests/integration/test_prove_network.py)
  command -v iperf3 >/dev/null 2>&1 || need_pkgs+=(iperf3)
  # the HTML report's headless-browser test (tests/unit/report/test_render_browser.py), and CJK
  # fonts so the --lang zh screenshot is legible
  command -v chromium >/dev/null 2>&1 || need_pkgs+=(chromium)
  [ -d /usr/share/fonts/opentype/noto ] || need_pkgs+=(fonts-noto-cjk)
fi
can_apt=0
if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then can_apt=1; fi
if [ ${#need_pkgs[@]} -gt 0 ]; then
  if [ "$can_apt" = 1 ]; then
    echo "bootstrap: installing ${need_pkgs[*]} (apt)" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    apt-get install -y -qq --no-install-recommends "${need_pkgs[@]}" >/dev/null
  else
    echo "bootstrap: please install: ${need_pkgs[*]} (with your system's package manager, e.g. apt as root)" >&2
    exit 1
  fi
fi
if [ ! -x /usr/sbin/sshd ] && [ "${BOOTSTRAP_TESTS:-0}" != 1 ]; then
  # (only the simulator, `make demo`, runs a local sshd: the install goes on without it)
  if [ "$can_apt" = 1 ]; then
    echo "bootstrap: installing openssh-server (apt; the simulator's test host)" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends openssh-server >/dev/null
  else
    echo "bootstrap: the simulator (make demo) needs OpenSSH's server /usr/sbin/sshd (openssh-server); the rest works without it" >&2
  fi
fi

# pip, its output shown (failures included); only its `WARNING: Location` noise left out
pip_install() {
  local out status=0
  out=$("$VENV/bin/pip" install -q --disable-pip-version-check "$@" 2>&1) || status=$?
  if [ -n "$out" ]; then
    printf '%s\n' "$out" | grep -v '^WARNING: Location' >&2 || true
  fi
  return "$status"
}

if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
fi
stamp="$VENV/.gpuonboard-installed"
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  if ! pip_install -e '.[test]'; then
    echo "bootstrap: pip install -e '.[test]' failed (its output is above); fix that, then rerun make bootstrap" >&2
    exit 1
  fi
  "$VENV/bin/python" -c 'import gpuonboard, fabric, pytest, xdist, hypothesis, mkdocs, importlinter, jsonschema, lxml, prometheus_client, ansible'
  touch "$stamp"
fi
if [ "${BOOTSTRAP_TESTS:-0}" = 1 ] && ! "$VENV/bin/python" -c 'import torch' >/dev/null 2>&1; then
  # the prove tests run the bundled smoke training / all-reduce for real on the CPU. torch is
  # NOT a package dependency; the exact pin takes the local CPU wheel (a bare `torch` or a
  # range would pull a multi-GB CUDA build). Failure is not fatal: those tests then skip.
  echo "bootstrap: installing torch==2.13.0 (test only)" >&2
  pip_install torch==2.13.0 || true
  "$VENV/bin/python" -c 'import torch' >/dev/null 2>&1 \
    || echo "bootstrap: torch==2.13.0 could not be installed; the prove tests will skip" >&2
fi
