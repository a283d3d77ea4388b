"""Pure parsers for host RAM: `free` output and /proc/meminfo."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from gpuonboard.errors import UsageError
from gpuonboard.facts.named import tool_words
from gpuonboard.facts.translated import Label, labels, word_translator
from gpuonboard.facts.wrapped import rejoined
from gpuonboard.once import lazy_re, loaded_once

__all__ = [
    "FreeFormatError",
    "MemoryInfo",
    "english_free",
    "free_as_kib",
    "free_labels",
    "free_si",
    "free_unit",
    "looks_like_free",
    "looks_like_meminfo",
    "looks_like_top_memory",
    "parse_cgroup_memory_limit",
    "parse_free",
    "parse_meminfo",
    "read_memory",
    "numactl_top_cut",
    "read_numactl_memory",
    "top_memory",
    "looks_like_vmstat_memory",
    "vmstat_memory",
]


@dataclass(frozen=True)
class MemoryInfo:
    """Host RAM and swap sizes in bytes."""

    total_bytes: int | None
    available_bytes: int | None
    swap_total_bytes: int | None
    warnings: tuple[str, ...] = ()
    # how much less and how much more the total may be than its figure: free prints sizes in
    # units (`-h`, `-m`, `-g`) rounded (see _spread); (0, 0) where exact (`-k`, `-b`, meminfo)
    total_spread: tuple[int, int] = (0, 0)
    # the total was printed under `--si` (or `--kilo` ... `--tera`): in powers of 1000, or of 1024
    # by procps version; total_bytes is then its least reading, the spread reaches its most
    si: bool = False
    # the unit could not be told (free_as_kib's `Ki/Mi` mark): a file named for plain `free`
    # (`free.txt`) whose Mem total is plausible RAM in KiB and in MiB (a `free -m` of a 512 GiB
    # box, `515890`, is also 503.8 MiB in KiB); total_bytes is the KiB reading, the spread
    # reaches the MiB one
    unit_unsure: bool = False
    # the output the total was read from: "free" (free or /proc/meminfo), "top" (procps top's
    # memory summary, given as free's kind), "numactl" (the sum of `numactl --hardware`'s node
    # sizes, where no free was given) or "docker_info" (a native Linux daemon's Total Memory)
    source: str = "free"
    # numactl's nodes with no CPUs (`node 252 cpus:` empty) left out of its total: how many, and
    # their size (GPU memory that POWER9/NVLink2 and GH200 boxes list as NUMA nodes, CXL memory,
    # or DRAM whose CPUs are offline: numactl does not tell which)
    uncounted: tuple[int, int] = (0, 0)
    # where no total was read from an output cut short, the least the total can be (numactl's
    # sizes of the nodes with CPUs read before the cut), or None: a floor that already meets an
    # order proves it met (`at least X read`), one below it says nothing
    floor_bytes: int | None = None


_HUMAN = re.compile(r"^(\d+(?:[.,]\d+)?)([KMGTPE]?)(i?)B?$", re.IGNORECASE)
_POWERS = {"": 0, "K": 1, "M": 2, "G": 3, "T": 4, "P": 5, "E": 6}


def _si_marked(match: re.Match[str]) -> bool:
    """Whether a free cell carries free_as_kib's mark of a `--si` size (`112GB`: a unit letter,
    then `B` without `i`); procps itself never prints one."""
    return bool(match.group(2)) and not match.group(3) and match.group(0).upper().endswith("B")


# free_as_kib's mark of a count whose unit is KiB or MiB (`515890Ki/Mi`)
_EITHER = "Ki/Mi"


def _amount(cell: str, unit_bytes: int) -> int | None:
    """Bytes from a free cell: a plain count of `unit_bytes`, or a `free -h` size like '1.9Gi'
    (a `--si` size marked `112GB`: its least reading, in powers of 1000; a count marked `Ki/Mi`:
    its KiB reading)."""
    if cell.isdecimal():
        return int(cell) * unit_bytes
    if cell.endswith(_EITHER) and cell[: -len(_EITHER)].isdecimal():
        return int(cell[: -len(_EITHER)]) * _KIB
    match = _HUMAN.match(cell)
    if not match:
        return None
    # free -h prints binary sizes ("Gi"); plain "G" from old procps also meant 1024-based.
    base = 1000 if _si_marked(match) else 1024
    return round(float(match.group(1).replace(",", ".")) * base ** _POWERS[match.group(2).upper()])


def _spread(cell: str, unit_bytes: int) -> tuple[int, int]:
    """How much less and more than its figure a `free` size may be. procps prints a size with
    one decimal where that fits in four characters, rounded (`1.5Gi`: 1.45-1.55 GiB), else the
    whole units cut off (`(long)` of the quotient: `125Gi` is 125-126 GiB, as the real H200's
    125.8 GiB printed); `-m`/`-g` cut to whole units too; `-b` and `-k` are exact. A `--si`
    size (marked `112GB`) is read from its least reading, powers of 1000, up to its most, powers
    of 1024: procps 3.3.10's `free -h --si` printed 8.2G of 8.35 GB, `--mega` 8157 of 8353 MB
    (KiB over 1000), and older procps-ng's `--giga` is `-g` (GiB)."""
    if cell.endswith(_EITHER) and cell[: -len(_EITHER)].isdecimal():
        return (0, int(cell[: -len(_EITHER)]) * (_MIB - _KIB))  # (up to its MiB reading)
    match = _HUMAN.match(cell)
    if cell.isdecimal() or not match:
        return (0, unit_bytes if cell.isdecimal() and unit_bytes > 1024 else 0)
    power = _POWERS[match.group(2).upper()]
    unit = 1024**power
    figure = float(match.group(1).replace(",", "."))
    si = _si_marked(match)
    if "." in match.group(1) or "," in match.group(1):
        low, high = figure - 0.05, figure + 0.05
    else:
        low, high = figure, figure + (1 if unit > 1 else 0)
    base = 1000 if si else 1024
    return (round((figure - low) * base**power), round(high * unit - figure * base**power))


