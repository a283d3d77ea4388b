"""The autostop watcher script itself, run with /bin/sh, a controllable clock and test doubles.

GPUONBOARD_NOW is the clock, GPUONBOARD_BOOT_ID the boot, a fake `nvidia-smi` first on PATH
prints the utilisation; the shutdown command only creates a marker file (never a power-off).
"""

from __future__ import annotations

import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from gpuonboard.steps.autostop import cron_file_text, parse_settings
from gpuonboard.steps.base import StepArgsError

from .box import T0, Box, end_session


@pytest.fixture
def box(tmp_path: Path) -> Box:
    return Box(tmp_path, idle="30m", billing_aware="false")


def test_busy_gpu_means_no_action(box: Box) -> None:
    box.gpu("3", "87")
    box.ticks(T0, 3)
    box.run(T0 + 3 * 3600)
    assert not box.shut_down
    assert box.state()["idle_since"] == ""
    assert "busy: GPU 1 utilisation 87% > 5%; idle timer reset" in box.log()


def test_gpu_below_threshold_is_idle(box: Box) -> None:
    box.gpu("5", "0")
    box.run(T0)
    assert box.state()["idle_since"] == str(T0)


def test_failing_nvidia_smi_counts_as_busy(box: Box) -> None:
    box.gpu(rc=9)
    box.run(T0)
    box.run(T0 + 7200)
    assert not box.shut_down
    assert "busy: nvidia-smi failed (exit 9; GPU activity unknown)" in box.log()


@pytest.mark.parametrize(
    ("lines", "reason"),
    [
        (("[N/A]",), "GPU 0 utilisation '[N/A]' is not a number (GPU activity unknown)"),
        (
            ("0", "[Not Supported]"),
            "GPU 1 utilisation '[Not Supported]' is not a number (GPU activity unknown)",
        ),
    ],
)
def test_gpu_utilisation_that_is_not_a_number_counts_as_busy(
    box: Box, lines: tuple[str, ...], reason: str
) -> None:
    # MIG instances and some vGPUs report [N/A]: not a measurement, so never idle
    box.gpu(*(f"'{line}'" for line in lines))
    box.run(T0)
    box.run(T0 + 7200)
    assert not box.shut_down
    assert box.state()["idle_since"] == ""
    assert f"busy: {reason}; idle timer reset" in box.log()


def test_idle_less_than_threshold_does_nothing(box: Box) -> None:
    box.ticks(T0, 30)  # minutes 0..29: idle for 29 minutes
    assert not box.shut_down
    assert "warn" not in box.log()
    assert box.log().splitlines()[-1].endswith("idle for 29m00s of 30m00s")


def test_idle_warns_then_waits_grace_then_shuts_down(box: Box) -> None:
    box.run(T0)
    box.run(T0 + 1800)  # idle 30 min: warn, grace starts
    assert not box.shut_down
    assert "warn: idle for 30m00s; will act at 2027-01-15T08:35:00Z" in box.log()
    assert box.state()["warned_at"] == str(T0 + 1800)
    box.run(T0 + 1800 + 240)  # 4 min into the grace
    assert not box.shut_down
    box.run(T0 + 1800 + 300)
    assert box.shut_down
    assert "shutdown: idle for 35m00s; running: touch " in box.log()


def test_activity_during_grace_cancels(box: Box) -> None:
    box.run(T0)
    box.run(T0 + 1800)
    box.gpu("99")
    box.run(T0 + 1860)
    box.gpu("0")
    box.run(T0 + 1920)
    box.run(T0 + 2200)
    assert not box.shut_down
    assert "idle shutdown cancelled" in box.log()
    assert box.state()["idle_since"] == str(T0 + 1920)


def test_live_process_keeps_the_box_up(tmp_path: Path) -> None:
    job = subprocess.Popen(["sleep", "60"])
    try:
        box = Box(tmp_path, idle="1m", grace="0", pid=str(job.pid), billing_aware="false")
        box.run(T0)
        box.run(T0 + 3600)
        assert not box.shut_down
        assert f"busy: process {job.pid} is alive" in box.log()
    finally:
        job.kill()
        job.wait()
    box.run(T0 + 7200)  # the job ended: idle timer starts now
    box.run(T0 + 7260)
    assert box.shut_down


@pytest.mark.parametrize("hidepid", [False, True], ids=["proc", "hidepid"])
def test_a_non_root_watcher_sees_another_users_process_alive(tmp_path: Path, hidepid: bool) -> None:
    # crontab mode runs the watcher as the login user: `kill -0` of a root-owned training
    # process (started with sudo, or a container's) fails with EPERM and read as "ended"; on a
    # /proc mounted hidepid=2 (a hardened host) /proc/PID is hidden too, and EPERM must tell
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("needs root and setpriv to run the tick as an unprivileged user")
    if hidepid and not shutil.which("unshare"):
        pytest.skip("needs unshare for a private /proc mounted hidepid=2")
    nobody = 65534
    base = Path(tempfile.mkdtemp(prefix="autostop-nonroot-", dir="/tmp"))
    job = subprocess.Popen(["sleep", "60"])  # root's
    try:
        base.chmod(0o755)
        box = Box(base, idle="1m", grace="0", pid=str(job.pid), billing_aware="false")
        for path in [base, *base.rglob("*")]:
            os.chown(path, nobody, nobody)
        box.login = ["setpriv", f"--reuid={nobody}", f"--regid={nobody}", "--clear-groups"]
        if hidepid:  # a proc instance of its own, in a mount namespace of its own (this machine's
            # /proc is not touched)
            mount = 'mount -t proc -o hidepid=2 proc /proc && exec "$@"'
            box.login = ["unshare", "-m", "--propagation", "private", "sh", "-c", mount, "sh", *box.login]
            hidden = [*box.login, "sh", "-c", f"test -d /proc/{job.pid} && echo visible || echo hidden"]
            assert subprocess.run(hidden, capture_output=True, text=True).stdout == "hidden\n"
        box.run(T0)
        box.run(T0 + 3600)
        assert not box.shut_down
        assert f"busy: process {job.pid} is alive" in box.log()
    finally:
        job.kill()
        job.wait()
        shutil.rmtree(base)


