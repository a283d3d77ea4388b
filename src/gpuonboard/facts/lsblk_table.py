"""The plain `lsblk` table (the form users paste most), read into the same block devices as
`lsblk -J` and `lsblk -P` (facts/disks.py): its default columns (NAME MAJ:MIN RM SIZE RO TYPE
MOUNTPOINT, or MOUNTPOINTS with one line per further mount point on util-linux 2.37+), `lsblk
-f`'s and any `-o` columns, the tree drawn in UTF-8 (`├─ └─ │`) or ASCII (`|- `- |`).

A cell is read by the column its header names; a size in human units (`1.8T`) is rounded by
lsblk to its last digit, kept as BlockDevice.size_rounding. A table whose rows cannot be told
apart into its columns, or whose tree cannot be followed (a paste that lost the blanks before a
branch), is read without the parents it cannot place, never with guessed ones."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from gpuonboard.facts.disks import (
    BlockDevice,
    first_filled_lines,
    looks_like_lsblk_pairs,
    lsblk_unread,
    parse_lsblk,
    parse_size,
    size_rounding,
)
from gpuonboard.once import lazy_re

__all__ = ["looks_like_lsblk_table", "parse_lsblk_table", "read_lsblk", "table_unread", "unread"]

# util-linux's lsblk column names (lsblk --help), as a header prints them
_COLUMNS = frozenset(
    [
        "NAME",
        "KNAME",
        "PATH",
        "MAJ:MIN",
        "FSAVAIL",
        "FSSIZE",
        "FSTYPE",
        "FSUSED",
        "FSUSE%",
        "FSROOTS",
        "FSVER",
        "MOUNTPOINT",
        "MOUNTPOINTS",
        "LABEL",
        "UUID",
        "PTUUID",
        "PTTYPE",
        "PARTTYPE",
        "PARTTYPENAME",
        "PARTLABEL",
        "PARTUUID",
        "PARTFLAGS",
        "RA",
        "RO",
        "RM",
        "HOTPLUG",
        "MODEL",
        "SERIAL",
        "SIZE",
        "START",
        "STATE",
        "OWNER",
        "GROUP",
        "MODE",
        "ALIGNMENT",
        "MIN-IO",
        "OPT-IO",
        "PHY-SEC",
        "LOG-SEC",
        "ROTA",
        "SCHED",
        "RQ-SIZE",
        "TYPE",
        "DISC-ALN",
        "DISC-GRAN",
        "DISC-MAX",
        "DISC-ZERO",
        "WSAME",
        "WWN",
        "RAND",
        "PKNAME",
        "HCTL",
        "TRAN",
        "SUBSYSTEMS",
        "REV",
        "VENDOR",
        "ZONED",
        "ZONE-SZ",
        "ZONE-WGRAN",
        "ZONE-APP",
        "ZONE-NR",
        "ZONE-OMAX",
        "ZONE-AMAX",
        "DAX",
        "ID",
        "ID-LINK",
        "DISK-SEQ",
        "MQ",
    ]
)
_NAMES = ("NAME", "KNAME", "PATH")
# the columns whose cell is one word lsblk always prints (never empty, never with a blank)
_ONE_WORD = frozenset({"NAME", "KNAME", "PATH", "MAJ:MIN", "RM", "RO", "RA", "ROTA", "SIZE", "TYPE"})
# the device types lsblk prints (its TYPE column)
_TYPES = lazy_re(r"^[a-z][a-z0-9]*$")
# a tree's glyphs before a device's name: `├─`, `└─`, `│ `, ASCII `|-`, `` `- ``, `| `; and
# `+-`, either branch as a paste's box-drawing to ASCII made it (api/paste.py), which no longer
# tells the last branch from the others
_BRANCH = lazy_re(r"^((?:[│|]\s|\s\s)*)(├─|└─|\|-|`-|\+-)")
_GLYPHS = "│├└─|`+"
_LAST = ("└─", "`-")


@dataclass(frozen=True)
class _Column:
    name: str
    start: int
    end: int


def _header(line: str) -> list[_Column] | None:
    """The columns of an lsblk table's header line (each word a known column, the first a name),
    or None for any other line."""
    words = [(m.group(0), m.start(), m.end()) for m in re.finditer(r"\S+", line)]
    if len(words) < 2 or words[0][0] not in _NAMES or not all(w in _COLUMNS for w, _, _ in words):
        return None
    return [_Column(w, s, e) for w, s, e in words]


def looks_like_lsblk_table(text: str) -> bool:
    """Whether the text is an lsblk table: its first line a header of lsblk's columns (`NAME
    MAJ:MIN RM SIZE RO TYPE MOUNTPOINT`, `lsblk -f`'s, `-o`'s), a device row below it."""
    lines = first_filled_lines(text, 2)
    return len(lines) >= 2 and _header(lines[0]) is not None


def lacks_mountpoints(text: str) -> bool:
    """Whether the text is an lsblk table whose header has no MOUNTPOINT(S) column (`lsblk
    --topology`, `-f` of some versions, an `-o` without it): it shows no mount point."""
    lines = first_filled_lines(text, 2)
    columns = _header(lines[0]) if len(lines) >= 2 else None
    return columns is not None and not {c.name for c in columns} & {"MOUNTPOINT", "MOUNTPOINTS"}


# util-linux before 2.20 (RHEL 6) prints a device-mapper device's kernel name after its name:
# `vg_root-lv_root (dm-0)`, `mpathb (dm-2)`; part of the name's cell
_KERNEL_NAME = lazy_re(r" \([\w.:-]+\)")


def _name_end(line: str, end: int) -> int:
    """Where a row's name cell ends: after the name, and its kernel name in parentheses where
    an old lsblk printed one."""
    kernel = _KERNEL_NAME.match(line, end)
    return kernel.end() if kernel else end


def _name_cell(line: str) -> tuple[int, str, int, bool | None] | None:
    """(depth, name, where the name's cell ends, whether the branch is the last `└─`: None where
    `+-` does not tell) of a row's first cell, the tree's glyphs before it read for its depth;
    None for a line with no name (a further mount point's line)."""
    match = _BRANCH.match(line)
    if match is None:
        if not line or line[0].isspace() or line[0] in "│|":
            return None
        name = line.split()[0]
        return 0, name, _name_end(line, len(name)), False
    depth = len(match.group(1)) // 2 + 1
    rest = line[match.end() :]
    if not rest or rest[0].isspace():
        return None
    name = rest.split()[0]
    last = None if match.group(2) == "+-" else match.group(2) in _LAST
    return depth, name, _name_end(line, match.end() + len(name)), last


def _aligned(line: str, columns: list[_Column], name_end: int) -> dict[str, str]:
    """A row's cells by the header's alignment: each word under the column whose header it
    overlaps (a right-aligned number ends where its header ends, a left-aligned text starts
    where its header starts), a word under no header with the cell on its left (a model or a
    mount point with blanks)."""
    cells: dict[str, list[str]] = {}
    for word in re.finditer(r"\S+", line[name_end:]):
        start, end = word.start() + name_end, word.end() + name_end
        over = [c for c in columns[1:] if start < c.end and end > c.start]
        left = [c for c in columns[1:] if c.start <= start]
        column = over[0] if len(over) == 1 else (left[-1] if left and not over else None)
        if column is None:
            return {}
        cells.setdefault(column.name, []).append(word.group(0))
    return {name: " ".join(words) for name, words in cells.items()}


def _in_order(line: str, columns: list[_Column], name_end: int) -> dict[str, str]:
    """A row's cells read in the header's order, one word each, the last column the rest: a
    table whose blanks a paste changed, readable only where every column but the last is one
    word lsblk always prints."""
    if not all(c.name in _ONE_WORD for c in columns[:-1]):
        return {}
    words = line[name_end:].split()
    cells = dict(zip((c.name for c in columns[1:-1]), words, strict=False))
    if len(words) >= len(columns) - 1:
        cells[columns[-1].name] = " ".join(words[len(columns) - 2 :])
    return cells


def _valid(cells: dict[str, str], columns: list[_Column]) -> bool:
    """Whether the cells read are what lsblk prints there: a size, a type, a MAJ:MIN pair, the
    one-word columns set."""
    for column in columns[1:]:
        value = cells.get(column.name, "")
        if column.name in ("SIZE", "TYPE", "MAJ:MIN", "RM", "RO") and not value:
            if column.name == "SIZE" and cells.get("TYPE") == "loop":
                continue  # (an unattached loop device: lsblk -a prints no size)
            return False
        if column.name == "SIZE" and value and parse_size(value) is None:
            return False
        if column.name == "TYPE" and not _TYPES.match(value):
            return False
        if column.name == "MAJ:MIN" and not re.fullmatch(r"\d+:\d+", value):
            return False
    return True


def _cells(line: str, columns: list[_Column], name_end: int) -> tuple[dict[str, str], bool] | None:
    """A row's cells and whether they were read by alignment (else in order: a paste that changed
    the blanks); None where neither reads what lsblk prints."""
    for read in (_aligned, _in_order):
        cells = read(line, columns, name_end)
        if not cells and line[name_end:].strip():
            continue  # (words that could not be placed)
        if _valid(cells, columns):
            return cells, read is _aligned
    return None


def _further_mount(line: str) -> str | None:
    """The mount point on a line of util-linux 2.37+'s further mount points of the device above
    (blanks, or the tree's `│`, up to the MOUNTPOINTS column, then a path or `[SWAP]`; indented
    short of the column or past it, or at the margin, by a paste that changed or trimmed its
    blanks: no device's name starts `/` but `lsblk -p`'s `/dev/`, and a row's other cells follow
    its name), or None for another line: a device's row (`/dev/sdb` alone: a disk with no file
    system as `lsblk -fp` prints it)."""
    more = line.lstrip(_GLYPHS + " \t")
    if not more.startswith(("/", "[")) or more.startswith("/dev/"):
        return None
    return more


def _continuation(line: str, columns: list[_Column]) -> str | None:
    """The line below a row of a name alone, as lsblk prints a name too long for its column
    (libsmartcols: the name on a line of its own, the row's other cells on the next line, after
    blanks, or the tree's `│`, up to where they start: budgie-welcome#224's `└─butank-butank--lvm`
    / `253:0 0 4000787202048 0 lvm /mnt/butank`, insights-core#3912's RHEL 6 luks name), the
    tree's glyphs blanked; None for a line that is not that (a device's row, a line starting
    inside the name's column)."""
    if not line or not (line[0].isspace() or line[0] in "│|"):
        return None
    lead = len(line) - len(line.lstrip("│| \t"))
    if lead <= columns[0].end or not line[lead:].strip():
        return None
    return " " * lead + line[lead:]


def _device(cells: dict[str, str], name: str, parent: str | None) -> BlockDevice:
    size = cells.get("SIZE", "")
    mounts = cells.get("MOUNTPOINTS", cells.get("MOUNTPOINT", ""))
    rota = cells.get("ROTA", "")
    return BlockDevice(
        name=name,
        size_bytes=parse_size(size) if size else None,
        type=cells.get("TYPE") or None,
        mountpoints=(mounts,) if mounts else (),
        rota=True if rota == "1" else False if rota == "0" else None,
        model=cells.get("MODEL") or None,
        parent=parent,
        size_rounding=size_rounding(size) if size else 0,
        fstype=cells.get("FSTYPE") or None,
    )


def _read(text: str) -> tuple[list[BlockDevice], str | None]:
    """The devices of an lsblk table, and why some row could not be read (None: all read)."""
    lines = [line.rstrip() for line in text.splitlines() if line.strip()]
    columns = _header(lines[0]) if lines else None
    if columns is None:
        return [], "it has no lsblk header line"
    devices: list[BlockDevice] = []
    path: list[str] = []  # the names of the current device's ancestors, by depth
    closed: set[int] = set()  # the depths whose last branch (`└─`) was drawn under the current parent
    lost = False  # a branch the tree cannot place (the blanks before it lost): no parents after it
    many = columns[-1].name == "MOUNTPOINTS"
    at = 1
    while at < len(lines):
        line, at = lines[at], at + 1
        if line is lines[-1] and _tree_alone(text):
            return devices, None  # (cut inside the tree drawn before a name or a mount point: table_cut)
        if many and devices and (more := _further_mount(line)):
            devices[-1] = replace(devices[-1], mountpoints=(*devices[-1].mountpoints, more))
            continue
        named = _name_cell(line)
        if named is None:
            return devices, f"a line lsblk does not print ({line.strip()[:60]})"
        depth, name, end, last = named
        if name.startswith("[") or (name.startswith("/") and not name.startswith("/dev/")):
            # (a mount point where a name starts: a further mount point's line that lost its
            # blanks; `lsblk -p` names start /dev/)
            return devices, f"a line lsblk does not print ({line.strip()[:60]})"
        read, at = _row_cells(lines, at, columns, end)
        if read is None and at == len(lines) - 1 and _wrapped_cut(text, columns):
            return devices, None  # (cut inside the line of cells below a name alone: table_cut)
        if read is None and line is lines[-1] and (_open_end(text) or not line[end:].strip()):
            # (the output ends inside this row, or at its name alone, which no lsblk row is:
            # cut short, table_cut)
            return devices, None
        if read is None:
            return devices, f"its row of {name} cannot be read into its columns"
        cells, aligned = read
        lost = lost and depth > 0
        if depth > len(path) or depth in closed or (last is None and depth and not aligned):
            # (a branch deeper than its parent, after the last one, or one that does not say
            # whether it is the last in a row out of line: the blanks before it may be lost)
            lost = True
        closed = {d for d in closed if d < depth} | ({depth} if last else set())
        path = [*path[:depth], name]
        parent = path[depth - 1] if depth and not lost else None
        devices.append(_device(cells, name, parent))
    return devices, None


def _row_cells(
    lines: list[str], at: int, columns: list[_Column], end: int
) -> tuple[tuple[dict[str, str], bool] | None, int]:
    """The cells of the row whose name line is lines[at - 1] (on its line, or on the next one
    where lsblk put the name on a line of its own), and the index of the line after the row."""
    line = lines[at - 1]
    if not line[end:].strip() and at < len(lines):
        below = _continuation(lines[at], columns)
        read = _cells(below, columns, 0) if below is not None else None
        if read is not None:
            return read, at + 1
    return _cells(line, columns, end), at


def _wrapped_cut(text: str, columns: list[_Column]) -> bool:
    """True when the table ends, with no newline, inside the cells lsblk put on the line below
    a name alone (the line cannot be read into its columns)."""
    lines = [line.rstrip() for line in text.splitlines() if line.strip()]
    if len(lines) < 3 or not _open_end(text):
        return False
    named = _name_cell(lines[-2])
    below = _continuation(lines[-1], columns)
    return (
        named is not None
        and not lines[-2][named[2] :].strip()
        and below is not None
        and _cells(below, columns, 0) is None
    )


def parse_lsblk_table(text: str) -> tuple[BlockDevice, ...]:
    """The block devices of an lsblk table ((): none read, or a row that cannot be read)."""
    devices, why = _read(text)
    return () if why else tuple(devices)


def _open_end(text: str) -> bool:
    """True when the text's last line has no newline after it (lsblk ends every row with one)."""
    return bool(text.strip()) and not text.rstrip(" \t").endswith(("\n", "\r"))


def _tree_alone(text: str) -> bool:
    """True when the text ends, with no newline, on a line of the tree's glyphs alone (`|`, `│`,
    `├─`): lsblk draws them before a device's name or a further mount point, never alone, so the
    output was cut inside that line (harvester#6224's paste ends on `|` under sda5's mounts)."""
    lines = [line for line in text.splitlines() if line.strip()]
    return _open_end(text) and len(lines) > 1 and not lines[-1].strip(_GLYPHS + " \t")


def table_cut(text: str) -> str:
    """Why an lsblk table's rows read are not all it had: it ends, with no newline, inside a row
    that cannot be read into its columns, or at a row of a name alone, newline or not
    (rpi-documentation#806's `sda` alone under the header: the rows from there on are not
    known); "" where it does not."""
    if not looks_like_lsblk_table(text) or looks_like_lsblk_pairs(text):
        return ""
    lines = [line.rstrip() for line in text.splitlines() if line.strip()]
    columns = _header(lines[0]) if len(lines) > 1 else None
    if columns is not None and _tree_alone(text):
        return (
            "the lsblk table ends inside the tree drawn before its next line, cut short: the rows"
            " from there on are not known"
        )
    if columns is not None and _wrapped_cut(text, columns):
        name = _name_cell(lines[-2])
        return (
            f"the lsblk table ends inside its row of {name[1] if name else lines[-2].strip()}, cut"
            " short: the rows from there on are not known"
        )
    named = _name_cell(lines[-1]) if columns is not None else None
    if columns is None or named is None or _cells(lines[-1], columns, named[2]) is not None:
        return ""
    if not _open_end(text) and lines[-1][named[2] :].strip():
        return ""  # (a row with cells that cannot be read, a newline after it: damaged, not cut)
    return (
        f"the lsblk table ends inside its row of {named[1]}, cut short: the rows from there on are not known"
    )


def table_unread(text: str) -> str | None:
    """Why an lsblk table is not read (a row not in its columns, a line lsblk does not print), or
    None where every row is read."""
    return _read(text)[1]


def read_lsblk(text: str) -> tuple[BlockDevice, ...]:
    """The block devices of any lsblk output this tool reads: `-J`, `-P` or the table."""
    if looks_like_lsblk_table(text) and not looks_like_lsblk_pairs(text):
        return parse_lsblk_table(text)
    return parse_lsblk(text)


def unread(text: str) -> str | None:
    """Why a non-empty lsblk output gives no block device list (disks.lsblk_unread for `-J`;
    table_unread for the table), or None where it is read."""
    if looks_like_lsblk_table(text) and not looks_like_lsblk_pairs(text):
        return table_unread(text)
    return lsblk_unread(text)