def free_labels() -> tuple[Label, ...]:
    """procps-ng `free`'s labels as translated (data/free_labels.yml, from procps-ng's message
    catalogues): row labels end in their colon (`内存：` for `Mem:`), column labels have none."""
    return labels("free_labels")


def _label_key(label: str) -> str:
    """A label as compared: runs of spaces as one, a full-width colon as ASCII, no colon at the end."""
    return " ".join(label.replace("：", ":").split()).removesuffix(":").strip()


@loaded_once
def _free_words() -> tuple[dict[str, str], Callable[[str], str]]:
    """Translated row label -> the C locale's row name, and the translator of a header line (a
    column label standing alone, labels of several words first: "w cache", "nhớ tạm")."""
    rows = {_label_key(t): e.rstrip(":") for _, t, e in free_labels() if e.endswith(":")}
    columns = {_label_key(t): e for _, t, e in free_labels() if not e.endswith(":")}
    return rows, word_translator(columns)


# free's row labels as the C locale prints them (procps before 3.3.10 adds `-/+ buffers/cache:`)
_C_ROWS = ("Mem:", "Swap:", "Low:", "High:", "Total:", "-/+ buffers/cache:")


@loaded_once
def _row_labels() -> re.Pattern[str]:
    """free's row labels (the C locale's and the translated ones, free_labels()), each where a
    blank or the line's start is before it; group 1 is the label."""
    names = {*_C_ROWS, *(t for _, t, e in free_labels() if e.endswith(":"))}
    ordered = sorted(names, key=len, reverse=True)
    return re.compile(
        r"(?:^|(?<=\s))(" + "|".join(re.escape(n).replace(r"\ ", r"\s+") for n in ordered) + ")"
    )


def _unjoined(line: str) -> list[str]:
    """A line of `free` whose rows a paste ran together, one row a line again: a post or a page
    that lost the output's line ends puts `total used ... cached Mem: 8092856 ... -/+
    buffers/cache: 369632 7723224 Swap: 3020212 0 3020212` on one line (openSUSE's support
    database, a hosting provider's knowledge base), which was no `free` at all. A line is cut
    before each row label after its start only where it holds two rows, or free's header before
    its row (a lone row label inside another line, `top`'s `KiB Mem: ... total`, is left alone)."""
    found = [m.start(1) for m in _row_labels().finditer(line)]
    starts = [i for i in found if line[:i].strip()]
    if not starts:
        return [line]
    head = _free_words()[1](line[: starts[0]]).split()
    header = "total" in head and set(head) <= _FREE_COLUMNS
    if len(found) < 2 and not header:
        return [line]
    cuts = [0, *starts, len(line)]
    return [line[a:b].rstrip() for a, b in zip(cuts, cuts[1:], strict=False) if line[a:b].strip()]


# the column free's header ends with: procps-ng 3.3.10+'s (and `-w`'s) `available`, older
# procps' `cached`, BusyBox's `buffers`
_LAST_COLUMNS = frozenset({"available", "cached", "buffers"})


def opens_with_free_header(text: str) -> bool:
    """Whether `text` opens with free's whole header, C-locale or translated, up to its line's
    end or its first row label (`total used free shared buff/cache available Mem: 15 ...`,
    `总计 已用 ... 内存： ...`): a free output a paste glued onto its command's line. A header
    cut short, or a header-like argument (`grep total used free log`), does not end as free's."""
    line = text.split("\n", 1)[0]
    row = _row_labels().search(line)
    head = _free_words()[1](line[: row.start(1)] if row else line).split()
    return len(head) >= 5 and head[0] == "total" and head[-1] in _LAST_COLUMNS and set(head) <= _FREE_COLUMNS


