"""Pure parsers for `lscpu` (plain text or `lscpu -J` JSON) and nproc; /proc/cpuinfo's, read where
lscpu is missing, is facts/cpuinfo.py's (its names are this module's too)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from gpuonboard.facts.cpu_shape import CPUINFO, CpuInfo
from gpuonboard.facts.cpu_shape import cpu_list_count as _cpu_list_count
from gpuonboard.facts.cpu_shape import empty as _empty
from gpuonboard.facts.cpuinfo import looks_like_cpuinfo, parse_cpuinfo
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
# still lscpu where they all follow; the CPU type blocks come after `CPU(s):`, so none is lost.
# Its socket count in each layout: `Socket(s):`, s390x's `Socket(s) per book:` (with `Book(s):`,
# `Book(s) per drawer:`, `Drawer(s):`, the machine's, not the LPAR's), ARM's `Cluster(s):`
_SOCKET_FIELDS = frozenset({"Socket(s)", "Socket(s) per book", "Cluster(s)"})
_CORE_FIELDS = frozenset({"Core(s) per socket", "Core(s) per cluster"})
# s390x's topology lines (util-linux prints them in place of `Socket(s):`)
S390_FIELDS = ("Socket(s) per book", "Book(s) per drawer", "Book(s)", "Drawer(s)")


def looks_like_lscpu(text: str) -> bool:
    """True when the first line is lscpu's "Architecture:" in any language lscpu is translated
    into ("Architektur:", "架构："), or, that line lost or garbled by a paste (`rchitecture:`),
    when its lines give the CPUs (`CPU(s):` or the `On-line CPU(s) list:`), `Thread(s) per
    core:`, a core count and a socket count in any of lscpu's layouts (_SOCKET_FIELDS)."""
    lines = [line for line in text.splitlines() if line.strip()]
    field = _split_field(lines[0]) if lines else None
    if field is not None and _field_name(field[0]) == "Architecture":
        return True
    # only lines above `CPU(s):` may be lost that way (a paste's first line, op-mode, byte order,
    # address sizes: none counts anything), or those above the On-line CPU(s) list too (a paste
    # from it: hackmd's 2 x 64-core EPYC); a grep of lscpu (`lscpu | grep -E '^(CPU|Thread|Core|
    # Socket)'`) keeps the counts but drops the Off-line CPU(s) list, so the On-line list must be
    # there or the counts must hold every CPU of CPU(s) (_counts_hold_all); `virsh nodeinfo`,
    # whose `CPU socket(s)` counts a NUMA cell's, starts at `CPU model:` and is none
    names = [_field_name(f[0]) if (f := _split_field(line)) is not None else "" for line in lines[:60]]
    first = next((i for i, name in enumerate(names) if name in ("CPU(s)", "On-line CPU(s) list")), None)
    if first is None or any(name not in _ABOVE_CPUS for name in names[1:first]):
        return False
    if not (
        {"Thread(s) per core"} <= set(names) and set(names) & _SOCKET_FIELDS and set(names) & _CORE_FIELDS
    ):
        return False
    return "On-line CPU(s) list" in names or _counts_hold_all(text)


def _counts_hold_all(text: str) -> bool:
    """Whether an lscpu's CPU(s) is its one type's threads x cores x sockets: no CPU is offline
    (lscpu counts the cores of the online CPUs), whatever Off-line list a grep left out."""
    host, types = _split_types(_plain_pairs(text))
    if len(types) != 1:
        return False
    values = [
        host.get("CPU(s)", ""),
        *(types[0].get(k, "") for k in ("Thread(s) per core", "Core(s) per socket", "Socket(s)")),
    ]
    if not all(v.isdecimal() for v in values):
        return False
    logical, threads, cores, sockets = (int(v) for v in values)
    return logical == threads * cores * sockets > 0


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
    if not {"Architecture", "CPU(s)", "On-line CPU(s) list"} & set(host):
        return _empty("output not recognised as lscpu")
    if "Total CPU(s)" in host and "CPU(s)" not in host:
        # (NanXiao's lscpu for FreeBSD and OpenBSD: its counts are its own, not util-linux's,
        # and may be wrong, its Socket(s) one where two are fitted: measure38d 06)
        return _empty("a BSD lscpu (`Total CPU(s):`), not util-linux's")
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
    cut = (
        None
        if text.lstrip().startswith("{")
        else _types_cut(text, host, types, physical_each, logical, offline)
    )
    least = None
    if cut is not None:  # (the CPU types read whole still hold their cores: a floor)
        floors = [_type_floor(t, p) for t, p in zip(types or [{}], physical_each, strict=True)]
        least = sum(p for p in floors if p is not None) or None
        physical = cores = None
        warnings.append(f"lscpu output cut short: {cut}")
    # (s390x prints `Model name: -`: none)
    names = list(dict.fromkeys(t["Model name"] for t in types if t.get("Model name", "-") != "-"))
    threads = _int(types[0] if types else {}, "Thread(s) per core", warnings)
    if logical is None and offline is None and online is not None and physical and threads:
        # (a paste from its On-line CPU(s) list: its cores hold every CPU listed online, none
        # else counted)
        logical = online if physical * threads == online else None
    return CpuInfo(
        architecture=host.get("Architecture") or None,
        model_name=" + ".join(names) or None,
        sockets=sockets,
        cores_per_socket=cores,
        threads_per_core=threads,
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
    host: Mapping[str, str],
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
    if None in physical_each and any(k in host for k in S390_FIELDS):
        # (s390x's `Socket(s) per book:` and `Book(s):` count the machine's sockets, not the
        # LPAR's: its cores are never their product, and no count is cut away)
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
