"""The watcher counts durations on the uptime, not on the wall clock.

chrony or ntpd stepping the clock after boot, or a VM resumed after a pause, moves the wall
clock by hours at once. The watcher script runs for real under /bin/sh; GPUONBOARD_NOW fakes
the wall clock and GPUONBOARD_UPTIME the seconds since boot (/proc/uptime), so a tick can see
the wall clock jump 3 hours while the uptime moves 60 s. The shutdown command only touches a
marker file.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from .test_autostop_script import T0, Box, _hang, end_session

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