def english_free(text: str) -> str:
    """A `free` output with its labels as the C locale prints them (free_labels()): a translated
    row label (`内存：`, `Speicher:`) as `Mem:`, a translated header's words as `total used ...`;
    an English output unchanged. A line a paste wrapped (a piece without a row's colon after the
    header) is whole again (wrapped.rejoined), rows a paste ran together on one line are lines of
    their own (_unjoined), blank lines left out."""
    rows, header = _free_words()
    out: list[str] = []
    lines = [line if ":" in line or "：" in line else _lowered(line) for line in text.split("\n")]
    pieces = rejoined(lines, lambda line: ":" in line or "：" in line)
    for line in (row for piece in pieces for row in _unjoined(piece)):
        ends = [i for i in (line.find(":"), line.find("：")) if i >= 0]
        if ends:
            row = rows.get(_label_key(line[: min(ends)]))
            out.append(f"{row}:{line[min(ends) + 1 :]}" if row else line)
        else:
            out.append(header(line))
    return "\n".join(out)


def _lowered(line: str) -> str:
    """A header line with free's column words in the case free prints them: `Total` of a header
    a poster retyped or capitalised (measure33b 29) is free's `total`, any other word unchanged."""
    return re.sub(
        r"\S+", lambda m: m.group(0).lower() if m.group(0).lower() in _FREE_COLUMNS else m.group(0), line
    )


def looks_like_free(text: str) -> bool:
    """A `free` output, in English or a language free is translated into: a `Mem:` row and,
    above it, a header line holding the word `total` (a header a paste wrapped or mangled too;
    `top`'s `Tasks: 300 total, ...` above its `Mem: 16331452k total, ...` row holds `total,`, a
    count's, and is no free), or free's header alone (an output cut after it)."""
    english = english_free(text.lstrip()[:4000])
    lines = english.splitlines()
    row = next((i for i, line in enumerate(lines) if re.match(r"\s*Mem:", line)), None)
    if row is not None and any("total" in line.split() for line in lines[:row]):
        return True
    return header_alone(english)


def header_alone(text: str) -> bool:
    """Whether `text` (in English) is free's header and nothing else, maybe cut inside it
    (`total        used  ` of an output cut after its first line): from `total` on, at least
    two of free's columns, the last one maybe cut short."""
    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) != 1 or not lines[0].split() or lines[0].split()[0] != "total":
        return False
    words = lines[0].split()
    whole, last = words[:-1], words[-1]
    return (
        len(words) >= 2
        and all(word in _FREE_COLUMNS for word in whole)
        and any(column.startswith(last) for column in _FREE_COLUMNS)
    )


# free's column names (procps 3.3.10+ and older, `-w`'s buffers and cache)
_FREE_COLUMNS = frozenset(
    {"total", "used", "free", "shared", "buff/cache", "buffers", "cache", "cached", "available"}
)


def _header_index(lines: list[str]) -> int | None:
    """The index of free's header: the line whose words from `total` on are free's columns
    (`du -ch`'s `4.0G	total` above it holds `total` too); else the first line holding `total`
    (a header cut short or mangled)."""
    holding = [i for i, line in enumerate(lines) if "total" in line.split()]
    for i in holding:
        columns = _columns(lines[i].split())
        if len(columns) >= 2 and all(word in _FREE_COLUMNS for word in columns):
            return i
    return holding[0] if holding else None


def _columns(words: list[str]) -> list[str]:
    """free's columns of its header line's words: from its (last) `total` on. A word before it
    is another output's, a line a paste glued onto it (`4.0GB` of `numfmt ... && free -h`,
    `du -ch`'s `4.0G	total` rejoined with it), never a column of the rows below."""
    return words[len(words) - 1 - words[::-1].index("total") :]


def parse_free(text: str, unit_bytes: int = 1024) -> MemoryInfo:
    """Parse `free` (KiB by default; pass unit_bytes=1 for `free -b`), in English or translated."""
    lines = [line for line in english_free(text).splitlines() if line.strip()]
    header_index = _header_index(lines)
    if header_index is None:
        return MemoryInfo(None, None, None, ("output not recognised as free (no header)",))
    if header_alone("\n".join(lines)):
        return MemoryInfo(None, None, None, ("free's output cut after its header",))
    columns = _columns(lines[header_index].split())
    rows = {}
    for line in lines[header_index + 1 :]:
        label, _, rest = line.partition(":")
        rows[label.strip()] = rest.split()
    warnings: list[str] = []

    def cell(row: str, column: str) -> int | None:
        """One numeric cell, warning when absent or unparseable."""
        values = rows.get(row)
        if values is None or column not in columns or columns.index(column) >= len(values):
            warnings.append(f"free: no {row} {column}")
            return None
        value = _amount(values[columns.index(column)], unit_bytes)
        if value is None:
            warnings.append(f"free: {row} {column} not a size: {values[columns.index(column)]!r}")
        return value

    mem = rows.get("Mem")
    if mem is not None and len(mem) < len(columns):  # free prints a value under every column
        return MemoryInfo(
            None, None, None, (f"free: the Mem row has {len(mem)} of {len(columns)} values (cut short)",)
        )
    total = cell("Mem", "total")
    # procps < 3.3.10 has no 'available' column; the figure is then simply unknown.
    available = cell("Mem", "available")
    swap = cell("Swap", "total")
    cell_text = mem[columns.index("total")] if total is not None and mem else ""
    spread = _spread(cell_text, unit_bytes) if cell_text else (0, 0)
    si = bool((match := _HUMAN.match(cell_text)) and _si_marked(match))
    unsure = cell_text.endswith(_EITHER)
    return MemoryInfo(total, available, swap, tuple(warnings), spread, si, unsure)


