"""`sim.down` (and `sim.up`) stop, by pid, only the sshd of a host of their own --base.

A state file that cannot be read makes them stop the daemons under base by the pids its host
dirs (and the state file) name. A crafted or stale pid must not stop another process: the
state file naming a host dir of another base; a readable state file copied from another base;
a stale pid file of ours whose pid now belongs to the sshd of another base whose config path
merely contains ours (a base under another base). One real sshd (another base's) is the
process that must survive them all.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from gpuonboard.testing import process_alive
from gpuonboard.testing.sim import sshd_of


def _cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200", "GPUONBOARD_SSH_CONFIG": "/dev/null"}
    return subprocess.run(
        [sys.executable, "-c", "from gpuonboard.cli import main; main()", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )


def _down(base: Path) -> subprocess.CompletedProcess[str]:
    r = _cli(base.parent, "sim.down", "--base", str(base))
    assert r.returncode == 0, r.stdout + r.stderr
    return r


def test_sim_down_never_stops_another_bases_sshd(tmp_path: Path) -> None:
    ours = tmp_path / "a"
    # another base whose host config path holds ours: .../b/<tmp_path>/a/hosts/h1/sshd_config
    other = tmp_path / "b" / str(ours).lstrip("/")
    other.parent.mkdir(parents=True)
    try:
        r = _cli(tmp_path, "sim.up", "--base", str(other), "--name", "h1")
        assert r.returncode == 0, r.stdout + r.stderr
        pid = int((other / "hosts" / "h1" / "sshd.pid").read_text().split()[0])
        assert process_alive(pid) and sshd_of(pid, other / "hosts" / "h1" / "sshd_config")
        assert not sshd_of(pid, ours / "hosts" / "h1" / "sshd_config")

        # 1. an unreadable state file that names the other base's host dir and its pid
        ours.mkdir()
        hosts = [{"dir": str(other / "hosts" / "h1"), "pid": pid}]
        (ours / "testhosts-state.json").write_text(json.dumps({"hosts": hosts}))
        _down(ours)
        assert process_alive(pid), "stopped through a host dir the state file named elsewhere"

        # 2. the other base's (readable) state file, copied here
        (ours / "testhosts-state.json").write_text((other / "testhosts-state.json").read_text())
        r = _down(ours)
        assert process_alive(pid), "stopped through a state file copied from another base"
        assert f"host 'h1' has its dir at {other / 'hosts' / 'h1'}, not under {ours / 'hosts'}" in r.stdout

        # 3. a stale pid file of our own h1 whose pid is now the other base's sshd
        (ours / "hosts" / "h1").mkdir(parents=True)
        (ours / "hosts" / "h1" / "sshd.pid").write_text(f"{pid}\n")
        (ours / "testhosts-state.json").write_text("{")
        _down(ours)
        assert process_alive(pid), "stopped by a config path that only contains this host's"
    finally:
        _down(other)
    assert not process_alive(pid)
