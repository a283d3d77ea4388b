"""The watcher where the box misbehaves: a probe stuck in the kernel, a full file system, a shutdown
command that fails, an nvidia-smi that warns (exit 14) with every reading printed, a GPU whose
utilisation reads [N/A] (MIG); and what the install says about the last two and about sudo."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from gpuonboard.steps.autostop import _parse_probe, _Remote, _state_probe_command, install, parse_settings
from gpuonboard.steps.autostop.install import install_problem, with_tools

from .box import T0, Box, end_session

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "real"
INFOROM = (
    FIXTURES / "nvidia-smi__tesla-v100-sxm2-32gb__8gpu__driver460.32.03__inforom-corrupted-gpu7__azhpc.txt"
)
MIG_UTIL = FIXTURES / "nvidia-smi-query-gpu__h100-80gb-hbm3-mig__1gpu__driver590.48.01__idle.csv"


# --- a probe stuck in the kernel ------------------------------------------------------------


@pytest.fixture
def stuck_nvidia_smi(tmp_path: Path) -> Iterator[Box]:
    """A box whose nvidia-smi leaves its stdout open in a process of its own session, which
    `timeout`'s kill never reaches: what a child stuck in D state (Xid 79: SIGKILL cannot end
    it) does to a `$(...)` around it. The holder of the output is ended by pid."""
    box = Box(tmp_path, idle="30m", grace="5m", max_hours="0.25", billing_aware="no")
    pids = tmp_path / "holders"
    tool = box.bin / "nvidia-smi"
    tool.write_text(f"#!/bin/sh\nsetsid sleep 600 &\necho $! >>{pids}\nwait\n")
    tool.chmod(0o755)
    try:
        yield box
    finally:
        for pid in pids.read_text().split() if pids.exists() else []:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid), signal.SIGKILL)


def test_a_probe_that_holds_its_output_open_never_holds_the_tick(stuck_nvidia_smi: Box) -> None:
    # before: the tick waited for the end of nvidia-smi's output for ever (here 600 s)
    box = stuck_nvidia_smi
    started = time.monotonic()
    box.run(T0, GPUONBOARD_PROBE_TIMEOUT="1")
    assert time.monotonic() - started < 15
    assert "busy: nvidia-smi did not answer within 1s (GPU activity unknown); idle timer reset" in box.log()
    # so the max-hours deadline (T0+15m) warns and acts as planned
    box.run(T0 + 600, GPUONBOARD_PROBE_TIMEOUT="1")
    box.run(T0 + 900, GPUONBOARD_PROBE_TIMEOUT="1")
    assert box.shut_down and "shutdown: max-hours deadline; running:" in box.log()


def _hang(box: Box) -> None:
    tool = box.bin / "nvidia-smi"
    tool.write_text("#!/bin/sh\nexec sleep 600\n")
    tool.chmod(0o755)


def test_the_hard_warning_is_saved_before_any_probe_runs(tmp_path: Path) -> None:
    # before: the warning lived in memory until the probes were done; a tick stuck in them never
    # saved it, and each tick that took the lock over warned again with a fresh grace
    box = Box(tmp_path, idle="30m", grace="5m", max_hours="0.25", billing_aware="no")
    _hang(box)
    running = box.start_tick(T0 + 600, GPUONBOARD_PROBE_TIMEOUT="600")
    try:
        deadline = time.monotonic() + 10
        while (
            "hard_warned_at" not in (box.dir / "state").read_text() if (box.dir / "state").exists() else True
        ):
            assert time.monotonic() < deadline, "the warning was not saved while the probe ran"
            time.sleep(0.05)
        assert box.state()["hard_warned_at"] == str(T0 + 600) and running.poll() is None
    finally:
        end_session(running)


def test_a_tick_that_finds_another_running_still_warns_and_acts_on_max_hours(tmp_path: Path) -> None:
    # a tick hangs in its probes (here for 10 min) while holding the lock, which later ticks
    # honour for 2 x before_timeout + 5m (25m): before, they exited silently, so the deadline
    # passed unannounced and unacted on
    box = Box(tmp_path, idle="30m", grace="5m", max_hours="0.25", billing_aware="no")
    _hang(box)
    running = box.start_tick(T0 + 300, GPUONBOARD_PROBE_TIMEOUT="600")
    try:
        box.run(T0 + 600, GPUONBOARD_PROBE_TIMEOUT="1")
        assert "warn: max-hours deadline soon; will act at 2027-01-15T08:15:00Z" in box.log()
        assert running.poll() is None and not box.shut_down
        box.run(T0 + 840, GPUONBOARD_PROBE_TIMEOUT="1")  # within the grace: nothing
        assert running.poll() is None and box.log().count("warn:") == 1
        box.run(T0 + 900, GPUONBOARD_PROBE_TIMEOUT="1")
        assert (
            f"took the lock over: tick {running.pid} was still running while the max-hours deadline"
            " is due; stopped it" in box.log()
        )
        assert box.shut_down and "shutdown: max-hours deadline; running:" in box.log()
        assert running.wait(timeout=10) == -signal.SIGTERM
    finally:
        end_session(running)


@pytest.mark.parametrize(("why", "whole_seconds"), [("stuck", False), ("stuck", True), ("deadline", False)])
def test_a_tick_taken_over_removes_its_temp_dir(tmp_path: Path, why: str, whole_seconds: bool) -> None:
    # a tick stopped by the one that takes its lock over (SIGTERM) ran no EXIT trap: its
    # gpuonboard-autostop.* dir (in /dev/shm on a box) stayed for good, one per takeover. Now it
    # removes it and dies of the signal at once, also where `sleep` takes no fractions
    box = Box(tmp_path, idle="30m", grace="5m", max_hours="0.25", before_timeout="1m", billing_aware="no")
    _hang(box)
    if whole_seconds:  # (a sleep that refuses 0.05, as some minimal ones do)
        (box.bin / "sleep").write_text('#!/bin/sh\ncase $1 in *.*) exit 1 ;; esac\nexec /bin/sleep "$@"\n')
        (box.bin / "sleep").chmod(0o755)
    held_from = T0 if why == "stuck" else T0 + 300
    running = box.start_tick(held_from, GPUONBOARD_PROBE_TIMEOUT="600")
    try:
        deadline = time.monotonic() + 10
        while not list(tmp_path.glob("gpuonboard-autostop.*")):  # (its probe runs)
            assert time.monotonic() < deadline, "the running tick made no temp dir"
            time.sleep(0.05)
        if why == "deadline":
            box.run(T0 + 600, GPUONBOARD_PROBE_TIMEOUT="1")  # (warned: acted on 5 minutes later)
        box.run(T0 + (420 if why == "stuck" else 900), GPUONBOARD_PROBE_TIMEOUT="1")
        assert f"tick {running.pid} " in box.log() and "; stopped it" in box.log()
        assert running.wait(timeout=10) == -signal.SIGTERM
        assert not list(tmp_path.glob("gpuonboard-autostop.*"))
    finally:
        end_session(running)


def test_a_tick_stopped_in_before_shutdown_dies_at_once_and_removes_its_temp_dir(tmp_path: Path) -> None:
    # a trap runs only once the foreground command is done: before_shutdown (and the shutdown
    # command) run in the background under `wait`, so a tick stopped in a long upload (a
    # takeover, `--cancel`) still dies at once, its temp dir removed; the upload is left to finish
    started, go = tmp_path / "upload-started", tmp_path / "upload-go"
    upload = f"if [ ! -e {started} ]; then touch {started}; while [ ! -e {go} ]; do sleep 0.1; done; fi"
    box = Box(tmp_path, idle="1m", grace="0", before_shutdown=upload, before_timeout="1m", billing_aware="no")
    box.run(T0)  # (the idle timer starts)
    running = box.start_tick(T0 + 120)
    try:
        deadline = time.monotonic() + 10
        while not started.exists():
            assert time.monotonic() < deadline, "the tick never ran before_shutdown"
            time.sleep(0.05)
        assert list(tmp_path.glob("gpuonboard-autostop.*"))
        box.run(T0 + 120 + 420)  # (held past 2 x 1m + 5m: stuck, stopped, taken over)
        assert f"took the lock over: tick {running.pid} has held it" in box.log()
        assert running.wait(timeout=10) == -signal.SIGTERM
        assert box.shut_down and not list(tmp_path.glob("gpuonboard-autostop.*"))
    finally:
        go.touch()
        end_session(running)


# --- a full file system -----------------------------------------------------------------------


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    """A 256 KiB tmpfs (root only), unmounted afterwards."""
    where = tmp_path / "fs"
    where.mkdir()
    if os.geteuid() != 0:
        pytest.skip("needs root to mount a small tmpfs")
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(where)], capture_output=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.decode().strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", str(where)], check=True)


def _fill(where: Path) -> None:
    with contextlib.suppress(OSError), (where / "filler").open("wb") as f:
        while True:
            f.write(b"\0" * 4096)
            f.flush()


def test_a_full_file_system_keeps_the_idle_timer_and_the_warning_and_acts(small_fs: Path) -> None:
    box = Box(small_fs, idle="30m", grace="5m", billing_aware="no")
    box.run(T0)
    box.run(T0 + 1800)  # the idle warning, saved
    _fill(small_fs)
    before = (box.dir / "state").read_text()
    r = box.run(T0 + 1860)
    # before: the state became an empty file (the timer restarted) and the lock's empty pid made
    # the tick take its own lock for another's ("another tick took the lock over")
    assert (box.dir / "state").read_text() == before
    assert "cannot write the autostop dir" in r.stderr and "file system full?" in r.stderr
    assert "another tick took the lock over" not in r.stderr
    status = box.run(T0 + 1860, "status").stdout
    assert "state: CANNOT WRITE the autostop dir" in status
    box.run(T0 + 2100)
    assert box.shut_down


# --- a shutdown command that fails ------------------------------------------------------------


def _sudo_without_a_rule(box: Box) -> None:
    # STAND-IN for sudo where the login has no NOPASSWD rule: sudo's own words under -n
    tool = box.bin / "sudo"
    tool.write_text('#!/bin/sh\necho "sudo: a password is required" >&2\nexit 1\n')
    tool.chmod(0o755)


def test_a_failing_shutdown_command_is_overdue_in_status_and_before_shutdown_runs_once(
    tmp_path: Path,
) -> None:
    uploads = tmp_path / "uploads"
    box = Box(
        tmp_path,
        idle="30m",
        billing_aware="no",
        shutdown_command="sudo -n shutdown -h now",
        before_shutdown=f"echo upload >> {uploads}",
    )
    _sudo_without_a_rule(box)
    for t in (0, 1800, 2100, 2160, 2220):
        box.run(T0 + t)
    # before: the upload ran every minute and status said "would act: <a time in the past>"
    assert uploads.read_text() == "upload\n"
    assert "shutdown command exited 1 (sudo: a password is required); retry next tick" in box.log()
    assert box.log().count("before_shutdown already ran for this decision") == 2
    status = box.run(T0 + 2230, "status").stdout
    assert (
        "would act: OVERDUE: the shutdown decided at 2027-01-15T08:35:00Z has not happened: the"
        " shutdown command exited 1: sudo: a password is required (the watcher retries each minute)"
    ) in status
    # activity resumes: a new decision later runs before_shutdown again
    box.gpu("90")
    box.run(T0 + 2280)
    assert "OVERDUE" not in box.run(T0 + 2290, "status").stdout


def test_the_status_step_fails_when_the_shutdown_is_overdue_or_the_dir_cannot_be_written() -> None:
    from types import SimpleNamespace

    from gpuonboard.steps.autostop import AutostopStatusStep

    step = AutostopStatusStep({})
    base = "cron: /etc/cron.d/gpuonboard-autostop\ninstalled: /x\n"
    for line, failed in [
        ("would act: 2027-01-15T08:35:00Z (idle), unless activity resumes", False),
        ("would act: OVERDUE: the shutdown decided at ... has not happened: ...", True),
        ("would act: not while busy\nstate: CANNOT WRITE the autostop dir /x (file system full?): ...", True),
    ]:
        raw = {step.probe.name: SimpleNamespace(stdout=base + line + "\n")}
        ctx = SimpleNamespace(facts=SimpleNamespace(raw=raw))
        assert step.plan(ctx).failed is failed, line  # type: ignore[arg-type]


# --- nvidia-smi exit 14 with every reading -----------------------------------------------------


def _inforom_box(tmp_path: Path, gpu_count: int) -> Box:
    """An 8 x V100 box whose nvidia-smi warns that GPU 7's infoROM is corrupted: the real
    capture's GPU-Util column and its warning line (on stderr), exit 14 (nvidia-smi(1), RETURN
    VALUE: "14 - infoROM is corrupted")."""
    box = Box(tmp_path, idle="30m", billing_aware="no")
    text = INFOROM.read_text()
    utils = re.findall(r"\|\s+(\d+)%\s+Default \|", text)
    warning = text.strip().splitlines()[-1]
    assert len(utils) == 8 and warning.startswith("WARNING: infoROM is corrupted")
    body = "".join(f"echo {u}\n" for u in utils)
    tool = box.bin / "nvidia-smi"
    tool.write_text(f"#!/bin/sh\n{body}echo '{warning}' >&2\nexit 14\n")
    tool.chmod(0o755)
    settings = replace(
        parse_settings({"idle": "30m", "billing_aware": "no", "shutdown_command": f"touch {box.marker}"}),
        gpu_count=gpu_count,
    )
    (box.dir / "autostop.conf").write_text(settings.conf_text())
    return box


def test_nvidia_smi_exit_14_with_a_reading_for_every_gpu_is_judged_on_them(tmp_path: Path) -> None:
    box = _inforom_box(tmp_path, gpu_count=8)
    for t in (0, 1800, 2100):
        box.run(T0 + t)
    # before: never idle ("nvidia-smi failed (GPU activity unknown)", without the exit code)
    assert box.shut_down
    assert (
        "idle: no activity seen; idle timer starts (nvidia-smi exited 14 (WARNING: infoROM is corrupted"
        " at gpu 0008:00:00.0); its 8 readings, one per GPU, were used)" in box.log()
    )


@pytest.mark.parametrize("gpu_count", [0, 9])
def test_nvidia_smi_exit_14_without_the_counted_readings_is_unknown_with_its_words(
    tmp_path: Path, gpu_count: int
) -> None:
    box = _inforom_box(tmp_path, gpu_count=gpu_count)
    box.run(T0)
    box.run(T0 + 7200)
    assert not box.shut_down
    assert (
        "busy: nvidia-smi failed (exit 14: WARNING: infoROM is corrupted at gpu 0008:00:00.0; GPU"
        " activity unknown)" in box.log()
    )


# --- the install: [N/A] utilisation, the GPU count, sudo ----------------------------------------


def _probe(tmp_path: Path, tools: dict[str, str], shutdown_command: str = "touch /nonexistent/x") -> _Remote:
    """The install's real state probe, with these stand-in tools first on PATH."""
    bin_dir = tmp_path / "probe-bin"
    bin_dir.mkdir(exist_ok=True)
    for name, body in tools.items():
        (bin_dir / name).write_text(f"#!/bin/sh\n{body}\n")
        (bin_dir / name).chmod(0o755)
    command = _state_probe_command(
        str(tmp_path / "autostop"), str(tmp_path / "cron.d"), "auto", install.sudo_check(shutdown_command)
    )
    env = {"PATH": f"{bin_dir}:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/nonexistent"}
    out = subprocess.run(
        ["sh", "-c", command], capture_output=True, text=True, env=env, timeout=60, check=True
    )
    r = _parse_probe(out.stdout)
    r.cron_daemon = "yes"  # (this machine runs none; not what these tests are about)
    r.pid1 = "systemd"  # (this machine may be a container, whose PID 1 is no init: neither)
    r.signs = {}  # (nor whether it is a container)
    return r