class FreeFormatError(UsageError):
    """A saved `free` output whose unit cannot be told (bytes, KiB or MiB)."""


# Plausible RAM of a host this tool judges: 256 MiB .. 16 TiB. A saved `free` total read in
# each unit (bytes, KiB, MiB) is kept as a candidate only when it lands in this range.
_RAM_MIN = 256 << 20
_RAM_MAX = 16 << 40
_KIB, _MIB, _GIB = 1024, 1024 * 1024, 1024**3
_UNIT_NAMES = {1: "bytes (free -b)", _KIB: "KiB (free -k)", _MIB: "MiB (free -m)", _GIB: "GiB (free -g)"}
# the flag named in a file name: free-b.txt, free -m.txt, free_--kibi.txt, ...
_NAMED_FLAG = lazy_re(
    r"free[-_ ]*-{0,2}(b|bytes|k|kibi|kilo|m|mebi|mega|g|gibi|giga|tebi|tera|h|human)(?![a-z0-9])",
    re.IGNORECASE,
)
_FLAG_UNITS = {"b": 1, "bytes": 1, "k": _KIB, "kibi": _KIB, "kilo": _KIB, "m": _MIB, "mebi": _MIB,
               "mega": _MIB, "g": _GIB, "gibi": _GIB, "giga": _GIB, "tebi": _GIB << 10,
               "tera": _GIB << 10, "h": 0, "human": 0}  # fmt: skip
# `--si`, or a unit flag procps-ng 3.3.10+ reads in powers of 1000 (`--giga`; older procps-ng
# made it `-g`), in the copied command or the file's name (`free -h --si.txt`, `free-h-si.txt`)
_SI_FLAG = lazy_re(r"(?:^|[\s_-])-{0,2}(?:si|kilo|mega|giga|tera|peta)(?=$|[\s_.-])", re.IGNORECASE | re.M)


def _numbers(text: str) -> list[int]:
    """Every number in the Mem/Swap rows of a `free` output."""
    values: list[int] = []
    for line in text.splitlines():
        label, colon, rest = line.partition(":")
        if colon and label.strip() in ("Mem", "Swap", "Low", "High", "Total"):
            values += [int(cell) for cell in rest.split() if cell.isdecimal()]
    return values


# free's flags that set no unit (`-w` wide, `-t` total, `-l` low/high, `-v` committed) in a file's
# name from its `free` on (`free-w.txt`, `free -t.txt`): free then prints KiB
_OTHER_FLAG = lazy_re(r"free[-_ ]*-{0,2}(?:w|wide|t|total|l|lohi|v|committed)(?![a-z0-9])", re.IGNORECASE)
# the most swap a `free -m` of a box this tool judges is taken to show (256 GiB, in MiB): installers
# make a few GiB, RHEL's guide at most the RAM of a small box; a Swap total above it read as MiB
# is no swap a box was given, so the output is plain free's KiB
_SWAP_MAX_MIB = 256 << 10


def _runs_free(command: str) -> bool:
    """Whether the copied `command` runs free (`free`, `sudo free`, `ssh box free -w`, a path to
    it), not a file named for it (`cat free.txt`)."""
    for part in re.split(r"[;&|]+", command):
        words = part.replace("'", " ").replace('"', " ").split()
        if any(word.rsplit("/", 1)[-1] == "free" for word in words):
            return True
    return False


def _clustered_unit(command: str) -> int | None:
    """The unit a copied free command gives in a cluster of its short options (`-wm`, `-th`,
    `-mt`: _NAMED_FLAG reads a unit letter only first in its word), the last one given; None
    where none does."""
    letters = "".join(re.findall(r"(?:^|\s)-([A-Za-z]{2,})(?=\s|$)", tool_words("", "free", command)))
    units = [_FLAG_UNITS[letter] for letter in letters if letter in "bkmgh"]
    return units[-1] if units else None


def _swap_says_kib(text: str) -> bool:
    """Whether the Swap total of a free output is too much swap read as MiB (_SWAP_MAX_MIB)."""
    for line in text.splitlines():
        label, colon, rest = line.partition(":")
        cells = rest.split()
        if colon and label.strip() == "Swap" and cells and cells[0].isdecimal():
            return int(cells[0]) > _SWAP_MAX_MIB
    return False


