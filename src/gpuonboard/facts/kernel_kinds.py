"""Whether a saved kernel log is lines picked from the log by their kind (facts/kernel_log.py,
KernelLog.picked_kinds): `dmesg | grep pcieport`, a KB article's or a post's example lines, a
note quoting a guest's two NVRM lines. The kind of a kernel line is its message's first word, its
digits left out (`pcieport`, `pci`, `NVRM`, `nvidia-nvswitch`, `EDAC`): a whole log holds lines
of many kinds (the boot's, the drivers', the devices'), a grep one or two.

The rule (docs/guides/offline.md, "A kernel log of few kinds"): the kernel lines of a saved log
(no live probe's header; no line of another program, which a journal window holds beside them)
of at most PICKED_KINDS kinds, none of the boot's first lines among them, are a selection,
whatever their stamps: a grep keeps each line's stamp as printed, so the stamps never tell a
grep from the log. The sentence says what they show:
- none carries a time stamp (`kernel: pcieport ...`, `guest dmesg: NVRM: ...`): what lies
  between them cannot be told, as for a `dmesg -t | grep` (api/saved_kinds.unstamped_kinds);
- two lines one after the other are PICKED_GAP_S or more apart (`Jun 15 11:38:52`, then
  `Jun 15 15:38:52`): a kernel that logs such lines over hours logs other lines between them;
- else, within BURST_S, they are a burst, `within N s`: one event's lines (an AER error's four,
  measure38c 01's `jan. 29 20:50:17 kevin kernel: pcieport ...`) or a flood's, picked out of the
  log as a `grep pcieport` does. Before round 38 a burst was read as a window of the log and passed "no Xid"
  (the log read starts after boot) where the same lines unstamped were refused;
- else they span minutes or hours, `across N h` (a rented VM's `[UFW BLOCK]` lines 37 s apart
  over 3 h): a flood of one kind that filled the ring buffer, or a grep for it, which the stamps
  cannot tell apart (revK F6: "within 11153 s" called it a burst).

Whatever prefix a line carries (a syslog's or journal's `Mon DD hh:mm:ss host kernel: `, a bare
`kernel: `, a label like `guest dmesg: `) its kind is that of the message after it, so the prefix
never changes the judgement (measure37d 05, 06, 08, 13). Nor does a log collector's stamp before
every line (`docker logs -t`'s, a GitHub Actions job's `2024-05-01T12:00:00.1234567Z `), the same
value on each: it is the time the collector took the lines in, not the kernel's; the kernel's own
stamp after it, or none, is the line's time (round 37). A selection that keeps a driver's lines
says nothing of the other driver's: gpu_xid reads a selection with the GPU driver's lines as the
readings of kernel_quoted do (a `grep NVRM` keeps every Xid line), nvswitch_sxid one with the
NVSwitch driver's."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from gpuonboard.facts.kernel_wrap import program_of
from gpuonboard.once import lazy_re

__all__ = [
    "PICKED_GAP_S",
    "PICKED_KINDS",
    "PickedKinds",
    "driver_name",
    "line_time",
    "picked_kinds",
    "unstamped_kernel_line",
]

# the kinds of line a grep keeps (api/saved_kinds._UNSTAMPED_LEAST: three make a log)
PICKED_KINDS = 2
# the gap between two lines one after the other that a log of few kinds does not show whole
PICKED_GAP_S = 3600.0

# the span under which lines of few kinds one after the other are one burst (one event's lines, a
# flood's seconds apart); over it, lines of few kinds across minutes or hours
BURST_S = 600.0
# a line's head before the kernel's message: a syslog's or journal's up to `kernel: ` (its time,
# the host's name), a bare `kernel: `, or a label naming the log (`dmesg: `, `guest dmesg: `)
_HEAD = lazy_re(
    r"^[^\n]{0,60}?\bkernel:\s+|^(?:[\w.-]+\s){0,2}(?:dmesg|kern\.log|syslog|messages|journal(?:ctl)?)\s*:\s+",
    re.I,
)
# a mail's or a forum's quote marks
_QUOTE = lazy_re(r"^\s*(?:>\s?)+")
# the kernel's own stamps before its message: dmesg's `[ 2638.641500]`, `-T`'s `[Mon Feb 23 ...]`,
# `--decode`'s `kern  :warn  : `, `--time-format iso`'s `2024-11-15T05:39:15,491363+00:00 `
_STAMP = lazy_re(
    r"^(?:\[\s*\+?[\d.]+(?:\s*<[^>\n]*>)?\]\s*|\[[A-Z][a-z]{2} [^\]\n]{5,30}\]\s*"
    r"|kern\s*:\s*\w+\s*:\s*|\d{4}-\d\d-\d\dT\S+\s+)+"
)
# a line without a head or a stamp that is still the kernel's by its shape, as offline reading
# knows one (api/saved_kinds._KERNEL_SHAPE): a PCI device's line (`pcieport 0000:00:1b.2: ...`), a
# SCSI, ATA, NVMe or USB device's, the firmware's, EDAC's, the machine check's, the GPU or the
# NVSwitch driver's
_SHAPE = lazy_re(
    r"^(?:\S+ [0-9a-f]{4,5}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]: |NVRM\b|nvidia(?:-\w+)?\d*: |nvgpu: "
    r"|(?:scsi|sd|sr|sg) \d+:\d+:\d+:\d+: |scsi\d+ : |ata\d+(?:\.\d+)?: |nvme nvme\d+: |usb \d+-[\d.]+: "
    r"|BIOS-e820: |e820: |ACPI: |DMI: |EDAC |mce: |\[Hardware Error\]: |\[drm)"
)
# a log collector's stamp before a line (`docker logs -t`'s, a CI job's, Jenkins Timestamper's in
# brackets): the same value on every line is no time the kernel gave its lines
_COLLECTOR = lazy_re(r"^\s*\[?\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?\]?\s+")
# the boot's first lines: a log that holds them is no selection
_BOOT = lazy_re(r"Linux version \d|\[\s*0\.000000\]|Command line: ")
# the times a line carries: seconds since boot, an ISO date and time, a day and a time
# (a device's instance at the end of a first word ending in `:`: `ata1.00:`, `eth0:`, `audit(17.1:5):`)
_INSTANCE = lazy_re(r"(?:(?<=[A-Za-z_-])\d+(?:[.:-]\d+)*|\([^)]*\))?:$")
_SECONDS = lazy_re(r"\[\s*(\d+\.\d+)\]")
_ISO = lazy_re(r"(\d{4}-\d\d-\d\d)[T ](\d\d:\d\d:\d\d)")
_DAY_TIME = lazy_re(r"(?<![\d:])(\d{1,2})\s+(\d\d):(\d\d):(\d\d)(?![\d:])")


@dataclass(frozen=True)
class PickedKinds:
    """A saved log's kernel lines picked by their kind: the kinds, and why they are a selection."""

    kinds: tuple[str, ...]
    why: str

    def said(self) -> str:
        """The sentence the Xid and SXid rules give: what the log is and what it may leave out."""
        named = ", ".join(f"`{k}`" for k in self.kinds)
        n = len(self.kinds)
        # (a flood across hours may be the whole ring buffer or a grep: "may be" picked)
        picked = "lines that may be picked" if self.why.startswith("across") else "lines picked"
        return (
            f"its kernel lines are of {n} kind{'s' if n > 1 else ''} only ({named}) {self.why}: {picked}"
            " from the log, whose other lines (Xid and SXid lines among them) are not known"
        )

    def for_xid(self) -> str:
        """said() where none of its kinds is `NVRM` (the GPU driver's messages, Xid lines among
        them, which a grep of NVRM or Xid keeps whole); "". A grep of `nvidia` keeps the PCI
        driver's `nvidia 0000:02:00.0: ...` and the modules' `nvidia-modeset: ...` lines, never an
        `NVRM: Xid` line: no exemption."""
        return "" if "NVRM" in self.kinds else self.said()

    def for_sxid(self) -> str:
        """said() where none of its kinds is the NVSwitch driver's; ""."""
        return "" if "nvidia-nvswitch" in self.kinds else self.said()