def test_named_job_keeps_the_box_up(tmp_path: Path) -> None:
    job = subprocess.Popen(["sh", "-c", "sleep 60; : trainjob-7f3a"], start_new_session=True)
    try:
        box = Box(tmp_path, idle="1m", grace="0", job="trainjob-7f3a", billing_aware="false")
        box.run(T0)
        box.run(T0 + 3600)
        assert not box.shut_down
        assert "busy: job 'trainjob-7f3a' is running" in box.log()
    finally:
        os.killpg(job.pid, signal.SIGKILL)  # the sh and its sleep
        job.wait()


def test_plain_job_name_lets_the_box_go_idle_once_the_job_ended(tmp_path: Path) -> None:
    # pgrep runs under `timeout`, whose command line holds the pattern: a plain name such as
    # 'finetune-<id>' must not find that `timeout` and call the job running forever
    name = f"finetune-{tmp_path.name}"
    job = subprocess.Popen(["sh", "-c", f"sleep 60; : {name}"], start_new_session=True)
    try:
        box = Box(tmp_path, idle="1m", grace="0", job=name, billing_aware="false")
        box.run(T0)
        assert f"busy: job '{name}' is running" in box.log()
    finally:
        os.killpg(job.pid, signal.SIGKILL)
        job.wait()
    box.run(T0 + 60)
    box.run(T0 + 120)
    assert box.shut_down, box.log()
    assert box.log().count("is running") == 1


def _python_job(*argv: str) -> subprocess.Popen[bytes]:
    """A real background process whose command line ends with argv (ended by the caller)."""
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", *argv])


def test_job_name_with_regex_characters_matches_its_own_process(tmp_path: Path) -> None:
    # pgrep -f takes a regular expression: 'train(v2).py' as a pattern does not match the text
    name = f"train(v2)+[{tmp_path.name}].py"
    job = _python_job(name)
    try:
        box = Box(tmp_path, idle="1m", grace="0", job=name, billing_aware="false")
        box.run(T0)
        box.run(T0 + 3600)
        assert not box.shut_down
        assert f"busy: job '{name}' is running" in box.log()
    finally:
        job.kill()
        job.wait()


def test_job_name_is_not_a_pattern(tmp_path: Path) -> None:
    # 'train.py' as a pattern would also match 'trainXpy': another process must not keep the box up
    job = _python_job(f"train-{tmp_path.name}Xpy")
    try:
        box = Box(tmp_path, idle="1m", grace="0", job=f"train-{tmp_path.name}.py", billing_aware="false")
        box.run(T0)
        box.run(T0 + 60)
        assert box.shut_down
    finally:
        job.kill()
        job.wait()


def test_container_running_keeps_the_box_up(tmp_path: Path) -> None:
    box = Box(tmp_path, idle="1m", grace="0", container="trainer", billing_aware="false")
    docker = box.bin / "docker"
    docker.write_text('#!/bin/sh\n[ "$4" = trainer ] && echo true\n')
    docker.chmod(0o755)
    box.run(T0)
    box.run(T0 + 600)
    assert not box.shut_down and "busy: container 'trainer' is running" in box.log()
    docker.write_text("#!/bin/sh\necho false\n")
    box.run(T0 + 660)
    box.run(T0 + 720)
    assert box.shut_down


def test_docker_that_does_not_answer_never_reads_as_a_stopped_container(tmp_path: Path) -> None:
    # a watcher that may not reach the daemon (not root, not in the docker group) or a daemon
    # that is restarting said "not running": the box was shut down under a training container
    # the real Docker CLI (this machine has a client without an engine; /usr/bin/docker may be
    # podman's shim, which needs no daemon)
    client = Path("/usr/local/bin/docker")
    if not client.exists() or "podman" in client.read_bytes()[:4096].decode(errors="replace"):
        pytest.skip("needs the Docker CLI at /usr/local/bin/docker (a client without a daemon is enough)")
    box = Box(tmp_path, idle="1m", grace="0", container="trainer", billing_aware="false")
    (box.bin / "docker").symlink_to(client)
    nowhere = f"unix://{tmp_path}/no-daemon.sock"
    box.run(T0, DOCKER_HOST=nowhere)
    box.run(T0 + 600, DOCKER_HOST=nowhere)
    assert not box.shut_down
    assert (
        "busy: docker inspect failed (container activity unknown): Cannot connect to the Docker daemon"
        in (box.log())
    )


def test_a_container_that_is_gone_lets_the_box_go_idle(tmp_path: Path) -> None:
    box = Box(tmp_path, idle="1m", grace="0", container="trainer", billing_aware="false")
    docker = box.bin / "docker"  # what the docker CLI says for a container that does not exist
    docker.write_text('#!/bin/sh\necho "Error: No such object: $4" >&2\nexit 1\n')
    docker.chmod(0o755)
    box.run(T0)
    box.run(T0 + 60)
    assert box.shut_down, box.log()


def test_failing_before_shutdown_blocks_shutdown_and_retries(tmp_path: Path) -> None:
    flag = tmp_path / "upload-ok"
    cmd = f"echo uploading; test -e {flag}"
    box = Box(tmp_path, idle="1m", grace="0", before_shutdown=cmd, billing_aware="false")
    box.run(T0)
    box.run(T0 + 60)
    box.run(T0 + 120)
    assert not box.shut_down
    assert box.log().count("before_shutdown failed (exit 1); NOT shutting down, retry next tick") == 2
    flag.touch()
    box.run(T0 + 180)
    assert box.shut_down
    assert "before_shutdown done" in box.log() and "uploading" in box.log()


def test_before_shutdown_timeout_blocks_shutdown(tmp_path: Path) -> None:
    box = Box(
        tmp_path, idle="1m", grace="0", before_shutdown="sleep 5", before_timeout="1s", billing_aware="no"
    )
    box.run(T0)
    box.run(T0 + 60)
    assert not box.shut_down
    assert "before_shutdown timed out; NOT shutting down" in box.log()


def test_cancel_during_before_shutdown_prevents_the_shutdown(tmp_path: Path) -> None:
    # `invoke autostop --cancel` removes the config while before_shutdown runs (here the
    # command itself removes it, standing in for the cancel): the tick must not shut down,
    # must not write its log or state back, and must release its lock
    conf = tmp_path / "autostop" / "autostop.conf"
    box = Box(tmp_path, idle="1m", grace="0", billing_aware="no", before_shutdown=f"rm -f {conf}")
    box.run(T0)
    r = box.run(T0 + 60)
    assert not box.shut_down
    assert r.stderr == "autostop: the watcher was cancelled while this tick ran; not shutting down\n"
    assert not (box.dir / "lock").exists()
    assert "shutdown:" not in box.log()


