"""The wall time of a kernel log's lines (a syslog's / journal's date), to tell a reboot from
pieces of a log joined out of order (kernel_log.BootCounter)."""

from __future__ import annotations

import re

from gpuonboard.facts.kernel_wrap import BOOT_SEPARATOR as _BOOT_SEPARATOR
from gpuonboard.facts.kernel_wrap import program_of

__all__ = ["BootCounter", "out_of_order", "wall_back", "wall_time"]

# journalctl's other lines of its own (`-- Logs begin at ... --`, `-- Journal begins at ... --`):
# no line of the log
_JOURNAL_NOTE = re.compile(r"-- .+ --")

# a line's wall time: a syslog's / journal's `Mar  3 11:42:17`, rsyslog's `2024-03-03T11:42:17`
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_WALL = re.compile(
    r"^\s*(?:<\d+>)?(?:(?P<mon>[A-Za-z]{3})\s+(?P<day>\d{1,2})\s+|\d{4}-(?P<m>\d\d)-(?P<d>\d\d)[T ])"
    r"(?P<h>\d\d):(?P<mi>\d\d):(?P<s>\d\d)\b"
)


def wall_time(text: str) -> tuple[int, int, int] | None:
    """Pure: (month, day, second of the day) of a line's syslog / journal date, or None."""
    if (m := _WALL.match(text)) is None:
        return None
    if m.group("mon") is not None:
        if m.group("mon").lower() not in _MONTHS:
            return None
        month, day = _MONTHS.index(m.group("mon").lower()) + 1, int(m.group("day"))
    else:
        month, day = int(m.group("m")), int(m.group("d"))
    return month, day, int(m.group("h")) * 3600 + int(m.group("mi")) * 60 + int(m.group("s"))


def wall_back(before: tuple[int, int, int] | None, now: tuple[int, int, int] | None) -> bool | None:
    """Whether wall time fell back from `before` to `now` (December to January: the year turned,
    forward); None where either line has none."""
    if before is None or now is None:
        return None
    return now < before and not (before[0] == 12 and now[0] == 1)


def out_of_order(line: str | None) -> str:
    """KernelLog.pieced of a log whose pieces were joined out of order (BootCounter.disorder):
    why; "" where it has none."""
    if line is None:
        return ""
    return f"its lines fall back in time at `{line[:80]}` (pieces joined out of order)"


# the kernel's first line of a boot, after any stamp or prefix (`[    0.000000] Linux version
# 6.8.0-...`, `host kernel: Linux version 2.6.10 (root@...)`, --decode's `kern  :notice: ...`)
_BANNER = re.compile(r"(?:^|[\]:]\s*)Linux version \d\S*\s+\(")


# a line's stamp in seconds since boot (dmesg's `[  4.774224]`, after a syslog's `host kernel: `;
# not dmesg -H's `[  +0.000040]` deltas)
_SINCE_BOOT = re.compile(r"^\s*(?:[^\[\n]{0,80}?\bkernel:\s*)?\[\s*(\d+\.\d+)\]")
# how far back a stamp may fall within one boot (CPUs' lines printed out of order: microseconds)
_STAMP_BACK_S = 1.0
# a stamp this near 0 is of a boot's first minutes (the drivers load within them)
_EARLY_BOOT_S = 120.0


class BootCounter:
    """The boots a kernel log spans, line by line: a boundary is journalctl's separator line or
    the kernel's `Linux version` banner after at least one line of the boot before (a log's own
    first banner, or a separator right before a banner, starts no new boot), or a stamp in
    seconds since boot that falls back (`[159303.524890]` then `[    4.774224]`: a syslog across
    a reboot whose banner is not among its lines, measure35e 19) where the lines' wall time goes
    forward with it or, with no wall time, to a boot's first minutes. A stamp that falls back
    with the wall time (rotated syslogs joined newest first, `cat kern.log kern.log.1`), or far
    from a boot's start with none, is no boot: the log's pieces are out of order (`disorder`:
    that line), and which boot a line is of is not known (`earlier_boot` is never said of it)."""

    def __init__(self) -> None:
        self.boot = 0  # the boot the last line read is of (0: the log's first)
        self._lines = 0  # log lines read of this boot
        self._since: float | None = None  # the last stamp read of this boot, in seconds
        self._wall: tuple[int, int, int] | None = None  # the last line's wall time read
        self.disorder: str | None = None  # the first line where the log's pieces fall back

    def read(self, line: str) -> bool:
        """Counts one line; True when it is journalctl's separator (no line of the log)."""
        text = line.strip()
        separator = _BOOT_SEPARATOR.fullmatch(text) is not None
        stamp = _SINCE_BOOT.match(text)
        # (a stamp of a line naming its program, `journalctl -o short-monotonic`'s `[   33.000000] host
        # sudo[12]: ...`, is that program's time, printed in the journal's order: no kernel stamp)
        since = float(stamp.group(1)) if stamp and program_of(text, True) in (None, "kernel") else None
        wall = wall_time(text)
        fell = since is not None and self._since is not None and since < self._since - _STAMP_BACK_S
        back = wall_back(self._wall, wall) if fell else None
        # (with no wall time, a boot's first minutes after a log that ran minutes longer: a fall
        # of seconds, `[ 34.19]` then `[ 33.00]`, is a line out of place, no reboot)
        early = since is not None and self._since is not None and since < _EARLY_BOOT_S <= self._since - since
        if fell and (back or (back is None and not early)):
            self.disorder = self.disorder or text
            fell = False
        if separator or _BANNER.search(text) or fell:
            self.boot += 1 if self._lines else 0
            self._lines = 0
            self._since = None
        self._since = since if since is not None else self._since
        self._wall = wall if wall is not None else self._wall
        self._lines += 0 if not text or _JOURNAL_NOTE.fullmatch(text) else 1
        return separator