def free_unit(name: str, text: str, command: str = "") -> int:
    """Bytes per number of a saved `free` output (see _free_unit); a file named for plain `free`
    whose total is plausible in KiB and in MiB is read in KiB."""
    return _free_unit(name, text, command)[0]


def _free_unit(name: str, text: str, command: str = "") -> tuple[int, bool]:
    """(Bytes per number of a saved `free` output: 1 (`-b`), 1024 (`-k`, plain `free`), 1048576
    (`-m`), 1073741824 (`-g`), or 0 for `-h` (sizes carry their units). Raises FreeFormatError
    when it cannot tell; and whether a MiB reading is as plausible where the file's name alone
    settled it as plain `free`, in KiB.)

    A flag in the file name or copied command wins (`free-b.txt`, `free -m.txt`). Otherwise from the content:
    units in the cells mean `-h`; bytes come from /proc/meminfo's KiB, so in `free -b` every
    number is a multiple of 1024 (three or more non-zero ones make a KiB output doing so by
    chance about one in a billion); the Mem total must then be plausible RAM (256 MiB..16 TiB)
    in exactly one of bytes, KiB, MiB and GiB, or, for a file named for plain `free`, in KiB
    (a `free -g` of a 2 TiB box, `Mem: 2015`, is also 2015 MiB: refused unless named).
    """
    named = tool_words(name, "free", command)
    flag = _NAMED_FLAG.search(named)
    if flag:
        return _FLAG_UNITS[flag.group(1).lower()], False
    if (clustered := _clustered_unit(command)) is not None:
        return clustered, False  # (`free -wm`, `free -tg`)
    text = english_free(text)
    if header_alone(text):
        return _KIB, False  # (no number to read: parse_free says the output is cut)
    mem = next((ln.split() for ln in text.splitlines() if ln.strip().startswith("Mem:")), [])
    if len(mem) > 1 and not mem[1].isdecimal() and _HUMAN.match(mem[1]):
        return 0, False  # `free -h`: 1.9Gi, 503G ... (parse_free reads these itself)
    if _runs_free(command) or _OTHER_FLAG.search(tool_words(name, "free")):
        return _KIB, False  # (`$ sudo free`, free-w.txt: free with no unit flag prints KiB)
    total = parse_free(text, 1).total_bytes
    if total is None:
        raise FreeFormatError(f"{name}: no Mem total found in this free output.")
    numbers = [n for n in _numbers(text) if n]
    multiples = all(n % 1024 == 0 for n in numbers)
    candidates = [u for u in (1, _KIB, _MIB, _GIB) if _RAM_MIN <= total * u <= _RAM_MAX]
    if not multiples:
        candidates = [u for u in candidates if u != 1]
    elif len(numbers) >= 3 and 1 in candidates:
        return 1, False
    if _swap_says_kib(text) and 1 not in candidates and _KIB not in candidates and _MIB in candidates:
        # (its Swap total read as MiB is over 256 GiB of swap, so KiB stays a reading even below
        # the RAM floor: `Mem: 251348` beside `Swap: 574552` is 245.5 MiB of an old PC or 245.5
        # GiB, measure38d 22; the swap alone never settles it, a box given swap equal to its RAM
        # shows as much in a real `free -m`: the RAM is the range between the two readings)
        candidates = [_KIB, *candidates]
    if len(candidates) == 1:
        return candidates[0], False
    if _KIB in candidates and (named or _swap_says_kib(text)):
        # (named for plain `free` (free.txt), or a Swap total over 256 GiB read as MiB: a `free
        # -m` saved so is as likely; a MiB reading also plausible is kept as the range up to it,
        # never taken as 1024x less RAM, nor the other way round)
        return _KIB, _MIB in candidates
    readings = " or ".join(_UNIT_NAMES[u] for u in candidates) or "any unit (no plausible RAM size)"
    raise FreeFormatError(
        f"{name}: cannot tell the unit of this free output (Mem total {total} reads as {readings});"
        " save it as free-b.txt, free-k.txt, free-m.txt or free-g.txt after the flag it was run with."
    )