def test_settings_changed_during_before_shutdown_defer_the_decision(tmp_path: Path) -> None:
    # a rerun of `invoke autostop` with other settings while before_shutdown ran: no shutdown
    # on the old settings; the next tick decides with the new ones
    conf = tmp_path / "autostop" / "autostop.conf"
    edit = f"sed -i s/^GRACE=0/GRACE=60/ {conf}"
    box = Box(tmp_path, idle="1m", grace="0", billing_aware="no", before_shutdown=edit)
    box.run(T0)
    box.run(T0 + 60)
    assert not box.shut_down
    assert (
        "the settings changed while this tick ran; not shutting down now (the next tick decides again)"
        in box.log()
    )
    # the warning went out under the old settings: withdrawn, warned anew, acted on GRACE (60s) later
    box.run(T0 + 120)
    assert not box.shut_down
    assert "the settings changed since the idle warning: it is withdrawn" in box.log()
    box.run(T0 + 180)
    assert box.shut_down


def test_force_shuts_down_despite_failing_before_shutdown(tmp_path: Path) -> None:
    box = Box(tmp_path, idle="1m", grace="0", before_shutdown="exit 3", force=True, billing_aware="no")
    box.run(T0)
    box.run(T0 + 60)
    assert box.shut_down
    assert "before_shutdown failed (exit 3); force is set: shutting down anyway" in box.log()


def test_stale_state_from_before_a_reboot_is_discarded(box: Box) -> None:
    box.run(T0)
    box.run(T0 + 1800)  # warned
    assert box.state()["warned_at"] == str(T0 + 1800)
    box.boot_id = "boot-2"  # the host rebooted
    box.run(T0 + 2400)
    assert not box.shut_down
    assert "new boot (boot-2): discarding state from boot boot-1" in box.log()
    state = box.state()
    assert (
        state.pop("conf_sum")
        == subprocess.run(
            ["cksum"], input=(box.dir / "autostop.conf").read_text(), capture_output=True, text=True
        ).stdout.strip()
    )
    assert state == {
        "boot_id": "boot-2",
        "idle_since": str(T0 + 2400),
        "warned_at": "0",
        "hard_warned": "",
        "hard_warned_at": "0",
        "shutdown_at": "0",
        "idle_since_up": str(T0 + 2400),  # (the test clock moves the uptime too)
        "warned_up": "",
        "hard_warned_up": "",
    }


def test_billing_aware_waits_until_the_end_of_the_paid_hour(tmp_path: Path) -> None:
    # billing started at boot (T0); idle 10m + grace 0 would act at T0+10m, but the hour is paid
    box = Box(tmp_path, idle="10m", grace="0", billing_aware="true", margin="5m")
    box.run(T0)
    box.ticks(T0 + 600, 44)  # minutes 10..53
    assert not box.shut_down
    assert "idle; waiting for the end of the paid hour: acting at 2027-01-15T08:55:00Z" in box.log()
    status = box.run(T0 + 1000, "status").stdout
    assert "would act: 2027-01-15T08:55:00Z (idle)" in status
    box.run(T0 + 3300)  # 55 min: within the 5 min margin before the next billing hour
    assert box.shut_down


def test_billing_aware_auto_follows_the_billing_unit() -> None:
    assert parse_settings({"billing_unit": "hour"}).billing_aware
    assert not parse_settings({"billing_unit": "second"}).billing_aware
    assert not parse_settings({"billing_unit": "hour", "billing_aware": "off"}).billing_aware


def test_max_hours_deadline_acts_whatever_the_activity(tmp_path: Path) -> None:
    box = Box(tmp_path, idle="30m", grace="5m", max_hours="2", billing_aware="no")
    box.gpu("100")
    box.run(T0 + 3600)
    box.run(T0 + 7200 - 300)  # grace before the deadline: warning
    assert "warn: max-hours deadline soon; will act at 2027-01-15T10:00:00Z" in box.log()
    assert not box.shut_down
    box.run(T0 + 7200)
    assert box.shut_down
    assert "shutdown: max-hours deadline; running:" in box.log()


def test_heartbeat_shuts_down_when_the_lease_is_not_renewed(tmp_path: Path) -> None:
    box = Box(tmp_path, idle="30m", heartbeat="6h", billing_aware="no")
    box.gpu("100")
    (box.dir / "lease").write_text(f"{T0 + 3600}\n")  # renewed by the control machine
    box.run(T0 + 6 * 3600)
    assert not box.shut_down
    status = box.run(T0 + 6 * 3600, "status").stdout
    assert "would act: 2027-01-15T15:00:00Z (heartbeat lease expired)" in status
    box.run(T0 + 7 * 3600 - 300)  # grace before expiry: the warning
    assert "warn: heartbeat lease expired soon; will act at 2027-01-15T15:00:00Z" in box.log()
    box.run(T0 + 7 * 3600)
    assert box.shut_down
    assert "shutdown: heartbeat lease expired" in box.log()


def test_expired_heartbeat_found_without_warning_warns_then_waits_grace(tmp_path: Path) -> None:
    # no tick saw the lease about to expire (cron stopped, box suspended, a short heartbeat):
    # the expiry is announced first and acted on one grace period later, never at once
    box = Box(tmp_path, idle="30m", grace="5m", heartbeat="6h", billing_aware="no")
    box.gpu("100")
    (box.dir / "lease").write_text(f"{T0}\n")
    box.run(T0 + 9 * 3600)
    assert not box.shut_down
    assert (
        "warn: heartbeat lease expired (due 2027-01-15T14:00:00Z, not announced before);"
        " will act at 2027-01-15T17:05:00Z" in box.log()
    )
    assert (
        "would act: 2027-01-15T17:05:00Z (heartbeat lease expired)" in box.run(T0 + 9 * 3600, "status").stdout
    )
    box.run(T0 + 9 * 3600 + 240)
    assert not box.shut_down
    box.run(T0 + 9 * 3600 + 300)
    assert box.shut_down
    assert "shutdown: heartbeat lease expired" in box.log()


