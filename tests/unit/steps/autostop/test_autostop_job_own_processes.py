"""--job NAME against the watcher's own processes: a NAME that is part of the autostop dir's path
or of the script's name matches the tick itself (`/bin/sh DIR/autostop.sh tick`), its probe
subshells and cron's `sh -c` line for it. Those are left out, a real job still counts."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest

from .box import T0, Box, end_session


def _cron_tick(box: Box, now: int) -> None:
    """One tick as cron runs it: `sh -c '/bin/sh DIR/autostop.sh tick >>DIR/autostop.log 2>&1'`."""
    line = f"/bin/sh {box.dir / 'autostop.sh'} tick >>{box.dir / 'autostop.log'} 2>&1"
    proc = subprocess.Popen(["sh", "-c", line], env=box.env(now), start_new_session=True, text=True)
    try:
        proc.wait(timeout=30)
    finally:
        end_session(proc)


def _box(tmp_path: Path, parent: str, job: str) -> Box:
    base = tmp_path / parent
    base.mkdir(parents=True)
    return Box(base, idle="1m", grace="0", job=job, billing_aware="false")


@pytest.mark.parametrize(
    ("parent", "job"),
    [
        ("llama-finetune", "finetune"),  # the job's name in the project dir holding autostop_dir
        ("home/finetune/.local/state/gpuonboard", "finetune"),  # a login named like the job
        ("home/u/.local/state/gpuonboard", "gpuonboard/autostop"),  # a job named like the dir
        ("srv", "autostop.sh tick"),  # the script's own command line
    ],
)
def test_a_job_name_in_the_watchers_own_command_line_lets_the_box_go_idle(
    tmp_path: Path, parent: str, job: str
) -> None:
    # before: pgrep -f found the tick itself ("busy: job 'finetune' is running" at every tick)
    # and the box was never shut down, billed on
    box = _box(tmp_path, parent, job)
    for minute in range(3):
        _cron_tick(box, T0 + 60 * minute)
    log = box.log()
    assert "is running" not in log, log
    assert "idle: no activity seen; idle timer starts" in log
    assert box.shut_down, log


def test_a_real_job_still_keeps_the_box_up_when_its_name_is_in_the_dir_path(tmp_path: Path) -> None:
    box = _box(tmp_path, "llama-finetune", "finetune")
    job = subprocess.Popen(["sh", "-c", "sleep 60; : finetune"], start_new_session=True)
    try:
        for minute in range(3):
            _cron_tick(box, T0 + 60 * minute)
        assert f"busy: job 'finetune' is running (pid {job.pid})" in box.log()
        assert not box.shut_down
    finally:
        os.killpg(job.pid, signal.SIGKILL)
        job.wait()
    _cron_tick(box, T0 + 600)  # the job ended: idle from now
    assert "idle: no activity seen; idle timer starts" in box.log()


def test_others_leaves_out_the_watchers_ancestors_and_ended_processes(tmp_path: Path) -> None:
    """`others` prints the first PID that is not the watcher's own and stops there: busy_reason
    names that one (it printed every such PID, each walked up to its ancestors, under the probe's
    time limit; this test asserted both PIDs before: changed on purpose)."""
    box = _box(tmp_path, "x", "anything")
    job = subprocess.Popen(["sleep", "60"])
    ended = subprocess.Popen(["true"])
    ended.wait()
    try:
        r = box.run(T0, "others", str(os.getpid()), str(job.pid), str(ended.pid), "1", "n/a")
    finally:
        job.kill()
        job.wait()
    # this test's own process is an ancestor of the run (left out): the job is the first other
    assert r.stdout.split() == [str(job.pid)]
    # the ended process and the word that is no pid are skipped; pid 1 is never one of its ancestors
    r = box.run(T0, "others", str(os.getpid()), str(ended.pid), "n/a", "1")
    assert r.stdout.split() == ["1"]
