"""Where the nvidia-smi formats merged as one box (facts/gpu_merge.py) disagree about it.

Formats of one box asked at one time print one driver, one GPU set and, for each GPU, one UUID,
serial and memory size. Where two of them say otherwise (a driver version each, a GPU one lists
and another whole one does not, two UUIDs at one PCI address) they are two boxes' outputs, or a
box that changed between them (a GPU fallen off the bus, a driver reloaded): the merge never
chooses one answer, it names both, each with the format that gave it. Pure: no I/O.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence
from typing import TypeVar

from gpuonboard.facts.nvidia_smi import GpuInfo, GpuReport
from gpuonboard.facts.nvidia_smi.values import _is_version, no_cuda

# the views of one GPU's readings (setting_reads, disputed, link_reads, usage_samples), each
# computed once per GPU: every rule that judges a format's reading asks them again (a 8-GPU
# host's rules asked setting_reads ~16 times a GPU). Keyed by the object's identity and kept
# with it (so its id is never another's while kept); bounded, as a run reads few GPUs at once
_MEMO: dict[tuple[str, int], tuple[object, object]] = {}
_MEMO_MAX = 512
T = TypeVar("T")


def _once(kind: str, of: object, compute: Callable[[], T]) -> T:
    """`compute()` for `of` (a GPU or its readings), computed once while it is kept here."""
    hit = _MEMO.get((kind, id(of)))
    if hit is not None and hit[0] is of:
        return hit[1]  # type: ignore[return-value]
    value = compute()
    if len(_MEMO) >= _MEMO_MAX:
        _MEMO.clear()
    _MEMO[(kind, id(of))] = (of, value)
    return value


# each nvidia-smi format (GpuReport.source, GpuInfo.readings' labels): (its name in a sentence,
# its call in an advice to rerun it)
FORMATS = {
    "xml": ("-q -x", "`nvidia-smi -q -x`"),
    "text": ("-q", "`nvidia-smi -q`"),
    "csv": ("the CSV query", "the `nvidia-smi --query-gpu` CSV"),
    # a second `--query-gpu` of the box asking other fields (a second saved file), merged by GPU
    "csv2": ("the second CSV query", "the second `nvidia-smi --query-gpu` CSV"),
    "table": ("the table", "the plain `nvidia-smi` table"),
    "list": ("-L", "`nvidia-smi -L`"),
    # `nvlink -s`'s (or `-e`'s) GPU lines, read as `-L`'s where no `-L` was given (gpu_merge)
    "nvlink": ("nvlink -s", "`nvidia-smi nvlink -s`"),
    "nvlink_e": ("nvlink -e", "`nvidia-smi nvlink -e`"),
    # torch's (vLLM's) collect_env report, whose `Nvidia driver version` is nvidia-smi's banner's
    "env": ("collect_env's driver line", "`nvidia-smi` (collect_env's `Nvidia driver version` line)"),
}
FORMAT_NAMES = {label: name for label, (name, _call) in FORMATS.items()}
# the formats that list GPUs by name and UUID and read no value of them: `-L`, and `nvlink -s`'s
# or `-e`'s GPU lines (the same NVML names and UUIDs, where no `-L` was given)
LISTINGS = ("list", "nvlink", "nvlink_e")
NVLINK_LISTINGS = LISTINGS[1:]


def format_call(label: str) -> str:
    """The call of format `label` ('`nvidia-smi -q -x`'), for an advice or a sentence."""
    return FORMATS[label][1] if label in FORMATS else f"`nvidia-smi` ({label})"


# the fields of one GPU that no two formats of one box at one time print otherwise
IDENTITY = (("name", "name"), ("uuid", "UUID"), ("serial", "serial"), ("memory_total_mib", "memory total"))
# a GPU's settings: what a rule judges (persistence, MIG, ECC modes, the power limits, the fabric
# state) or reads beside it, each of which an administrator may change between two calls of
# nvidia-smi (`-pm 1`, `-mig 1`, `-pl 300`): two formats that read one otherwise are kept,
# each with its format (`setting_reads`), never the first format's value alone
SETTINGS = (
    ("persistence_mode", "persistence mode"),
    ("compute_mode", "compute mode"),
    ("mig_mode", "MIG mode"),
    ("mig_mode_pending", "pending MIG mode"),
    ("ecc_mode", "ECC mode"),
    ("power_limit_w", "enforced power limit"),
    ("requested_power_limit_w", "requested power limit"),
    ("default_power_limit_w", "default power limit"),
    ("max_power_limit_w", "max power limit"),
    ("display_active", "display active"),
    ("driver_model", "driver model"),
    ("virtualization_mode", "virtualization mode"),
    ("fabric_state", "fabric state"),
    ("fabric_status", "fabric status"),
)
# settings one format reads as a pair: where either is disputed, a format's reading of one is
# judged with its own reading of the other (None where it read none), never beside another
# format's: the table's MIG cell gives a pending mode only by its `*`, its power cap no requested
# limit; a CSV may read `fabric.state` without `fabric.status`
PAIRS = (
    ("mig_mode", "mig_mode_pending"),
    ("power_limit_w", "requested_power_limit_w"),
    ("fabric_state", "fabric_status"),
)
# a value blanked before sharing ('GPU-00000000-0000-...', '0000000000000'): no value to compare
_BLANKED = re.compile(r"(?:GPU-|MIG-)?[0\-]+", re.IGNORECASE)
# what an identifier is where it is given, not redacted (`REDACTED`, `GPU-xxxxxxxx-...`, `...`,
# `<redacted>`): a UUID (a MIG device's with its `/GI/CI`), a board serial's digits
_GIVEN = {
    "uuid": re.compile(
        r"(?:MIG-)?(?:GPU-)?[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12}(?:/\d+/\d+)?", re.IGNORECASE
    ),
    "serial": re.compile(r"\d+"),
}

Same = Callable[[GpuInfo, GpuInfo], bool]
# one disagreement: the field it is about (a GpuReport field, a GpuInfo field, or "gpus" for
# the GPU set) and its sentence, each value with its format
Clash = tuple[str, str]


def _named(label: str) -> str:
    return FORMAT_NAMES.get(label, label)


def _value(g: GpuInfo, field: str) -> object:
    """`g`'s `field`, None where it is not given or was blanked (a redacted UUID or serial)."""
    value = getattr(g, field)
    given = _GIVEN.get(field)
    if isinstance(value, str) and (
        not value.strip()
        or _BLANKED.fullmatch(value.strip())
        or (given is not None and not given.fullmatch(value.strip()))
    ):
        return None
    return value


