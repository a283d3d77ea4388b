"""Whether a saved kernel log ends before the GPU driver could have logged (facts/kernel_log.py,
KernelLog.early_end): its last line stamped early in boot (dmesg's `[    0.869739]`, a syslog's
or journal's bracketed stamp after its head), and no line of the GPU or NVSwitch driver in it.

The NVIDIA driver is a module that userspace loads (the initramfs' or udev's modprobe), never
built into the kernel: a log that ends that early with no line of it ends before the driver
logged its load, so it holds none of its faults either. A pass of it (no Xid) would say nothing
(m32d: a WSL2 guest's dmesg of 0.59 s to 0.87 s of boot passed "no Xid in the kernel log")."""

from __future__ import annotations

import re

__all__ = ["EARLY_BOOT_S", "ends_before_driver"]

# the seconds since boot under which a log without a driver line is read as ending before the
# driver logged (the earliest driver load line in the real captures: 2.76 s; a box's boot with
# many cores, its initramfs and udev, takes tens of seconds to load it)
EARLY_BOOT_S = 60.0
# a line's stamp in seconds since boot: dmesg's `[    0.869739]`, after a syslog's or journal's
# head (`Sep 19 16:18:02 bubz kernel: [68183.615790]`), or a `-o short-monotonic` journal's
_MONOTONIC = re.compile(r"^\s*(?:[^\[\n]{0,80}?\bkernel:\s*)?\[\s*(\d+\.\d+)\]")
_DRIVER = re.compile(r"nvidia|nvrm|nvswitch|\bxid\b", re.IGNORECASE)


def ends_before_driver(lines: list[str]) -> str:
    """Why the log (its lines as read, its last boot's) says nothing of the GPU driver's faults:
    "it ends N s into boot (`LAST LINE`), before the GPU driver logged anything"; "" where its
    last line has no stamp in seconds since boot, is stamped later (EARLY_BOOT_S), or any line is
    the driver's."""
    filled = [line for line in lines if line.strip()]
    if not filled or any(_DRIVER.search(line) for line in filled):
        return ""
    m = _MONOTONIC.match(filled[-1])
    if m is None or float(m.group(1)) >= EARLY_BOOT_S:
        return ""
    last = filled[-1].strip()
    return (
        f"it ends {m.group(1)} s into boot (`{last[:80]}`), before the GPU driver logged anything:"
        " a log that holds no line of the driver yet holds none of its faults"
    )