def _util_replay(util: str) -> str:
    args = "--query-gpu=utilization.gpu --format=csv,noheader,nounits"  # (the watcher's own query)
    return f'case "$*" in "{args}") printf "%s\\n" {util};; esac'


def test_a_mig_gpu_whose_utilisation_reads_na_is_refused_without_a_deadline(tmp_path: Path) -> None:
    from gpuonboard.testing.gpu_samples import csv_sample

    na = csv_sample(MIG_UTIL)["utilization.gpu"]
    assert na == "[N/A]" and csv_sample(MIG_UTIL)["mig.mode.current"] == "Enabled"
    r = _probe(tmp_path, {"nvidia-smi": _util_replay(f"'{na}'")})
    r.uid = "0"
    assert install.never_idle(r) == "GPU utilisation reads '[N/A]' there (MIG mode, some vGPUs)"
    # before: installed without a word, and the box was never found idle
    assert install_problem("gpu1", parse_settings({}), r) == (
        "host gpu1: GPU utilisation reads '[N/A]' there (MIG mode, some vGPUs), so the watcher would"
        " never find the box idle and never shut it down: pass --max-hours H or --heartbeat D (they act"
        " whatever the activity)"
    )
    assert install_problem("gpu1", parse_settings({"max_hours": "8"}), r) is None
    assert install_problem("gpu1", parse_settings({"heartbeat": "6h"}), r) is None