def picked_kinds(lines: list[str]) -> PickedKinds | None:
    """The saved log's (`lines`, no live probe's) kernel lines as a selection by their kind (the
    module's rule); None where they are not one, or the log holds none."""
    read: list[tuple[str, str]] = []  # (kind, the line as given)
    seen: set[str] = set()
    for line in lines:
        if program_of(line.strip()) not in (None, "kernel"):
            return None  # (a journal's or syslog's window: it holds every line of its span)
        if _BOOT.search(line):
            return None
        kind = _kind(_QUOTE.sub("", line))
        if kind:
            read.append((kind, line))
            seen.add(kind)
            if len(seen) > PICKED_KINDS:  # (a log of many kinds: read no further)
                return None
    kinds = tuple(dict.fromkeys(k for k, _ in read))
    if not kinds or len(kinds) > PICKED_KINDS:
        return None
    times = [line_time(line) for line in _kernel_timed([line for _, line in read])]
    if all(t is None for t in times):
        return PickedKinds(kinds, "and carry no time stamps")
    gap = _widest_gap(times)
    if gap is None or gap[0] < PICKED_GAP_S:  # (a grep keeps the stamps: they tell it from nothing)
        span = _span(times)
        if span is not None and span >= BURST_S:  # (a flood's lines over hours: no burst, revK F6)
            across = f"{span / 3600:.1f} h" if span >= 3600 else f"{span / 60:.0f} min"
            return PickedKinds(kinds, f"across {across}, which cannot be told from a grep of the log")
        return PickedKinds(kinds, f"within {span:.0f} s" if span is not None else "at one time")
    hours = gap[0] / 3600
    first, then = read[gap[1] - 1][1].strip(), read[gap[1]][1].strip()
    return PickedKinds(kinds, f"and {hours:.1f} h apart (`{first[:60]}`, then `{then[:60]}`)")