def test_max_hours_deadline_found_past_warns_first_then_waits_grace(tmp_path: Path) -> None:
    # the QA case: a watcher installed 2 days ago, whose deadline lies in the past at the
    # first tick that knows about it; before the fix it shut down at that tick, unannounced
    box = Box(tmp_path, idle="30m", grace="5m", max_hours="2", billing_aware="no")
    (box.dir / "installed_at").write_text(f"{T0 - 2 * 86400}\n")
    box.gpu("100")
    box.run(T0)
    assert not box.shut_down
    assert (
        "warn: max-hours deadline (due 2027-01-13T10:00:00Z, not announced before);"
        " will act at 2027-01-15T08:05:00Z" in box.log()
    )
    assert box.state()["hard_warned_at"] == str(T0)
    box.run(T0 + 240)
    assert not box.shut_down
    box.run(T0 + 300)
    assert box.shut_down
    assert "shutdown: max-hours deadline; running:" in box.log()


def test_hard_warning_from_an_older_watchers_state_still_leads_to_acting(tmp_path: Path) -> None:
    # state written by a watcher before hard_warned_at existed: warned, but no warning time
    box = Box(tmp_path, idle="30m", grace="5m", max_hours="2", billing_aware="no")
    box.gpu("100")
    due = T0 + 7200
    state = f"boot_id=boot-1\nidle_since=\nwarned_at=0\nhard_warned=max-hours deadline@{due}\nshutdown_at=0\n"
    (box.dir / "state").write_text(state)
    box.run(due)
    assert not box.shut_down and box.state()["hard_warned_at"] == str(due)
    box.run(due + 300)
    assert box.shut_down


def test_max_hours_counts_from_when_it_was_set(tmp_path: Path) -> None:
    # installed at T0; --max-hours 2 added a day later (the installer writes max_since)
    box = Box(tmp_path, idle="30m", grace="5m", max_hours="2", billing_aware="no")
    (box.dir / "max_since").write_text(f"{T0 + 86400}\n")
    box.gpu("100")
    box.run(T0 + 86400 + 600)
    assert not box.shut_down and "warn" not in box.log()
    status = box.run(T0 + 86400 + 600, "status").stdout
    assert (
        "max-hours: deadline 2027-01-16T10:00:00Z (2h00m00s after 2027-01-16T08:00:00Z,"
        " when --max-hours was set)" in status
    )
    assert "would act: 2027-01-16T10:00:00Z (max-hours deadline)" in status
    box.run(T0 + 86400 + 7200 - 300)
    assert "warn: max-hours deadline soon; will act at 2027-01-16T10:00:00Z" in box.log()
    box.run(T0 + 86400 + 7200)
    assert box.shut_down


def test_status_reports_watch_list_idle_since_and_next_action(tmp_path: Path) -> None:
    # a job name no other process on this (shared) machine has: a real train.py would keep it busy
    job = f"train-{tmp_path.name}.py"
    box = Box(tmp_path, idle="30m", job=job, billing_aware="no")
    assert "idle since: - (no check yet since boot)" in box.run(T0, "status").stdout
    box.run(T0)
    out = box.run(T0 + 600, "status").stdout
    assert f"watching: GPU utilisation > 5%; job '{job}' (process, tmux or screen session)" in out
    assert "idle since: 2027-01-15T08:00:00Z (10m00s)" in out
    assert "would act: 2027-01-15T08:35:00Z (idle), unless activity resumes" in out
    assert "shutdown command: touch " in out
    assert not box.shut_down


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        ({"idle": "5x"}, "argument 'idle'"),
        ({"idle": "30s"}, "at least 1m"),
        ({"max_hours": "soon"}, "argument 'max_hours'"),
        ({"pid": "12a"}, "argument 'pid'"),
        ({"job": "a", "pid": "3"}, "only one of"),
        ({"gpu_threshold": "101"}, "gpu_threshold"),
    ],
)
def test_bad_settings_name_the_argument(args: dict[str, str], fragment: str) -> None:
    with pytest.raises(StepArgsError, match=fragment):
        parse_settings(args)


@pytest.mark.parametrize(
    ("args", "sentence"),
    [
        (
            {"heartbeat": "6"},
            "argument 'heartbeat' must be at least 5m (a bare number counts as seconds: write 6h"
            " for six hours), not '6'",
        ),
        (
            {"max_hours": "0.001"},
            "argument 'max_hours' must be a number of hours from 0.25 to 8760 (or 0 for no deadline),"
            " not '0.001'",
        ),
        *(
            (
                {"max_hours": v},
                f"argument 'max_hours' must be a number of hours from 0.25 to 8760 (or 0 for no deadline),"
                f" not '{v}'",
            )
            for v in ("nan", "inf", "1e400", "-3", "9000")
        ),
        *(
            (
                {"pid": v},
                "argument 'pid' must be a process id from 2 to 4194304 (0 and 1 are always alive,"
                f" so the box would never count as idle), not '{v}'",
            )
            for v in ("0", "1", "00", "4194305")
        ),
        ({"idle": "9" * 400 + "h"}, f"argument 'idle' must be at most 366d, not '{'9' * 400}h'"),
        # float() and int() take '1_0' as 10 (and other scripts' digits): refused
        *(
            ({"max_hours": v}, f"argument 'max_hours' must be a number of hours, not '{v}'")
            for v in ("1_0", "١٠")
        ),
        # a wrong --gpu-threshold is named alone (the old sentence named billing_anchor too)
        *(
            (
                {"gpu_threshold": v},
                f"argument 'gpu_threshold' must be a whole percentage from 0 to 99, not '{v}'",
            )
            for v in ("5.5", "1_0", "101", "-1")
        ),
        # a GPU is busy ABOVE the threshold: at 100 a box training at 100 % read as idle
        (
            {"gpu_threshold": "100"},
            "argument 'gpu_threshold' must be a whole percentage from 0 to 99 (a GPU counts as busy"
            " above it: above 100 none ever would, so a box training at 100 % would be shut down as"
            " idle), not '100'",
        ),
        (
            {"billing_anchor": "1_700_000_000"},
            "argument 'billing_anchor' must be epoch seconds (digits), not '1_700_000_000'",
        ),
        # a grace as long as a hard deadline: the box would go down later than the install said
        (
            {"max_hours": "0.25", "grace": "2h"},
            "argument 'grace' must be shorter than argument 'max_hours' (15m00s), not '2h': the warning"
            " goes out one grace period before that deadline",
        ),
        (
            {"max_hours": "1", "grace": "366d"},
            "argument 'grace' must be shorter than argument 'max_hours' (1h00m00s), not '366d': the"
            " warning goes out one grace period before that deadline",
        ),
        (
            {"heartbeat": "6h", "grace": "6h"},
            "argument 'grace' must be shorter than argument 'heartbeat' (6h00m00s), not '6h': the warning"
            " goes out one grace period before that deadline",
        ),
        # `timeout 0 CMD` means no limit: the documented hard limit was gone
        (
            {"before_timeout": "0"},
            "argument 'before_timeout' must be at least 1s (0 would mean no limit), not '0'",
        ),
    ],
)
def test_out_of_range_settings_are_refused_in_one_sentence(args: dict[str, str], sentence: str) -> None:
    with pytest.raises(StepArgsError) as exc:
        parse_settings(args)
    assert str(exc.value) == sentence


