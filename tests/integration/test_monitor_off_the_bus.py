"""`invoke monitor` on a host whose GPU falls off the bus mid-watch, over a real sshd test host.

Its `nvidia-smi -l` keeps running and prints, every interval, the line nvidia-smi prints for
such a GPU instead of its values (users' real message: "Unable to determine the device handle
for GPU0000:0B:00.0: Unknown Error", github.com/NVIDIA/open-gpu-kernel-modules/issues/387).
Before, any bytes kept the host "live": the table went on showing the GPU's last healthy values
for ever, with no alert. The sample before it is the real idle H100 `--query-gpu` capture."""

from __future__ import annotations

import json
import re
import shlex
import time
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import Project, host_entry
from test_monitor import IDLE_CSV, assert_nothing_left, line

from gpuonboard import api
from gpuonboard.api import monitor
from gpuonboard.testing import TestHost, TestHostPool, add_executable
from gpuonboard.testing.gpu_samples import csv_sample

NAME = "monOffBus"
OFF_BUS = "Unable to determine the device handle for GPU0000:0B:00.0: Unknown Error"


# nvidia-smi's real message when the driver is gone, with escape sequences put in (an OSC 52
# clipboard write, a screen clear): the host's words are not trusted on the user's terminal
HOSTILE = (
    "\x1b[2J\x1b[HNVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."
    "\x1b]52;c;cm0gLXJmIH4K\x07"
)


def replay_script() -> str:
    """Pure sh: with -l/-lms, one real sample, then the off-the-bus line every 0.1 s (for 60 s);
    without, HOSTILE on stderr and exit 9."""
    query = f"--query-gpu={','.join(monitor.MONITOR_FIELDS)} --format=csv,noheader,nounits"
    return f"""#!/bin/sh
# nvidia-smi replay: a GPU that falls off the bus after one sample (test fixture)
q={shlex.quote(query)}
case "$*" in
  "$q -l "*|"$q -lms "*) ;;
  "$q") printf '%s\n' {shlex.quote(HOSTILE)} >&2; exit 9 ;;
  *) printf 'nvidia-smi replay: no capture for: %s\\n' "$*" >&2; exit 2 ;;
esac
printf '%s\\n' {shlex.quote(line(csv_sample(IDLE_CSV)))}
n=0
while [ $n -lt 600 ]; do
  sleep 0.1
  printf '%s\\n' {shlex.quote(OFF_BUS)}
  n=$((n + 1))
done
"""


@pytest.fixture(scope="module")
def host(pool: TestHostPool) -> Iterator[TestHost]:
    (h,) = pool.add_many([(NAME, None)])
    add_executable(h.bin_dir, "nvidia-smi", replay_script())
    yield h
    h.stop()


def test_a_gpu_that_fell_off_the_bus_makes_the_host_stale_in_its_own_words(
    project: Project, pool: TestHostPool, host: TestHost
) -> None:
    project.write_inventory({NAME: host_entry(host, pool)})
    settings = api.Settings(project=project.root)
    inv, selected = api.load_hosts(api.Selection(str(project.root / "inventory"), [NAME]), settings)
    events: list[tuple[str, str | None]] = []
    opts = monitor.MonitorOptions(interval=0.15, stale_after=1.5, backoff=5, process_every=0)
    mon = monitor.Monitor(
        selected, monitor.connector(settings, inv), opts, on_event=lambda h, k, d: events.append((k, d))
    )

    def state() -> monitor.HostState:
        return mon.snapshot()[0]

    def wait_for(cond: Any, what: str, timeout: float = 10) -> None:
        deadline = time.monotonic() + timeout
        while not cond():
            assert time.monotonic() < deadline, f"timed out waiting for {what}: {mon.snapshot()}"
            time.sleep(0.05)

    mon.start()
    try:
        wait_for(lambda: state().gpus, "the first sample")
        assert state().gpus[0].name == "NVIDIA H100 80GB HBM3"
        # (the line keeps coming every 0.1 s: the stream is alive, the GPU is not)
        wait_for(lambda: state().status == "stale", "the host to go stale")
    finally:
        mon.stop()
    st = state()
    assert st.error and re.fullmatch(r"no sample for \d+s: " + re.escape(OFF_BUS), st.error), st.error
    assert ("stale", st.error) in events
    assert_nothing_left(host)


def test_the_json_stream_says_it_too(project: Project, pool: TestHostPool, host: TestHost) -> None:
    """The command line: `--json` has a stale event with the host's words, within the default
    3 intervals + 5 s."""
    project.write_inventory({NAME: host_entry(host, pool)})
    r = project.cli("monitor", "--host", NAME, "--json", "--interval", "150ms", "--duration", "7")
    assert r.returncode == 0, r.stdout + r.stderr
    docs = [json.loads(x) for x in r.stdout.splitlines() if x.strip()]
    stale = [d for d in docs if d.get("event") == "stale"]
    assert stale and stale[0]["error"].endswith(f"s: {OFF_BUS}"), docs
    assert stale[0]["error"].startswith("no sample for "), stale[0]
    assert_nothing_left(host)


def test_once_prints_the_hosts_words_without_their_escape_sequences(
    project: Project, pool: TestHostPool, host: TestHost
) -> None:
    project.write_inventory({NAME: host_entry(host, pool)})
    r = project.cli("monitor", "--host", NAME, "--once")
    assert r.returncode == 3, r.stdout + r.stderr
    assert "\x1b" not in r.stderr + r.stdout and "\x07" not in r.stderr, repr(r.stderr)
    assert r.stderr.startswith(f"error: host {NAME}: nvidia-smi failed (exit 9): \\x1b[2J"), r.stderr
    assert_nothing_left(host)
