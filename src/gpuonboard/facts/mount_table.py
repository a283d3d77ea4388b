"""The kernel's mount table (/proc/self/mounts, /proc/mounts, /etc/mtab): the df probe's
table after its rows, each mount point's device and type, and df's mounts given the types df
did not print."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from gpuonboard.facts.disks import Mount
from gpuonboard.once import lazy_re

__all__ = [
    "MOUNT_TABLE_MARK",
    "looks_like_mount_table",
    "mount_table_fields",
    "parse_mount_table",
    "split_df_mount_table",
    "with_mount_types",
]

# the octal escapes the kernel writes in /proc/mounts for a blank, a tab, a newline, a backslash
_MOUNTS_ESCAPE = lazy_re(r"\\([0-7]{3})")


# one line of the kernel's mount table: device, mount point (absolute), type, then options and
# the two numbers (dump, pass) it ends with, or not (the live probe reads its first 3 fields)
_MOUNT_LINE = lazy_re(r"^\S+ /\S* [\w.-]+(?: \S+ \d+ \d+)?$")

# the line the df probe prints before the mount table it adds where df gave no types
MOUNT_TABLE_MARK = "==> /proc/self/mounts <=="


def split_df_mount_table(text: str) -> tuple[str, str | None]:
    """The df probe's output: df's own rows, and the kernel's mount table it printed after them
    (after MOUNT_TABLE_MARK, only where df gave no types), or None where there is none."""
    rows, mark, table = text.partition(f"\n{MOUNT_TABLE_MARK}\n")
    if not mark and text.startswith(f"{MOUNT_TABLE_MARK}\n"):
        rows, mark, table = "", "x", text[len(MOUNT_TABLE_MARK) + 1 :]
    return (rows + "\n", table) if mark else (text, None)


def mount_table_fields(text: str) -> str:
    """A mount table's first 3 fields of each line (device, mount point, type), the options
    after them dropped: they may hold a share's `username=` or `domain=`, never to be written
    into a report. A last line without its newline stays without one (parse_mount_table reads
    it as cut)."""
    lines = text.split("\n")
    return "\n".join(" ".join(line.split()[:3]) for line in lines)


def looks_like_mount_table(text: str) -> bool:
    """A saved /proc/mounts, /proc/self/mounts or /etc/mtab (`cat /proc/mounts`): its first lines
    each `DEVICE MOUNTPOINT TYPE OPTIONS 0 0` (a last one may be cut)."""
    lines = [line for line in text.splitlines() if line.strip()][:20]
    whole = lines[:-1] if len(lines) > 1 else lines
    return bool(whole) and all(_MOUNT_LINE.match(line) for line in whole)


def parse_mount_table(text: str) -> dict[str, tuple[str, str]]:
    """Each mount point's device and file system type in the kernel's mount table
    (/proc/self/mounts, /proc/mounts, /etc/mtab: `DEVICE MOUNTPOINT TYPE OPTIONS 0 0`, or the
    first 3 fields of each line as the live probe reads them), of the
    last mount at a point (the one over the others, which df reads). A last line without the
    newline the kernel ends each with may be cut inside its type (`nfs` of `nfs4`): not read."""
    lines = text.split("\n")
    if lines and lines[-1]:
        lines.pop()
    table: dict[str, tuple[str, str]] = {}
    for line in lines:
        fields = line.split()
        if len(fields) >= 3 and fields[1].startswith("/"):
            device, point = (_MOUNTS_ESCAPE.sub(lambda m: chr(int(m.group(1), 8)), f) for f in fields[:2])
            table.pop(point, None)
            table[point] = (device, fields[2])
    return table


def with_mount_types(mounts: Sequence[Mount], table: Mapping[str, tuple[str, str]]) -> tuple[Mount, ...]:
    """df's mounts, each that df gave no type (a df without -T) given its type in the kernel's
    mount table (parse_mount_table) where the table's mount at its mount point is of the same
    device (df reads that table: another device there is another mount, its type unknown): a
    GPFS or WekaFS share whose device looks local is a network share only by its type."""
    typed = []
    for m in mounts:
        device, fstype = table.get(m.mountpoint, ("", ""))
        typed.append(dataclasses.replace(m, fstype=fstype) if m.fstype is None and device == m.device else m)
    return tuple(typed)
