"""Whether a saved kernel log ends before the GPU driver could have logged (facts/kernel_log.py,
KernelLog.early_end): its last line stamped early in boot (dmesg's `[    0.869739]`, a syslog's
or journal's bracketed stamp after its head), and no line of the GPU or NVSwitch driver in it.

The NVIDIA driver is a module that userspace loads (the initramfs' or udev's modprobe), never
built into the kernel: a log that ends that early with no line of it ends before the driver
logged its load, so it holds none of its faults either. A pass of it (no Xid) would say nothing
(m32d: a WSL2 guest's dmesg of 0.59 s to 0.87 s of boot passed "no Xid in the kernel log")."""

from __future__ import annotations

import re

from gpuonboard.facts.kernel_kinds import line_time
from gpuonboard.once import lazy_re

__all__ = ["BOOT_LOAD_S", "EARLY_BOOT_S", "ends_before_driver", "held_by_nouveau", "seconds_since_boot"]

# the seconds since boot under which a log without a driver line is read as ending before the
# driver logged (the earliest driver load line in the real captures: 2.76 s; a box's boot with
# many cores, its initramfs and udev, takes tens of seconds to load it)
EARLY_BOOT_S = 60.0
# the seconds since boot under which the driver's load banner is read as its load at boot (udev's
# or the initramfs' modprobe: 2.8 s to 15 s in the real captures); one later is a load after boot
# (`rmmod` / `modprobe`, a driver upgrade, a GPU that fell off the bus and was probed again: 1843 s,
# 14387 s, 17257 s, 83260 s in the real captures), whose banner the lines before it do not share
BOOT_LOAD_S = 120.0
# a line's stamp in seconds since boot: dmesg's `[    0.869739]`, after a syslog's or journal's
# head (`Sep 19 16:18:02 bubz kernel: [68183.615790]`), or a `-o short-monotonic` journal's
_MONOTONIC = re.compile(r"^\s*(?:[^\[\n]{0,80}?\bkernel:\s*)?\[\s*(\d+\.\d+)\]")
_DRIVER = re.compile(r"nvidia|nvrm|nvswitch|\bxid\b", re.IGNORECASE)


def seconds_since_boot(line: str) -> float | None:
    """The seconds since boot a line is stamped with (dmesg's `[ 1843.439669]`, after a syslog's or
    journal's head); None where it carries no such stamp."""
    m = _MONOTONIC.match(line)
    return float(m.group(1)) if m else None


def ends_before_driver(lines: list[str]) -> str:
    """Why the log (its lines as read, its last boot's) says nothing of the GPU driver's faults:
    "it ends N s into boot (`LAST LINE`), before the GPU driver logged anything"; "" where its
    last line has no stamp in seconds since boot, is stamped later (EARLY_BOOT_S), or any line is
    the driver's."""
    filled = [line for line in lines if line.strip()]
    if not filled or any(_DRIVER.search(line) for line in filled):
        return ""
    m = _MONOTONIC.match(filled[-1])
    if m is None:
        return _ends_after_boot_mark(filled)
    if float(m.group(1)) >= EARLY_BOOT_S:
        return ""
    last = filled[-1].strip()
    return (
        f"it ends {m.group(1)} s into boot (`{last[:80]}`), before the GPU driver logged anything:"
        " a log that holds no line of the driver yet holds none of its faults"
    )


# a line only a boot logs, in its first seconds (the kernel's first words; systemd's udev coldplug,
# which loads the devices' drivers, and its wait for it; the kernel handing over to init; the
# memory controllers' EDAC and MCE set-up): the anchor of a wall-clock-stamped log's span
_BOOT_MARK = lazy_re(
    r"Linux version \d|\bCommand line: |\budev Coldplug\b|\bTrigger udev\b|Coldplug All udev"
    r"|Wait for (?:Complete Device Initiali[sz]ation|udev To Complete)|Run /\S*init as init process"
    r"|Freeing unused kernel|\bEDAC MC\d*: Giving out device|MCE: In-kernel MCE decoding enabled",
    re.IGNORECASE,
)


def _ends_after_boot_mark(filled: list[str]) -> str:
    """ends_before_driver for a log stamped with the wall clock (a journal's or syslog's `Oct 14
    15:45:43`, an ISO time), which says no seconds since boot: it ends early in boot where a line
    only a boot logs (_BOOT_MARK: udev's coldplug, the kernel's first words) is in it and its last
    line is stamped less than EARLY_BOOT_S after that line's (measure40c 18: a journal's second of
    EDAC set-up and udev coldplug passed "no Xid in the kernel log")."""
    mark = next((line for line in filled if _BOOT_MARK.search(line)), None)
    start = line_time(mark) if mark is not None else None
    end = line_time(filled[-1])
    if (
        mark is None
        or start is None
        or end is None
        or start[0] != end[0]
        or not 0 <= end[1] - start[1] < EARLY_BOOT_S
    ):
        return ""
    said = _BOOT_MARK.search(mark)
    assert said is not None
    span = max(1, round(end[1] - start[1]))
    return (
        f"it ends during boot, {span} s after the boot's `{said.group(0)}` line (its last line:"
        f" `{filled[-1].strip()[:80]}`), before the GPU driver logged anything: a log that holds no"
        " line of the driver yet holds none of its faults"
    )


# nouveau, the kernel's own driver for NVIDIA GPUs, holding one (`nouveau 0000:01:00.0: NVIDIA
# GA102 (b72000a1)`, `... DRM: core notifier timeout`)
_NOUVEAU = re.compile(r"\bnouveau [0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.\d: ")
# a line of the NVIDIA driver's (its NVRM lines, its modules' tags: `nvidia 0000:01:00.0:`,
# `nvidia-modeset:`, `[nvidia]`, `nvidia_uvm`), not nouveau's `NVIDIA GA102` naming the chip
_NVIDIA_DRIVER = re.compile(r"\bNVRM\b|(?<![\w-])nvidia(?:[-_]\w+)?(?::|\]| [0-9a-f]{4,8}:)")


def held_by_nouveau(lines: list[str]) -> str:
    """Why the log (its lines as read) says nothing of the NVIDIA driver's faults where nouveau
    holds the GPU and no line of the NVIDIA driver is in it: the NVIDIA driver was not loaded
    (or bound no GPU), so it logged no Xid, whatever the GPU did (measure35e 23: an RTX 3090 under
    nouveau, `DRM: core notifier timeout`, passed "no Xid in the kernel log"); "" otherwise."""
    held = [line.strip() for line in lines if _NOUVEAU.search(line)]
    first = next((line for line in held if "NVIDIA" in line), held[0] if held else None)
    if first is None or any(_NVIDIA_DRIVER.search(line) for line in lines):
        return ""
    return (
        f"nouveau holds the GPU (`{first[:80]}`) and no line of the NVIDIA driver is in it: the"
        " NVIDIA driver was not loaded, so it logged no Xid or SXid"
    )