def test_smallest_allowed_heartbeat_and_max_hours() -> None:
    s = parse_settings({"heartbeat": "5m", "max_hours": "0.25", "pid": "2", "grace": "4m"})
    assert (s.heartbeat, s.max_seconds, s.pid) == (300, 900, "2")
    assert parse_settings({"heartbeat": "0", "max_hours": "0"}).max_seconds == 0


def test_hostile_values_stay_data(tmp_path: Path) -> None:
    pwned = tmp_path / "pwned"
    box = Box(tmp_path, idle="1m", grace="0", job=f"x'; touch {pwned}; '$(touch {pwned})", billing_aware="no")
    box.run(T0)
    box.run(T0 + 60)
    assert box.shut_down and not pwned.exists()
    assert os.path.exists(box.dir / "state")


def _hang(box: Box) -> None:
    """A fake nvidia-smi that never answers (a hung GPU driver)."""
    tool = box.bin / "nvidia-smi"
    tool.write_text("#!/bin/sh\nexec sleep 600\n")
    tool.chmod(0o755)


def test_a_hung_nvidia_smi_is_given_up_on_and_counts_as_busy(box: Box) -> None:
    _hang(box)
    started = time.monotonic()
    box.run(T0, GPUONBOARD_PROBE_TIMEOUT="1")
    assert time.monotonic() - started < 10
    assert "busy: nvidia-smi did not answer within 1s (GPU activity unknown); idle timer reset" in box.log()
    assert box.state()["idle_since"] == ""


def test_a_lock_whose_pid_is_another_process_is_taken_over(box: Box) -> None:
    # after a VM restart the pid in a stale lock belongs to some other live process: before the
    # fix every later tick saw it alive and exited silently, forever (max-hours included)
    other = subprocess.Popen(["sleep", "60"])
    try:
        (box.dir / "lock").mkdir()
        (box.dir / "lock" / "pid").write_text(f"{other.pid}\n")
        box.run(T0)
        assert f"took the lock over: process {other.pid} is not an autostop tick" in box.log()
        assert "idle: no activity seen; idle timer starts" in box.log()
        assert not (box.dir / "lock").exists() and other.poll() is None  # (not ours: left alone)
    finally:
        other.kill()
        other.wait()


def test_a_lock_from_another_boot_is_taken_over(box: Box) -> None:
    _hang(box)
    box.boot_id = "boot-0"
    stuck = box.start_tick(T0, GPUONBOARD_PROBE_TIMEOUT="600")
    try:
        box.boot_id = "boot-1"
        box.run(T0 + 60, GPUONBOARD_PROBE_TIMEOUT="1")
        assert "took the lock over: it is from another boot (boot-0)" in box.log()
    finally:
        end_session(stuck)


def test_a_stuck_tick_is_reported_taken_over_and_stopped_and_max_hours_still_acts(tmp_path: Path) -> None:
    # a tick hangs in nvidia-smi; later ticks wait for it while it may still be working (less
    # than 2 x before_timeout + 5m = 7m here), then take the lock over, stop it, and the
    # max-hours deadline acts as planned
    box = Box(tmp_path, idle="30m", grace="5m", max_hours="0.25", before_timeout="1m", billing_aware="no")
    _hang(box)
    stuck = box.start_tick(T0, GPUONBOARD_PROBE_TIMEOUT="600")
    try:
        box.run(T0 + 300, GPUONBOARD_PROBE_TIMEOUT="1")  # within the bound: it waits, silently
        assert box.log() == ""
        status = box.run(T0 + 300, "status").stdout
        assert f"tick: running (pid {stuck.pid}, since 2027-01-15T08:00:00Z)" in status
        status = box.run(T0 + 420, "status").stdout
        assert (
            f"tick: STUCK: tick {stuck.pid} has held it since 2027-01-15T08:00:00Z, longer than 7m00s;"
            " the next check takes the lock over and stops it" in status
        )
        box.run(T0 + 420, GPUONBOARD_PROBE_TIMEOUT="1")
        assert (
            f"took the lock over: tick {stuck.pid} has held it since 2027-01-15T08:00:00Z, longer than"
            " 7m00s; stopped it" in box.log()
        )
        assert stuck.wait(timeout=10) == -signal.SIGTERM
        assert "busy: nvidia-smi did not answer within 1s (GPU activity unknown)" in box.log()
        # the deadline (T0+15m) comes before any probe: warned at T0+10m, acted on at T0+15m
        box.run(T0 + 600, GPUONBOARD_PROBE_TIMEOUT="1")
        assert "warn: max-hours deadline soon; will act at 2027-01-15T08:15:00Z" in box.log()
        box.run(T0 + 900, GPUONBOARD_PROBE_TIMEOUT="1")
        assert box.shut_down and "shutdown: max-hours deadline; running:" in box.log()
        assert not (box.dir / "lock").exists()
    finally:
        end_session(stuck)


def test_a_before_shutdown_that_ignores_sigterm_is_killed_at_the_timeout(tmp_path: Path) -> None:
    marker = f"ignores-term-{tmp_path.name}"
    cmd = f"trap '' TERM; sleep 60; : {marker}"
    box = Box(tmp_path, idle="1m", grace="0", before_shutdown=cmd, before_timeout="1s", billing_aware="no")
    box.run(T0)
    started = time.monotonic()
    # (before the fix: `timeout` without -k waited for the full 60 s; the kill comes 10 s after
    # SIGTERM, 1 s here)
    box.run(T0 + 60, GPUONBOARD_KILL_AFTER="1")
    assert time.monotonic() - started < 8
    assert not box.shut_down
    assert (
        "before_shutdown timed out (killed 1s after SIGTERM, which it ignored); NOT shutting down,"
        " retry next tick" in box.log()
    )
    left = [p for p in Path("/proc").iterdir() if p.name.isdigit() and _cmdline_has(p, marker)]
    assert left == []


