"""Pure parsers for filesystems (`df`) and block devices (`lsblk -J`), plus path helpers."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gpuonboard.facts.translated import Label, labels, word_translator
from gpuonboard.once import lazy_re, loaded_once

__all__ = [
    "DF_UNREAD",
    "BlockDevice",
    "Mount",
    "df_as_si",
    "df_cut",
    "df_labels",
    "df_header",
    "df_lists_sizes",
    "df_open_row",
    "looks_like_lsblk_pairs",
    "lsblk_unread",
    "mount_for",
    "parse_df",
    "parse_loop_backing",
    "parse_lsblk",
    "parse_lsblk_json",
    "parse_lsblk_pairs",
    "parse_size",
    "physical_disks",
    "same_device",
    "shares_disk",
    "short_name",
    "size_rounding",
    "unmounted_disks",
]


@dataclass(frozen=True)
class Mount:
    """One mounted filesystem as df reports it (sizes in bytes; approximate from `df -h`)."""

    device: str
    size_bytes: int | None
    used_bytes: int | None
    avail_bytes: int | None
    mountpoint: str
    fstype: str | None = None
    # how much less the size may be: df rounds a size up to what it prints (`df -h`'s `3.5T` is
    # more than 3.4 TiB, `-BG`'s `252G` more than 251 GiB, `-k` to the KiB); 0 where exact
    size_step: int = 0


@dataclass(frozen=True)
class BlockDevice:
    """One block device from lsblk; children are flattened and name their parent."""

    name: str
    size_bytes: int | None
    type: str | None  # "disk", "part", "loop", "lvm", "raid1", ...
    mountpoints: tuple[str, ...] = ()
    rota: bool | None = None
    model: str | None = None
    parent: str | None = None
    # how far the true size may be from size_bytes either way: lsblk rounds a human size to its
    # last digit (`1.8T` is 1.75-1.85 TiB); 0 where exact (`-b` bytes)
    size_rounding: int = 0
    # the file system lsblk names on it (its FSTYPE: `ext4`, `btrfs`, `linux_raid_member`), None
    # where not shown (no FSTYPE column) or none
    fstype: str | None = None

    @property
    def mountpoint(self) -> str | None:
        """The first mountpoint, or None when not mounted."""
        return self.mountpoints[0] if self.mountpoints else None


_SIZE = re.compile(r"^(\d+(?:[.,]\d+)?)\s*([KMGTPEZ]?)(i?B?)$", re.IGNORECASE)
_POWERS = {"": 0, "K": 1, "M": 2, "G": 3, "T": 4, "P": 5, "E": 6, "Z": 7}
# df's size header: `1K-blocks`, `1024-blocks`, `1B-blocks`; `-BG` `1G-blocks`, `-B GB`
# `1GB-blocks` (SI), `-B KiB` `1KiB-blocks`. With a unit letter GNU df suffixes every cell
# with it (`252G`, `271GB`, `264212084KiB`), except when the letter is its own (`-B 1MiB`).
_BLOCKS = lazy_re(r"^(\d+)(([KMGTPE]?)(iB|B)?)-blocks$", re.IGNORECASE)


# GNU df's line for a mount it could not read: `df: /mnt/s3: Transport endpoint is not connected`
# (older coreutils quote the path: `df: ‘/mnt/s3’: ...`), on its stderr
DF_UNREAD = re.compile(r"^(?:/[\w/.-]*/)?df: [‘'`]?(/[^:’']*)[’']?: ", re.MULTILINE)


def _base(match: re.Match[str]) -> int:
    """1000 for an SI size ('19GB': `df -H` cells as df_as_si marks them), else 1024 (df -h's
    '19G', '1.8TiB')."""
    return 1000 if match.group(3).upper() == "B" and match.group(2) else 1024


def parse_size(value: str) -> int | None:
    """Bytes from '14T', '5.1M', '304K', '0', '1.8TiB' (binary multipliers), '19GB' (SI); None
    if not a size."""
    match = _SIZE.match(value.strip())
    if not match:
        return None
    number = float(match.group(1).replace(",", "."))
    return round(number * _base(match) ** _POWERS[match.group(2).upper()])


_HUMAN_SIZE = re.compile(r"^(\d+)(?:[.,](\d+))?([KMGTPEZ])$", re.IGNORECASE)


def size_rounding(cell: str) -> int:
    """How far the true size may be from an lsblk human size cell's value either way: lsblk
    (util-linux size_to_human_string) rounds to the nearest tenth of its unit and leaves out a
    tenth of 0, so `1.8T` is 1.75-1.85 TiB and `477G` 476.95-477.05 GiB; 0 for bytes."""
    match = _HUMAN_SIZE.match(cell.strip())
    return 1024 ** _POWERS[match.group(3).upper()] // 20 if match else 0


# a human size cell of `df -H` (SI powers, printed as df -h prints binary ones: `19G`)
_HUMAN_CELL = lazy_re(r"(?<=\s)(\d+(?:[.,]\d+)?[KMGTPEZ])(?=\s)")


def df_as_si(text: str) -> str:
    """A saved `df -H` / `--si` output with its human sizes marked SI (`19G` -> `19GB`), so that
    they are read in powers of 1000, as df printed them (its header says `Size`, as df -h's)."""
    head, newline, rows = text.partition("\n")
    return head + newline + _HUMAN_CELL.sub(lambda m: m.group(1) + "B", rows)


def _block_size(header: str) -> tuple[int, str] | None:
    """Bytes per unit named by df's size header ('1B-blocks' 1, '1024-blocks'/'1K-blocks' 1024,
    '1GB-blocks' 10^9, '1KiB-blocks' 1024) and the suffix df may print after each cell."""
    match = _BLOCKS.match(header)
    if not match:
        return None
    count, suffix, letter, tail = match.groups()
    base = 1000 if (tail or "").upper() == "B" and letter else 1024
    return int(count) * base ** _POWERS[letter.upper()], suffix


def df_labels() -> tuple[Label, ...]:
    """coreutils `df`'s header words as translated (data/df_labels.yml): `文件系统 容量` for
    `Filesystem Size`, `块` for the "blocks" of `1K-blocks`."""
    return labels("df_labels")


@loaded_once
def _df_words() -> tuple[dict[str, str], Callable[[str], str]]:
    words = {label: english for _, label, english in df_labels()}
    return words, word_translator(words)


# a size header of a translated df: the block size, `-` and "blocks" translated (`1K-块`)
_DF_BLOCKS_WORD = re.compile(r"(?<!\S)(\d+[^\s-]*)-(\S+)(?!\S)")
# es, fr and pt_BR's "blocks of 1K" (`bloques de 1K`, `blocs de 1M`), its word translated back
_BLOCKS_OF = re.compile(r"(?<!\S)blocks\s+\S+\s+(\d+[^\s-]*)(?!\S)")


def df_header(text: str) -> list[str] | None:
    """The words of a df output's header line as the C locale prints them (df_labels() translated
    back: `文件系统 容量` -> `Filesystem Size`, `1K-块` -> `1K-blocks`); None when the first line
    is not df's header (its first word is not Filesystem in any known language)."""
    words_of, translate = _df_words()
    first = translate(next((line for line in text.splitlines() if line.strip()), ""))
    line = _DF_BLOCKS_WORD.sub(
        lambda m: f"{m.group(1)}-blocks" if words_of.get(m.group(2)) == "blocks" else m.group(), first
    )
    line = _BLOCKS_OF.sub(lambda m: f"{m.group(1)}-blocks", line)
    words = line.split()
    return words if words and words[0] == "Filesystem" else None


def _df_unit(header: Sequence[str]) -> tuple[bool, tuple[int, str] | None]:
    """Whether a df header (C-locale words) has a size column, and its unit: None for `Size`
    (df -h), else bytes per block and the cell suffix."""
    has_type = len(header) > 1 and header[1] == "Type"
    size_header = header[2 if has_type else 1] if len(header) > (2 if has_type else 1) else ""
    if size_header == "Size":
        return True, None
    unit = _block_size(size_header)
    return unit is not None, unit


def df_lists_sizes(text: str) -> bool:
    """A df output whose header has a size column (`Size`, `1K-blocks`, ...), so mounts and their
    sizes can be read from it: not `df -i` (inode counts), `df --output=source,target`, ..."""
    header = df_header(text)
    return header is not None and _df_unit(header)[0]


def _df_number(cell: str, unit: tuple[int, str] | None) -> int | None:
    """A df size cell in bytes: a block count (with the header's unit suffix or none) times the
    unit, or a human size (`df -h`: binary powers) when unit is None."""
    if cell == "-":
        return None
    if unit is not None:
        size, suffix = unit
        count = cell[: -len(suffix)] if suffix and cell.endswith(suffix) else cell
        return int(count) * size if count.isdecimal() else None
    return parse_size(cell)


def _df_step(cell: str, unit: tuple[int, str] | None) -> int:
    """The rounding of a df size cell in bytes (df rounds up to it): one block of the header's
    unit from a MiB up (`-BG`; a KiB of `-k` is left out), or one unit of a human size's last
    digit (`3.5T`: 0.1 TiB)."""
    if unit is not None:
        return unit[0] if unit[0] >= 2**20 else 0
    match = _SIZE.match(cell.strip())
    if not match:
        return 0
    decimals = len(match.group(1).replace(",", ".").partition(".")[2])
    return round(_base(match) ** _POWERS[match.group(2).upper()] / 10**decimals) if match.group(2) else 0


def parse_df(text: str) -> tuple[Mount, ...]:
    """Parse `df -P -B1`, `df -P -k`, `df -h` or `df -PT` output, in English or translated
    (df_labels()); unrecognised text, or a df without a size column (`df -i`), gives ()."""
    return _read_df(text)[0]


def df_cut(text: str) -> str | None:
    """Why this df output is not whole, or None: a row with fewer columns than df prints (an
    output cut in the middle of a row, as a paste or a size limit cuts it), or a long device
    name alone on the last line with the rest of its row missing. Mounts after the cut are not
    in the output, so their absence says nothing."""
    return _read_df(text)[1]


# why a df that ends without its final newline after a mount point with blanks is cut short
_OPEN_END = "it ends without df's newline"


def df_open_row(text: str) -> Mount | None:
    """The last row of a df output that ends without the newline df prints after each row, or
    None: its cells before the mount point are whole (df_cut finds a row with cells missing),
    but its mount point, the last cell, may be cut short (`/mnt` of `/mnt/nvme0n1p1`). A saved
    output that lost only its final newline reads the same: the mount point is uncertain, the
    other rows are not."""
    if not text.strip() or text.rstrip(" \t\r").endswith("\n"):
        return None
    mounts, cut = _read_df(text)
    if (cut and not cut.startswith(_OPEN_END)) or not mounts:  # (the open end: this row's)
        return None
    last = " ".join(text.splitlines()[-1].split())
    return mounts[-1] if last.endswith(mounts[-1].mountpoint) else None


def _df_row(fields: list[str], minimum: int) -> bool:
    """Whether these cells can be one row of df: enough of them, and its capacity cell (after
    size, used and available) a percentage or `-`."""
    return len(fields) >= minimum and re.fullmatch(r"\d+%|-", fields[minimum - 2]) is not None


@loaded_once
def _header_joined() -> re.Pattern[str]:
    """df's header joined to its first row by a paste that lost the newline between them: the
    header's last words, `Mounted on` or its translation (`挂载点`, df_labels()), then the row's
    device (`Mounted on/dev/nvme0n1p1  2.0T ...`, `挂载点 /dev/vda1 40G ...`)."""
    ends = {"Mounted on", *(t for _, t, e in df_labels() if e == "Mounted on")}
    words = "|".join(re.escape(w).replace(r"\ ", r"\s+") for w in sorted(ends, key=len, reverse=True))
    return re.compile(rf"^([^\n]*(?<!\S)(?:{words}))(?=[ \t]*\S)[ \t]*", re.MULTILINE)


def _mount(row: list[str], minimum: int, unit: tuple[int, str] | None, has_type: bool) -> Mount:
    """The Mount of one whole df row (its cells split at blanks)."""
    size, used, avail = row[minimum - 5 : minimum - 2]
    return Mount(
        device=row[0],
        size_bytes=_df_number(size, unit),
        size_step=_df_step(size, unit),
        used_bytes=_df_number(used, unit),
        avail_bytes=_df_number(avail, unit),
        mountpoint=" ".join(row[minimum - 1 :]),  # mountpoints may contain spaces
        fstype=row[1] if has_type else None,
    )


def _row_starts_at(fields: list[str], start: int, minimum: int, unit: tuple[int, str] | None) -> bool:
    """Whether a df row starts at fields[start]: a device (and type), three size cells, a
    capacity and a mount point (absolute, or `-` of `--total`) follow it."""
    end = start + minimum - 1
    cells = fields[start + minimum - 5 : start + minimum - 2]
    return (
        end < len(fields)
        and re.fullmatch(r"\d+%|-", fields[start + minimum - 2]) is not None
        and all(cell == "-" or _df_number(cell, unit) is not None for cell in cells)
        and fields[end][:1] in ("/", "-")
    )


def _joined_rows(fields: list[str], minimum: int, unit: tuple[int, str] | None) -> list[list[str]]:
    """The df rows of one line: more than one where a paste lost the newlines between rows (a
    forum post or a chat that ran the output together: `... 40% / udev 3.9G 4.0K 3.9G 1% /dev
    ...`): each row ends where the next one's device, sizes, capacity and mount point start. A
    mount point holding spaces stays whole (its words are never three sizes and a capacity)."""
    if not _row_starts_at(fields, 0, minimum, unit):
        return [fields]
    rows, start = [], 0
    for i in range(minimum, len(fields)):
        if i >= start + minimum and _row_starts_at(fields, i, minimum, unit):
            rows.append(fields[start:i])
            start = i
    return [*rows, fields[start:]]


# the device of a df row, as a row cut short after it shows it (a pseudo file system's name, a
# device's path, an NFS or CIFS share)
_DEVICE = lazy_re(r"/dev/\S+|tmpfs|devtmpfs|udev|overlay|shm|none|\S+:/\S*|//\S+")


def _cut_tail(row: list[str], minimum: int, unit: tuple[int, str] | None) -> int | None:
    """Where, after a row's mount point, the next row starts and is cut short (a paste that ran
    the rows together on one line, cut inside the next one: `... 1% /data /dev/sda2 50G 10G`):
    a device, then only its size cells (and capacity); None where the words are the mount
    point's own (`/media/Win Data`)."""
    for k in range(minimum, len(row)):
        cells = row[k + 1 :]
        sizes = [c for c in cells[:3] if c == "-" or _df_number(c, unit) is not None]
        whole = len(sizes) == min(len(cells), 3) and all(re.fullmatch(r"\d+%|-", c) for c in cells[3:4])
        if whole and len(cells) <= 4 and _DEVICE.fullmatch(row[k]) and (cells or row[k].startswith("/dev/")):
            return k
    return None


@functools.lru_cache(maxsize=256)
def _read_df(text: str) -> tuple[tuple[Mount, ...], str | None]:
    """(the mounts of a df output, why it is not whole or None). Kept for the last outputs read
    (of immutable Mounts): a check reads a host's df for its facts (parse_df), then again for
    its disk rule (df_cut), ~0.35 ms of CPU each time for a ~30-row df."""
    text = _header_joined().sub(lambda m: m.group(1) + "\n", text, count=1)
    lines = [line for line in text.splitlines() if line.strip()]
    header = df_header(text)
    if header is None:
        return (), None
    has_type = len(header) > 1 and header[1] == "Type"
    sizes, unit = _df_unit(header)
    if not sizes:
        return (), None
    minimum = 7 if has_type else 6
    mounts: list[Mount] = []
    pending, cut = "", None
    for line in lines[1:]:
        fields = line.split()
        # Without -P, df puts a long device name alone on its own line and the rest below.
        if len(fields) == 1 and not pending:
            pending = fields[0]
            continue
        if pending and _df_row(joined := [pending, *fields], minimum):
            fields = joined
        elif pending:  # a line no df row continues: a paste wrapped at its width (`Mounted o`/`n`)
            cut = cut or f"a line df does not print ({pending})"
        pending = ""
        for row in _joined_rows(fields, minimum, unit):
            if len(row) < minimum:
                cut = cut or f"a row has {len(row)} of df's {minimum} columns ({row[0]})"
                continue
            if not _df_row(row, minimum):
                cut = cut or f"a row df does not print ({' '.join(row)[:60]})"
                continue
            if line is lines[-1] and (at := _cut_tail(row, minimum, unit)) is not None:
                cut = cut or f"its last row is cut short ({' '.join(row[at:])[:60]})"
                row = row[:at]
            mounts.append(_mount(row, minimum, unit, has_type))
    if pending and not cut:
        cut = f"its last line is a device name alone ({pending}), the rest of its row missing"
    tail = text.rpartition("\n")[2]
    if tail and not tail.strip() and not cut and all(line.startswith(tail) for line in lines):
        # (a paste that indents every row, `  udev  7,6G ...`, cut inside the next row's indent)
        cut = "it ends inside the indent of its next row, without df's newline"
    open_end = not text.rstrip(" \t\r").endswith("\n")
    if open_end and mounts and " " in mounts[-1].mountpoint and not cut:
        # (rows a paste ran together, cut inside the next row's device or sizes: `... 40% / udev`)
        cut = f"{_OPEN_END} after a mount point with blanks ({mounts[-1].mountpoint[:60]})"
    return tuple(mounts), cut


def _lsblk_size(value: Any) -> int | None:
    """lsblk SIZE: an int with --json --bytes on new util-linux, a string on old, or human."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return value
    return parse_size(str(value))


def _lsblk_rota(value: Any) -> bool | None:
    """lsblk ROTA: a JSON bool on new util-linux, "0"/"1" strings on old."""
    if isinstance(value, bool):
        return value
    if str(value).strip() in ("1", "true"):
        return True
    if str(value).strip() in ("0", "false"):
        return False
    return None


def _lsblk_mountpoints(entry: Mapping[str, Any]) -> tuple[str, ...]:
    """MOUNTPOINT (one string or null) or MOUNTPOINTS (list, util-linux >= 2.37) as a tuple."""
    raw = entry.get("mountpoints", entry.get("mountpoint"))
    values = raw if isinstance(raw, list) else [raw]
    return tuple(str(v) for v in values if v)


def _flatten(entries: Iterable[Any], parent: str | None) -> list[BlockDevice]:
    """Depth-first list of devices, each child naming its parent device."""
    devices: list[BlockDevice] = []
    for entry in entries:
        if not isinstance(entry, Mapping) or not entry.get("name"):
            continue
        name = str(entry["name"])
        model = entry.get("model")
        devices.append(
            BlockDevice(
                name=name,
                size_bytes=_lsblk_size(entry.get("size")),
                type=str(entry["type"]) if entry.get("type") else None,
                mountpoints=_lsblk_mountpoints(entry),
                rota=_lsblk_rota(entry.get("rota")),
                model=str(model).strip() if model else None,
                parent=parent,
                size_rounding=size_rounding(str(entry.get("size"))),  # (`-J` without `-b`: `1.8T`)
                fstype=str(entry["fstype"]) if entry.get("fstype") else None,
            )
        )
        children = entry.get("children")
        if isinstance(children, list):
            devices.extend(_flatten(children, name))
    return devices


def parse_lsblk_json(text: str) -> tuple[BlockDevice, ...]:
    """Parse `lsblk -J -b -o NAME,SIZE,TYPE,MOUNTPOINT,ROTA,MODEL`; unrecognised text gives ()."""
    entries = _lsblk_entries(text)
    return () if isinstance(entries, str) else tuple(_flatten(entries, None))


def parse_lsblk(text: str) -> tuple[BlockDevice, ...]:
    """The block devices of an `lsblk -J` output (parse_lsblk_json) or an `lsblk -P` one
    (parse_lsblk_pairs); unrecognised text gives ()."""
    return parse_lsblk_pairs(text) if looks_like_lsblk_pairs(text) else parse_lsblk_json(text)


# one `KEY="value"` pair of `lsblk -P` (util-linux escapes a quote or a blank in a value as \xNN)
_PAIR = re.compile(r'(?:^|\s)([A-Z][A-Z0-9:%-]*)="((?:[^"\\]|\\.)*)"')


def _pairs_of(line: str) -> dict[str, str]:
    """The `KEY="value"` pairs of one `lsblk -P` line, its `\\xNN` escapes decoded."""
    return {
        key: re.sub(r"\\x([0-9a-fA-F]{2})", lambda m: chr(int(m.group(1), 16)), value)
        for key, value in _PAIR.findall(line)
    }


def first_filled_lines(text: str, count: int) -> list[str]:
    """The first `count` lines of `text` (str.splitlines) that are not blank (fewer where it has
    fewer), without splitting the whole text where its first 4 KiB hold more than `count` such
    lines: a line of that prefix is one of the text's unless it is the prefix's last line, and
    that one comes after the first `count` (an lsblk -J of a big box is thousands of lines)."""
    head = text[:4096]
    if len(head) < len(text):
        lines: list[str] = []
        for line in head.splitlines():
            if line.strip():
                if len(lines) == count:
                    return lines
                lines.append(line)
    return [line for line in text.splitlines() if line.strip()][:count]


def looks_like_lsblk_pairs(text: str) -> bool:
    """An `lsblk -P` (`--pairs`) output: its first line holds several `KEY="value"` pairs, a
    device's NAME (or KNAME) and one of SIZE, TYPE, MAJ:MIN or MOUNTPOINT (an /etc/os-release
    holds one pair a line)."""
    first = next(iter(first_filled_lines(text, 1)), "")
    keys = _pairs_of(first).keys()
    return bool(keys & {"NAME", "KNAME"}) and bool(
        keys & {"SIZE", "TYPE", "MAJ:MIN", "MOUNTPOINT", "MOUNTPOINTS"}
    )


def parse_lsblk_pairs(text: str) -> tuple[BlockDevice, ...]:
    """Parse `lsblk -P` (util-linux's only machine-readable form before `-J` came in 2.27: RHEL 7,
    Ubuntu 14.04): one device a line, each parent named by its PKNAME column where the output
    has one. Without it (lsblk's default columns) a partition's disk is the line above it that
    is no partition and whose name its own starts with (lsblk prints the tree in order:
    sda, sda1, sda2, sdb, ...); no other parent is guessed. A last line without lsblk's newline
    may be cut inside a value and is not read."""
    lines = text.splitlines()
    if lines and not text.endswith(("\n", "\r")):
        lines.pop()
    devices = []
    above: str | None = None  # the last line that is no partition (its disk, for a PKNAME-less part)
    for line in lines:
        pairs = _pairs_of(line)
        name = pairs.get("NAME") or pairs.get("KNAME")
        if not name:
            continue
        mounts = pairs.get("MOUNTPOINTS", pairs.get("MOUNTPOINT", ""))
        parent = pairs.get("PKNAME") or None
        if pairs.get("TYPE") != "part":
            above = name
        elif "PKNAME" not in pairs and above is not None and name.startswith(above) and name != above:
            parent = above
        devices.append(
            BlockDevice(
                name=name,
                size_bytes=_lsblk_size(pairs.get("SIZE") or None),
                type=pairs.get("TYPE") or None,
                mountpoints=tuple(m for m in mounts.split("\n") if m),
                rota=_lsblk_rota(pairs.get("ROTA")),
                model=(pairs.get("MODEL") or "").strip() or None,
                parent=parent,
                size_rounding=size_rounding(pairs.get("SIZE") or ""),
                fstype=pairs.get("FSTYPE") or None,
            )
        )
    return tuple(devices)


def lsblk_unread(text: str) -> str | None:
    """Why a non-empty `lsblk -J` output gives no block device list (parse_lsblk_json gives ()),
    or None when it is read: a JSON that does not close (a file cut short) or is damaged, or
    one without lsblk's "blockdevices" list."""
    if not text.strip() or looks_like_lsblk_pairs(text):
        return None
    entries = _lsblk_entries(text)
    return entries if isinstance(entries, str) else None


def _lsblk_entries(text: str) -> list[Any] | str:
    """The "blockdevices" list of an `lsblk -J` output, or why there is none."""
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        return f"its JSON is cut short or damaged: {exc.msg} at line {exc.lineno}"
    entries = document.get("blockdevices") if isinstance(document, Mapping) else None
    return entries if isinstance(entries, list) else 'it has no lsblk "blockdevices" list'


def _trigger(mount: Mount) -> bool:
    """An automount point not mounted yet as `df -a` lists it: no size, autofs by its type or by
    the device systemd or automount name it with (`systemd-1`, `auto.home`, `/etc/auto.misc`,
    `-hosts`)."""
    device = mount.device
    named = device.startswith(("systemd-", "auto.", "/etc/auto.")) or device == "-hosts"
    return mount.size_bytes is None and (mount.fstype == "autofs" or named)


def mount_for(mounts: Sequence[Mount], path: str) -> Mount | None:
    """The mount holding `path`: longest mountpoint prefix; of equal ones the last (it shadows),
    but a row with no size (`df -a`'s automount trigger, `systemd-1 - - - - /data`, listed after
    the disk mounted over it where the output was sorted) never shadows one with a size. Another
    row with no size (a FUSE mount df could not read, mounted over a disk) does: what the path
    serves is then unknown."""
    best: Mount | None = None
    for mount in mounts:
        point = mount.mountpoint.rstrip("/") or "/"
        inside = point == "/" or path == point or path.startswith(point + "/")
        if not inside or best is None:
            best = mount if inside else best
            continue
        longest = len(best.mountpoint.rstrip("/") or "/")
        trigger = len(point) == longest and _trigger(mount) and best.size_bytes is not None
        if len(point) >= longest and not trigger:
            best = mount
    return best


_PARTITION = (
    re.compile(r"^(/dev/(?:nvme\d+n\d+|mmcblk\d+|loop\d+|nbd\d+))p\d+$"),
    re.compile(r"^(/dev/(?:[shv]d[a-z]+|xvd[a-z]+))\d+$"),
)


def _disk_of(device: str) -> str:
    """Whole-disk name of a partition device (/dev/nvme0n1p2 -> /dev/nvme0n1); others unchanged."""
    for pattern in _PARTITION:
        match = pattern.match(device)
        if match:
            return match.group(1)
    return device


def same_device(a: Mount, b: Mount) -> bool:
    """Whether two mounts live on the same disk (partitions of one disk count as the same).

    /dev/mapper/*, tmpfs, overlay and other non-partition sources compare by device string.
    """
    return _disk_of(a.device) == _disk_of(b.device)


# Whole kernel disks whose partitions the kernel names predictably (nvme0n1p2, sda1, vdb3).
_WHOLE_DISK = lazy_re(r"^/dev/(?:nvme\d+n\d+|mmcblk\d+|[shv]d[a-z]+|xvd[a-z]+)$")


def _short(device: str) -> str:
    """lsblk's NAME for a df device: '/dev/mapper/vg0-data' -> 'vg0-data', '/dev/sda1' -> 'sda1'."""
    for prefix in ("/dev/mapper/", "/dev/"):
        if device.startswith(prefix):
            return device[len(prefix) :]
    return device


def short_name(device: str) -> str:
    """lsblk's short NAME of a device, as `physical_disks` gives it ('/dev/nvme1n1' -> 'nvme1n1')."""
    return _short(device)


def parse_loop_backing(text: str) -> dict[str, str]:
    """`loopN<TAB>backing file` lines (the probe reads /sys/block/loopN/loop/backing_file)."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        name, tab, path = line.partition("\t")
        if tab and name.strip() and path.strip():
            out[_short(name.strip())] = path.strip().removesuffix(" (deleted)")
    return out


_BCACHE = lazy_re(r"^bcache\d+$")


def _cache_legs(devices: Sequence[BlockDevice]) -> set[tuple[str, str]]:
    """(bcache device, parent) pairs that are a bcache's cache device, not its backing device.

    lsblk lists a bcache device under both; the backing device is the one whose size it takes
    (a few KiB of superblock less): the parent at least as large and closest in size. When
    sizes do not tell, no leg is called a cache (every leg counts as the data's disk).
    """
    size = {_short(d.name): d.size_bytes for d in devices}
    parents: dict[str, list[str]] = {}
    for dev in devices:
        if dev.parent is not None and _BCACHE.match(_short(dev.name)):
            parents.setdefault(_short(dev.name), []).append(_short(dev.parent))
    legs: set[tuple[str, str]] = set()
    for name, above in parents.items():
        own = size.get(name)
        fits = [
            (s - own, p) for p in above if own is not None and (s := size.get(p)) is not None and s >= own
        ]
        if len(set(above)) < 2 or not fits:
            continue
        backing = min(fits)[1]
        legs |= {(name, p) for p in above if p != backing}
    return legs


def physical_disks(
    mount: Mount,
    devices: Sequence[BlockDevice],
    mounts: Sequence[Mount] = (),
    loop_backing: Mapping[str, str] | None = None,
    _depth: int = 0,
    cache: bool = True,
) -> frozenset[str] | None:
    """The whole physical disk(s) a mount lives on, or None when that cannot be told.

    Through the lsblk tree: partition -> disk, LVM / dm-crypt / md RAID -> every device below
    it (an LV on two PVs lives on both disks), loop -> the mount holding its backing file ->
    that mount's disks. The lsblk entry is found by df's device name, else by mountpoint (df
    says `/dev/root` for / on many images). Without lsblk only kernel partition names
    (`/dev/nvme0n1p2`, `/dev/sda1`) are resolved, by name. `cache=False` leaves out the disks
    reached only through a bcache device's cache leg (its backing device holds the data).
    """
    by_name: dict[str, list[BlockDevice]] = {}
    for dev in devices:
        by_name.setdefault(_short(dev.name), []).append(dev)
    entries = by_name.get(_short(mount.device))
    if not entries:
        point = mount.mountpoint
        entries = [d for d in devices if point in d.mountpoints]
    if not entries:
        disk = _disk_of(mount.device)
        return frozenset({_short(disk)}) if _WHOLE_DISK.match(disk) else None
    skip = set() if cache else _cache_legs(devices)
    found: set[str] = set()
    seen: set[str] = set()
    todo = [d for d in entries if (_short(d.name), _short(d.parent or "")) not in skip]
    while todo:
        dev = todo.pop()
        key = f"{_short(dev.name)}<{dev.parent}"
        if key in seen:
            continue
        seen.add(key)
        if dev.parent is not None:
            # every occurrence of the parent: a RAID or LV member appears once per leg
            todo += [
                d
                for d in by_name.get(_short(dev.parent), [])
                if (_short(d.name), _short(d.parent or "")) not in skip
            ]
        elif dev.type == "loop":
            backing = (loop_backing or {}).get(_short(dev.name))
            host = mount_for(mounts, backing) if backing else None
            if host is None or _depth >= 4 or _short(host.device) == _short(dev.name):
                return None
            below = physical_disks(host, devices, mounts, loop_backing, _depth + 1, cache)
            if below is None:
                return None
            found |= below
        elif dev.type in (None, "part") and _WHOLE_DISK.match(disk := _disk_of(f"/dev/{_short(dev.name)}")):
            found.add(_short(disk))  # a partition with no parent read (lsblk -P without PKNAME)
        elif dev.type in (None, "disk"):
            found.add(_short(dev.name))
        else:
            return None  # a device lsblk shows with no parent that is not a disk (rom, ...)
    return frozenset(found) or None


def shares_disk(
    a: Mount,
    b: Mount,
    devices: Sequence[BlockDevice],
    mounts: Sequence[Mount] = (),
    loop_backing: Mapping[str, str] | None = None,
    cache: bool = True,
) -> bool | None:
    """Whether two mounts share a physical disk: True, False, or None when it cannot be told.
    `cache=False`: `b`'s bcache cache devices left out (see `physical_disks`)."""
    if a.device == b.device:
        return True  # a bind mount or another subvolume of the same filesystem
    disks_a = physical_disks(a, devices, mounts, loop_backing)
    disks_b = physical_disks(b, devices, mounts, loop_backing, cache=cache)
    if disks_a is None or disks_b is None:
        return None
    return bool(disks_a & disks_b)


def unmounted_disks(devices: Sequence[BlockDevice]) -> list[BlockDevice]:
    """Whole disks lsblk shows with nothing mounted on them or on anything below them (no
    partition, LV, RAID or swap in use): a data disk delivered but not yet formatted/mounted.
    zram devices and empty (size 0) disks are left out."""
    by_name: dict[str, list[BlockDevice]] = {}
    for dev in devices:
        by_name.setdefault(_short(dev.name), []).append(dev)
    used: set[str] = set()
    seen: set[tuple[str, str]] = set()
    todo = [d for d in devices if d.mountpoints]
    while todo:  # mark every device above a mounted one (all legs of a RAID or an LV)
        dev = todo.pop()
        key = (_short(dev.name), _short(dev.parent or ""))
        if key in seen:
            continue
        seen.add(key)
        used.add(key[0])
        if dev.parent is not None:
            todo += by_name.get(key[1], [])
    out: list[BlockDevice] = []
    for dev in devices:
        name = _short(dev.name)
        if dev.parent is not None or dev.type != "disk" or name in used or name.startswith("zram"):
            continue
        if dev.size_bytes == 0 or any(_short(d.name) == name for d in out):
            continue
        out.append(dev)
    return out