def uuid_of(g: GpuInfo) -> str | None:
    """`g`'s UUID, None where it is not given or was blanked."""
    value = _value(g, "uuid")
    return value if isinstance(value, str) else None


def _each_said(said: dict[object, list[str]], shown: Callable[[object], str]) -> str:
    """'535.161.08 in -q, 550.90.07 in the table'."""
    return ", ".join(f"{shown(v)} in {' and '.join(map(_named, labels))}" for v, labels in said.items())


def _answer(field: str, value: str | None) -> str | None:
    """What a format's version says, to compare: a version number; for CUDA also nvidia-smi's
    word for no CUDA driver (`N/A`, `Not Found`: one answer, said as the first format printed it);
    None for a value that says nothing (an unreadable cell is no other version)."""
    if _is_version(value):
        return value
    return value if field == "cuda_version" and no_cuda(value) else None


def version_clashes(ranked: Sequence[tuple[str, GpuReport]]) -> list[Clash]:
    """'driver 535.161.08 in -q, 550.90.07 in the table' for each version two formats give
    otherwise (only answers are compared, `_answer`: a format's unreadable cell is no other
    driver; a format that found no CUDA driver and one that read a CUDA version disagree)."""
    out = []
    for field, word in (("driver_version", "driver"), ("cuda_version", "CUDA")):
        said: dict[object, list[str]] = {}
        for label, report in ranked:
            value = _answer(field, getattr(report, field))
            if value is None:
                continue
            if not _is_version(value):  # (N/A and Not Found say one thing: the first printed)
                value = next((str(v) for v in said if not _is_version(str(v))), value)
            if label not in said.setdefault(value, []):
                said[value].append(label)
        if len(said) > 1:
            out.append((field, f"{word} {_each_said(said, str)}"))
    return out


