"""The autostop watcher script itself, run with /bin/sh, a controllable clock and test doubles.

GPUONBOARD_NOW is the clock, GPUONBOARD_BOOT_ID the boot, a fake `nvidia-smi` first on PATH
prints the utilisation; the shutdown command only creates a marker file (never a power-off).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from gpuonboard.steps.autostop import parse_settings, render_script
from gpuonboard.steps.base import StepArgsError

REPO = Path(__file__).resolve().parents[2]
T0 = 1_800_000_000  # a fixed "now" (2027-01-15T08:00:00Z), a whole hour since the epoch


class Box:
    """One simulated host: the installed watcher in a temp dir, a fake nvidia-smi, a clock."""

    def __init__(self, tmp: Path, **args: Any) -> None:
        self.dir = tmp / "autostop"
        self.dir.mkdir()
        self.bin = tmp / "bin"
        self.bin.mkdir()
        self.marker = tmp / "shutdown-ran"
        self.boot_id = "boot-1"
        args.setdefault("shutdown_command", f"touch {self.marker}")
        args.setdefault("grace", "5m")
        settings = parse_settings(args)
        (self.dir / "autostop.sh").write_text(render_script(REPO, "testbox", str(self.dir)))
        (self.dir / "autostop.conf").write_text(settings.conf_text())
        (self.dir / "installed_at").write_text(f"{T0}\n")
        self.gpu("0")

    def gpu(self, *utilisation: str, rc: int = 0) -> None:
        """Make the fake nvidia-smi print these utilisations (one line per GPU)."""
        body = "".join(f"echo {u}\n" for u in utilisation)
        tool = self.bin / "nvidia-smi"
        tool.write_text(f"#!/bin/sh\n{body}exit {rc}\n")
        tool.chmod(0o755)

    def run(self, now: int, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
        """One cron tick (or `status`) at time `now`."""
        full = {
            "PATH": f"{self.bin}:/usr/bin:/bin",
            "GPUONBOARD_NOW": str(now),
            "GPUONBOARD_BOOT_ID": self.boot_id,
            "GPUONBOARD_BOOT_TIME": str(T0),
            **env,
        }
        r = subprocess.run(
            ["/bin/sh", str(self.dir / "autostop.sh"), *args],
            env=full,
            capture_output=True,
            text=True,
            timeout=20,
        )
        assert r.returncode == 0, r.stderr
        return r

    def ticks(self, start: int, minutes: int) -> None:
        """One tick per minute from `start` (inclusive) for `minutes` ticks."""
        for m in range(minutes):
            self.run(start + 60 * m)

    @property
    def shut_down(self) -> bool:
        return self.marker.exists()

    def log(self) -> str:
        path = self.dir / "autostop.log"
        return path.read_text() if path.exists() else ""

    def state(self) -> dict[str, str]:
        lines = (self.dir / "state").read_text().splitlines()
        return dict(line.split("=", 1) for line in lines)


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
    assert "nvidia-smi failed (GPU activity unknown)" in box.log()


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


def test_named_job_keeps_the_box_up(tmp_path: Path) -> None:
    job = subprocess.Popen(["sh", "-c", "sleep 60; : trainjob-7f3a"])
    try:
        box = Box(tmp_path, idle="1m", grace="0", job="trainjob-7f3a", billing_aware="false")
        box.run(T0)
        box.run(T0 + 3600)
        assert not box.shut_down
        assert "busy: job 'trainjob-7f3a' is running" in box.log()
    finally:
        job.kill()
        job.wait()


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
    box.run(T0 + 120)  # GRACE is 60 now: warned at T0+60, acts at T0+120
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
    assert box.state() == {
        "boot_id": "boot-2",
        "idle_since": str(T0 + 2400),
        "warned_at": "0",
        "hard_warned": "",
        "hard_warned_at": "0",
        "shutdown_at": "0",
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
    box = Box(tmp_path, idle="30m", job="train.py", billing_aware="no")
    assert "idle since: - (no check yet since boot)" in box.run(T0, "status").stdout
    box.run(T0)
    out = box.run(T0 + 600, "status").stdout
    assert "watching: GPU utilisation > 5%; job 'train.py' (process, tmux or screen session)" in out
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
    ],
)
def test_out_of_range_settings_are_refused_in_one_sentence(args: dict[str, str], sentence: str) -> None:
    with pytest.raises(StepArgsError) as exc:
        parse_settings(args)
    assert str(exc.value) == sentence


def test_smallest_allowed_heartbeat_and_max_hours() -> None:
    s = parse_settings({"heartbeat": "5m", "max_hours": "0.25", "pid": "2"})
    assert (s.heartbeat, s.max_seconds, s.pid) == (300, 900, "2")
    assert parse_settings({"heartbeat": "0", "max_hours": "0"}).max_seconds == 0


def test_hostile_values_stay_data(tmp_path: Path) -> None:
    pwned = tmp_path / "pwned"
    box = Box(tmp_path, idle="1m", grace="0", job=f"x'; touch {pwned}; '$(touch {pwned})", billing_aware="no")
    box.run(T0)
    box.run(T0 + 60)
    assert box.shut_down and not pwned.exists()
    assert os.path.exists(box.dir / "state")