def test_the_install_counts_the_gpus_that_answer_with_a_number(tmp_path: Path) -> None:
    r = _probe(tmp_path, {"nvidia-smi": _util_replay("0 3 0 0")})
    assert r.gpu_util == ("0", "3", "0", "0") and install.never_idle(r) is None
    assert with_tools(parse_settings({}), r).gpu_count == 4
    assert "GPU_COUNT=4" in with_tools(parse_settings({}), r).conf_text()
    assert with_tools(parse_settings({}), _Remote()).gpu_count == 0  # (no nvidia-smi: none)


def test_sudo_that_does_not_confirm_a_nopasswd_rule_is_said_at_install_and_the_command_never_runs(
    tmp_path: Path,
) -> None:
    """`sudo -n -l CMD` answers whether the login may *list* it without a password (sudoers'
    listpw), not run it: a no is said in the plan (the watcher reports OVERDUE if the shutdown
    then fails), never a refusal of a NOPASSWD rule that works."""
    calls = tmp_path / "sudo-calls"
    sudo = f'echo "$*" >> {calls}\necho "sudo: a password is required" >&2\nexit 1'
    r = _probe(tmp_path, {"sudo": sudo}, "sudo -n shutdown -h now")
    assert calls.read_text() == "-n -l shutdown -h now\n"  # (asks; -l runs nothing)
    r.uid, r.user = "1000", "alice"
    settings = parse_settings({"shutdown_command": "sudo -n shutdown -h now"})
    assert install_problem("gpu1", settings, r) is None
    assert install.sudo_note(settings, r) == (
        "sudo did not confirm that 'sudo -n shutdown -h now' runs without a password there (sudo said:"
        " sudo: a password is required): if it needs one, the watcher cannot shut the box down and"
        " `--status` says OVERDUE; allow it with a NOPASSWD rule in sudoers"
    )
    allowed = _probe(tmp_path, {"sudo": "echo /usr/sbin/shutdown -h now"}, "sudo -n shutdown -h now")
    assert allowed.sudo_rc == 0
    assert (
        install_problem("gpu1", parse_settings({"shutdown_command": "sudo -n shutdown -h now"}), allowed)
        is None
    )