def gpu_clashes(g: GpuInfo, copies: Sequence[tuple[str, GpuInfo]]) -> list[Clash]:
    """'GPU 0 (00000000:19:00.0): UUID GPU-a... in -q, GPU-b... in -L' for each identity field
    the copies of one GPU (matched by PCI address, else UUID, else number) give otherwise."""
    out = []
    for field, word in IDENTITY:
        said: dict[object, list[str]] = {}
        for label, c in copies:
            value = _value(c, field)
            if value is not None and label not in said.setdefault(value, []):
                said[value].append(label)
        if len(said) > 1 and not (field == "name" and _one_name(list(said))):
            shown = _in_mib if field == "memory_total_mib" else str
            out.append((field, f"{_called(g)}: {word} {_each_said(said, shown)}"))
    return out


def setting_reads(copies: Sequence[tuple[str, GpuInfo]]) -> tuple[tuple[str, str, object], ...]:
    """(field, format, value) for each setting (SETTINGS) that the copies of one GPU (its
    `readings`) read as two values or more, every format's reading of it, and of a pair (PAIRS)
    both fields, every format's reading of each (a view takes a format's pair together:
    `paired`); () where they agree (a format that did not read a setting, None, says nothing
    about it). The calls ran at separate moments: a setting may have changed between them
    (`nvidia-smi -pm 1`), so a rule judges each format's reading (steps/checks/setting_views.py)."""
    return _once("settings", copies, lambda: _setting_reads(copies))


def _setting_reads(copies: Sequence[tuple[str, GpuInfo]]) -> tuple[tuple[str, str, object], ...]:
    read = {field: _read(copies, field) for field, _word in SETTINGS}
    kept = {p for field, r in read.items() if _differ(field, r) for p in paired(field)}
    return tuple((field, label, v) for field, r in read.items() if field in kept for label, v in r)


# one format's reading of a GPU's PCIe link beside its own load: (format, link generation, its
# max, link width, its max, P-state, utilization %, gpu_idle active: None where the reasons
# were not read)
LinkRead = tuple[str, int | None, int | None, int | None, int | None, str | None, int | None, bool | None]


def link_reads(g: GpuInfo) -> tuple[LinkRead, ...]:
    """Each format's reading of `g`'s PCIe link beside its own load, where two or more of its
    `readings` read the link; () otherwise (gpu_health/pcie.py judges each beside its own load)."""
    return _once("link", g, lambda: _link_reads(g))


def _link_reads(g: GpuInfo) -> tuple[LinkRead, ...]:
    reads = tuple(
        (
            label,
            c.pcie_gen_current,
            c.pcie_gen_max,
            c.pcie_width_current,
            c.pcie_width_max,
            c.performance_state,
            c.utilization_gpu_pct,
            "gpu_idle" in c.clock_event_reasons if c.clock_event_reasons_known else None,
        )
        for label, c in g.readings
        if label not in LISTINGS and (c.pcie_gen_current or c.pcie_width_current)
    )
    return reads if len(reads) > 1 else ()


def own_readings(g: GpuInfo) -> list[tuple[str, GpuInfo]]:
    """Each format's own reading of `g` (its `readings`; `-L`, which reads no values, left out),
    or `g` itself under '' where one format read it: a rule of one moment's figures (a clock
    beside its load) judges each of these, never one format's clock beside another's load."""
    return [(label, c) for label, c in g.readings if label not in LISTINGS] or [("", g)]