def _cmdline_has(proc_dir: Path, text: str) -> bool:
    try:
        return text.encode() in (proc_dir / "cmdline").read_bytes()
    except OSError:
        return False


def test_a_lease_renewed_while_before_shutdown_runs_stops_the_shutdown(tmp_path: Path) -> None:
    lease = tmp_path / "autostop" / "lease"
    renewed = T0 + 6 * 3600 + 10
    # the control machine renews the lease (`invoke autostop`) while the upload runs
    box = Box(
        tmp_path, idle="30m", heartbeat="6h", billing_aware="no", before_shutdown=f"echo {renewed} > {lease}"
    )
    box.gpu("100")
    lease.write_text(f"{T0}\n")
    box.run(T0 + 6 * 3600 - 300)  # the warning
    box.run(T0 + 6 * 3600)  # acts: before_shutdown renews the lease
    assert not box.shut_down
    assert (
        "the heartbeat lease was renewed while this tick ran (the lease now runs out at"
        " 2027-01-15T20:00:10Z); not shutting down now (the next tick decides again)" in box.log()
    )
    box.run(T0 + 6 * 3600 + 60)
    assert not box.shut_down


def test_a_pending_idle_warning_is_withdrawn_when_the_settings_change(box: Box) -> None:
    # idle 30m warned; the user raises --idle to 2h: before the fix the old warning stood, so
    # at 2h the tick acted at once (no wall message, no grace) and status showed a past time
    box.run(T0)
    box.run(T0 + 1800)
    assert box.state()["warned_at"] == str(T0 + 1800)
    box.reconfigure(idle="2h", grace="5m", billing_aware="false")
    status = box.run(T0 + 1830, "status").stdout
    assert "would act: 2027-01-15T10:05:00Z (idle), unless activity resumes" in status
    assert "warned: the last warning was given under other settings; the next check warns anew" in status
    box.run(T0 + 1860)
    assert "the settings changed since the idle warning: it is withdrawn" in box.log()
    assert box.state()["warned_at"] == "0"
    box.run(T0 + 7200)
    assert not box.shut_down
    assert "warn: idle for 2h00m00s; will act at 2027-01-15T10:05:00Z" in box.log()
    box.run(T0 + 7200 + 300)
    assert box.shut_down


def test_status_of_an_idle_box_not_warned_yet_says_a_time_to_come(box: Box) -> None:
    # idle past the threshold, but no check warned yet (cron paused): the act time is one grace
    # after the next check, not idle-since + idle + grace (in the past)
    box.run(T0)
    status = box.run(T0 + 7200, "status").stdout
    assert "would act: 2027-01-15T10:05:00Z (idle), unless activity resumes" in status


# The watcher counts durations on the uptime, not on the wall clock.
#
# chrony or ntpd stepping the clock after boot, or a VM resumed after a pause, moves the wall
# clock by hours at once. The watcher script runs for real under /bin/sh; GPUONBOARD_NOW fakes
# the wall clock and GPUONBOARD_UPTIME the seconds since boot (/proc/uptime), so a tick can see
# the wall clock jump 3 hours while the uptime moves 60 s. The shutdown command only touches a
# marker file.

U0 = 5000  # the uptime at T0
STEP = 3 * 3600  # the wall clock jumps this far forward