def test_a_sudo_shutdown_command_on_a_host_without_sudo_is_refused(tmp_path: Path) -> None:
    if any((Path(d) / "sudo").exists() for d in ["/usr/sbin", "/usr/bin", "/sbin", "/bin"]):
        pytest.skip("this machine has sudo")
    r = _probe(tmp_path, {}, "sudo -n poweroff")
    assert r.sudo_rc == 127
    problem = install_problem("gpu1", parse_settings({"shutdown_command": "sudo -n poweroff"}), r)
    assert problem is not None and "runs sudo, which is not installed there" in problem


@pytest.mark.parametrize(
    ("command", "check"),
    [
        ("sudo -n shutdown -h now", ["sudo", "-n", "-l", "shutdown", "-h", "now"]),
        ("LANG=C sudo -u root /sbin/poweroff", ["sudo", "-n", "-l", "-u", "root", "/sbin/poweroff"]),
        ("sudo shutdown -h now || true", ["sudo", "-n", "true"]),
        ("shutdown -h now", None),
        ("curl -X POST https://api.example/stop", None),
        # a word that may be a secret is never named on the probe's command line (`ps`)
        ("sudo -n /opt/vendor/stop-vm --token Zk93xQ", ["sudo", "-n", "true"]),
        ("sudo -n /opt/vendor/stop-vm https://x.invalid/hook/K3y", ["sudo", "-n", "true"]),
    ],
)
def test_the_sudo_check_asks_without_running(command: str, check: list[str] | None) -> None:
    assert install.sudo_check(command) == check
    probe = _state_probe_command("/d", "/etc/cron.d", "auto", check, "sudo", "")
    for secret in ("Zk93xQ", "K3y"):
        assert secret not in probe