def field_whole(g: GpuInfo, field: str) -> bool:
    """Whether `g`'s `field` is whole: no format's record of `g` was cut short, or some format
    read the field's value, whether its record was whole or cut after that value (a record cut
    short is read up to the cut: a line, cell or element the cut went through is not read, so
    each value read is whole). A field none read may be in the part cut away."""
    if not g.record_cut:
        return True
    return any(getattr(c, field) not in (None, "") for _, c in g.readings) or getattr(g, field) not in (
        None,
        "",
    )


def usage_samples(g: GpuInfo) -> tuple[tuple[str, int | None, int | None, bool], ...]:
    """(format, utilization %, memory used MiB, whether that output read its process list as
    empty) of each of `g`'s `readings` that read either figure, where two or more did; ()
    otherwise (gpu_health/usage.py judges each output's empty list beside its own figures)."""
    return _once("usage", g, lambda: _usage_samples(g))


def _usage_samples(g: GpuInfo) -> tuple[tuple[str, int | None, int | None, bool], ...]:
    samples = tuple(
        (label, c.utilization_gpu_pct, c.memory_used_mib, c.processes_known and not c.processes)
        for label, c in g.readings
        if label not in LISTINGS and (c.utilization_gpu_pct is not None or c.memory_used_mib is not None)
    )
    return samples if len(samples) > 1 else ()


# a GPU's fields that are no reading of it: its number, where each field came from, the readings,
# the parts a cut record read
_NOT_READ = ("index", "provenance", "readings", "parts_read")


def reading_differences(g: GpuInfo) -> list[tuple[str, dict[str, object]]]:
    """(format, {field: value}) for each of `g`'s `readings`, holding only the fields its formats
    read otherwise (each format's value, where it read one): a field they agree about, or that
    one format read, is the merged GPU's, its format in `provenance`. `facts --json` writes this
    for `readings`, not every format's whole reading (4 formats of an 8-GPU box: ~280 KB)."""
    names = [f.name for f in dataclasses.fields(GpuInfo) if f.name not in _NOT_READ]
    read = [
        (label, {n: v for n in names if (v := getattr(c, n)) is not None and v != () and v != ""})
        for label, c in g.readings
    ]
    differ = []
    for n in names:
        values: list[object] = []
        for _label, r in read:
            if n in r and r[n] not in values:
                values.append(r[n])
        if len(values) > 1:
            differ.append(n)
    return [(label, {n: r[n] for n in differ if n in r}) for label, r in read]


def _read(copies: Sequence[tuple[str, GpuInfo]], field: str) -> list[tuple[str, object]]:
    """Each format's reading of `field` (those that read one), each (format, value) once."""
    read = [
        (label, v)
        for label, c in copies
        if (v := getattr(c, field)) is not None and v != "" and not _requested_only(label, c, field)
    ]
    return list(dict.fromkeys(read))


def paired(field: str) -> tuple[str, ...]:
    """The settings read as one with `field` (PAIRS), `field` alone where it has no pair."""
    return next((pair for pair in PAIRS if field in pair), (field,))


def disputed(g: GpuInfo, fields: Sequence[str] = ()) -> list[str]:
    """The settings of `g` (of `fields`, all where empty) its formats read as two values or more
    (`setting_reads` also keeps a disputed setting's pair, which they may agree about)."""
    every = _once("disputed", g, lambda: _disputed(g))
    return [field for field in every if not fields or field in fields]


def _disputed(g: GpuInfo) -> list[str]:
    reads = setting_reads(g.readings)
    return [
        field
        for field in dict.fromkeys(f for f, _, _ in reads)
        if _differ(field, [(label, v) for f, label, v in reads if f == field])
    ]


def _differ(field: str, read: Sequence[tuple[str, object]]) -> bool:
    """Whether `read` (format, value) holds two readings of `field`: 'Enabled' and 'enabled',
    700 and 700.0 are one; the table's whole watts (62W) are one reading with another format's
    value within 1 W of them (62.50 W: the table rounds)."""
    rounded = field.endswith("_w")
    keys = {_setting_key(v) for label, v in read if not (rounded and label == "table")}
    watts = [k for k in keys if isinstance(k, int | float)]
    for label, v in read:
        if (
            rounded
            and label == "table"
            and not (isinstance(v, int | float) and any(abs(k - v) < 1 for k in watts))
        ):
            keys.add(_setting_key(v))
    return len(keys) > 1


