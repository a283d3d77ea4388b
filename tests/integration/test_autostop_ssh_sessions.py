"""`invoke autostop --ssh-sessions` over real SSH: a session without a terminal (VS Code Remote,
an `ssh -N -L` tunnel to a notebook, `ssh host cmd`) has no utmp entry, so `who` never lists it,
and the box was judged idle and shut down under a user who was working on it. The watcher now
also counts sshd's session processes (`sshd: USER@notty`). Real sshd test host, a real session
held open, the installed cron entry run in cron's environment; the GPU replays a REAL idle H100
capture. Never a real power-off: the shutdown command is a marker."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest
from conftest import Project
from test_autostop import cron_d_entries, cron_daemon, inventory, paths, replay_nvidia_smi

from gpuonboard.connection import ConnectOptions, KnownHosts, open_runner
from gpuonboard.inventory import Host
from gpuonboard.testing import TestHostPool

__all__ = ["cron_daemon", "paths"]  # fixtures, used by name

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
IDLE_UTIL = FIXTURES / "real" / "nvidia-smi-query-gpu__h100-80gb-hbm3__1gpu__driver590.48.01__idle.csv"
CRON_ENV = {"PATH": "/usr/bin:/bin", "HOME": "/root", "SHELL": "/bin/sh", "LOGNAME": "root"}


def _notty_sessions() -> int:
    """sshd session processes without a terminal on this machine (the test hosts' are here)."""
    out = subprocess.run(["ps", "-eo", "args="], capture_output=True, text=True, check=True).stdout
    return sum(1 for line in out.splitlines() if line.strip().endswith("@notty") and line.startswith("sshd"))


def _wait(what: str, ok: object, seconds: float = 10) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if ok():  # type: ignore[operator]
            return
        time.sleep(0.05)
    raise AssertionError(what)


@pytest.mark.alone  # the tick's `ps` sees every SSH session of this machine (another worker's too)
@pytest.mark.usefixtures("cron_daemon")
def test_a_session_without_a_terminal_keeps_the_box_up(
    project: Project, pool: TestHostPool, paths: dict[str, Path], tmp_path: Path
) -> None:
    inventory(project, pool, paths)
    h = pool.hosts["autostop"]
    tool = replay_nvidia_smi(h.bin_dir, tmp_path / "replay", IDLE_UTIL)
    args = ["autostop", "--host", "autostop", "--idle", "30m", "--no-billing-aware", "--ssh-sessions"]
    try:
        r = project.cli(*args)
        assert r.returncode == 0, r.stdout + r.stderr
        [entry] = cron_d_entries((paths["cron"] / "gpuonboard-autostop").read_text())

        def tick() -> str:
            subprocess.run(["/bin/sh", "-c", entry[6]], check=True, timeout=30, env=CRON_ENV)
            return (paths["dir"] / "autostop.log").read_text().splitlines()[-1]

        _wait("a session of another test is still open", lambda: _notty_sessions() == 0)
        assert "idle" in tick()  # (nobody connected: the idle GPU decides)
        # a user's session without a terminal, as VS Code Remote holds one
        host = Host(
            name=h.name,
            address=h.address,
            port=h.port,
            user="root",
            key_file=str(pool.client_key),
            host_key=h.fingerprint,
        )
        known = tmp_path / "known_hosts"
        runner = open_runner(host, ConnectOptions(known_hosts=known), KnownHosts(known))
        try:
            chan = runner.transport.open_session()  # type: ignore[attr-defined]
            chan.exec_command("sleep 60")
            _wait("the session never showed in ps", lambda: _notty_sessions() == 1)
            assert tick().endswith("busy: an SSH session is open (root); idle timer reset"), tick()
            r = project.cli("autostop", "--host", "autostop", "--status")
            assert "watching: GPU utilisation > 5%; logged-in users and SSH sessions" in r.stdout, r.stdout
        finally:
            runner.close()
        _wait("the session outlived its connection", lambda: _notty_sessions() == 0)
        assert "busy" not in tick()
    finally:
        tool.unlink()
        project.cli("autostop", "--host", "autostop", "--cancel")
    assert not paths["marker"].exists()