def unstamped_kernel_line(line: str) -> bool:
    """Whether a line is the kernel's by its shape alone (no head, no stamp: `pcieport
    0000:00:02.0: AER: ...`, `NVRM: ...`, `nvme nvme0: ...`), a mail's quote marks left out."""
    return _SHAPE.match(_QUOTE.sub("", line).strip()) is not None


def _kind(line: str) -> str:
    """The kind of a kernel line (its message's first word, a device's instance left out:
    driver_name), "" where the line is none of the kernel's by a head, a stamp or its shape (a
    page's wrap piece, a tool's line)."""
    head = _HEAD.match(line)
    message = line[head.end() :] if head else line.strip()
    stamp = _STAMP.match(message)
    message = message[stamp.end() :] if stamp else message
    if not (head or stamp or _SHAPE.match(message)) or not message.split():
        return ""
    if message.startswith("NVRM"):
        return "NVRM"
    if re.match(r"nvidia-nvswitch\d*:", message):
        return "nvidia-nvswitch"
    # (`[Hardware Error]:`, `[drm]`; an APEI record's number before it, `{35}[Hardware Error]:`, left
    # out as a digit is: revK F5 named the kind `{}[Hardware`)
    if bracket := re.match(r"(?:\{\d+\})?(\[[^\]\n]{1,30}\])", message):
        return bracket.group(1)
    return driver_name(message.split()[0])


def driver_name(word: str) -> str:
    """A message's first word as a kind: a driver's name before a device's address whole
    (`ath9k`, `rtl8192ee`, `mlx5_core`, `i915`); a device's name ending in `:` less its instance
    (`ata1.00:` and `eth0:` -> `ata`, `eth`)."""
    if not word.endswith(":"):
        return word
    return _INSTANCE.sub("", word) or word.rstrip(":")


def _kernel_timed(lines: list[str]) -> list[str]:
    """The lines with a log collector's stamp cut off where every one begins with one and all of
    them say the same time (`docker logs -t` of lines read at once): the kernel's own stamp, if
    any, is after it. The lines as given otherwise."""
    leads = [_COLLECTOR.match(line) for line in lines]
    stamps = {m.group(0).strip() for m in leads if m}
    if len(lines) < 2 or not all(leads) or len(stamps) != 1:
        return lines
    return [line[m.end() :] for line, m in zip(lines, leads, strict=True) if m]


def line_time(line: str) -> tuple[str, float] | None:
    """The time a line carries (its form, seconds), None where it carries none."""
    if m := _SECONDS.search(line):
        return "boot", float(m.group(1))
    if m := _ISO.search(line):
        return "iso", datetime.fromisoformat(f"{m.group(1)}T{m.group(2)}").timestamp()
    if m := _DAY_TIME.search(line):
        day, h, mi, s = (int(g) for g in m.groups())
        return "day", ((day * 24 + h) * 60 + mi) * 60 + s
    return None


def _span(times: list[tuple[str, float] | None]) -> float | None:
    """The seconds from the first to the last of the times of the first's form (at least 1),
    None where only one line carries one."""
    known = [t for t in times if t is not None]
    said = [t[1] for t in known if t[0] == known[0][0]] if known else []
    return max(1.0, max(said) - min(said)) if len(said) > 1 else None


def _widest_gap(times: list[tuple[str, float] | None]) -> tuple[float, int] | None:
    """The widest forward gap between two lines one after the other that carry times of one
    form, and the index of the later line; None where no two do."""
    best: tuple[float, int] | None = None
    for i in range(1, len(times)):
        a, b = times[i - 1], times[i]
        if a is None or b is None or a[0] != b[0] or b[1] <= a[1]:
            continue
        if best is None or b[1] - a[1] > best[0]:
            best = (b[1] - a[1], i)
    return best