def free_as_kib(name: str, text: str, command: str = "") -> str:
    """A saved `free` output as the parsers read it (labels in English): `free -k` and `-h` as
    they are, `-b` in KiB (exact), `-m`/`-g` with their unit on each size (`125Gi`), so that
    the whole units they were cut to are known (MemoryInfo.total_spread). `name`: the file's
    name, `command`: the command copied above the output ("" if none): their flags say the unit.
    procps top's and `vmstat -s`'s outputs (their units are their own: read_memory) are left as
    they are."""
    summary = looks_like_top_memory(text) or looks_like_vmstat_memory(text)
    if summary and not looks_like_free(text) and not looks_like_meminfo(text):
        return text
    text = english_free(text)
    unit, unsure = _free_unit(name, text, command)
    if unsure:  # (each count marked as KiB or MiB: parse_free reads the range between the two)
        return _mark_cells(text, lambda cell: cell + _EITHER if cell.isdecimal() else cell)
    if unit == 1:  # (bytes: `--si` leaves them be)
        return re.sub(r"(?m)(?<=\s)\d+(?=\s|$)", lambda m: str(int(m.group()) // _KIB), text)
    if free_si(name, command):
        # each size marked as printed in powers of 1000 or 1024 (`112G` -> `112GB`, `8157` of
        # `--mega` -> `8157MB`): parse_free reads it as the range between the two
        letter = {0: "", _KIB: "K", _MIB: "M", _GIB: "G", _GIB << 10: "T"}[unit]
        return _mark_cells(text, lambda cell: cell + letter + "B" if cell.isdecimal() else cell + "B")
    if unit in (0, _KIB):
        return text
    suffix = {_MIB: "Mi", _GIB: "Gi", _GIB << 10: "Ti"}[unit]
    return re.sub(r"(?m)(?<=\s)\d+(?=\s|$)", lambda m: m.group() + suffix, text)


def free_si(name: str, command: str = "") -> bool:
    """Whether a saved `free` output was printed under `--si` (or `--kilo` ... `--tera`), by
    the flags in its copied command or its file name (named.tool_words: a file name's
    description after `__` is not read): its sizes are then in powers of 1000, or of 1024 in
    some procps versions (see _spread)."""
    return _SI_FLAG.search(tool_words(name, "free", command)) is not None


_SIZED_CELL = lazy_re(r"(?<=\s)(\d+(?:[.,]\d+)?[KMGTPE]?)(?=\s|$)")


def _mark_cells(text: str, mark: Callable[[str], str]) -> str:
    """`text` with each size cell of its Mem / Swap / Total / Low / High rows as `mark` gives it
    (`0B`, a unit of its own, is left: zero in any unit)."""
    out = []
    for line in text.split("\n"):
        label, colon, rest = line.partition(":")
        if colon and label.strip() in ("Mem", "Swap", "Low", "High", "Total", "Comm"):
            line = label + colon + _SIZED_CELL.sub(lambda m: mark(m.group(1)), rest)
        out.append(line)
    return "\n".join(out)


# cgroup v1 writes "no limit" as the largest page-aligned 63-bit number (9223372036854771712)
_NO_LIMIT = 1 << 62


# the cgroup files that hold a memory limit (v2, v1): a limit is known where one was read
MEMORY_LIMIT_FILES = ("memory.max", "memory.limit_in_bytes")


def parse_cgroup_memory_limit(text: str) -> int | None:
    """The smallest memory limit among the probe's `FILE<TAB>VALUE` lines (v2 memory.max,
    v1 memory.limit_in_bytes) in bytes; None when every one is unlimited or there is none."""
    limits = []
    for line in text.splitlines():
        path, _, value = line.partition("\t")
        if path.endswith(tuple("/" + f for f in MEMORY_LIMIT_FILES)) and value.strip().isdecimal():
            limit = int(value.strip())
            if limit < _NO_LIMIT:
                limits.append(limit)
    return min(limits) if limits else None


_MEMINFO = lazy_re(r"^(\w+(?:\(\w+\))?):\s+(\d+)(?:\s+(kB))?\s*$")


_MEMTOTAL = re.compile(r"^[^\S\n]*MemTotal:\s+\d+\s*kB\s*$", re.M)


def looks_like_meminfo(text: str) -> bool:
    """Whether a text is `cat /proc/meminfo` (its `MemTotal: N kB` line)."""
    return _MEMTOTAL.search(text[:4000]) is not None


# `vmstat -s`'s total memory line, /proc/meminfo's MemTotal in the unit `-S` names: `K` (KiB,
# unless told), `k` (1000), `M` (MiB), `m` (10^6), truncated (procps vmstat.c unitConvert)
_VMSTAT_TOTAL = lazy_re(r"^[ \t]*(\d+) ([kKmM]) total memory[ \t]*$", re.M)
_VMSTAT_UNITS = {"K": 1024, "k": 1000, "M": 1 << 20, "m": 1000_000}


def looks_like_vmstat_memory(text: str) -> bool:
    """Whether a text holds `vmstat -s`'s `4020152 K total memory` line."""
    return _VMSTAT_TOTAL.search(text[:4000]) is not None


def vmstat_memory(text: str) -> MemoryInfo | None:
    """The RAM `vmstat -s` gives (its `total memory`: MemTotal, exact in KiB, in `-S M` up to one
    unit more), or None where the text holds no such line; two such lines must agree."""
    found = set(_VMSTAT_TOTAL.findall(text[:200_000]))
    if not found:
        return None
    if len(found) > 1:
        said = (
            "vmstat -s shows several different total memory lines (two boxes' outputs?): no total can be read"
        )
        return MemoryInfo(None, None, None, (said,))
    figure, unit = found.pop()
    size = _VMSTAT_UNITS[unit]
    return MemoryInfo(int(figure) * size, None, None, total_spread=(0, size - 1 if size > 1024 else 0))


def read_memory(text: str) -> MemoryInfo:
    """The RAM of a `free -k` output (the probe's), of a saved `/proc/meminfo` (exact KiB), of
    `vmstat -s` (MemTotal in KiB) or of procps top's memory summary (a saved `top -b`, where no
    free was given)."""
    if looks_like_meminfo(text):
        return parse_meminfo(text)
    if not looks_like_free(text) and (vmstat := vmstat_memory(text)) is not None:
        return vmstat
    if not looks_like_free(text) and (top := top_memory(text)) is not None:
        return top
    return parse_free(text)


# procps top's memory summary line: old procps' `Mem:  264488144k total, ...` (KiB), procps-ng's
# `KiB Mem :  16305960 total, ...`, `MiB Mem : 126426.1 total, ...` (`-E`/`E` scales it: KiB to EiB)
_TOP_MEM = lazy_re(r"^[ \t]*(?:([KMGTPE])iB )?Mem[ \t]*:[ \t]*(\d+(?:\.(\d+))?)(k?)[ \t]+total,", re.M)
# or in its graph mode (key `m`), the percentage used over the total: `GiB Mem : 28.2/7.8   [|| ]`
_TOP_GRAPH_MEM = lazy_re(r"^[ \t]*([KMGTPE])iB Mem[ \t]*:[ \t]*\d+(?:\.\d+)?/(\d+\.(\d+))[ \t]+\[", re.M)


def looks_like_top_memory(text: str) -> bool:
    """Whether a text holds procps top's memory summary line (`MiB Mem : 126426.1 total, ...`)."""
    return _TOP_MEM.search(text[:8000]) is not None or _TOP_GRAPH_MEM.search(text[:8000]) is not None


def top_memory(text: str) -> MemoryInfo | None:
    """The RAM procps top's summary gives (its `Mem` total: /proc/meminfo's MemTotal, as free's,
    in the unit its label or `k` names, KiB where neither: procps top.c), or None where the text
    holds no such line. Two such lines (two frames, `top -n 2`) must agree; printed with decimals
    (`126426.1` MiB), the total spreads half its last digit either way."""
    found = _TOP_MEM.findall(text[:200_000])
    found += [
        (unit, figure, decimals, "") for unit, figure, decimals in _TOP_GRAPH_MEM.findall(text[:200_000])
    ]
    if not found:
        return None
    if len({(unit, figure) for unit, figure, _, _ in found}) > 1:
        said = "top's output shows several different Mem totals (two boxes' outputs?): no total can be read"
        return MemoryInfo(None, None, None, (said,), source="top")
    unit, figure, decimals, _ = found[0]
    size = 1024 ** (" KMGTPE".index(unit) if unit else 1)
    half = size * 10 ** -len(decimals) / 2 if decimals else 0
    return MemoryInfo(
        round(float(figure) * size), None, None, total_spread=(int(half), int(half)), source="top"
    )


def parse_meminfo(text: str) -> MemoryInfo:
    """Parse /proc/meminfo (values in kB, which the kernel means as KiB)."""
    values: dict[str, int] = {}
    for line in text.splitlines():
        match = _MEMINFO.match(line.strip())
        if match:
            values[match.group(1)] = int(match.group(2)) * (1024 if match.group(3) else 1)
    if not values:
        return MemoryInfo(None, None, None, ("output not recognised as /proc/meminfo",))
    warnings = [
        f"/proc/meminfo has no {key}"
        for key in ("MemTotal", "MemAvailable", "SwapTotal")
        if key not in values
    ]
    return MemoryInfo(
        values.get("MemTotal"), values.get("MemAvailable"), values.get("SwapTotal"), tuple(warnings)
    )


_NUMA_NODES = lazy_re(r"^available: (\d+) nodes?", re.M)
_NUMA_SIZE = lazy_re(r"^node (\d+) size: (\d+) MB\s*$", re.M)
_NUMA_CPUS = lazy_re(r"^node (\d+) cpus:(.*)$", re.M)


def _twice(listed: list[str]) -> str:
    """The first node number listed twice (or, two `available:` lines, the first node's)."""
    return next((node for i, node in enumerate(listed) if node in listed[:i]), listed[0] if listed else "0")


def read_numactl_memory(text: str) -> MemoryInfo:
    """The RAM of a `numactl --hardware` output: the sum of the sizes of its nodes with CPUs
    (numactl's `MB` are MiB, each node's MemTotal rounded down: the sum is the kernel's MemTotal,
    up to 1 MiB a node less). A node listing no CPU (`node 252 cpus:` empty) may be memory of a
    device (the GPU memory POWER9/NVLink2 and GH200 boxes list as NUMA nodes, CXL memory) or DRAM
    whose CPUs are offline (a VM's vCPUs all on node 0, `nr_cpus=`): it is left out and said
    (`uncounted`; ram is unverified where only the sum with it meets the order). An output
    listing fewer sizes than its `available:` line, or ending on a node's CPU list, is cut short:
    no total (its sum is only a floor)."""
    text = numactl_unwrapped(text)[0]  # (CPU lists a mail wrapped: their rest is no cut)
    nodes = _NUMA_NODES.search(text)
    sizes = [(node, int(size)) for node, size in _NUMA_SIZE.findall(text)]
    last = next((line for line in reversed(text.splitlines()) if line.strip()), "")
    available = int(nodes.group(1)) if nodes else None
    listed = [node for node, _ in sizes]
    if len(_NUMA_NODES.findall(text)) > 1 or len(set(listed)) < len(listed):
        # (two boxes' outputs in one file, or a node's block pasted twice: never summed as one box)
        said = (
            f"numactl's output lists {len(sizes)} node sizes, node {_twice(listed)} twice (two outputs"
            " in one file, or one pasted twice): no total can be read"
        )
        return MemoryInfo(None, None, None, (said,), source="numactl")
    cpuless = {node for node, cpus in _NUMA_CPUS.findall(text) if not cpus.strip()}
    top = _top_cut(text, listed) if available is None else None
    available = len(listed) if top else available
    if not sizes or re.match(r"node \d+ cpus:", last) or available is None or len(sizes) < available:
        whole = f"{len(sizes)} of {available}" if available is not None else f"{len(sizes)}"
        # (the nodes read before the cut hold at least their sizes; CPU-less ones are not RAM)
        floor = sum(size for node, size in sizes if node not in cpuless) << 20
        return MemoryInfo(
            None,
            None,
            None,
            (f"numactl's output cut short: {whole} nodes' sizes read (their sum is only a floor)",),
            source="numactl",
            floor_bytes=floor or None,
        )
    counted = [size for node, size in sizes if node not in cpuless]
    left = [size for node, size in sizes if node in cpuless]
    if not counted:
        said = f"numactl lists no node with CPUs: its {len(left)} nodes' memory is no RAM of the box"
        return MemoryInfo(None, None, None, (said,), source="numactl")
    return MemoryInfo(
        sum(counted) << 20,
        None,
        None,
        (top,) if top else (),
        total_spread=(0, len(counted) << 20),
        source="numactl",
        uncounted=(len(left), sum(left) << 20),
    )


# a line of CPU numbers alone (`23 24 25 ... 46`): the rest of a `node N cpus:` list that a mail
# client or a page wrapped (m36b 11, a PowerKVM guest's 100 CPUs a node over 5 lines)
_CPU_CELLS_ONLY = lazy_re(r"[ \t]*\d[\d,()\- \t]*")


def numactl_unwrapped(text: str) -> tuple[str, int]:
    """numactl's output with each `node N cpus:` list whole again: the lines of CPU numbers alone
    below one (its wrapped rest: numactl prints the node's `size:` line next) joined onto it with
    a blank; and how many lines were joined (0: none wrapped)."""
    out: list[str] = []
    joined = 0
    for line in text.split("\n"):
        if out and _CPU_CELLS_ONLY.fullmatch(line) and _NUMA_CPUS_LINE.match(out[-1]):
            out[-1] = f"{out[-1].rstrip()} {line.strip()}"
            joined += 1
        else:
            out.append(line)
    return "\n".join(out), joined


# a node's CPU list with a CPU in it (a node listing none has nothing to continue)
_NUMA_CPUS_LINE = lazy_re(r"node \d+ cpus:[ \t]*\d")


# numactl's distance matrix: its head line and the node numbers below it (`node   0   1`)
_NUMA_DISTANCES = lazy_re(r"^node distances:[ \t]*\n[ \t]*node((?:[ \t]+\d+)+)[ \t]*$", re.M)


def numactl_top_cut(text: str) -> bool:
    """Whether a text is a `numactl --hardware` that lost its top (`available: N nodes`, node 0's
    `cpus:` line: a page that begins mid-output): it opens with a node's cpus, size or free line
    and holds the `node distances:` matrix below."""
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return re.match(r"node \d+ (?:cpus|size|free):", first) is not None and bool(_NUMA_DISTANCES.search(text))


def _top_cut(text: str, listed: list[str]) -> str | None:
    """Where numactl's output lost its top, its `available:` line: what was read, where every node
    of its distance matrix has its size line (their sum is the total; a node whose `cpus:` line
    was cut away is counted: numactl numbers the DRAM nodes from 0, device memory's above them),
    else None (a cut: no total)."""
    matrix = _NUMA_DISTANCES.search(text)
    if matrix is None or sorted(matrix.group(1).split(), key=int) != sorted(listed, key=int):
        return None
    nodes = len(listed)
    return (
        f"numactl's output cut at its top (no `available:` line): each of the {nodes} nodes of its"
        " distance matrix has its size line"
    )
