"""`--pid N` names the process the install found, not whatever holds the number later.

Before, the watcher asked only `kill -0 N`: after a reboot (an Xid error, the provider's
maintenance) the job was gone but its number soon belonged to another process (a daemon started
at boot takes the low pids; pids wrap on a box with a small pid_max), and that process kept the
box up, billed, for good. Now the install records the process's start time in clock ticks since
boot (/proc/PID/stat field 22) and the boot id, and the watcher counts the pid alive only in
that boot and with that start time.

The processes are real (`sleep`), their start times read by the real state probe from this
machine's /proc; a "reused" pid is a live process whose recorded start time is another one (what
the install would have recorded for the job that had the number before). The shutdown command
only creates a marker file.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from gpuonboard.steps.autostop import (
    _parse_probe,
    _Remote,
    _state_probe_command,
    install_problem,
    parse_settings,
)
from gpuonboard.steps.autostop.install import with_tools

from .box import T0, Box

BOOT_ID = Path("/proc/sys/kernel/random/boot_id").read_text().strip()


@pytest.fixture
def job() -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen(["sleep", "120"])
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait()


def start_ticks(pid: int) -> str:
    """Field 22 of /proc/PID/stat, counted after the command name (which may hold spaces)."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]


def probe(tmp: Path, pid: str) -> _Remote:
    """The install's real state probe, asked about `pid`."""
    command = _state_probe_command(str(tmp / "autostop"), str(tmp / "cron.d"), "auto", pid=pid)
    out = subprocess.run(["sh", "-c", command], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    return _parse_probe(out.stdout)


def install(box: Box, r: _Remote, **args: str) -> None:
    """What the install writes as the config, from what its probe found."""
    args.setdefault("shutdown_command", f"touch {box.marker}")
    (box.dir / "autostop.conf").write_text(with_tools(parse_settings(args), r).conf_text())


def test_the_probe_records_the_processs_start_time_and_the_boot(
    tmp_path: Path, job: subprocess.Popen[bytes]
) -> None:
    r = probe(tmp_path, str(job.pid))
    assert r.pid_alive is True
    assert r.pid_start == start_ticks(job.pid)
    assert r.boot_id == BOOT_ID
    conf = with_tools(parse_settings({"pid": str(job.pid)}), r).conf_text()
    assert f"PID_START={r.pid_start}\n" in conf and f"PID_BOOT={BOOT_ID}\n" in conf
    # without --pid nothing is asked, nothing written
    r = probe(tmp_path, "")
    assert r.pid_alive is None and not r.pid_start
    assert "PID_START" not in with_tools(parse_settings({}), r).conf_text()


def test_the_watched_process_itself_keeps_the_box_up(tmp_path: Path, job: subprocess.Popen[bytes]) -> None:
    box = Box(tmp_path, idle="1m", grace="0", billing_aware="no")
    install(box, probe(tmp_path, str(job.pid)), idle="1m", grace="0", billing_aware="no", pid=str(job.pid))
    for m in range(3):
        box.run(T0 + 60 * m, GPUONBOARD_BOOT_ID=BOOT_ID)
    assert not box.shut_down, box.log()
    assert f"busy: process {job.pid} is alive" in box.log()


def test_a_pid_now_held_by_another_process_does_not_keep_the_box_up(
    tmp_path: Path, job: subprocess.Popen[bytes]
) -> None:
    # the number is held by a live process, started at another time than the one recorded
    r = probe(tmp_path, str(job.pid))
    earlier = replace(r, pid_start=str(int(r.pid_start) - 1))
    box = Box(tmp_path, idle="1m", grace="0", billing_aware="no")
    install(box, earlier, idle="1m", grace="0", billing_aware="no", pid=str(job.pid))
    for m in range(3):
        box.run(T0 + 60 * m, GPUONBOARD_BOOT_ID=BOOT_ID)
    assert box.shut_down, box.log()
    assert "busy: process" not in box.log()


def test_after_a_reboot_the_pid_names_no_process(tmp_path: Path, job: subprocess.Popen[bytes]) -> None:
    # the same number alive (here: the very same process) but in another boot than the install's
    box = Box(tmp_path, idle="1m", grace="0", billing_aware="no")
    install(box, probe(tmp_path, str(job.pid)), idle="1m", grace="0", billing_aware="no", pid=str(job.pid))
    for m in range(3):
        box.run(T0 + 60 * m, GPUONBOARD_BOOT_ID="another-boot")
    assert box.shut_down, box.log()
    assert "busy: process" not in box.log()


def test_a_pid_that_runs_nothing_at_install_is_refused(tmp_path: Path) -> None:
    gone = subprocess.Popen(["true"])
    gone.wait()  # (reaped: its number names no process now)
    # (what the probe says of the pid; the rest as on a box where the install goes on: cron runs)
    r = replace(probe(tmp_path, str(gone.pid)), cron_daemon="yes")
    assert r.pid_alive is False
    settings = parse_settings({"pid": str(gone.pid), "shutdown_command": "touch /tmp/x"})
    assert install_problem("gpu1", settings, r) == (
        f"host gpu1: --pid {gone.pid}: no process {gone.pid} runs there, so the watcher would not"
        " see the job, and a run in a phase that leaves the GPUs idle (data loading, a checkpoint)"
        " would be powered off: give the pid of the running job (pgrep -f train.py finds it), or"
        " watch it by --job or --container instead"
    )
    alive = replace(probe(tmp_path, str(os.getpid())), cron_daemon="yes")
    assert install_problem("gpu1", replace(settings, pid=str(os.getpid())), alive) is None
