"""`sim.up`/`sim.down` around a state file that cannot be read (edited, a host dir deleted,
another version's), and a second `sim.up` of a running name with another `--profile`.

sim.down failed on such a state file ("internal error (TestHostError: no test-host state ...)",
exit 70) and left every simulated server (sshd, as root) running; sim.up started afresh over it,
so the other servers it listed ran on, in no state file and no inventory, which no sim.down would
ever stop. Now both stop them by their pid files (only a process that is that host's sshd).
A second sim.up of a running name with another profile printed the new profile while the host
kept replaying the old one."""

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


def _up(base: Path, name: str, *more: str) -> subprocess.CompletedProcess[str]:
    r = _cli(base.parent, "sim.up", "--base", str(base), "--name", name, *more)
    assert r.returncode == 0, r.stdout + r.stderr
    return r


def _pid(base: Path, name: str) -> int:
    return int((base / "hosts" / name / "sshd.pid").read_text().split()[0])


def test_sim_down_stops_the_servers_of_an_unreadable_state_file(tmp_path: Path) -> None:
    base = tmp_path / "sim"
    try:
        _up(base, "h1")
        _up(base, "h2")
        pids = [_pid(base, "h1"), _pid(base, "h2")]
        assert all(process_alive(p) for p in pids)
        (base / "testhosts-state.json").write_text("{")
        r = _cli(tmp_path, "sim.down", "--base", str(base))
        assert r.returncode == 0, r.stdout + r.stderr
        assert "stopped the 2 simulated server(s) still running there" in r.stdout, r.stdout
        assert not any(process_alive(p) for p in pids)
        assert not (base / "testhosts-state.json").exists()
    finally:
        _cli(tmp_path, "sim.down", "--base", str(base))


def test_sim_up_over_an_unreadable_state_file_leaves_no_server_behind(tmp_path: Path) -> None:
    base = tmp_path / "sim"
    try:
        _up(base, "h1")
        _up(base, "h2")
        h2 = _pid(base, "h2")
        (base / "testhosts-state.json").write_text('{"version": 1}')
        r = _up(base, "h1")
        assert "cannot read it" in r.stdout, r.stdout
        assert not process_alive(h2)  # (no state file, no inventory lists it: nothing would stop it)
        h1 = _pid(base, "h1")
        r = _cli(tmp_path, "sim.down", "--base", str(base))
        assert r.returncode == 0 and "stopped 1 simulated server(s)" in r.stdout, r.stdout + r.stderr
        assert not process_alive(h1)
    finally:
        _cli(tmp_path, "sim.down", "--base", str(base))


def test_a_running_servers_profile_is_not_changed_by_a_second_sim_up(tmp_path: Path) -> None:
    base = tmp_path / "sim"
    try:
        _up(base, "h1")
        pid = _pid(base, "h1")
        r = _up(base, "h1", "--profile", "h200-1gpu")
        assert "simulated server 'h1' (a100-8x-nvlink) up at" in r.stdout, r.stdout
        # and what to run next, its inventory named relative to here
        assert "next: invoke check --host h1 --inventory sim/inventory\n" in r.stdout, r.stdout
        assert "note: 'h1' already replays a100-8x-nvlink; --profile h200-1gpu is not applied" in r.stdout
        assert _pid(base, "h1") == pid  # (the same daemon: a second sim.up starts no other)
    finally:
        _cli(tmp_path, "sim.down", "--base", str(base))


def test_sim_down_without_a_state_file_still_stops_what_runs_there(tmp_path: Path) -> None:
    """The state file deleted (or an older sim.up's orphan): sim.down said "no simulated server
    is running" while one ran."""
    base = tmp_path / "sim"
    try:
        _up(base, "h1")
        pid = _pid(base, "h1")
        (base / "testhosts-state.json").unlink()
        r = _cli(tmp_path, "sim.down", "--base", str(base))
        assert r.returncode == 0, r.stdout + r.stderr
        assert r.stdout == f"stopped 1 simulated server(s) under {base} that no state file recorded\n"
        assert not process_alive(pid)
        r = _cli(tmp_path, "sim.down", "--base", str(base))
        assert r.stdout == "no simulated server is running\n", r.stdout
    finally:
        _cli(tmp_path, "sim.down", "--base", str(base))


# `sim.down` (and `sim.up`) stop, by pid, only the sshd of a host of their own --base.
#
# A state file that cannot be read makes them stop the daemons under base by the pids its host
# dirs (and the state file) name. A crafted or stale pid must not stop another process: the
# state file naming a host dir of another base; a readable state file copied from another base;
# a stale pid file of ours whose pid now belongs to the sshd of another base whose config path
# merely contains ours (a base under another base). One real sshd (another base's) is the
# process that must survive them all.


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