def test_a_failing_nvidia_smi_at_install_is_said_as_a_failure_not_mig() -> None:
    """nvidia-smi's own failure line (the real L40S VM session's, tests/fixtures/sessions) was
    read as a utilisation reading: "GPU utilisation reads 'NVIDIA-SMI has failed ...' there (MIG
    mode, some vGPUs)"; the failure is said with its exit code."""
    session = Path(__file__).parents[3] / "fixtures" / "sessions"
    text = (session / "transcript__lspci+lsmod+nvidia-smi-FAILED+python__L40S-vm.txt").read_text()
    line = next(x for x in text.splitlines() if "has failed because" in x)
    r = _Remote(gpu_util_rc=9, gpu_util=(line,))
    why = install.never_idle(r)
    assert why is not None and why.startswith(
        "nvidia-smi --query-gpu=utilization.gpu failed there (exit 9: NVIDIA-SMI"
    )
    assert "MIG" not in why
    assert install.never_idle(_Remote(gpu_util_rc=0, gpu_util=("[N/A]",))) == (
        "GPU utilisation reads '[N/A]' there (MIG mode, some vGPUs)"
    )


def test_sudo_asked_without_the_command_says_so_and_keeps_the_user(tmp_path: Path) -> None:
    """A shutdown command with a word that may be a secret is not named on the probe's argv:
    sudo is asked `sudo -n -u USER true` (the -u part kept), and the note says that the command
    itself was not named, never that sudo refused that command."""
    calls = tmp_path / "sudo-calls"
    sudo = f'echo "$*" >> {calls}\necho "sudo: a password is required" >&2\nexit 1'
    command = "sudo -u ops /opt/vendor/stop-vm -pS3cretPassw0rd"
    r = _probe(tmp_path, {"sudo": sudo}, command)
    assert calls.read_text() == "-n -u ops true\n"
    note = install.sudo_note(parse_settings({"shutdown_command": command}), r)
    assert note is not None and note.startswith("sudo asks for a password there (sudo said:"), note
    assert "the command itself was not named to sudo" in note and "S3cret" not in note, note
