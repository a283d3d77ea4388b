"""Numbers the watcher reads back from its files (state, lease_up, lock) are decimal.

sh's $((...)) reads `010` as octal and stops the script at `08` ("expecting EOF"); a number of
more than 18 digits overflows. A corrupted (or hand-edited) file must never make the watcher
act early, crash every minute (then the box never stops), or keep an idle box up forever.
The watcher runs for real under /bin/sh (see test_autostop_script.Box).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from .box import T0, Box

U0 = 5000  # the uptime at T0


def tick(box: Box, wall: int, up: int, *args: str) -> subprocess.CompletedProcess[str]:
    return box.run(wall, *args, GPUONBOARD_UPTIME=str(up))


def conf_sum(box: Box) -> str:
    conf = (box.dir / "autostop.conf").read_text()
    return subprocess.run(["cksum"], input=conf, capture_output=True, text=True, check=True).stdout.strip()


def write_state(box: Box, idle_since_up: str) -> None:
    (box.dir / "state").write_text(
        f"boot_id=boot-1\nidle_since={T0 - 1000}\nwarned_at=0\nhard_warned=\nhard_warned_at=0\n"
        f"shutdown_at=0\nconf_sum={conf_sum(box)}\nidle_since_up={idle_since_up}\n"
    )


def test_a_lease_up_uptime_with_a_leading_zero_never_expires_the_lease_early(tmp_path: Path) -> None:
    box = Box(tmp_path, idle="30m", grace="5m", heartbeat="6h", billing_aware="no")
    box.gpu("100")  # busy: only the heartbeat could act
    (box.dir / "lease").write_text(f"{T0}\n")
    (box.dir / "lease_up").write_text(f"{T0} 0900 boot-1\n")  # renewed at uptime 900, written 0900
    status = tick(box, T0 + 60, 960, "status")
    assert "heartbeat: lease renewed 2027-01-15T08:00:00Z, expires 2027-01-15T14:00:00Z" in status.stdout
    tick(box, T0 + 60, 960)
    assert "warn:" not in box.log() and not box.shut_down


def test_an_idle_since_uptime_with_a_leading_zero_is_decimal(tmp_path: Path) -> None:
    box = Box(tmp_path, idle="30m", grace="5m", billing_aware="no")
    write_state(box, "04000")  # idle since uptime 4000: 1000 s (read as octal: 2048, 49 min)
    tick(box, T0, U0)
    assert "warn:" not in box.log()
    assert box.log().splitlines()[-1].endswith("idle for 16m40s of 30m00s")


def test_an_idle_since_uptime_that_sh_cannot_read_does_not_stop_every_tick(tmp_path: Path) -> None:
    box = Box(tmp_path, idle="30m", grace="5m", billing_aware="no")
    write_state(box, "0800")
    tick(box, T0, U0)  # (Box.run asserts exit 0: `08` was "arithmetic expression: expecting EOF")
    assert "warn: idle for 1h10m00s" in box.log()  # idle since uptime 800, now 5000
    assert not box.shut_down  # (the grace period after the warning)


def test_an_overflowing_idle_since_uptime_counts_from_now(tmp_path: Path) -> None:
    box = Box(tmp_path, idle="30m", grace="5m", billing_aware="no")
    write_state(box, "9" * 25)
    for m in range(36):  # idle: warned after 30 minutes, acts 5 minutes later
        tick(box, T0 + 60 * m, U0 + 60 * m)
    assert "warn: idle for 30m00s" in box.log()
    assert box.shut_down
