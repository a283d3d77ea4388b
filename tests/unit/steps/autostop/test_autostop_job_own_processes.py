"""--job NAME against the watcher's own processes: a NAME that is part of the autostop dir's path
or of the script's name matches the tick itself (`/bin/sh DIR/autostop.sh tick`), its probe
subshells and cron's `sh -c` line for it. Those are left out, a real job still counts."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
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
        # each name is this case's own: another test's tick or job running beside this one (xdist)
        # is a process of that name too, and rightly keeps a box up
        ("llama-finetune-a1", "finetune-a1"),  # the job's name in the project dir holding autostop_dir
        ("home/finetune-b2/.local/state/gpuonboard", "finetune-b2"),  # a login named like the job
        ("home/u/.local/state/gpuonboard-c3", "gpuonboard-c3/autostop"),  # a job named like the dir
        ("srv-own-tick", "srv-own-tick/autostop.sh tick"),  # the script's own command line
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
    box = _box(tmp_path, "llama-finetune-d4", "finetune-d4")
    job = subprocess.Popen(["sh", "-c", "sleep 60; : finetune-d4"], start_new_session=True)
    try:
        for minute in range(3):
            _cron_tick(box, T0 + 60 * minute)
        assert f"busy: job 'finetune-d4' is running (pid {job.pid})" in box.log()
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


def _kernel_thread() -> int | None:
    """A kernel thread this machine shows (PF_KTHREAD in /proc/PID/stat field 9), or None."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[6]) & 0x00200000:
                return int(entry.name)
    return None


def test_a_job_that_ended_as_an_unreaped_zombie_lets_the_box_go_idle(tmp_path: Path) -> None:
    """The job (a script named zj<random>) ended, and its parent (a Python process like a notebook
    kernel that started it with Popen and never waited) keeps it as a zombie: `pgrep -f` matches
    the zombie by its name, as it has no command line. Before, the tick said `busy: job ... is
    running (pid <the zombie>)` for good and the box was never shut down, billed on."""
    name = f"zj{os.getpid() % 100000}{len(tmp_path.name)}"  # (no other process has it)
    script = tmp_path / name
    script.write_text("#!/bin/sh\nexit 0\n")
    script.chmod(0o755)
    box = _box(tmp_path, "srv", name)
    # the parent's own command line does not hold the name (the path comes in the environment)
    parent = subprocess.Popen(
        [
            sys.executable,
            "-c",
            # (the Popen kept: one let go is reaped by its __del__ where the job ended already)
            "import os,subprocess,time; job = subprocess.Popen([os.environ['J']]); time.sleep(60)",
        ],
        env={**os.environ, "J": str(script)},
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 30
        while not subprocess.run(["pgrep", "-f", name], capture_output=True).stdout:
            assert parent.poll() is None, f"the parent ended ({parent.returncode}) before its job did"
            assert time.monotonic() < deadline, "the zombie never showed"
            time.sleep(0.05)
        for minute in range(3):
            _cron_tick(box, T0 + 60 * minute)
        log = box.log()
        assert "is running" not in log, log
        assert box.shut_down, log
    finally:
        os.killpg(parent.pid, signal.SIGKILL)
        parent.wait()


def test_others_leaves_out_a_kernel_thread(tmp_path: Path) -> None:
    """A kernel thread (here the first one /proc shows, kthreadd on most machines) is no job:
    `pgrep -f nvidia` finds `irq/95-nvidia` and `nvidia-modeset/kthread_q` on a GPU box, which
    kept it up for good before (`others` printed the thread's pid)."""
    kthread = _kernel_thread()
    if kthread is None:
        pytest.skip("this machine shows no kernel thread in /proc")
    box = _box(tmp_path, "x", "nvidia")
    r = box.run(T0, "others", str(kthread))
    assert r.stdout.split() == [], r.stdout


_MAIN_THREAD_EXITS = r"""
#include <pthread.h>
#include <unistd.h>
static void *work(void *arg) { (void)arg; sleep(60); return 0; }
int main(void) { pthread_t t; pthread_create(&t, 0, work, 0); pthread_exit(0); }
"""


def _main_thread_exited_job(tmp_path: Path, name: str) -> subprocess.Popen[bytes]:
    """A real job whose main thread called pthread_exit while its other thread works on (a C
    program built with this machine's compiler): /proc shows its pid in state Z with `Threads: 2`
    and an empty command line, as a trainer whose main thread hands off to workers does."""
    compiler = next(
        (
            c
            for c in ("cc", "gcc", "clang")
            if subprocess.run(["which", c], capture_output=True).returncode == 0
        ),
        None,
    )
    if compiler is None:
        pytest.skip("no C compiler here to build a program whose main thread exits")
    source = tmp_path / "job.c"
    source.write_text(_MAIN_THREAD_EXITS)
    binary = tmp_path / name
    subprocess.run([compiler, "-pthread", "-o", str(binary), str(source)], check=True)
    job = subprocess.Popen([str(binary)], start_new_session=True)
    deadline = time.monotonic() + 10
    stat = Path(f"/proc/{job.pid}/stat")
    while stat.read_text().rsplit(")", 1)[1].split()[0] != "Z":  # (the main thread exited)
        assert time.monotonic() < deadline, "the main thread never exited"
        time.sleep(0.05)
    assert not Path(f"/proc/{job.pid}/cmdline").read_bytes()
    return job


def test_a_job_whose_main_thread_exited_still_keeps_the_box_up(tmp_path: Path) -> None:
    """A real job (a C program named mt<random>) whose main thread called pthread_exit: its pid
    reads state Z while its other thread runs. `not_a_job` took any Z for an ended job, so the
    box was shut down under a live job; now a zombie is ended only with its whole thread group,
    and the tick says busy."""
    name = f"mt{os.getpid() % 100000}{len(tmp_path.name)}"  # (no other process has it)
    box = _box(tmp_path, "srv", name)
    job = _main_thread_exited_job(tmp_path, name)
    try:
        assert box.run(T0, "others", str(job.pid)).stdout.split() == [str(job.pid)]
        for minute in range(3):
            _cron_tick(box, T0 + 60 * minute)
        log = box.log()
        assert f"busy: job '{name}' is running (pid {job.pid})" in log, log
        assert not box.shut_down, log
    finally:
        os.killpg(job.pid, signal.SIGKILL)
        job.wait()
