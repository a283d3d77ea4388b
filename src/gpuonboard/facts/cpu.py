"""Pure parsers for `lscpu` (plain text or `lscpu -J` JSON) and, where lscpu is missing,
/proc/cpuinfo."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuonboard.facts.elision import elided
from gpuonboard.facts.wrapped import rejoined
from gpuonboard.once import lazy_re, loaded_once
from gpuonboard.resources import DATA_DIR, table_rows

__all__ = [
    "CPUINFO",
    "CpuInfo",
    "looks_like_cpuinfo",
    "looks_like_lscpu",
    "lscpu_labels",
    "nproc_unread",
    "parse_cpuinfo",
    "parse_lscpu",
    "parse_nproc",
    "TYPE_FIELDS",
]


@dataclass(frozen=True)
class CpuInfo:
    """CPU shape of a host as lscpu (or /proc/cpuinfo) reports it."""

    architecture: str | None
    model_name: str | None
    sockets: int | None
    cores_per_socket: int | None
    threads_per_core: int | None
    logical_cpus: int | None
    # sockets * cores_per_socket when both are known; clusters * cores per cluster where lscpu
    # says "Socket(s): -" (ARM without socket data)
    physical_cores: int | None
    warnings: tuple[str, ...] = ()
    # CPUs in lscpu's "Off-line CPU(s) list" (counted in logical_cpus, usable by nobody);
    # None when lscpu prints no such line (every CPU online)
    offline_cpus: int | None = None
    # why this lscpu output is not whole, or None: it ends inside its CPU type blocks (nothing
    # lscpu prints after them follows) with CPUs of CPU(s) not in the types read or a type's
    # core count unread; physical_cores is then None (the types cut off are unknown)
    cut: str | None = None
    # what was read: "lscpu", or "/proc/cpuinfo" (CPUINFO: the live probe reads it where lscpu is
    # not installed; it lists the online CPUs only)
    source: str = "lscpu"
    # why a /proc/cpuinfo may hold only some of the kernel's lines (a grep of it), or None: what
    # it counts is there, but a filter may have left CPUs out
    filtered: str | None = None
    # where the output is cut short (`cut`), the fewest cores it proves, or None: /proc/cpuinfo's
    # packages read (each one's `cpu cores` or distinct core ids), lscpu's whole CPU types read;
    # a floor that meets an order proves it met (`at least N read`)
    cores_floor: int | None = None


CPUINFO = "/proc/cpuinfo"
LSCPU_LABELS_FILE = DATA_DIR / "lscpu_labels.yml"
# the fields lscpu prints once per CPU type (an ARM big.LITTLE part such as the GB10's
# Cortex-X925 + Cortex-A725 prints a "Model name" block for each type)
TYPE_FIELDS = (
    "Model name",
    "Thread(s) per core",
    "Core(s) per socket",
    "Core(s) per cluster",
    "Socket(s)",
    "Cluster(s)",
)
_TYPE_FIELDS = frozenset(TYPE_FIELDS)
_ENGLISH = _TYPE_FIELDS | {"Architecture", "CPU(s)", "Off-line CPU(s) list"}


@loaded_once
def lscpu_labels(path: Path = LSCPU_LABELS_FILE) -> dict[str, str]:
    """Translated lscpu label -> its English field (data/lscpu_labels.yml), labels without
    their trailing colon."""
    return {str(row["label"]): str(row["field"]) for row in table_rows(path, "lscpu_labels")}


def _field_name(label: str) -> str:
    """The English field of a label as printed (trailing colon and no-break spaces dropped)."""
    label = label.strip().rstrip(":：").strip()
    return label if label in _ENGLISH else lscpu_labels().get(label, label)


def _split_field(line: str) -> tuple[str, str] | None:
    """(label, value) of a "Key: value" line, the colon ASCII or full-width (zh_CN / zh_TW:
    "架构：   x86_64"), whichever comes first, or of a translated label lscpu prints without
    its colon (_bare_field); None for another line (a wrapped Flags line). str.partition, not a
    regex: a lazy regex backtracks over lscpu's long Flags lines (0.07 ms a parse against 1.0 ms
    with the regex, on the 2-socket EPYC capture)."""
    key, sep, value = line.partition(":")
    if "：" in key:
        key, sep, value = line.partition("：")
    key = key.strip()
    return (key, value.strip()) if sep and key else _bare_field(line)


@loaded_once
def _bare_labels() -> tuple[str, ...]:
    """The translated labels of data/lscpu_labels.yml, longest first."""
    return tuple(sorted(lscpu_labels(), key=len, reverse=True))


@loaded_once
def _bare_labels_by_first() -> tuple[dict[str, tuple[str, ...]], tuple[str, ...]]:
    """_bare_labels grouped by their first character (each group longest first, as in
    _bare_labels), and those that start a line whatever its first character (an empty label):
    a line is only tried against the labels it can start with (a wrapped Flags line, ~20 of a
    host's lscpu, tried 185 labels: 0.6 -> 0.1 ms a parse)."""
    anywhere = tuple(label for label in _bare_labels() if not label)
    groups: dict[str, list[str]] = {}
    for label in _bare_labels():
        if label:
            groups.setdefault(label[0], [])
    for label in _bare_labels():
        for first in groups if not label else (label[0],):
            groups[first].append(label)
    return {first: tuple(labels) for first, labels in groups.items()}, anywhere


def _bare_field(line: str) -> tuple[str, str] | None:
    """(label, value) of a line holding a translated label without its colon, then the blanks
    lscpu pads labels with and a value: util-linux's Spanish catalogue translates "Socket(s):"
    as "«Socket(s)»" (`«Socket(s)»                          1`); read as a wrapped line, it
    joined the line before (`Núcleo(s) por «socket»: 4«Socket(s)» ... 1`), both counts lost."""
    text = line.strip()
    groups, anywhere = _bare_labels_by_first()
    for label in groups.get(text[:1], anywhere):
        rest = text[len(label) :]
        if text.startswith(label) and rest[:2] in ("  ", "\t", " \t") and rest.strip():
            return label, rest.strip()
    return None


# the fields a plain lscpu prints that count the box's CPUs and cores: a paste that lost the
# lines above its `CPU(s):` (Architecture, CPU op-mode(s), Byte Order: none counts anything) is
# still lscpu where they all follow; the CPU type blocks come after `CPU(s):`, so none is lost
_COUNTING_FIELDS = frozenset({"CPU(s)", "Thread(s) per core", "Socket(s)"})


def looks_like_lscpu(text: str) -> bool:
    """True when the first line is lscpu's "Architecture:" in any language lscpu is translated
    into ("Architektur:", "架构："), or, that line lost or garbled by a paste (`rchitecture:`),
    when its lines give `CPU(s):`, `Thread(s) per core:`, `Socket(s):` and a core count."""
    lines = [line for line in text.splitlines() if line.strip()]
    field = _split_field(lines[0]) if lines else None
    if field is not None and _field_name(field[0]) == "Architecture":
        return True
    # only lines above `CPU(s):` may be lost that way (a paste's first line, op-mode, byte order,
    # address sizes: none counts anything); a grep of lscpu (`lscpu | grep -E '^(CPU|Thread|Core|
    # Socket)'`) keeps the counts but drops the Off-line CPU(s) list, so the On-line list must be
    # there (`virsh nodeinfo`, whose `CPU socket(s)` counts a NUMA cell's, has none either)
    names = [_field_name(f[0]) if (f := _split_field(line)) is not None else "" for line in lines[:60]]
    if "CPU(s)" not in names or "On-line CPU(s) list" not in names:
        return False
    above = names[1 : names.index("CPU(s)")]
    if any(name not in _ABOVE_CPUS for name in above):
        return False
    return set(names) >= _COUNTING_FIELDS and bool(set(names) & {"Core(s) per socket", "Core(s) per cluster"})


# the lines lscpu prints between Architecture and CPU(s) (util-linux 2.19 to 2.40)
_ABOVE_CPUS = frozenset({"CPU op-mode(s)", "Byte Order", "Address sizes"})


def _plain_pairs(text: str) -> list[tuple[str, str]]:
    """'Key: value' pairs of plain lscpu in order, a line wrapped by a paste whole again. lscpu
    ends every line with a newline: a last line without one may be cut inside its value
    (`CPU(s): 6` of `CPU(s): 64`) and is not read (a whole output's last line is a
    Vulnerability, Flags, NUMA or cache line, none of which is read)."""
    lines = text.splitlines()
    if lines and not text.endswith(("\n", "\r")):
        lines.pop()
    pairs = []
    # (a line without a label is the rest of the line before: lscpu's own wrap of its Flags, or
    # a paste's wrap, which may cut a number: `CPU(s):   6` / `4`)
    for line in rejoined(lines, lambda line: _split_field(line) is not None):
        field = _split_field(line)
        if field:
            pairs.append((_field_name(field[0]), field[1]))
    return pairs


def _json_pairs(entries: Iterable[Any]) -> list[tuple[str, str]]:
    """`lscpu -J` entries in order (newer util-linux nests them under "children")."""
    pairs: list[tuple[str, str]] = []
    for entry in entries:
        if not isinstance(entry, Mapping):
            continue
        name = _field_name(str(entry.get("field", "")))
        data = entry.get("data")
        if name and data is not None:
            pairs.append((name, str(data).strip()))
        children = entry.get("children")
        if isinstance(children, list):
            pairs.extend(_json_pairs(children))
    return pairs


def _split_types(pairs: Iterable[tuple[str, str]]) -> tuple[dict[str, str], list[dict[str, str]]]:
    """(the host-wide fields, first occurrence wins; one dict of _TYPE_FIELDS per CPU type): a
    type field seen again starts the next type's block; a block repeated whole is read once."""
    host: dict[str, str] = {}
    types: list[dict[str, str]] = [{}]
    for key, value in pairs:
        if key in _TYPE_FIELDS:
            if key in types[-1]:
                types.append({})
            types[-1][key] = value
        else:
            host.setdefault(key, value)
    # a block the same as one before it in every field is that CPU type again (a paste that
    # repeated lines), never a second type: two types differ (GB10's by their Model name)
    unique: list[dict[str, str]] = []
    for t in types:
        if t and t not in unique:
            unique.append(t)
    return host, unique


def _int(fields: Mapping[str, str], key: str, warnings: list[str]) -> int | None:
    """Integer field, or None with a warning when missing or not a number (e.g. ARM's '-')."""
    value = fields.get(key)
    if value is None:
        warnings.append(f"lscpu has no '{key}' field")
        return None
    if not value.isdecimal():
        warnings.append(f"lscpu '{key}' is not a number: {value!r}")
        return None
    return int(value)


_CPU_RANGE = re.compile(r"^(\d+)(?:-(\d+))?$")


def _cpu_list_numbers(value: str) -> list[int] | None:
    """The CPUs a kernel CPU list names ('0-3,8' -> [0, 1, 2, 3, 8]); None if not a list."""
    numbers: list[int] = []
    for part in value.replace(" ", "").split(","):
        match = _CPU_RANGE.match(part)
        if not match or int(match.group(2) or match.group(1)) < int(match.group(1)):
            return None
        numbers += range(int(match.group(1)), int(match.group(2) or match.group(1)) + 1)
    return numbers


def _cpu_list_count(value: str | None) -> int | None:
    """How many CPUs a lscpu CPU list names ('0-3,8,10-11' -> 7, '' -> 0); None if not a list."""
    if value is None:
        return None
    count = 0
    for part in value.replace(" ", "").split(","):
        if not part:
            continue
        match = _CPU_RANGE.match(part)
        if not match:
            return None
        first, last = int(match.group(1)), int(match.group(2) or match.group(1))
        if last < first:
            return None
        count += last - first + 1
    return count


def _empty(message: str) -> CpuInfo:
    """A CpuInfo with nothing known and one warning saying why."""
    return CpuInfo(None, None, None, None, None, None, None, (message,))


def _type_cores(fields: Mapping[str, str], warnings: list[str]) -> tuple[int | None, int | None, int | None]:
    """(sockets, cores per socket, physical cores) of one CPU type's block."""
    clustered = "Cluster(s)" in fields or (
        "Core(s) per cluster" in fields and "Core(s) per socket" not in fields
    )
    if clustered or (fields.get("Socket(s)") == "-" and "Core(s) per cluster" in fields):
        # ARM whose cores lscpu counts per cluster (Jetson Orin, Kunpeng 920, Ampere Altra on some
        # boards, Cavium ThunderX): it prints "Core(s) per cluster:" and "Cluster(s):", the
        # cores being their product, and "Socket(s):" is "-" or the firmware's socket count,
        # which multiplies nothing (zh_CN translates "Core(s) per cluster:" as it does "Core(s)
        # per socket:")
        key = "Core(s) per cluster" if "Core(s) per cluster" in fields else "Core(s) per socket"
        clusters = _int(fields, "Cluster(s)", warnings)
        per_cluster = _int(fields, key, warnings)
        return (
            None,
            None,
            clusters * per_cluster if clusters is not None and per_cluster is not None else None,
        )
    sockets = _int(fields, "Socket(s)", warnings)
    cores = _int(fields, "Core(s) per socket", warnings)
    return sockets, cores, sockets * cores if sockets is not None and cores is not None else None


# why an `lscpu -J` whose JSON ends before its brackets close gives nothing
LSCPU_JSON_CUT = "the `lscpu -J` output is cut short (its JSON does not close)"


def _json_ends_early(text: str, exc: json.JSONDecodeError) -> bool:
    """Whether the JSON `text` failed only for ending before it closes: at its last characters,
    inside a string (json names the string's start: its quote never closes), or inside a
    literal or number (`nul`, `12`, json names its start)."""
    tail = text[exc.pos :]
    return (
        exc.pos >= len(text) - 1
        or exc.msg.startswith("Unterminated string")
        or any(word.startswith(tail) for word in ("null", "true", "false"))
    )


def _pairs(text: str) -> list[tuple[str, str]] | str:
    """The (English field, value) pairs of plain lscpu or `lscpu -J`, or why there are none."""
    stripped = text.strip()
    if not stripped.startswith("{"):
        return _plain_pairs(text)
    try:
        document = json.loads(stripped)
    except json.JSONDecodeError as exc:
        if _json_ends_early(stripped, exc):  # (a paste or a session cut)
            return LSCPU_JSON_CUT
        return f"lscpu JSON invalid: {exc}"
    entries = document.get("lscpu") if isinstance(document, Mapping) else None
    if not isinstance(entries, list):
        return "lscpu JSON lacks the 'lscpu' list"
    return _json_pairs(entries)


def parse_lscpu(text: str) -> CpuInfo:
    """Parse `lscpu` or `lscpu -J` output, in any locale util-linux is translated into
    (data/lscpu_labels.yml), into a CpuInfo. A part with several CPU types (GB10: 10 Cortex-X925
    + 10 Cortex-A725, each type its own "Model name" block) counts the cores of every type."""
    pairs = _pairs(text)
    if isinstance(pairs, str):
        return _empty(pairs)
    host, types = _split_types(pairs)
    if "Architecture" not in host and "CPU(s)" not in host:
        return _empty("output not recognised as lscpu")
    warnings: list[str] = []
    logical = _int(host, "CPU(s)", warnings)
    offline = _cpu_list_count(host.get("Off-line CPU(s) list"))
    online = _cpu_list_count(host.get("On-line CPU(s) list"))
    if logical is None and offline is not None and online is not None:
        logical = online + offline  # (its CPU(s) line lost, a paste that joined it to another)
    if offline is None and online is not None and logical is not None and online < logical:
        offline = logical - online  # (its Off-line line lost: a grep or a paste that dropped it)
    per_type = [_type_cores(t, warnings) for t in types or [{}]]
    physical_each = [p for _, _, p in per_type]
    physical = None if None in physical_each else sum(p for p in physical_each if p is not None)
    sockets, cores = per_type[0][0], per_type[0][1]
    if len(per_type) > 1:  # one socket holding every type (GB10): the cores of all types per socket
        same = all(s == sockets for s, _, _ in per_type) and None not in (c for _, c, _ in per_type)
        cores = sum(c for _, c, _ in per_type if c is not None) if same else None
    cut = None if text.lstrip().startswith("{") else _types_cut(text, types, physical_each, logical, offline)
    least = None
    if cut is not None:  # (the CPU types read whole still hold their cores: a floor)
        floors = [_type_floor(t, p) for t, p in zip(types or [{}], physical_each, strict=True)]
        least = sum(p for p in floors if p is not None) or None
        physical = cores = None
        warnings.append(f"lscpu output cut short: {cut}")
    names = list(dict.fromkeys(t["Model name"] for t in types if t.get("Model name")))
    return CpuInfo(
        architecture=host.get("Architecture") or None,
        model_name=" + ".join(names) or None,
        sockets=sockets,
        cores_per_socket=cores,
        threads_per_core=_int(types[0] if types else {}, "Thread(s) per core", warnings),
        logical_cpus=logical,
        physical_cores=physical,
        warnings=tuple(dict.fromkeys(warnings)),
        offline_cpus=offline,
        cut=cut,
        cores_floor=least,
    )


# the labels of the lines lscpu prints after its CPU type blocks, in every language (their
# words `L1d`, `NUMA` are not translated: `L1d 缓存`, `Cache L1d`, `Caché L1d`, `NUMA-Knoten`,
# `Nœud(s) NUMA`), and util-linux 2.38+'s section heads `Caches (sum of all)`, `Vulnerabilities`
_AFTER_TYPES = re.compile(r"(?<![A-Za-z])L[1-4][a-z]?(?![A-Za-z])|NUMA|^Caches|^Vulnerab", re.IGNORECASE)


def _types_closed(text: str) -> bool:
    """Whether a line lscpu prints after its CPU type blocks follows the last type field read:
    a cache, NUMA or vulnerability line (_AFTER_TYPES) in any layout, or, where lscpu indents
    each type's block under its "Model name" (util-linux 2.38+ on a terminal), a `Key: value`
    line at the left margin. Flat output (2.38+ into a pipe or a file, `--hierarchic=never`)
    prints a type's Stepping, BogoMIPS and Flags at the margin too, so a margin line says
    nothing there: a GB10's output cut after its Cortex-X925 block is not whole. Older lscpu
    prints the type fields among its first lines, a NUMA line after them. True when no type
    field was read (nothing to be cut inside)."""
    lines = text.splitlines()
    last = None
    indented = False
    for i, line in enumerate(lines):
        field = _split_field(line)
        if field is not None and _field_name(field[0]) in _TYPE_FIELDS:
            last = i
            indented = indented or line[:1].isspace()
    if last is None:
        return True
    counts_first = _counts_first(lines)
    for line in lines[last + 1 :]:
        field = _split_field(line)
        if field is None:
            continue
        if counts_first or (indented and line[:1].strip()) or _AFTER_TYPES.search(field[0].strip()):
            return True
    return False


def _counts_first(lines: list[str]) -> bool:
    """Whether lscpu printed its CPU counts (Thread(s) per core, Core(s) per socket, Socket(s))
    before any Vendor ID or Model name line: the flat layout of util-linux before 2.38, of one
    set of counts for the whole box (s390x's with `Socket(s) per book:` and `Book(s):`, and no
    `Socket(s):`), no type blocks to be cut inside: any field after them closes them."""
    for line in lines:
        field = _split_field(line)
        if field is None:
            continue
        name = _field_name(field[0])
        if name in ("Vendor ID", "Model name"):
            return False
        if name in _TYPE_FIELDS:
            return True
    return False


def _ends_before_count(text: str, last: Mapping[str, str]) -> str:
    """Where an lscpu cut before a type's core count ends: inside a CPU type's block where lscpu
    indents them (util-linux 2.38+ on a terminal), else among the flat lines it prints after
    `Model name` (older lscpu, or 2.38+ into a pipe: collect_env's), measure33b 30, 32; before
    its socket count where the last type's `Core(s) per socket` was read (m34b 15)."""
    indented = any(
        line[:1].isspace()
        and (field := _split_field(line)) is not None
        and _field_name(field[0]) in _TYPE_FIELDS
        for line in text.splitlines()
    )
    per_socket = last.get("Core(s) per socket", "")
    count = (
        f"before its socket count (Socket(s); its Core(s) per socket, {per_socket}, read)"
        if per_socket.isdecimal()
        else "before its core count"
    )
    if indented:
        return f"it ends inside a CPU type's block, {count}"
    if per_socket.isdecimal():
        return f"it ends among the lines lscpu prints after a Model name line, {count}"
    return (
        "it ends among the lines lscpu prints after a Model name line, at the margin in this layout,"
        " before its core count (Core(s) per socket, Socket(s))"
    )


def _type_floor(fields: Mapping[str, str], physical: int | None) -> int | None:
    """The fewest cores a CPU type's block proves: its cores where read, else its `Core(s) per
    socket` where its `Socket(s)` line's value was cut away (at least one socket holds them: m34b 15, a GB10
    cut at its Cortex-A725 block's `Socket(s):`); None otherwise (a cluster count unread)."""
    if physical is not None:
        return physical
    # (its `Socket(s):` line read, its value cut away: not a layout without the line, s390x's
    # `Socket(s) per book:`, whose Core(s) per socket multiplies no socket count read)
    per_socket, sockets = fields.get("Core(s) per socket", ""), fields.get("Socket(s)")
    clustered = "Cluster(s)" in fields or "Core(s) per cluster" in fields
    return int(per_socket) if per_socket.isdecimal() and sockets == "" and not clustered else None


def _types_cut(
    text: str,
    types: list[dict[str, str]],
    physical_each: list[int | None],
    logical: int | None,
    offline: int | None,
) -> str | None:
    """Why a plain lscpu output ends inside its CPU type blocks, or None: no line lscpu prints
    after them follows (_types_closed), and a type's core count is unread or the types read
    hold fewer CPUs (cores x threads per core) than CPU(s) has online: a type cut off (the GB10's
    Cortex-A725 block after its Cortex-X925 one, 10 of 20 CPUs)."""
    if _types_closed(text):
        return None
    if None in physical_each:
        return _ends_before_count(text, types[-1] if types else {})
    threads = [_int(t, "Thread(s) per core", []) for t in types]
    if logical is None or not types or None in threads or 0 in threads:
        return None
    held = sum((p or 0) * (n or 0) for p, n in zip(physical_each, threads, strict=True))
    online = logical - (offline or 0)
    if held >= online:
        return None
    many = len(types) > 1
    return (
        f"the CPU type{'s' if many else ''} read hold{'' if many else 's'} {held} of its {online}"
        " CPUs, and it ends before the Caches, NUMA and Vulnerabilities lines lscpu prints after"
        " the types"
    )


_NPROC = re.compile(r"\s*(\d+)[ \t]*\r?\n\s*")


# /proc/cpuinfo's first line: `processor\t: 0` (x86, arm64, POWER alike; 32-bit ARM's
# `Processor\t: ARMv7 ...` names the model, not a CPU, and is not read)
_CPUINFO_FIRST = re.compile(r"processor\s*:\s*\d+")


def looks_like_cpuinfo(text: str) -> bool:
    """A /proc/cpuinfo (the live probe reads it where lscpu is not installed): its first line
    is its first CPU's `processor : 0`, which lscpu never prints."""
    first = next((line for line in text.splitlines() if line.strip()), "")
    return _CPUINFO_FIRST.fullmatch(first.strip()) is not None


# the kernel's list of online CPUs, which the live probe prints after /proc/cpuinfo (a CPU 0
# taken offline leaves /proc/cpuinfo starting at `processor : 1`, whole all the same)
ONLINE_FILE = "/sys/devices/system/cpu/online"
_ONLINE_LINE = lazy_re(rf"^{ONLINE_FILE}:[ \t]*([0-9][0-9,-]*)[ \t]*$", re.MULTILINE)
# and of the present CPUs, which it prints after it: those not online are offline
PRESENT_FILE = "/sys/devices/system/cpu/present"
_PRESENT_LINE = lazy_re(rf"^{PRESENT_FILE}:[ \t]*([0-9][0-9,-]*)[ \t]*$", re.MULTILINE)
# a CPU block's first line (x86, arm64, POWER, RISC-V alike)
_CPUINFO_BLOCK = lazy_re(r"processor\s*:\s*(\d+)\s*")
# the lines of a CPU block that give the topology only: a block of nothing else is a filter's
# (`grep -E 'processor|physical id|core id' /proc/cpuinfo`), never the kernel's whole block,
# which also names the CPU (x86's vendor_id, arm64's CPU implementer, POWER's cpu, RISC-V's isa)
_CPUINFO_TOPOLOGY = frozenset({"processor", "physical id", "core id", "siblings", "cpu cores", "apicid"})


def _cpuinfo_blocks(text: str) -> list[dict[str, str]]:
    """One `key: value` mapping per CPU block of /proc/cpuinfo, a block begun by each
    `processor : N` line (not by a blank line: a paste that lost the blank lines between blocks,
    or a grep of the file, has none); the lines after the last block (arm64's model lines) join
    it."""
    blocks: list[dict[str, str]] = []
    for line in text.splitlines():
        if _CPUINFO_BLOCK.fullmatch(line.strip()):
            blocks.append({})
        key, colon, value = line.partition(":")
        if colon and blocks:
            blocks[-1].setdefault(key.strip(), value.strip())
    return blocks


def _lxcfs_view(numbers: list[int], listed: list[int], usable: int | None) -> bool:
    """The blocks are CPUs 0 to k-1, k the CPUs this login may use (nproc), and the online list
    holds more above them: a container's view of /proc/cpuinfo (lxcfs before 4.0 shows the
    container's CPUs, renumbered from 0, while /sys/devices/system/cpu/online lists the
    host's), whole; a CPU missing inside the blocks' range is a cut."""
    whole = numbers == list(range(len(numbers))) and usable == len(numbers)
    return whole and all(n > numbers[-1] for n in set(listed) - set(numbers))


def _cpuinfo_cut(text: str, blocks: list[dict[str, str]], usable: int | None = None) -> str | None:
    """Why a /proc/cpuinfo is not known whole, or None: the kernel ends each line with a newline,
    holds no line standing for lines left out by hand (`...`), lists its online CPUs from
    `processor : 0` (the top of the text scrolled off otherwise),
    each once in rising order (a block pasted twice counts a CPU twice), prints the same lines
    in every CPU's block (a block without one of the first block's lines is cut), and, where
    each block gives its `physical id` and `siblings`, as many blocks of a physical id as its
    siblings count (blocks left off by a paste or a `head`). An online CPU without its block is
    a cut, unless the view is a container's (_lxcfs_view, `usable`: nproc's count), whose blocks
    may also hold fewer CPUs of a package than its siblings line (the host's) says."""
    if not text.endswith("\n"):
        return f"it ends inside the block of CPU {blocks[-1]['processor']}"
    if left_out := elided(text):  # (`processor : 0`, `...`, `processor : 63`: a paste's)
        return left_out
    numbers = [int(b["processor"]) for b in blocks]
    online = _ONLINE_LINE.search(text)
    listed = _cpu_list_numbers(online.group(1)) if online else None
    view = False
    if listed is not None and online is not None:  # (the live probe's: which CPUs are online)
        missing = sorted(set(listed) - set(numbers))
        view = bool(missing) and _lxcfs_view(numbers, listed, usable)
        if missing and not view:
            return (
                f"it lacks the block of CPU {missing[0]}, one of the online CPUs"
                f" ({ONLINE_FILE}: {online.group(1)})"
            )
    elif blocks[0]["processor"] != "0":
        return f"it starts at CPU {blocks[0]['processor']}: its top, from CPU 0, is missing"
    if again := next((b for b, n in zip(numbers[1:], numbers, strict=False) if b <= n), None):
        return f"CPU {again} follows a CPU numbered as high or higher (a block pasted twice?)"
    first = set(blocks[0])
    if short := next((b for b in blocks if not first <= set(b)), None):
        return f"the block of CPU {short['processor']} lacks lines of CPU 0's block"
    return _siblings_short(blocks, view)


# the words of _siblings_short's reason: a cut that proves no floor (the blocks of a package
# fewer than its siblings line: its `cpu cores` is the host's, of CPUs not read)
_SIBLINGS_SAY = "whose siblings line says"


def _siblings_short(blocks: list[dict[str, str]], view: bool) -> str | None:
    """Where each block gives its `physical id` and `siblings`: a package whose blocks are not
    as many as its siblings line says (fewer allowed in a container's view: `view`), or None."""
    if not all("physical id" in b and b.get("siblings", "").isdecimal() for b in blocks):
        return None
    held: dict[str, int] = {}
    for b in blocks:
        held[b["physical id"]] = held.get(b["physical id"], 0) + 1
    for b in blocks:
        count, said = held[b["physical id"]], int(b["siblings"])
        if count != said and not (view and count < said):
            return f"it holds {count} CPUs of physical id {b['physical id']}, {_SIBLINGS_SAY} {said}"
    return None


def _package_cores(blocks: list[dict[str, str]], package: str) -> int:
    """The cores of one physical id: its distinct `core id`s, or its `cpu cores` where that is
    more and every CPU of the package is listed (as many blocks as its `siblings`). A package of
    two dies (AMD's Magny-Cours Opteron 6100, 2 x 4 or 2 x 6 cores, no SMT) numbers its core ids
    per die, 0-3 twice, while its `cpu cores` (8), counted from the kernel's thread-sibling
    masks as lscpu's Thread(s) per core is, says each CPU is a core of its own."""
    own = [b for b in blocks if b["physical id"] == package]
    distinct = len({b["core id"] for b in own})
    said, siblings = own[0].get("cpu cores", ""), own[0].get("siblings", "")
    if said.isdecimal() and siblings.isdecimal() and int(siblings) == len(own):
        return max(distinct, min(int(said), len(own)))
    return distinct


def _cpuinfo_cores(blocks: list[dict[str, str]]) -> tuple[int | None, int | None]:
    """(physical cores, sockets) of /proc/cpuinfo's blocks: the distinct (`physical id`, `core
    id`) pairs (or a whole package's `cpu cores` where that is more: _package_cores) and the
    distinct physical ids, the topology the kernel gives lscpu too; where `core id` is missing,
    x86's `cpu cores` of each physical id (the cores of its package); (None, None) where
    neither is in every block (arm64 and many VMs print neither)."""
    if not all("physical id" in b for b in blocks):
        return None, None
    sockets = {b["physical id"] for b in blocks}
    if all("core id" in b for b in blocks):
        return sum(_package_cores(blocks, package) for package in sockets), len(sockets)
    per_socket = {b["physical id"]: b.get("cpu cores", "") for b in blocks}
    if all(cores.isdecimal() for cores in per_socket.values()):
        return sum(int(cores) for cores in per_socket.values()), len(sockets)
    return None, None


def _cpuinfo_floor(text: str) -> int | None:
    """The fewest cores a /proc/cpuinfo cut short proves, or None: the distinct (`physical id`,
    `core id`) pairs read, and a package's `cpu cores` only where its blocks read reach its
    `siblings` count (_package_cores: a container's lxcfs view keeps the host's `siblings : 8`
    and `cpu cores : 8` in the 4 blocks of the CPUs it was given); the blocks from the first CPU
    numbered no higher than the one before (a second paste, maybe another box's) and a last line
    cut inside (`cpu cores : 2` of `24`) are left out."""
    whole = text if text.endswith("\n") else text[: text.rfind("\n") + 1]
    blocks = _cpuinfo_blocks(whole)
    numbers = [int(b["processor"]) for b in blocks]
    again = next((i for i in range(1, len(numbers)) if numbers[i] <= numbers[i - 1]), len(numbers))
    read = [b for b in blocks[:again] if "physical id" in b and "core id" in b]
    # (a package's own `cpu cores` only of a listing cut at both ends, or whose CPUs reach its
    # `siblings`: an lxcfs view of CPUs 0-3 keeps the host's `cpu cores : 96`, and its tail from
    # CPU 2, whole at its end, shows no more CPUs exist: review revM)
    top_cut = bool(read) and read[0]["processor"] != "0" and (_end_cut(text) or _reach_siblings(read))
    least = sum(
        max(_package_cores(read, package), _package_said(read, package) if top_cut else 0)
        for package in {b["physical id"] for b in read}
    )
    return least or None


def _end_cut(text: str) -> bool:
    """Whether an x86 /proc/cpuinfo's last block is cut short: its last line without its newline,
    or a block past its `flags` without the `power management` line x86 prints last in each (a
    grep of the file's topology lines, which holds neither, is no cut)."""
    blocks = _cpuinfo_blocks(text)
    last = blocks[-1] if blocks else {}
    return bool(blocks) and (not text.endswith("\n") or ("flags" in last and "power management" not in last))


def _reach_siblings(read: list[dict[str, str]]) -> bool:
    """Whether the CPUs read are numbered up to every package's `siblings` count (the CPUs the
    kernel numbers beyond the listing's end exist)."""
    last = int(read[-1]["processor"])
    counts = {b.get("siblings", "") for b in read}
    return all(n.isdecimal() and last + 1 >= int(n) for n in counts)


def _package_said(read: list[dict[str, str]], package: str) -> int:
    """A package's own `cpu cores` (the kernel's count of its cores booted, never more than it
    has: x86's booted_cores) where every block read of it gives the same `cpu cores` and
    `siblings`, no more cores than siblings; 0 otherwise. Read only of a listing whose top was
    cut (its first CPU numbered above 0, as the kernel numbers them): a container's lxcfs view,
    whose `cpu cores` is the host's, renumbers its CPUs from 0 (m34b 21: an EPYC 9654P's blocks
    from CPU 4, `cpu cores : 96`, `siblings : 191` with one CPU offline)."""
    own = {(b.get("cpu cores", ""), b.get("siblings", "")) for b in read if b["physical id"] == package}
    if len(own) != 1:
        return 0
    ((said, siblings),) = own
    return int(said) if said.isdecimal() and siblings.isdecimal() and 0 < int(said) <= int(siblings) else 0


def parse_cpuinfo(text: str, usable: int | None = None) -> CpuInfo:
    """The CPU shape of a /proc/cpuinfo (source "/proc/cpuinfo"): one block per online logical
    CPU (logical_cpus counts the offline ones too where the live probe's lists say them, as
    lscpu's CPU(s) does: _offline_cpus), the cores and sockets by _cpuinfo_cores. A text not
    known whole (_cpuinfo_cut; `usable`: the CPUs this login may use, nproc's count) counts
    nothing: the CPUs outside it are unknown. Blocks holding only topology lines (a grep of the
    file) are read, and said `filtered`."""
    blocks = _cpuinfo_blocks(text)
    if not blocks:
        return _empty("output not recognised as /proc/cpuinfo")
    if cut := _cpuinfo_cut(text, blocks, usable):
        least = None if _SIBLINGS_SAY in cut else _cpuinfo_floor(text)
        said = _empty(f"/proc/cpuinfo cut short: {cut}")
        return dataclasses.replace(said, cut=cut, source=CPUINFO, cores_floor=least)
    online = len(blocks)
    physical, sockets = _cpuinfo_cores(blocks)
    threads = online // physical if physical and online % physical == 0 else None
    cores = physical // sockets if physical and sockets and physical % sockets == 0 else None
    names = list(dict.fromkeys(b["model name"] for b in blocks if b.get("model name")))
    filtered = None
    if set(blocks[0]) <= _CPUINFO_TOPOLOGY:
        filtered = "it holds only the topology lines of each CPU's block (a grep of /proc/cpuinfo)"
    return CpuInfo(
        architecture=None,
        model_name=" + ".join(names) or None,
        sockets=sockets,
        cores_per_socket=cores,
        threads_per_core=threads,
        logical_cpus=online + (offline := _offline_cpus(text) or 0),
        physical_cores=physical,
        offline_cpus=offline or None,
        source=CPUINFO,
        filtered=filtered,
    )


def _offline_cpus(text: str) -> int | None:
    """The present CPUs not online, of the lists the live probe prints after /proc/cpuinfo
    (lscpu's Off-line CPU(s) list alike: a CPU 0 taken offline, a kernel's `maxcpus=`), or None
    where either list is not read."""
    online, present = _ONLINE_LINE.search(text), _PRESENT_LINE.search(text)
    up = _cpu_list_numbers(online.group(1)) if online else None
    there = _cpu_list_numbers(present.group(1)) if present else None
    return len(set(there) - set(up)) if up is not None and there is not None else None


# the kernel's affinity list of a process (/proc/self/status), the CPUs nproc counts: the live
# probe's answer where nproc is not installed (`Cpus_allowed_list:\t0-3,8-11`)
AFFINITY_LINE = "Cpus_allowed_list:"
_AFFINITY = lazy_re(rf"\s*{AFFINITY_LINE}[ \t]*([0-9,-]+)[ \t]*\r?\n\s*")


def parse_nproc(text: str) -> int | None:
    """The count `nproc` prints (the CPUs this login may use), or the CPUs of the kernel's
    affinity list (/proc/self/status' Cpus_allowed_list line, which nproc counts), or None:
    each ends with a newline, so one without it (`1` of `16\\n`) may be cut short and is not read."""
    if match := _NPROC.fullmatch(text):
        return int(match.group(1))
    match = _AFFINITY.fullmatch(text)
    return _cpu_list_count(match.group(1)) or None if match else None


def nproc_unread(text: str) -> str | None:
    """Why a non-empty nproc output gives no count (parse_nproc), or None when it gives one."""
    shown = text.strip()
    if not shown or parse_nproc(text) is not None:
        return None
    if shown.isdecimal():
        return (
            f"the nproc output ({shown}) ends without the newline nproc prints after its number,"
            " so it may be cut short"
        )
    if shown.startswith(AFFINITY_LINE):
        return (
            f"the affinity list read in nproc's place ({shown[:60]}) ends without the newline"
            " of /proc/self/status, or names no CPU, so it may be cut short"
        )
    return f"the nproc output is not a number ({shown[:40]!r})"
