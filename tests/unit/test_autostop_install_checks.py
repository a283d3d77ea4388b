"""What the autostop install finds in the way, from its real state probe run with /bin/sh on
this machine, as root and as an unprivileged login (`setpriv` to nobody): a watcher that runs
as a non-root user cannot run `shutdown -h now` (cron logged "shutdown command exited 1" every
minute and the box never stopped)."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpuonboard.steps.autostop import (
    _parse_probe,
    _Remote,
    _state_probe_command,
    install_problem,
    parse_settings,
)

NOBODY = 65534


@pytest.fixture
def cron_daemon(tmp_path: Path) -> Iterator[None]:
    """A process named `cron` (a copy of sleep), ended by pid."""
    binary = tmp_path / "crond" / "cron"
    binary.parent.mkdir()
    binary.write_bytes(Path("/bin/sleep").read_bytes())
    binary.chmod(0o755)
    daemon = subprocess.Popen([str(binary), "600"])
    try:
        yield
    finally:
        daemon.kill()
        daemon.wait()


def probe(tmp_path: Path, as_nobody: bool) -> _Remote:
    command = _state_probe_command(str(tmp_path / "autostop"), str(tmp_path / "cron.d"), "auto")
    argv = ["sh", "-c", command]
    if as_nobody:
        if os.geteuid() != 0 or not shutil.which("setpriv"):
            pytest.skip("needs root and setpriv to log in as an unprivileged user")
        argv = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", *argv]
    env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/nonexistent"}
    out = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=30, check=True)
    return _parse_probe(out.stdout)


def problem(r: _Remote, shutdown_command: str) -> str | None:
    return install_problem("gpu1", parse_settings({"shutdown_command": shutdown_command}), r)


@pytest.mark.usefixtures("cron_daemon")
@pytest.mark.parametrize(
    "command", ["shutdown -h now", "/sbin/poweroff", "systemctl poweroff", "LANG=C shutdown -h +1"]
)
def test_a_non_root_login_cannot_run_a_power_command_itself(tmp_path: Path, command: str) -> None:
    r = probe(tmp_path, as_nobody=True)
    assert (r.uid, r.user, r.mode, r.cron_daemon) == (str(NOBODY), "nobody", "crontab", "yes")
    quoted = "'sudo -n " + command + "'"
    assert problem(r, command) == (
        f"host gpu1: the watcher would run as nobody, not root, which cannot run the shutdown command"
        f" {command!r}: pass --shutdown-command {quoted} (needs passwordless sudo for it), or connect"
        " as root"
    )


@pytest.mark.usefixtures("cron_daemon")
@pytest.mark.parametrize(
    "command", ["sudo -n shutdown -h now", "curl -fsS -X POST https://api.example.com/v1/stop"]
)
def test_a_non_root_login_may_use_sudo_or_a_vendor_api_call(tmp_path: Path, command: str) -> None:
    assert problem(probe(tmp_path, as_nobody=True), command) is None


@pytest.mark.usefixtures("cron_daemon")
def test_root_runs_the_default_shutdown_command(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root")
    r = probe(tmp_path, as_nobody=False)
    assert (r.uid, r.mode, r.cron_daemon) == ("0", "cron.d", "yes")
    assert problem(r, "shutdown -h now") is None