def _requested_only(label: str, g: GpuInfo, field: str) -> bool:
    """A CSV's power limit read from `power.limit` for want of an `enforced.power.limit` value
    (`power_limit_requested`): the limit software asked for, which a BMC's cap may hold lower
    than the enforced one the other formats print, never another reading of that."""
    return field == "power_limit_w" and label in ("csv", "csv2") and g.power_limit_requested


def _setting_key(value: object) -> object:
    """A setting's value to compare: 'Enabled' and 'enabled', 700 and 700.0 are one reading."""
    return value.strip().lower() if isinstance(value, str) else value


def setting_said(g: GpuInfo, fields: Sequence[str] = ()) -> list[str]:
    """'GPU 0: persistence mode Enabled in -q -x, Disabled in the table' for each setting of `g`
    its formats read otherwise (`fields`: only those; all where empty)."""
    words = dict(SETTINGS)
    out = []
    for field in disputed(g, fields):
        said: dict[object, list[str]] = {}
        for f, label, value in setting_reads(g.readings):
            if f == field and label not in said.setdefault(value, []):
                said[value].append(label)
        shown = _in_w if field.endswith("_w") else str
        out.append(f"{g.called()}: {words.get(field, field)} {_each_said(said, shown)}")
    return out


def _in_w(value: object) -> str:
    return f"{value:g} W" if isinstance(value, float) else f"{value} W"


def set_clashes(
    gpus: Sequence[GpuInfo], listings: Sequence[tuple[str, Sequence[GpuInfo]]], same: Same
) -> list[Clash]:
    """For each whole listing (a format that lists every GPU it read, not cut short): a GPU it
    lists that the merged set does not hold, and a GPU of the set (one every format could open)
    it leaves out; each named with the formats that list it."""
    out = []
    for label, listed in listings:
        for c in listed:
            if not any(same(g, c) for g in gpus):
                out.append(("gpus", f"{_named(label)} lists {_called(c)}, not in {_others(label, listings)}"))
        for g in gpus:
            if not g.faults and not any(same(g, c) for c in listed):
                out.append(("gpus", f"{_called(g)} is not in {_named(label)}"))
    return list(dict.fromkeys(out))


def _in_mib(value: object) -> str:
    return f"{value} MiB"


def _one_name(names: Sequence[object]) -> bool:
    """Whether `names` are one name, each cut shorter or not: the table cuts a long name ('NVIDIA
    H100 80GB HBM3' -> 'NVIDIA H100 80GB ...'; older drivers without the dots)."""
    shown = [" ".join(str(n).rstrip(".").split()) for n in names]
    longest = max(shown, key=len)
    return all(longest.startswith(n) for n in shown)


def _others(label: str, listings: Sequence[tuple[str, Sequence[GpuInfo]]]) -> str:
    names = [_named(other) for other, _ in listings if other != label]
    return " and ".join(dict.fromkeys(names)) or "the other formats"


def _called(g: GpuInfo) -> str:
    """'GPU 4 (00000000:9B:00.0)', 'GPU 4 (GPU-2b6f61f9-...)' or 'GPU 4'."""
    where = g.pci_bus_id or _value(g, "uuid")
    return f"GPU {g.index}" + (f" ({where})" if where else "")


def disagreement(clashes: Sequence[str]) -> str:
    """The one sentence a report's gap holds for `clashes` ('' for none)."""
    if not clashes:
        return ""
    shown = "; ".join(clashes[:3]) + (f"; {len(clashes) - 3} more" if len(clashes) > 3 else "")
    return (
        f"the nvidia-smi outputs disagree: {shown} (two boxes' outputs, or a box that changed"
        " between them: a GPU fallen off the bus, a driver reloaded)"
    )
