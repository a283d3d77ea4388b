"""A rerun of `invoke autostop --pid N --heartbeat 6h` renews the lease after job N has ended.

The heartbeat lease is renewed by rerunning the install ("each run renews it"). Round 21 refused
a --pid that runs nothing at install (right for a first install: the watcher would never see the
job), but the same check refused the renewal once the job had ended, so the lease ran out and
the hard trigger powered the box off while the user still worked; and a rerun after the number
had gone to another process recorded that process's start time, so it kept the box up (what
PID_START exists to prevent). Now a rerun with the pid the installed config already watches
renews everything, keeps the start time and boot the first install recorded, and says that the
job has ended; a new pid is judged as at a first install.

The processes are real (`sleep`, `true`), read by the real state probe from this machine's /proc,
and the config the rerun reads is the one the install wrote (autostop.conf in the probed dir).
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from gpuonboard.steps.autostop import _Remote, install_problem, parse_settings
from gpuonboard.steps.autostop.install import with_tools

from .box import T0, Box
from .test_autostop_pid_identity import BOOT_ID, probe, start_ticks

ARGS = {"idle": "1m", "grace": "0", "billing_aware": "no", "heartbeat": "6h"}


@pytest.fixture
def job() -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen(["sleep", "120"])
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait()


def installed(tmp: Path, r: _Remote, pid: str) -> Box:
    """A box whose autostop.conf is what the install wrote from what its probe found."""
    box = Box(tmp, **ARGS)
    settings = with_tools(parse_settings({**ARGS, "pid": pid, "shutdown_command": f"touch {box.marker}"}), r)
    (box.dir / "autostop.conf").write_text(settings.conf_text())
    return box


def rerun(tmp: Path, box: Box, pid: str) -> tuple[str | None, str, _Remote]:
    """The rerun's refusal (None: it goes on), the config it would write and what its real probe
    of the box found."""
    r = replace(probe(tmp, pid), cron_daemon="yes")  # (cron runs, as on the box)
    full = with_tools(parse_settings({**ARGS, "pid": pid, "shutdown_command": f"touch {box.marker}"}), r)
    return install_problem("gpu1", full, r), full.conf_text(), r


def note(pid: str, r: _Remote) -> str | None:
    """What the rerun's plan says of the watched process."""
    from gpuonboard.steps.autostop.install import pid_ended_note

    return pid_ended_note(parse_settings({**ARGS, "pid": pid}), r)


def test_a_rerun_after_the_job_ended_renews_and_says_the_job_ended(tmp_path: Path) -> None:
    proc = subprocess.Popen(["sleep", "120"])
    pid = str(proc.pid)
    first = probe(tmp_path, pid)
    box = installed(tmp_path, first, pid)
    conf = (box.dir / "autostop.conf").read_text()
    proc.kill()
    proc.wait()  # the training job ended (reaped: the number names no process)
    problem, again, r = rerun(tmp_path, box, pid)
    assert problem is None
    assert again == conf  # the same settings: the first install's start time and boot kept
    assert f"PID_START={first.pid_start}\n" in again and f"PID_BOOT={BOOT_ID}\n" in again
    assert note(pid, r) == (
        f"--pid {pid}: the watched process {pid} has ended (no process {pid} runs there), so it no"
        " longer keeps the box up: the box shuts down once idle (give the pid of the running job"
        " to watch it instead)"
    )


def test_a_rerun_never_records_a_later_process_that_got_the_number(
    tmp_path: Path, job: subprocess.Popen[bytes]
) -> None:
    # the install recorded the job that had the number before (started one tick earlier); the
    # number is now held by a live process started later (the pids wrapped)
    r = probe(tmp_path, str(job.pid))
    earlier = str(int(r.pid_start) - 1)
    box = installed(tmp_path, replace(r, pid_start=earlier), str(job.pid))
    problem, again, r = rerun(tmp_path, box, str(job.pid))
    assert problem is None
    assert f"PID_START={earlier}\n" in again and f"PID_START={start_ticks(job.pid)}\n" not in again
    said = note(str(job.pid), r)
    assert said is not None and f"({job.pid} now names another process, started at another time)" in said
    (box.dir / "autostop.conf").write_text(again)
    for m in range(3):  # the watcher counts the job ended: the box is idle, and shut down
        box.run(T0 + 60 * m, GPUONBOARD_BOOT_ID=BOOT_ID)
    assert box.shut_down, box.log()
    assert "busy: process" not in box.log()


def test_a_rerun_after_a_reboot_keeps_the_recorded_boot(tmp_path: Path, job: subprocess.Popen[bytes]) -> None:
    r = probe(tmp_path, str(job.pid))
    box = installed(tmp_path, replace(r, boot_id="boot-before-the-xid-reboot"), str(job.pid))
    problem, again, r = rerun(tmp_path, box, str(job.pid))
    assert problem is None
    assert "PID_BOOT=boot-before-the-xid-reboot\n" in again and BOOT_ID not in again
    said = note(str(job.pid), r)
    assert said is not None and "(the box has rebooted since it was recorded)" in said


def test_a_rerun_while_the_job_runs_changes_nothing_and_says_nothing(
    tmp_path: Path, job: subprocess.Popen[bytes]
) -> None:
    box = installed(tmp_path, probe(tmp_path, str(job.pid)), str(job.pid))
    conf = (box.dir / "autostop.conf").read_text()
    problem, again, r = rerun(tmp_path, box, str(job.pid))
    assert (problem, again) == (None, conf)
    assert note(str(job.pid), r) is None


def test_a_new_pid_that_runs_nothing_is_refused_as_at_a_first_install(
    tmp_path: Path, job: subprocess.Popen[bytes]
) -> None:
    box = installed(tmp_path, probe(tmp_path, str(job.pid)), str(job.pid))
    gone = subprocess.Popen(["true"])
    gone.wait()
    problem, _, r = rerun(tmp_path, box, str(gone.pid))
    assert problem is not None and problem.startswith(
        f"host gpu1: --pid {gone.pid}: no process {gone.pid} runs there, so the watcher would not see the job"
    )
    assert note(str(gone.pid), r) is None
    # a new live pid records its own process, not the one recorded for the old pid
    mine = subprocess.Popen(["sleep", "120"])
    try:
        problem, again, r = rerun(tmp_path, box, str(mine.pid))
        assert (problem, note(str(mine.pid), r)) == (None, None)
        assert f"PID={mine.pid}\n" in again and f"PID_START={start_ticks(mine.pid)}\n" in again
    finally:
        mine.kill()
        mine.wait()