def tick(box: Box, wall: int, up: int, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return box.run(wall, *args, GPUONBOARD_UPTIME=str(up), **env)


def idle_ticks(box: Box, minutes: int) -> None:
    """One tick a minute from T0 (uptime U0) on a clock that does not step."""
    for m in range(minutes):
        tick(box, T0 + 60 * m, U0 + 60 * m)


def test_a_forward_step_of_the_clock_does_not_make_the_box_idle_for_hours(tmp_path: Path) -> None:
    box = Box(tmp_path, idle="30m", grace="5m", billing_aware="no")
    idle_ticks(box, 3)  # idle for 2 minutes
    tick(box, T0 + 180 + STEP, U0 + 180)  # a minute later by the uptime, 3 h later by the clock
    assert "warn:" not in box.log()
    assert box.log().splitlines()[-1].endswith("idle for 3m00s of 30m00s")
    status = tick(box, T0 + 180 + STEP, U0 + 180, "status").stdout
    # shown on today's clock, counted on the uptime
    assert "idle since: 2027-01-15T11:00:00Z (3m00s)" in status
    assert "would act: 2027-01-15T11:35:00Z (idle), unless activity resumes" in status
    assert not box.shut_down


def test_the_grace_after_an_idle_warning_holds_across_a_forward_step(tmp_path: Path) -> None:
    box = Box(tmp_path, idle="30m", grace="5m", billing_aware="no")
    idle_ticks(box, 31)  # idle for 30 minutes at T0+30m: warned, acts 5 minutes later
    assert "warn: idle for 30m00s; will act at 2027-01-15T08:35:00Z" in box.log()
    for m in range(1, 5):  # the clock stepped 3 h forward right after the warning
        tick(box, T0 + 1800 + STEP + 60 * m, U0 + 1800 + 60 * m)
        assert not box.shut_down, f"shut down {m} minute(s) after the warning, grace is 5m"
    assert box.log().splitlines()[-1].endswith("idle; grace period: acting at 2027-01-15T11:35:00Z")
    tick(box, T0 + 1800 + STEP + 300, U0 + 1800 + 300)
    assert box.shut_down
    assert "shutdown: idle for 35m00s; running:" in box.log()


def test_a_backward_step_of_the_clock_does_not_keep_an_idle_box_up(tmp_path: Path) -> None:
    box = Box(tmp_path, idle="30m", grace="5m", billing_aware="no")
    idle_ticks(box, 10)
    for m in range(10, 36):  # the clock stepped 3 h back at T0+10m; the box stays idle
        tick(box, T0 - STEP + 60 * m, U0 + 60 * m)
    assert "warn: idle for 30m00s; will act at 2027-01-15T05:35:00Z" in box.log()
    assert box.shut_down


def test_a_state_from_an_older_watcher_never_makes_it_act_early(tmp_path: Path) -> None:
    # the old watcher kept wall-clock times only: idle for 10 h and warned an hour ago by them
    box = Box(tmp_path, idle="30m", grace="5m", billing_aware="no")
    conf_sum = subprocess.run(
        ["cksum"], input=(box.dir / "autostop.conf").read_text(), capture_output=True, text=True
    ).stdout.strip()
    (box.dir / "state").write_text(
        f"boot_id=boot-1\nidle_since={T0 - 36000}\nwarned_at={T0 - 3600}\nhard_warned=\n"
        f"hard_warned_at=0\nshutdown_at=0\nconf_sum={conf_sum}\n"
    )
    status = tick(box, T0, U0, "status")
    assert "idle since: 2027-01-15T08:00:00Z (0s)" in status.stdout
    assert "would act: 2027-01-15T08:35:00Z (idle), unless activity resumes" in status.stdout
    tick(box, T0, U0)
    assert not box.shut_down
    assert (
        "the state holds no uptime for idle-since (an older watcher wrote it, or the clock since boot"
        " went back): idle time counts from now" in box.log()
    )
    assert box.state()["idle_since_up"] == str(U0) and box.state()["warned_at"] == "0"
    for m in range(1, 35):  # warned anew after 30 minutes, acts 5 minutes later
        tick(box, T0 + 60 * m, U0 + 60 * m)
        assert not box.shut_down
    assert "warn: idle for 30m00s; will act at 2027-01-15T08:35:00Z" in box.log()
    tick(box, T0 + 2100, U0 + 2100)
    assert box.shut_down


def test_an_old_state_warned_by_a_hard_trigger_keeps_the_whole_grace(tmp_path: Path) -> None:
    box = Box(tmp_path, idle="30m", grace="5m", max_hours="1", billing_aware="no")
    box.gpu("100")
    (box.dir / "state").write_text(
        f"boot_id=boot-1\nidle_since=\nwarned_at=0\nhard_warned=max-hours deadline@{T0 + 3600}\n"
        f"hard_warned_at={T0 - 36000}\nshutdown_at=0\n"
    )
    tick(box, T0 + 3600, U0)  # the deadline, warned 10 h ago by the old watcher's clock
    assert not box.shut_down  # its grace counts from now
    assert box.state()["hard_warned_up"] == str(U0)
    tick(box, T0 + 3600 + 240, U0 + 240)
    assert not box.shut_down
    tick(box, T0 + 3600 + 300, U0 + 300)
    assert box.shut_down


def test_uptimes_later_than_now_are_from_another_boot_and_count_from_now(tmp_path: Path) -> None:
    # the boot id could not tell the reboot (no /proc/sys/kernel/random/boot_id): the uptime
    # went back, the state's uptimes are later than now
    box = Box(tmp_path, idle="30m", grace="5m", billing_aware="no")
    idle_ticks(box, 31)  # warned at uptime U0+30m
    tick(box, T0 + 3600, 60)
    assert not box.shut_down
    assert box.state()["idle_since_up"] == "60"


def test_the_grace_after_a_max_hours_warning_holds_across_a_forward_step(tmp_path: Path) -> None:
    box = Box(tmp_path, idle="30m", grace="5m", max_hours="1", billing_aware="no")
    box.gpu("100")  # busy: only the hard deadline (T0+1h, on the wall clock) acts
    tick(box, T0 + 3300, U0 + 3300)
    assert "warn: max-hours deadline soon; will act at 2027-01-15T09:00:00Z" in box.log()
    for m in range(1, 5):  # the clock stepped 3 h forward right after the warning
        tick(box, T0 + 3300 + STEP + 60 * m, U0 + 3300 + 60 * m)
        assert not box.shut_down, f"shut down {m} minute(s) after the warning, grace is 5m"
    status = tick(box, T0 + 3300 + STEP + 240, U0 + 3300 + 240, "status").stdout
    assert "would act: 2027-01-15T12:00:00Z (max-hours deadline)" in status
    tick(box, T0 + 3300 + STEP + 300, U0 + 3300 + 300)
    assert box.shut_down and "shutdown: max-hours deadline; running:" in box.log()


def test_a_heartbeat_lease_runs_out_on_the_uptime_within_its_boot(tmp_path: Path) -> None:
    box = Box(tmp_path, idle="30m", grace="5m", heartbeat="6h", billing_aware="no")
    box.gpu("100")
    # renewed at T0, uptime U0, this boot (as `invoke autostop` writes it)
    (box.dir / "lease").write_text(f"{T0}\n")
    (box.dir / "lease_up").write_text(f"{T0} {U0} boot-1\n")
    tick(box, T0 + 3600 + STEP, U0 + 3600)  # an hour later, the clock stepped 3 h forward
    tick(box, T0 + 3 * 3600 + STEP, U0 + 3 * 3600)  # 3 h after the renewal, 6 h by the clock
    assert "warn:" not in box.log()
    status = tick(box, T0 + 3 * 3600 + STEP, U0 + 3 * 3600, "status").stdout
    assert "heartbeat: lease renewed 2027-01-15T11:00:00Z, expires 2027-01-15T17:00:00Z" in status
    tick(box, T0 + 6 * 3600 - 300 + STEP, U0 + 6 * 3600 - 300)
    assert "warn: heartbeat lease expired soon; will act at 2027-01-15T17:00:00Z" in box.log()
    tick(box, T0 + 6 * 3600 - 60 + STEP, U0 + 6 * 3600 - 60)
    assert not box.shut_down
    tick(box, T0 + 6 * 3600 + STEP, U0 + 6 * 3600)
    assert box.shut_down and "shutdown: heartbeat lease expired; running:" in box.log()


def test_a_lease_up_that_is_not_the_leases_or_from_another_boot_is_not_used(tmp_path: Path) -> None:
    for i, lease_up in enumerate((f"{T0 - 60} {U0} boot-1\n", f"{T0} {U0} boot-0\n")):
        (tmp_path / str(i)).mkdir()
        box = Box(tmp_path / str(i), idle="30m", heartbeat="6h")
        (box.dir / "lease").write_text(f"{T0}\n")
        (box.dir / "lease_up").write_text(lease_up)
        # the lease's own wall-clock time counts, as before lease_up existed
        status = tick(box, T0 + 60, U0 + 60 + 3600, "status").stdout
        assert "heartbeat: lease renewed 2027-01-15T08:00:00Z, expires 2027-01-15T14:00:00Z" in status


def test_a_running_tick_is_not_taken_for_stuck_after_a_forward_step(tmp_path: Path) -> None:
    box = Box(tmp_path, idle="30m", grace="5m", before_timeout="1m", billing_aware="no")
    _hang(box)
    running = box.start_tick(T0, GPUONBOARD_PROBE_TIMEOUT="600", GPUONBOARD_UPTIME=str(U0))
    try:
        assert (box.dir / "lock" / "since").read_text().split() == [str(T0), "boot-1", str(U0)]
        # a minute later by the uptime, 3 h by the clock: far from the 7m bound, it waits
        status = tick(box, T0 + 60 + STEP, U0 + 60, "status").stdout
        assert f"tick: running (pid {running.pid}, since 2027-01-15T08:00:00Z)" in status
        tick(box, T0 + 60 + STEP, U0 + 60, GPUONBOARD_PROBE_TIMEOUT="1")
        assert "took the lock over" not in box.log()
        assert running.poll() is None
        # 7 minutes by the uptime: stuck, taken over
        tick(box, T0 + 420 + STEP, U0 + 420, GPUONBOARD_PROBE_TIMEOUT="1")
        assert f"took the lock over: tick {running.pid} has held it since 2027-01-15T08:00:00Z" in box.log()
    finally:
        end_session(running)


# The watcher's log holds the before_shutdown command (which may carry a token: the config is
# 0600 for that reason) and its output. cron's shell creates the log through the entry's
# `>>autostop.log` with cron's umask, 022: before, the log was 0644, readable by every user of
# the box where the directory is not private (a chosen autostop_dir such as /data keeps its
# mode). The real cron entry's command runs with /bin/sh under umask 022; the shutdown command
# only creates a marker file (never a power-off).

TOKEN = "s3cr3t-token-1234"  # a made-up credential in the before_shutdown command


def cron_tick(box: Box, now: int) -> None:
    """cron's own command line for this watcher, as cron runs it (umask 022)."""
    line = cron_file_text(str(box.dir)).splitlines()[1]
    command = line.split(None, 6)[6]
    subprocess.run(["/bin/sh", "-c", f"umask 022; {command}"], env=box.env(now), check=True, timeout=30)


def test_the_log_with_the_before_shutdown_command_is_private(tmp_path: Path) -> None:
    before = f"echo uploading with --token={TOKEN}"
    box = Box(tmp_path, idle="1m", grace="1m", before_shutdown=before)
    box.dir.chmod(0o755)  # a chosen autostop_dir keeps its mode
    for m in range(4):
        cron_tick(box, T0 + 60 * m)
    assert box.marker.exists()
    log = box.dir / "autostop.log"
    # (the echo's own output, scrubbed as written: review safety32; it was there in clear)
    assert TOKEN not in log.read_text() and "\nuploading with ********\n" in log.read_text()
    assert stat.S_IMODE(log.stat().st_mode) == 0o600


def test_a_rotated_log_stays_private(tmp_path: Path) -> None:
    box = Box(tmp_path, idle="30m")
    box.dir.chmod(0o755)
    log = box.dir / "autostop.log"
    log.write_text(f"run before_shutdown: curl --token={TOKEN}\n" + "x" * 1048577)
    log.chmod(0o644)  # as cron's shell created it before
    cron_tick(box, T0)
    rotated = box.dir / "autostop.log.1"
    assert TOKEN in rotated.read_text()
    assert stat.S_IMODE(rotated.stat().st_mode) == 0o600
    assert stat.S_IMODE(log.stat().st_mode) == 0o600


def _cmdlines_holding(text: str) -> list[str]:
    """The command lines of this machine's processes that hold `text` (what `ps` shows every user)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                line = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if text in line:
                found.append(line)
    return found


@pytest.mark.parametrize("which", ["before_shutdown", "shutdown_command"])
def test_a_token_in_the_before_or_shutdown_command_never_shows_in_ps(tmp_path: Path, which: str) -> None:
    """--before-shutdown (a checkpoint upload with a token) and the shutdown command (a vendor's
    stop API called with a token) ran as `sh -c "CMD"`: while they ran (up to before_timeout),
    every user of the host saw the token in `ps`, though the install keeps them in a 0600 config
    and off every command line. Each command here waits for a flag, so the test reads /proc
    while it runs."""
    token = f"tok-{os.getpid()}-{len(tmp_path.name)}x"
    started, go = tmp_path / "started", tmp_path / "go"
    cmd = f": {token}; touch {started}; while ! [ -e {go} ]; do sleep 0.05; done"
    args: dict[str, Any] = {"idle": "1m", "grace": "0", "billing_aware": "no"}
    if which == "before_shutdown":
        args["before_shutdown"] = cmd
    box = Box(tmp_path, **args)
    if which == "shutdown_command":
        box.reconfigure(**args, shutdown_command=f"{cmd}; touch {box.marker}")
    box.run(T0)
    proc = box.start_tick(T0 + 60)
    try:
        deadline = time.monotonic() + 20
        while not started.exists():
            assert time.monotonic() < deadline, box.log()
            time.sleep(0.05)
        assert _cmdlines_holding(token) == []
    finally:
        go.touch()
        proc.wait(timeout=30)
        end_session(proc)
    assert box.shut_down, box.log()


def test_the_before_shutdown_text_is_not_in_its_commands_environment(tmp_path: Path) -> None:
    """--before-shutdown's text reached its `sh -c` through GPUONBOARD_RUN, exported: every
    program the command ran (an upload tool, a `curl` to a vendor's API) inherited the whole text,
    its token with it, in its own environment. Now that sh takes it out first: a child of the
    command sees no GPUONBOARD_RUN."""
    seen = tmp_path / "seen"
    cmd = f"sh -c 'printf %s \"${{GPUONBOARD_RUN:-none}}\" > {seen}'"
    box = Box(tmp_path, idle="1m", grace="0", billing_aware="no", before_shutdown=cmd)
    box.run(T0)
    box.run(T0 + 60)
    assert box.shut_down, box.log()
    assert seen.read_text() == "none"
