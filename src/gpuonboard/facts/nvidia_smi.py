"""Pure parsers for the output forms of ``nvidia-smi`` (XML, CSV query, table, ``-q`` text).

No I/O here: the probe collects text, these functions turn it into a :class:`GpuReport`.
A form that is not recognised yields a report with empty fields and a warning, never an
exception and never a guess.
"""

from __future__ import annotations

import csv
import functools
import io
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, cast

__all__ = [
    "CLOCK_EVENT_REASONS",
    "QUERY_FIELDS",
    "GpuInfo",
    "GpuProcess",
    "GpuReport",
    "parse_any",
    "parse_query_csv",
    "parse_table",
    "parse_text_q",
    "parse_xml",
]


@dataclass(frozen=True)
class GpuProcess:
    """One process nvidia-smi lists on a GPU."""

    pid: int | None
    name: str  # as reported; the table form may truncate it ("...")
    type: str | None  # "C" compute, "G" graphics, "C+G", "M" (MPS) ...
    used_memory_mib: int | None


@dataclass(frozen=True)
class GpuInfo:
    """One physical GPU as nvidia-smi reports it."""

    index: int
    name: str  # as reported, e.g. "NVIDIA A100-SXM4-80GB" (the table form truncates it)
    uuid: str | None = None
    serial: str | None = None
    pci_bus_id: str | None = None
    memory_total_mib: int | None = None
    memory_used_mib: int | None = None
    ecc_mode: str | None = None  # "Enabled" / "Disabled" / None when N/A
    persistence_mode: str | None = None  # "Enabled" / "Disabled"
    pcie_gen_current: int | None = None
    pcie_gen_max: int | None = None  # the link's max: the lower of the card's and the host slot's
    # the card's own max and the host slot's (R520+ `-q -x` / `-q`; None when N/A or not reported):
    # a Gen4 card in a Gen3 slot has pcie_gen_max 3, and only these two tell it
    pcie_gen_device_max: int | None = None
    pcie_gen_host_max: int | None = None
    pcie_width_current: int | None = None
    pcie_width_max: int | None = None
    temperature_c: int | None = None
    mig_mode: str | None = None  # "Enabled" / "Disabled" / None when N/A
    mig_mode_pending: str | None = None  # the mode after the next GPU reset / reboot
    vbios: str | None = None
    product_brand: str | None = None  # e.g. "NVIDIA", "GeForce", "NVIDIA RTX"
    product_architecture: str | None = None  # e.g. "Ampere", "Ada Lovelace"
    # ECC error totals (DRAM + SRAM where the schema splits them); None when N/A.
    ecc_volatile_correctable: int | None = None
    ecc_volatile_uncorrectable: int | None = None
    ecc_aggregate_correctable: int | None = None
    ecc_aggregate_uncorrectable: int | None = None
    # Page retirement (pre-Ampere); None when the GPU has row remapping instead.
    retired_pages_sbe: int | None = None
    retired_pages_dbe: int | None = None
    retired_pages_pending: bool | None = None
    # Row remapping (Ampere and newer); None when N/A.
    remapped_rows_correctable: int | None = None
    remapped_rows_uncorrectable: int | None = None
    remapped_rows_pending: bool | None = None
    remapped_rows_failure: bool | None = None
    # Row-remapper bank histogram: how many memory banks have max / high / partial / low /
    # none of their spare rows left ("none": no spare row, the next error there cannot be
    # remapped). None when not reported.
    remap_banks_max: int | None = None
    remap_banks_high: int | None = None
    remap_banks_partial: int | None = None
    remap_banks_low: int | None = None
    remap_banks_none: int | None = None
    # Memory repair state of newer drivers (DTD v13: the 580 and 595 captures); None when the
    # driver does not report it or says N/A.
    sram_threshold_exceeded: bool | None = None  # aggregate SRAM errors past the field-diag threshold
    channel_repair_pending: bool | None = None  # a memory channel repair waits for a reset
    tpc_repair_pending: bool | None = None  # a TPC (compute cluster) repair waits for a reset
    unrepairable_memory: bool | None = None  # memory damage that no repair can fix
    power_draw_w: float | None = None
    power_limit_w: float | None = None  # the limit in force (enforced / current power limit)
    default_power_limit_w: float | None = None
    max_power_limit_w: float | None = None
    # Active clock event (throttle) reasons, names from CLOCK_EVENT_REASONS, in bit order.
    clock_event_reasons: tuple[str, ...] = ()
    clock_event_reasons_known: bool = False  # False: this output did not say
    performance_state: str | None = None  # "P0".."P12"
    utilization_gpu_pct: int | None = None
    temperature_slowdown_c: int | None = None  # absolute slowdown threshold
    temperature_max_c: int | None = None  # absolute shutdown threshold
    virtualization_mode: str | None = None  # "None", "Pass-Through", "VGPU", "Host VGPU", ...
    compute_mode: str | None = None  # "Default", "Exclusive_Process", "Prohibited", ...
    processes: tuple[GpuProcess, ...] = ()
    processes_known: bool = False  # False: this output cannot list processes
    # What nvidia-smi printed instead of this GPU's values when it could not read them
    # ("ERR!" in the table, "GPU requires reset", "GPU is lost"), in FAULT_WORDS order;
    # () when the GPU answered. Its unreadable fields are None, never a value.
    faults: tuple[str, ...] = ()
    # One cell nvidia-smi could not read while the rest of the row was read ("fan sensor reads
    # ERR!"): that sensor's fault, not an unreadable GPU (its value is None).
    cell_faults: tuple[str, ...] = ()
    # PCIe link replays since reset and rollovers of that counter (-q / -q -x): a bad riser/slot
    pcie_replays: int | None = None
    pcie_replay_rollovers: int | None = None
    board_part_number: str | None = None
    # the -q / -q -x `Fabric` section on NVSwitch boxes (H100/H200/B200 SXM): State "Completed" /
    # "In Progress" / "Not Started", Status "Success" / an error; None where N/A or not reported
    fabric_state: str | None = None
    fabric_status: str | None = None
    # where each field came from when several nvidia-smi formats were merged: field -> source
    # ("xml", "text", "csv", "table", "list", "compute_apps"); empty for a single source
    provenance: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class GpuReport:
    """Everything one nvidia-smi invocation said about the host's GPUs."""

    source: str  # "xml" | "csv" | "table" | "text" | "unknown"
    driver_version: str | None
    cuda_version: str | None
    attached_gpus: int | None  # as the tool says; may differ from len(gpus) in a partial capture
    gpus: tuple[GpuInfo, ...]
    warnings: tuple[str, ...] = ()
    # False when the output was cut off mid-record (an XML without its closing tag, a -q whose
    # last GPU block ends early, fewer GPUs listed than "Attached GPUs" says with the text ending
    # inside a record): an incomplete probe to rerun, never a hardware claim
    complete: bool = True


# The --query-gpu list recommended for a fallback probe (when -q -x is unusable):
# `nvidia-smi --query-gpu=<these joined by ,> --format=csv,nounits`.
#
# nvidia-smi rejects the WHOLE query when one field name is unknown to that driver, so every
# name here must be accepted from R450 upward (the oldest driver branch this tool supports):
# - `clocks_throttle_reasons.active`, not `clocks_event_reasons.active`: the event name only
#   exists from R535; newer drivers (the 590 captures) still accept the throttle name as a
#   deprecated alias, and both print the same hex bitmask.
# - `mig.mode.current` is accepted from R450 (values are [N/A] on GPUs without MIG).
# - no `remapped_rows.*`: not in the --query-gpu list of the early R450 releases (row remapping
#   was queried with --query-remapped-rows there); read them from `-q -x`, which always has them.
#   parse_query_csv still reads them (and every other field it knows) when present.
# - no `temperature.gpu.tlimit`, `power.draw.average`, `pcie.link.gen.gpucurrent` etc.: R525+.
# Fields that do not apply to a GPU print [N/A], which the parser maps to None.
QUERY_FIELDS: tuple[str, ...] = (
    "index",
    "name",
    "uuid",
    "serial",
    "pci.bus_id",
    "memory.total",
    "memory.used",
    "driver_version",
    "count",
    "persistence_mode",
    "ecc.mode.current",
    "pcie.link.gen.current",
    "pcie.link.gen.max",
    "pcie.link.width.current",
    "pcie.link.width.max",
    "temperature.gpu",
    "mig.mode.current",
    "vbios_version",
    "pstate",
    "utilization.gpu",
    "compute_mode",
    "clocks_throttle_reasons.active",
    "ecc.errors.corrected.volatile.total",
    "ecc.errors.uncorrected.volatile.total",
    "ecc.errors.corrected.aggregate.total",
    "ecc.errors.uncorrected.aggregate.total",
    "retired_pages.single_bit_ecc.count",
    "retired_pages.double_bit.count",
    "retired_pages.pending",
    "power.draw",
    "enforced.power.limit",
    "power.default_limit",
    "power.max_limit",
)

# Clock event (formerly "throttle") reasons, in NVML bit order: bit i of the
# `clocks_event_reasons.active` / `clocks_throttle_reasons.active` mask is entry i.
# (Checked against the 590 CSV captures: mask 0x1 with only `gpu_idle` Active; supported 0x1FF.)
CLOCK_EVENT_REASONS: tuple[str, ...] = (
    "gpu_idle",  # 0x1
    "applications_clocks_setting",  # 0x2
    "sw_power_cap",  # 0x4
    "hw_slowdown",  # 0x8
    "sync_boost",  # 0x10
    "sw_thermal_slowdown",  # 0x20
    "hw_thermal_slowdown",  # 0x40
    "hw_power_brake_slowdown",  # 0x80
    "display_clock_setting",  # 0x100
)
# Other spellings seen in the XML element names and the -q text labels.
_REASON_ALIASES = {
    "idle": "gpu_idle",
    "display_clocks_setting": "display_clock_setting",
    "hw_therm_slowdown": "hw_thermal_slowdown",
    "sw_therm_slowdown": "sw_thermal_slowdown",
    "hw_power_brake": "hw_power_brake_slowdown",
}

# Values nvidia-smi prints when a field has no value on this GPU/driver.
_MISSING = {
    "",
    "n/a",
    "[n/a]",
    "not supported",
    "[not supported]",
    "unknown error",
    "[unknown error]",
    "requested functionality has been deprecated",
    "[requested functionality has been deprecated]",
    "insufficient permissions",
    "[insufficient permissions]",
    # a GPU nvidia-smi cannot read (GpuInfo.faults says so): no value, never data
    "err!",
    "gpu requires reset",
    "gpu is lost",
}

# nvidia-smi's words for a GPU it cannot read: the table prints "ERR!" in its cells (a GPU
# fallen off the bus, a GSP timeout: Xid 79 / 119), the other forms "[GPU requires reset]" or
# "[GPU is lost]". "Unknown Error" is not one: healthy GPUs print it for a single sensor.
FAULT_WORDS: tuple[str, ...] = (
    "ERR!",
    "GPU requires reset",
    "GPU is lost",
    "Unable to determine the device handle",
)
_FAULT = re.compile("|".join(re.escape(w) for w in FAULT_WORDS), re.IGNORECASE)
# The words that speak for the whole GPU wherever they stand (a record of a GPU that needs a
# reset or fell off the bus); ERR! speaks for its own cell only, unless it is the GPU's name or
# most of its row.
_GPU_FAULT_WORDS: tuple[str, ...] = FAULT_WORDS[1:]
_GPU_FAULT = re.compile("|".join(re.escape(w) for w in _GPU_FAULT_WORDS), re.IGNORECASE)
# What nvidia-smi prints in ONE cell/field it could not read (one sensor, one query) while the
# GPU answered otherwise: that cell's fault (GpuInfo.cell_faults), its value None.
_CELL_FAULT = re.compile(r"^\s*(ERR!|\[N/A\]|\[?Unknown Error\]?)\s*$", re.IGNORECASE)
# In the -q / -q -x / CSV forms "[N/A]" / "N/A" is the ordinary "not supported"; only the table
# prints a bracketed [N/A] for a value it failed to read.
_FIELD_FAULT = re.compile(r"^\s*(ERR!|\[?Unknown Error\]?)\s*$", re.IGNORECASE)
# What any fault of a record holds somewhere (a GPU-level word, or a field marker): a record
# none of whose values holds one has no fault, without a look at each of its fields
_ANY_FAULT_WORDS = (*FAULT_WORDS, "Unknown Error")
_ANY_FAULT = re.compile("|".join(re.escape(w) for w in _ANY_FAULT_WORDS), re.IGNORECASE)
_ANY_FAULT_LOWER = tuple(w.lower() for w in _ANY_FAULT_WORDS)

_LEADING_INT = re.compile(r"^\s*(-?\d+)")
_NUMBER_UNIT = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*$")
_MIB_PER_UNIT = {"": 1.0, "mib": 1.0, "gib": 1024.0, "kib": 1.0 / 1024, "b": 1.0 / 1024 / 1024}


def _clean(value: str | None) -> str | None:
    """Strip a raw value and map nvidia-smi's 'no value' spellings to None."""
    if value is None:
        return None
    value = value.strip()
    if value.lower() in _MISSING:
        return None
    # Any other bracketed value is a status, not data, e.g. "[GPU requires reset]".
    if value.startswith("[") and value.endswith("]"):
        return None
    return value


def _int(value: str | None) -> int | None:
    """Leading integer of a value such as '27 C', '16x', '81920 MiB'; None when absent."""
    cleaned = _clean(value)
    if cleaned is None:
        return None
    match = _LEADING_INT.match(cleaned)
    return int(match.group(1)) if match else None


def _mib(value: str | None) -> int | None:
    """Memory value in MiB from '81920 MiB' or a bare '81920' (nounits); None when absent."""
    cleaned = _clean(value)
    if cleaned is None:
        return None
    match = _NUMBER_UNIT.match(cleaned)
    if not match:
        return None
    factor = _MIB_PER_UNIT.get(match.group(2).lower())
    if factor is None:
        return None
    return round(float(match.group(1)) * factor)


def _on_off(value: str | None) -> str | None:
    """Normalise 'On'/'Off'/'Enabled'/'Disabled' to 'Enabled'/'Disabled'."""
    cleaned = _clean(value)
    if cleaned is None:
        return None
    lowered = cleaned.lower()
    if lowered in ("on", "enabled"):
        return "Enabled"
    if lowered in ("off", "disabled"):
        return "Disabled"
    return cleaned


_LEADING_FLOAT = re.compile(r"^\s*(-?\d+(?:\.\d+)?)")
_PSTATE = re.compile(r"^P(\d{1,2})$")


def _float(value: str | None) -> float | None:
    """Leading number of a value such as '26.78 W' or '700.00'; None when absent."""
    cleaned = _clean(value)
    if cleaned is None:
        return None
    match = _LEADING_FLOAT.match(cleaned)
    return float(match.group(1)) if match else None


def _yes_no(value: str | None) -> bool | None:
    """'Yes'/'No' (also 'True'/'False', '1'/'0') as a bool; None when absent or unknown."""
    cleaned = _clean(value)
    if cleaned is None:
        return None
    lowered = cleaned.lower()
    if lowered in ("yes", "true", "1"):
        return True
    if lowered in ("no", "false", "0"):
        return False
    return None


def _any_true(*values: bool | None) -> bool | None:
    """True if any is True, False if all known ones are False, None if none is known."""
    known = [v for v in values if v is not None]
    if not known:
        return None
    return any(known)


def _total(*values: int | None) -> int | None:
    """Sum of the known counts; None when none is known."""
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def _pstate(value: str | None) -> str | None:
    """'P0'..'P15' as printed; None for N/A or anything else."""
    cleaned = _clean(value)
    if cleaned is None:
        return None
    match = _PSTATE.match(cleaned.upper())
    return f"P{int(match.group(1))}" if match else None


def _reason_name(label: str) -> str:
    """Normalise an XML tag or -q label to a CLOCK_EVENT_REASONS name (may stay unknown)."""
    name = label.strip().lower()
    for prefix in ("clocks_event_reason_", "clocks_throttle_reason_"):
        if name.startswith(prefix):
            name = name[len(prefix) :]
    name = re.sub(r"[^a-z0-9]+", "_", name).strip("_")
    return _REASON_ALIASES.get(name, name)


def _ordered(reasons: set[str]) -> tuple[str, ...]:
    """Known reasons in bit order (unknown names are dropped by the caller with a warning)."""
    return tuple(r for r in CLOCK_EVENT_REASONS if r in reasons)


def _reasons_from_states(
    states: Sequence[tuple[str, str | None]], where: str, warnings: list[str]
) -> tuple[tuple[str, ...], bool]:
    """(active reasons, known) from (label, 'Active'/'Not Active') pairs."""
    active: set[str] = set()
    known = False
    for label, raw in states:
        value = _clean(raw)
        if value is None:
            continue
        name = _reason_name(label)
        lowered = value.lower()
        if lowered not in ("active", "not active"):
            continue
        known = True
        if name not in CLOCK_EVENT_REASONS:
            warnings.append(f"{where}: unknown clock event reason {label!r} ({value})")
            continue
        if lowered == "active":
            active.add(name)
    return _ordered(active), known


def _reasons_from_mask(
    value: str | None, where: str, warnings: list[str]
) -> tuple[tuple[str, ...], bool] | None:
    """(active reasons, True) from a hex bitmask such as '0x0000000000000001'; None if absent."""
    cleaned = _clean(value)
    if cleaned is None:
        return None
    try:
        mask = int(cleaned, 16) if cleaned.lower().startswith("0x") else int(cleaned)
    except ValueError:
        warnings.append(f"{where}: clock event reasons mask {cleaned!r} not a number")
        return None
    unknown = mask & ~((1 << len(CLOCK_EVENT_REASONS)) - 1)
    if unknown:
        warnings.append(f"{where}: unknown clock event reason bits {unknown:#x}")
    active = {name for bit, name in enumerate(CLOCK_EVENT_REASONS) if mask & (1 << bit)}
    return _ordered(active), True


_COMPUTE_MODES = {
    # the table abbreviates; -q, -q -x and the CSV spell them out
    "e. process": "Exclusive_Process",
    "e. thread": "Exclusive_Thread",
    "exclusive process": "Exclusive_Process",
    "exclusive thread": "Exclusive_Thread",
}


def _compute_mode(value: str | None) -> str | None:
    cleaned = _clean(value)
    if cleaned is None:
        return None
    return _COMPUTE_MODES.get(cleaned.lower(), cleaned)


def _faults(values: Iterable[str | None]) -> tuple[str, ...]:
    """The FAULT_WORDS that any of `values` holds, in FAULT_WORDS order."""
    found = {m.group(0).lower() for v in values if v for m in _FAULT.finditer(v)}
    return tuple(w for w in FAULT_WORDS if w.lower() in found)


def _gpu_faults(values: Iterable[str | None]) -> tuple[str, ...]:
    """The GPU-level fault words (not ERR!) that any of `values` holds, in FAULT_WORDS order."""
    found = {m.group(0).lower() for v in values if v for m in _GPU_FAULT.finditer(v)}
    return tuple(w for w in FAULT_WORDS if w.lower() in found)


def _cell_fault(value: str | None, pattern: re.Pattern[str] = _CELL_FAULT) -> str | None:
    """The fault marker `value` is ('ERR!', '[Unknown Error]', ...), as printed; None if a value."""
    if value is None:
        return None
    match = pattern.match(value)
    return match.group(1) if match else None


# Names of the fields whose faults are worth a sentence of their own (-q path / XML path):
# everything else is named by its -q label path or XML element path.
_FIELD_NAMES: Mapping[str, str] = {
    "Fan Speed": "fan sensor",
    "fan_speed": "fan sensor",
    "Temperature/GPU Current Temp": "temperature sensor",
    "temperature/gpu_temp": "temperature sensor",
    "Performance State": "performance state",
    "performance_state": "performance state",
    "Utilization/Gpu": "utilization",
    "Utilization/GPU": "utilization",
    "utilization/gpu_util": "utilization",
    "ECC Mode/Current": "ECC",
    "ecc_mode/current_ecc": "ECC",
    "Compute Mode": "compute mode",
    "compute_mode": "compute mode",
    "Persistence Mode": "persistence mode",
    "persistence_mode": "persistence mode",
    "MIG Mode/Current": "MIG mode",
    "mig_mode/current_mig": "MIG mode",
}
_FIELD_PREFIXES: tuple[tuple[str, str], ...] = (
    ("FB Memory Usage/", "memory usage"),
    ("fb_memory_usage/", "memory usage"),
    ("GPU Power Readings/Power Draw", "power draw"),
    ("GPU Power Readings/Average Power Draw", "power draw"),
    ("GPU Power Readings/Instant Power Draw", "power draw"),
    ("Power Readings/Power Draw", "power draw"),
    ("gpu_power_readings/power_draw", "power draw"),
    ("gpu_power_readings/average_power_draw", "power draw"),
    ("gpu_power_readings/instant_power_draw", "power draw"),
    ("power_readings/power_draw", "power draw"),
    ("GPU Power Readings/Current Power Limit", "power cap"),
    ("GPU Power Readings/Enforced Power Limit", "power cap"),
    ("Power Readings/Power Limit", "power cap"),
    ("Power Readings/Enforced Power Limit", "power cap"),
    ("gpu_power_readings/current_power_limit", "power cap"),
    ("gpu_power_readings/enforced_power_limit", "power cap"),
    ("power_readings/power_limit", "power cap"),
    ("power_readings/enforced_power_limit", "power cap"),
)


def _field_name(path: str) -> str:
    """A reader's name for the field at `path` ('Fan Speed' -> 'fan sensor')."""
    if path in _FIELD_NAMES:
        return _FIELD_NAMES[path]
    for prefix, name in _FIELD_PREFIXES:
        if path.startswith(prefix):
            return name
    return path


def _field_faults(
    leaves: Iterable[tuple[str, str]], name_path: str
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(faults, cell_faults) of one GPU record's (path, value) leaves (-q, -q -x, CSV).

    A GPU-level word anywhere ("GPU requires reset", "GPU is lost", "Unable to determine the
    device handle") or a fault marker as the product name makes the GPU unreadable; a marker in
    any other one field is that field's fault only."""
    leaves = list(leaves)
    if not _may_fault(value for _path, value in leaves):
        return (), ()
    faults = _gpu_faults(value for _path, value in leaves)
    cell_faults: list[str] = []
    for path, value in leaves:
        marker = _cell_fault(value, _FIELD_FAULT)
        if marker is None:
            continue
        if path == name_path:
            faults = _faults([*faults, marker]) or (marker,)
            continue
        sentence = f"{_field_name(path)} reads {marker}"
        if sentence not in cell_faults:
            cell_faults.append(sentence)
    return faults, (() if faults else tuple(cell_faults))


def _may_fault(values: Iterable[str]) -> bool:
    """Whether any of `values` holds a fault word or marker (one search over them all: no word
    holds a line break, so none is found across two values). ASCII text (nvidia-smi's) is
    searched lower-cased, ~20x faster than the case-blind regex, and the same there: the regex's
    wider folds (a long s for an s, a Kelvin sign for a k) are of characters outside ASCII."""
    text = "\n".join(values)
    if text.isascii():
        lower = text.lower()
        return any(word in lower for word in _ANY_FAULT_LOWER)
    return _ANY_FAULT.search(text) is not None


def _unknown(message: str) -> GpuReport:
    """An empty report that says why it is empty."""
    return GpuReport("unknown", None, None, None, (), (message,))


# ---------------------------------------------------------------- XML (nvidia-smi -q -x)

_DOCTYPE = re.compile(r"<!DOCTYPE[^>\[]*(\[[^\]]*\])?\s*>", re.IGNORECASE)


def _xml_text(node: ET.Element | None, path: str) -> str | None:
    """Text at `path` below `node`, cleaned; None when missing or N/A."""
    if node is None:
        return None
    found = _xml_find(node, path)
    return None if found is None else _clean(found.text)


@functools.lru_cache(maxsize=512)
def _path_tags(path: str) -> tuple[str, ...] | None:
    """The tags of a plain `a/b/c` path, None for any other ElementPath expression."""
    tags = tuple(path.split("/"))
    return tags if all(t and t.replace("_", "a").isalnum() for t in tags) else None


def _xml_find(node: ET.Element, path: str, start: int = 0) -> ET.Element | None:
    """node.find(path), the first match in document order, with a plain `a/b/c` path walked by
    the C `findall` of each tag rather than by ElementPath's Python (~60 lookups a GPU)."""
    tags = _path_tags(path)
    if tags is None:
        return node.find(path)
    if start == len(tags) - 1:
        return node.find(tags[start])
    for child in node.findall(tags[start]):
        found = _xml_find(child, path, start + 1)
        if found is not None:
            return found
    return None


def _xml_first(node: ET.Element | None, *paths: str) -> str | None:
    """The first of `paths` below `node` that has a value."""
    for path in paths:
        value = _xml_text(node, path)
        if value is not None:
            return value
    return None


def _xml_ecc(gpu: ET.Element, kind: str) -> tuple[int | None, int | None]:
    """(correctable, uncorrectable) totals of <ecc_errors><volatile|aggregate>, every schema."""
    section = gpu.find(f"ecc_errors/{kind}")
    if section is None:
        return None, None
    if section.find("single_bit") is not None or section.find("double_bit") is not None:
        # old schema: single_bit/double_bit with per-location counts and a total
        return (
            _int(_xml_text(section, "single_bit/total")),
            _int(_xml_text(section, "double_bit/total")),
        )
    sram_unc = _int(_xml_text(section, "sram_uncorrectable"))
    if sram_unc is None:  # v13 (and Hopper v12) split SRAM uncorrectable by detector
        sram_unc = _total(
            _int(_xml_text(section, "sram_uncorrectable_parity")),
            _int(_xml_text(section, "sram_uncorrectable_secded")),
        )
    return (
        _total(_int(_xml_text(section, "sram_correctable")), _int(_xml_text(section, "dram_correctable"))),
        _total(sram_unc, _int(_xml_text(section, "dram_uncorrectable"))),
    )


def _xml_processes(gpu: ET.Element) -> tuple[tuple[GpuProcess, ...], bool]:
    """(<processes>, known); unknown when the element is missing or says N/A."""
    node = gpu.find("processes")
    if node is None:
        return (), False
    infos = node.findall("process_info")
    if not infos and node.text is not None and _clean(node.text) is None and node.text.strip():
        return (), False  # <processes>N/A</processes>
    processes = tuple(
        GpuProcess(
            pid=_int(_xml_text(info, "pid")),
            name=_xml_text(info, "process_name") or "",
            type=_xml_text(info, "type"),
            used_memory_mib=_mib(_xml_text(info, "used_memory")),
        )
        for info in infos
    )
    return processes, True


def _xml_gpu(gpu: ET.Element, position: int, warnings: list[str]) -> GpuInfo:
    """One <gpu> element, any DTD version."""
    name = _xml_text(gpu, "product_name")
    if name is None:
        warnings.append(f"<gpu> #{position} has no product_name")
    link = gpu.find("pci/pci_gpu_link_info")
    vol_corr, vol_unc = _xml_ecc(gpu, "volatile")
    agg_corr, agg_unc = _xml_ecc(gpu, "aggregate")
    retired = gpu.find("retired_pages")
    remapped = gpu.find("remapped_rows")
    # <gpu_power_readings> from R535 (v12), <power_readings> before.
    power = gpu.find("gpu_power_readings")
    if power is None:
        power = gpu.find("power_readings")
    reasons_node = gpu.find("clocks_event_reasons")  # R535+
    if reasons_node is None:
        reasons_node = gpu.find("clocks_throttle_reasons")
    if reasons_node is None:
        reasons: tuple[str, ...] = ()
        reasons_known = False
    else:
        reasons, reasons_known = _reasons_from_states(
            [(child.tag, child.text) for child in reasons_node], f"<gpu> #{position}", warnings
        )
    processes, processes_known = _xml_processes(gpu)
    # (the leaves' paths, costly to build for ~1,000 elements a GPU, only when a value may be a fault)
    faults, cell_faults = (
        _field_faults(_xml_leaves(gpu), "product_name") if _may_fault(_xml_values(gpu)) else ((), ())
    )
    return GpuInfo(
        # -q -x has no index element; nvidia-smi lists GPUs in index (PCI) order.
        index=position,
        name=name or "",
        uuid=_xml_text(gpu, "uuid"),
        serial=_xml_text(gpu, "serial"),
        pci_bus_id=_xml_text(gpu, "pci/pci_bus_id") or _clean(gpu.get("id")),
        # fb_memory_usage directly under <gpu>, not the per-MIG-instance ones.
        memory_total_mib=_mib(_xml_text(gpu, "fb_memory_usage/total")),
        memory_used_mib=_mib(_xml_text(gpu, "fb_memory_usage/used")),
        ecc_mode=_on_off(_xml_text(gpu, "ecc_mode/current_ecc")),
        persistence_mode=_on_off(_xml_text(gpu, "persistence_mode")),
        pcie_gen_current=_int(_xml_text(link, "pcie_gen/current_link_gen")),
        pcie_gen_max=_int(_xml_text(link, "pcie_gen/max_link_gen")),
        pcie_gen_device_max=_int(_xml_text(link, "pcie_gen/max_device_link_gen")),
        pcie_gen_host_max=_int(_xml_text(link, "pcie_gen/max_host_link_gen")),
        pcie_width_current=_int(_xml_text(link, "link_widths/current_link_width")),
        pcie_width_max=_int(_xml_text(link, "link_widths/max_link_width")),
        temperature_c=_int(_xml_text(gpu, "temperature/gpu_temp")),
        mig_mode=_on_off(_xml_text(gpu, "mig_mode/current_mig")),
        mig_mode_pending=_on_off(_xml_text(gpu, "mig_mode/pending_mig")),
        vbios=_xml_text(gpu, "vbios_version"),
        product_brand=_xml_text(gpu, "product_brand"),
        product_architecture=_xml_text(gpu, "product_architecture"),
        ecc_volatile_correctable=vol_corr,
        ecc_volatile_uncorrectable=vol_unc,
        ecc_aggregate_correctable=agg_corr,
        ecc_aggregate_uncorrectable=agg_unc,
        retired_pages_sbe=_int(_xml_text(retired, "multiple_single_bit_retirement/retired_count")),
        retired_pages_dbe=_int(_xml_text(retired, "double_bit_retirement/retired_count")),
        retired_pages_pending=_any_true(
            _yes_no(_xml_text(retired, "pending_blacklist")),
            _yes_no(_xml_text(retired, "pending_retirement")),
        ),
        # <remapped_rows>N/A</remapped_rows> has no children: every value stays None.
        remapped_rows_correctable=_int(_xml_text(remapped, "remapped_row_corr")),
        remapped_rows_uncorrectable=_int(_xml_text(remapped, "remapped_row_unc")),
        remapped_rows_pending=_yes_no(_xml_text(remapped, "remapped_row_pending")),
        remapped_rows_failure=_yes_no(_xml_text(remapped, "remapped_row_failure")),
        remap_banks_max=_int(_xml_text(remapped, "row_remapper_histogram/row_remapper_histogram_max")),
        remap_banks_high=_int(_xml_text(remapped, "row_remapper_histogram/row_remapper_histogram_high")),
        remap_banks_partial=_int(
            _xml_text(remapped, "row_remapper_histogram/row_remapper_histogram_partial")
        ),
        remap_banks_low=_int(_xml_text(remapped, "row_remapper_histogram/row_remapper_histogram_low")),
        remap_banks_none=_int(_xml_text(remapped, "row_remapper_histogram/row_remapper_histogram_none")),
        # Absent before DTD v13; N/A where the GPU does not support them (the RTX 4000 Ada).
        sram_threshold_exceeded=_yes_no(_xml_text(gpu, "ecc_errors/aggregate/sram_threshold_exceeded")),
        channel_repair_pending=_yes_no(_xml_text(gpu, "ecc_errors/channel_repair_pending")),
        tpc_repair_pending=_yes_no(_xml_text(gpu, "ecc_errors/tpc_repair_pending")),
        unrepairable_memory=_yes_no(_xml_text(gpu, "ecc_errors/unrepairable_memory")),
        # v13 has only average/instant draw; <power_draw> (older) is the average too.
        power_draw_w=_float(_xml_first(power, "power_draw", "average_power_draw", "instant_power_draw")),
        power_limit_w=_float(_xml_first(power, "enforced_power_limit", "current_power_limit", "power_limit")),
        default_power_limit_w=_float(_xml_text(power, "default_power_limit")),
        max_power_limit_w=_float(_xml_text(power, "max_power_limit")),
        clock_event_reasons=reasons,
        clock_event_reasons_known=reasons_known,
        performance_state=_pstate(_xml_text(gpu, "performance_state")),
        utilization_gpu_pct=_int(_xml_text(gpu, "utilization/gpu_util")),
        # Absolute thresholds only; the *_tlimit_threshold elements (Ada/Hopper, R535+) are
        # margins relative to T.Limit ("-2 C"), not temperatures.
        temperature_slowdown_c=_int(_xml_text(gpu, "temperature/gpu_temp_slow_threshold")),
        temperature_max_c=_int(_xml_text(gpu, "temperature/gpu_temp_max_threshold")),
        virtualization_mode=_xml_text(gpu, "gpu_virtualization_mode/virtualization_mode"),
        compute_mode=_compute_mode(_xml_text(gpu, "compute_mode")),
        processes=processes,
        processes_known=processes_known,
        faults=faults,
        cell_faults=cell_faults,
        pcie_replays=_int(_xml_text(gpu, "pci/replay_counter")),
        pcie_replay_rollovers=_int(_xml_text(gpu, "pci/replay_rollover_counter")),
        board_part_number=_xml_text(gpu, "board_part_number"),
        fabric_state=_xml_text(gpu, "fabric/state"),
        fabric_status=_xml_text(gpu, "fabric/status"),
    )


def _xml_leaves(node: ET.Element, prefix: str = "") -> Iterable[tuple[str, str]]:
    """(path, text) of every element with text below `node`, the process list left out (a
    process name is free text)."""
    for child in node:
        if child.tag == "processes":
            continue
        path = f"{prefix}{child.tag}"
        if child.text is not None and child.text.strip():
            yield path, child.text.strip()
        yield from _xml_leaves(child, f"{path}/")


def _xml_values(node: ET.Element) -> list[str]:
    """The texts _xml_leaves yields, in any order and without their paths."""
    skipped = {id(e) for p in node.iter("processes") if p is not node for e in p.iter()}
    return [
        text
        for e in node.iter()
        if e is not node and e.text is not None and id(e) not in skipped and (text := e.text.strip())
    ]


_XML_END = "</nvidia_smi_log>"


def parse_xml(text: str) -> GpuReport:
    """Parse `nvidia-smi -q -x` (DTD v11..v13) into a GpuReport."""
    if "<!ENTITY" in text.upper():
        # nvidia-smi never declares entities; refuse rather than expand them (XML bombs).
        return GpuReport("xml", None, None, None, (), ("XML declares entities; refused to parse",))
    # The DOCTYPE only names an external DTD file; drop it so nothing is ever resolved.
    body = _DOCTYPE.sub("", text, count=1)
    # what follows the document: the probe's fallback calls' output when `-q -x` printed its XML
    # (the GPUs it could read) but exited non-zero, e.g. with a GPU fallen off the bus
    end = body.find(_XML_END)
    if end < 0:
        return _xml_cut(body)
    body = body[: end + len(_XML_END)]
    try:
        root = ET.fromstring(body)
    except ET.ParseError as exc:
        return GpuReport("xml", None, None, None, (), (f"XML not parseable: {exc}",))
    if root.tag != "nvidia_smi_log":
        return GpuReport("xml", None, None, None, (), (f"unexpected XML root <{root.tag}>",))
    warnings: list[str] = []
    gpus = [_xml_gpu(gpu, position, warnings) for position, gpu in enumerate(root.findall("gpu"))]
    attached = _int(_xml_text(root, "attached_gpus"))
    if attached is None:
        warnings.append("no <attached_gpus> in XML")
    elif attached != len(gpus):
        warnings.append(f"attached_gpus says {attached} but the XML has {len(gpus)} <gpu> elements")
    return GpuReport(
        "xml",
        _xml_text(root, "driver_version"),
        _xml_text(root, "cuda_version"),
        attached,
        tuple(gpus),
        tuple(warnings),
    )


_XML_CUT = "the nvidia-smi -q -x output ends before </nvidia_smi_log> (mid-record): incomplete probe, rerun"


def _xml_cut(body: str) -> GpuReport:
    """A `-q -x` document cut off before its closing tag: the <gpu> records that closed are
    read, the one cut off is not (its values may be cut too), and the report is incomplete."""
    parser: ET.XMLPullParser[ET.Element] = ET.XMLPullParser(events=("start", "end"))
    root: ET.Element | None = None
    closed: list[ET.Element] = []
    try:
        parser.feed(body)
        for pair in parser.read_events():
            event, element = cast(tuple[str, ET.Element], pair)
            if event == "start" and root is None:
                root = element
            elif event == "end" and element.tag == "gpu" and root is not None and element in list(root):
                closed.append(element)
    except ET.ParseError as exc:
        return GpuReport("xml", None, None, None, (), (f"XML not parseable: {exc}", _XML_CUT), complete=False)
    if root is None or root.tag != "nvidia_smi_log":
        return GpuReport("xml", None, None, None, (), (_XML_CUT,), complete=False)
    warnings: list[str] = [_XML_CUT]
    gpus = [_xml_gpu(gpu, position, warnings) for position, gpu in enumerate(closed)]
    return GpuReport(
        "xml",
        _xml_text(root, "driver_version"),
        _xml_text(root, "cuda_version"),
        _int(_xml_text(root, "attached_gpus")),
        tuple(gpus),
        tuple(warnings),
        complete=False,
    )


# ---------------------------------------------------------------- CSV (--query-gpu)

_UNIT_SUFFIX = re.compile(r"\s*\[[^\]]*\]\s*$")
_FIELD_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*$")


def _header_names(row: Sequence[str]) -> list[str] | None:
    """Field names if `row` is a --format=csv header ('memory.total [MiB]' -> 'memory.total')."""
    names = [_UNIT_SUFFIX.sub("", cell).strip() for cell in row]
    if names and all(_FIELD_NAME.match(name) for name in names):
        return names
    return None


def _csv_first(cells: Mapping[str, str], *names: str) -> str | None:
    """The first of the fields `names` that is present and has a value."""
    for name in names:
        value = _clean(cells.get(name))
        if value is not None:
            return value
    return None


def _csv_reasons(cells: Mapping[str, str], where: str, warnings: list[str]) -> tuple[tuple[str, ...], bool]:
    """Active clock event reasons from the bitmask field, else from the per-reason fields."""
    for prefix in ("clocks_event_reasons", "clocks_throttle_reasons"):
        from_mask = _reasons_from_mask(cells.get(f"{prefix}.active"), where, warnings)
        if from_mask is not None:
            return from_mask
    states = [
        (name.split(".", 1)[1], value)
        for name, value in cells.items()
        if name.startswith(("clocks_event_reasons.", "clocks_throttle_reasons."))
        and name.split(".", 1)[1] not in ("supported", "active")
    ]
    return _reasons_from_states(states, where, warnings)


def _csv_gpu(cells: Mapping[str, str], position: int, warnings: list[str]) -> GpuInfo:
    """One CSV row; fields the query did not ask for stay None."""
    index = _int(cells.get("index"))
    reasons, reasons_known = _csv_reasons(cells, f"CSV row {position}", warnings)
    faults, cell_faults = _field_faults(cells.items(), "name")
    return GpuInfo(
        index=position if index is None else index,
        name=_clean(cells.get("name")) or "",
        uuid=_clean(cells.get("uuid")),
        serial=_clean(cells.get("serial")),
        pci_bus_id=_clean(cells.get("pci.bus_id")),
        memory_total_mib=_mib(cells.get("memory.total")),
        memory_used_mib=_mib(cells.get("memory.used")),
        ecc_mode=_on_off(cells.get("ecc.mode.current")),
        persistence_mode=_on_off(cells.get("persistence_mode")),
        pcie_gen_current=_int(cells.get("pcie.link.gen.current")),
        pcie_gen_max=_int(cells.get("pcie.link.gen.max")),
        pcie_width_current=_int(cells.get("pcie.link.width.current")),
        pcie_width_max=_int(cells.get("pcie.link.width.max")),
        temperature_c=_int(cells.get("temperature.gpu")),
        mig_mode=_on_off(cells.get("mig.mode.current")),
        mig_mode_pending=_on_off(cells.get("mig.mode.pending")),
        vbios=_clean(cells.get("vbios_version")),
        # no --query-gpu field for product brand / architecture
        ecc_volatile_correctable=_int(cells.get("ecc.errors.corrected.volatile.total")),
        ecc_volatile_uncorrectable=_int(cells.get("ecc.errors.uncorrected.volatile.total")),
        ecc_aggregate_correctable=_int(cells.get("ecc.errors.corrected.aggregate.total")),
        ecc_aggregate_uncorrectable=_int(cells.get("ecc.errors.uncorrected.aggregate.total")),
        retired_pages_sbe=_int(_csv_first(cells, "retired_pages.single_bit_ecc.count", "retired_pages.sbe")),
        retired_pages_dbe=_int(_csv_first(cells, "retired_pages.double_bit.count", "retired_pages.dbe")),
        retired_pages_pending=_yes_no(cells.get("retired_pages.pending")),
        remapped_rows_correctable=_int(cells.get("remapped_rows.correctable")),
        remapped_rows_uncorrectable=_int(cells.get("remapped_rows.uncorrectable")),
        remapped_rows_pending=_yes_no(cells.get("remapped_rows.pending")),
        remapped_rows_failure=_yes_no(cells.get("remapped_rows.failure")),
        power_draw_w=_float(_csv_first(cells, "power.draw", "power.draw.average", "power.draw.instant")),
        power_limit_w=_float(_csv_first(cells, "enforced.power.limit", "power.limit")),
        default_power_limit_w=_float(cells.get("power.default_limit")),
        max_power_limit_w=_float(cells.get("power.max_limit")),
        clock_event_reasons=reasons,
        clock_event_reasons_known=reasons_known,
        performance_state=_pstate(cells.get("pstate")),
        utilization_gpu_pct=_int(cells.get("utilization.gpu")),
        # no --query-gpu field for the absolute slowdown / shutdown temperatures
        virtualization_mode=_clean(cells.get("virtualization_mode")),
        compute_mode=_compute_mode(cells.get("compute_mode")),
        processes_known=False,  # --query-gpu cannot list processes
        faults=faults,
        cell_faults=cell_faults,
    )


def parse_query_csv(text: str, fields: Sequence[str]) -> GpuReport:
    """Parse `nvidia-smi --query-gpu=<fields> --format=csv[,noheader][,nounits]`."""
    rows = [
        [cell.strip() for cell in row]
        for row in csv.reader(io.StringIO(text), skipinitialspace=True)
        if any(cell.strip() for cell in row)
    ]
    if not rows:
        return GpuReport("csv", None, None, None, (), ("empty CSV output",))
    warnings: list[str] = []
    header = _header_names(rows[0])
    expected = [field.strip() for field in fields]
    if header is not None and (not expected or header == expected or set(header) & set(expected)):
        if expected and header != expected:
            warnings.append("CSV header differs from the requested fields; using the header")
        names, data = header, rows[1:]
    elif expected:
        names, data = expected, rows
    else:
        return GpuReport("csv", None, None, None, (), ("CSV without header and no field list",))
    gpus: list[GpuInfo] = []
    driver: str | None = None
    count: int | None = None
    complete = True
    for position, row in enumerate(data):
        if len(row) != len(names):
            warnings.append(f"CSV row {position} has {len(row)} cells, expected {len(names)}")
            if position == len(data) - 1 and len(row) < len(names):
                # the last line cut short: the output stopped mid-row, not a GPU gone
                complete = False
                warnings.append("the nvidia-smi --query-gpu output ends mid-row: incomplete probe, rerun")
            continue
        cells: Mapping[str, str] = dict(zip(names, row, strict=True))
        driver = driver or _clean(cells.get("driver_version"))
        count = count if count is not None else _int(cells.get("count"))
        gpus.append(_csv_gpu(cells, position, warnings))
    if "name" not in names:
        warnings.append("CSV has no 'name' field")
    return GpuReport("csv", driver, None, count, tuple(gpus), tuple(warnings), complete=complete)


# ---------------------------------------------------------------- table (plain nvidia-smi)

_TABLE_DRIVER = re.compile(r"Driver Version:\s*(\S+)")
_TABLE_CUDA = re.compile(r"CUDA Version:\s*(\S+)")
_TABLE_NAME_CELL = re.compile(r"^\s*(\d+)\s+(.*?)\s+(On|Off|N/A|ERR!)\s*$")
# an integrated GPU (Jetson Orin: "Orin (nvgpu)") has no PCI address: its Bus-Id reads N/A
_TABLE_BUS_CELL = re.compile(r"^\s*([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f]|N/A)(?=\s|$)")
_TABLE_TEMP = re.compile(r"(\d+)C\b")
_TABLE_MEMORY = re.compile(r"(\d+)MiB\s*/\s*(\d+)MiB")
_TABLE_PERF = re.compile(r"\b(P\d{1,2})\b")
_TABLE_POWER = re.compile(r"(\S+)\s*/\s*(\S+)\s*$")
_TABLE_UTIL = re.compile(r"^\s*(\d+%|N/A)\s+(.*?)\s*$")
# "|    0    2    1    12249      C   /root/tools/memhog     2194MiB |" (GI/CI columns from R470)
_TABLE_PROCESS = re.compile(
    r"^\s*(\d+)\s+(?:(\S+)\s+(\S+)\s+)?(\d+|N/A)\s+([CGM](?:\+[CGM])*)\s+(.*?)\s+(\d+MiB|N/A)\s*$"
)


def _cells(line: str) -> list[str]:
    """Cells of one box-drawn table line: '| a | b |' -> [' a ', ' b ']."""
    stripped = line.strip()
    if not stripped.startswith("|"):
        return []
    return stripped.strip("|").split("|")


def _table_ecc(value: str) -> str | None:
    """ECC mode from the 'Volatile Uncorr. ECC' cell: a count means ECC is on."""
    cleaned = _clean(value)
    if cleaned is None:
        return None
    if cleaned.isdecimal():
        return "Enabled"
    return _on_off(cleaned)


def _table_watts(value: str) -> float | None:
    """'52W' -> 52.0; None for N/A."""
    return _float(value.strip().rstrip("W"))


def _table_processes(lines: Sequence[str], warnings: list[str]) -> tuple[dict[int, list[GpuProcess]], bool]:
    """Processes per GPU index from the 'Processes:' table, and whether the table said."""
    start = next((i for i, line in enumerate(lines) if "Processes:" in line), None)
    if start is None:
        return {}, False
    by_gpu: dict[int, list[GpuProcess]] = {}
    said_none = False
    for line in lines[start + 1 :]:
        if "No running processes found" in line:
            said_none = True
            continue
        cells = _cells(line)
        if len(cells) != 1:
            continue
        match = _TABLE_PROCESS.match(cells[0])
        if match is None:
            continue
        process = GpuProcess(
            pid=_int(match.group(4)),
            name=match.group(6).strip(),
            type=match.group(5),
            used_memory_mib=_mib(match.group(7).replace("MiB", " MiB")),
        )
        by_gpu.setdefault(int(match.group(1)), []).append(process)
    if not by_gpu and not said_none:
        # nvidia-smi inside a container (no host PID namespace) prints an empty table.
        warnings.append("process table is empty: processes not visible (container?)")
        return {}, False
    return by_gpu, True


_TABLE_TOKEN = re.compile(r"\[Unknown Error\]|Unknown Error|\S+")
_TABLE_BORDER = re.compile(r"^\s*\+[-=+]*\+\s*$")
_TABLE_CUT = "the nvidia-smi table output ends mid-table (mid-record): incomplete probe, rerun"


def _table_cell(value: str, name: str, cell_faults: list[str]) -> str:
    """`value` stripped; a fault marker there is recorded as that cell's fault and read as N/A."""
    marker = _cell_fault(value)
    if marker is None:
        return value.strip()
    cell_faults.append(f"{name} reads {marker}")
    return "N/A"


def _table_gpu(
    cells: Sequence[str], second: Sequence[str], third: Sequence[str], warnings: list[str]
) -> GpuInfo:
    """One GPU's 2 or 3 table rows; a fault marker belongs to its cell, unless it is the GPU's
    name or most of its cells (then the GPU is unreadable: GpuInfo.faults)."""
    name_cell = _TABLE_NAME_CELL.match(cells[0])
    bus_cell = _TABLE_BUS_CELL.match(cells[1])
    assert name_cell is not None and bus_cell is not None  # the caller matched them
    index = int(name_cell.group(1))
    cell_faults: list[str] = []
    name = name_cell.group(2).strip()
    persistence = _table_cell(name_cell.group(3), "persistence mode", cell_faults)
    display = bus_cell.string[bus_cell.end() :].strip()
    if display:
        _table_cell(display, "display (Disp.A)", cell_faults)
    ecc_raw = _table_cell(cells[2], "ECC", cell_faults)
    # "Fan  Temp  Perf  Pwr:Usage/Cap": fan, temperature, P-state, draw / cap
    tokens = _TABLE_TOKEN.findall(second[0])
    temp: int | None = None
    perf: str | None = None
    draw: float | None = None
    cap: float | None = None
    if len(tokens) == 6 and tokens[4] == "/":
        _table_cell(tokens[0], "fan sensor", cell_faults)
        temp_raw = _table_cell(tokens[1], "temperature sensor", cell_faults)
        temp = _int(temp_raw.rstrip("C")) if temp_raw.endswith("C") else None
        perf = _pstate(_table_cell(tokens[2], "performance state", cell_faults))
        draw = _table_watts(_table_cell(tokens[3], "power draw", cell_faults))
        cap = _table_watts(_table_cell(tokens[5], "power cap", cell_faults))
    else:  # an unusual layout: read what is recognisable, as before
        temp_match = _TABLE_TEMP.search(second[0])
        perf_match = _TABLE_PERF.search(second[0])
        power = _TABLE_POWER.search(second[0])
        temp = int(temp_match.group(1)) if temp_match else None
        perf = _pstate(perf_match.group(1)) if perf_match else None
        if power:
            draw = _table_watts(_table_cell(power.group(1), "power draw", cell_faults))
            cap = _table_watts(_table_cell(power.group(2), "power cap", cell_faults))
    memory_raw = _table_cell(second[1], "memory usage", cell_faults)
    memory = _TABLE_MEMORY.search(memory_raw)
    # "GPU-Util  Compute M.": utilization, then the compute mode
    util_tokens = _TABLE_TOKEN.findall(second[2])
    util: int | None = None
    compute: str | None = None
    if util_tokens:
        util = _int(_table_cell(util_tokens[0], "utilization", cell_faults).rstrip("%"))
        if len(util_tokens) > 1:
            compute = _compute_mode(_table_cell(" ".join(util_tokens[1:]), "compute mode", cell_faults))
    mig = _table_cell(third[2], "MIG mode", cell_faults) if len(third) == 3 else None
    # the whole-row judgement: its name unreadable, or most of its cells
    markers = [cell.rsplit(" reads ", 1)[1] for cell in cell_faults]
    counted = 9  # persistence, ECC, fan, temperature, P-state, draw, cap, memory, utilization
    name_marker = _cell_fault(name)
    faults: tuple[str, ...] = ()
    if name_marker is not None or len(markers) * 2 > counted:
        found = [name_marker] if name_marker is not None else markers
        faults = _faults(found) or tuple(dict.fromkeys(found))
        cell_faults = []
    if memory is None:
        warnings.append(f"GPU {index}: memory column not found")
    return GpuInfo(
        index=index,
        name=name,
        pci_bus_id=_clean(bus_cell.group(1)),
        memory_total_mib=int(memory.group(2)) if memory else None,
        memory_used_mib=int(memory.group(1)) if memory else None,
        ecc_mode=_table_ecc(ecc_raw),
        persistence_mode=_on_off(persistence),
        temperature_c=temp,
        mig_mode=_on_off(mig) if mig is not None else None,
        # "Volatile Uncorr. ECC": a count when ECC is on (On/Off/N/A otherwise)
        ecc_volatile_uncorrectable=int(ecc_raw) if ecc_raw.isdecimal() else None,
        # "Pwr:Usage/Cap": the cap is the enforced limit
        power_draw_w=draw,
        power_limit_w=cap,
        performance_state=perf,
        utilization_gpu_pct=util,
        compute_mode=compute,
        faults=faults,
        cell_faults=tuple(cell_faults),
    )


def _table_complete(lines: Sequence[str]) -> bool:
    """Whether the table output ran to its end: the default output always closes with the
    Processes table, and its last box line is a whole closing border. A cut inside a GPU row,
    between GPU rows or inside the process list fails one of the two."""
    if not any("Processes:" in line for line in lines):
        return False
    box = [line for line in lines if line.strip().startswith(("|", "+"))]
    return bool(box) and _TABLE_BORDER.match(box[-1]) is not None


def parse_table(text: str) -> GpuReport:
    """Parse the plain `nvidia-smi` table (names may be truncated, as printed)."""
    driver_match = _TABLE_DRIVER.search(text)
    cuda_match = _TABLE_CUDA.search(text)
    lines = text.splitlines()
    gpus: list[GpuInfo] = []
    warnings: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if "Processes:" in line or "MIG devices:" in line:
            break  # later tables list processes / MIG instances, not GPUs
        cells = _cells(line)
        name_cell = _TABLE_NAME_CELL.match(cells[0]) if len(cells) == 3 else None
        bus_cell = _TABLE_BUS_CELL.match(cells[1]) if name_cell else None
        if not (name_cell and bus_cell):
            i += 1
            continue
        second = _cells(lines[i + 1]) if i + 1 < len(lines) else []
        third = _cells(lines[i + 2]) if i + 2 < len(lines) else []
        if len(second) != 3:
            second = ["", "", ""]
        gpus.append(_table_gpu(cells, second, third, warnings))
        i += 3
    processes, processes_known = _table_processes(lines, warnings)
    gpus = [
        replace(gpu, processes=tuple(processes.get(gpu.index, ())), processes_known=processes_known)
        for gpu in gpus
    ]
    for index in sorted(set(processes) - {gpu.index for gpu in gpus}):
        warnings.append(f"process table lists GPU {index}, which the GPU table does not have")
    if driver_match is None:
        warnings.append("no 'Driver Version:' in nvidia-smi table")
    if not gpus:
        warnings.append("no GPU rows found in nvidia-smi table")
    complete = _table_complete(lines)
    if not complete:
        warnings.append(_TABLE_CUT)
    return GpuReport(
        "table",
        driver_match.group(1) if driver_match else None,
        _clean(cuda_match.group(1)) if cuda_match else None,
        None,  # the table does not state a count
        tuple(gpus),
        tuple(warnings),
        complete=complete,
    )


# ---------------------------------------------------------------- text (nvidia-smi -q)

# "Key   : value"; the separator is whitespace + colon, so "GPU 00000000:07:00.0" is a header.
_TEXT_LINE = re.compile(r"^(\s*)(\S.*?)(?:\s+:(?:\s(.*)|$))?\s*$")


def _text_tree(text: str) -> dict[str, Any]:
    """Nested dict from the indented `key : value` layout of `nvidia-smi -q`."""
    root: dict[str, Any] = {}
    stack: list[tuple[int, dict[str, Any]]] = [(-1, root)]
    for raw in text.splitlines():
        if not raw.strip() or raw.strip().startswith("====="):
            continue
        match = _TEXT_LINE.match(raw)
        if match is None:
            continue
        indent, key, value = len(match.group(1).expandtabs()), match.group(2), match.group(3)
        while stack[-1][0] >= indent:
            stack.pop()
        parent = stack[-1][1]
        if value is None:  # a section header such as "FB Memory Usage"
            section: dict[str, Any] = {}
            parent.setdefault(key, section)
            stack.append((indent, section))
        else:
            parent.setdefault(key, value.strip())
    return root


def _tree_child(node: Mapping[str, Any], key: str) -> Any:
    """`node[key]`, the label matched case-insensitively when not printed exactly: drivers
    R418-R470 print `Ecc Mode` and `Virtualization mode` where newer ones print `ECC Mode` and
    `Virtualization Mode`. The exact label wins where both are present. None when absent."""
    if key in node:
        return node[key]
    low = key.casefold()
    return next((value for label, value in node.items() if label.casefold() == low), None)


def _tree_get(tree: Mapping[str, Any], *path: str) -> str | None:
    """Value at `path` in a text tree (labels case-insensitive); None when missing or N/A."""
    node: Any = tree
    for key in path:
        if not isinstance(node, Mapping):
            return None
        node = _tree_child(node, key)
        if node is None:
            return None
    return _clean(node) if isinstance(node, str) else None


_TEXT_GPU_HEADER = re.compile(r"^GPU\s+\S+\s*$")
_TEXT_PROCESSES = re.compile(r"^(\s*)Processes(?:\s+:\s*(.*?))?\s*$")


def _text_gpu_blocks(text: str) -> list[tuple[str, list[str]]]:
    """(header, body lines) of each 'GPU 00000000:07:00.0' section of `nvidia-smi -q`."""
    blocks: list[tuple[str, list[str]]] = []
    for raw in text.splitlines():
        if _TEXT_GPU_HEADER.match(raw):
            blocks.append((raw.strip(), []))
        elif blocks:
            blocks[-1][1].append(raw)
    return blocks


def _text_processes(lines: Sequence[str]) -> tuple[tuple[GpuProcess, ...], bool]:
    """The 'Processes' section: 'Processes : None', or one 'Process ID' entry per process."""
    for i, raw in enumerate(lines):
        match = _TEXT_PROCESSES.match(raw)
        if match is None:
            continue
        if match.group(2) is not None:  # "Processes : None" (or N/A)
            return (), match.group(2).strip().lower() == "none"
        indent = len(match.group(1).expandtabs())
        entries: list[dict[str, str]] = []
        for line in lines[i + 1 :]:
            if not line.strip():
                continue
            item = _TEXT_LINE.match(line)
            if item is None or len(item.group(1).expandtabs()) <= indent:
                break
            key, value = item.group(2).strip(), (item.group(3) or "").strip()
            # An entry starts at "GPU instance ID" (R470+) or, without it, at "Process ID".
            starts = key == "GPU instance ID" or (
                key == "Process ID" and (not entries or "Process ID" in entries[-1])
            )
            if starts or not entries:
                entries.append({})
            entries[-1].setdefault(key, value)
        processes = tuple(
            GpuProcess(
                pid=_int(entry.get("Process ID")),
                name=_clean(entry.get("Name")) or "",
                type=_clean(entry.get("Type")),
                used_memory_mib=_mib(entry.get("Used GPU Memory")),
            )
            for entry in entries
            if "Process ID" in entry
        )
        return processes, True
    return (), False


def _tree_first(tree: Mapping[str, Any], *paths: tuple[str, ...]) -> str | None:
    """The first of `paths` in a text tree that has a value."""
    for path in paths:
        value = _tree_get(tree, *path)
        if value is not None:
            return value
    return None


def _tree_section(tree: Mapping[str, Any], *names: str) -> Mapping[str, Any]:
    """The first sub-section of `names` present (labels case-insensitive), else an empty one."""
    for name in names:
        section = _tree_child(tree, name)
        if isinstance(section, Mapping):
            return section
    return {}


def _text_ecc(section: Mapping[str, Any], kind: str) -> tuple[int | None, int | None]:
    """(correctable, uncorrectable) totals under 'ECC Errors' > Volatile|Aggregate."""
    node = _tree_section(section, "ECC Errors")
    node = _tree_section(node, kind)
    if _tree_child(node, "Single Bit") is not None or _tree_child(node, "Double Bit") is not None:  # older
        return _int(_tree_get(node, "Single Bit", "Total")), _int(_tree_get(node, "Double Bit", "Total"))
    sram_unc = _int(_tree_get(node, "SRAM Uncorrectable"))
    if sram_unc is None:
        sram_unc = _total(
            _int(_tree_get(node, "SRAM Uncorrectable Parity")),
            _int(_tree_get(node, "SRAM Uncorrectable SEC-DED")),
        )
    return (
        _total(_int(_tree_get(node, "SRAM Correctable")), _int(_tree_get(node, "DRAM Correctable"))),
        _total(sram_unc, _int(_tree_get(node, "DRAM Uncorrectable"))),
    )


def _text_gpu(key: str, lines: list[str], position: int, warnings: list[str]) -> GpuInfo:
    """One 'GPU <bus id>' section of `nvidia-smi -q`."""
    section = _text_tree("\n".join(lines))
    name = _tree_get(section, "Product Name")
    if name is None:
        warnings.append(f"{key}: no Product Name")
    link = ("PCI", "GPU Link Info")
    vol_corr, vol_unc = _text_ecc(section, "Volatile")
    agg_corr, agg_unc = _text_ecc(section, "Aggregate")
    retired = _tree_section(section, "Retired Pages")
    remapped = _tree_section(section, "Remapped Rows")
    histogram = "Bank Remap Availability Histogram"
    power = _tree_section(section, "GPU Power Readings", "Power Readings")
    reasons_section = _tree_section(section, "Clocks Event Reasons", "Clocks Throttle Reasons")
    reasons, reasons_known = _reasons_from_states(
        [(label, value) for label, value in reasons_section.items() if isinstance(value, str)],
        key,
        warnings,
    )
    processes, processes_known = _text_processes(lines)
    faults, cell_faults = _field_faults(_tree_leaves(section), "Product Name")
    return GpuInfo(
        index=position,
        name=name or "",
        uuid=_tree_get(section, "GPU UUID"),
        serial=_tree_get(section, "Serial Number"),
        pci_bus_id=_tree_get(section, "PCI", "Bus Id") or key[4:].strip(),
        memory_total_mib=_mib(_tree_get(section, "FB Memory Usage", "Total")),
        memory_used_mib=_mib(_tree_get(section, "FB Memory Usage", "Used")),
        ecc_mode=_on_off(_tree_get(section, "ECC Mode", "Current")),
        persistence_mode=_on_off(_tree_get(section, "Persistence Mode")),
        pcie_gen_current=_int(_tree_get(section, *link, "PCIe Generation", "Current")),
        pcie_gen_max=_int(_tree_get(section, *link, "PCIe Generation", "Max")),
        pcie_gen_device_max=_int(_tree_get(section, *link, "PCIe Generation", "Device Max")),
        pcie_gen_host_max=_int(_tree_get(section, *link, "PCIe Generation", "Host Max")),
        pcie_width_current=_int(_tree_get(section, *link, "Link Width", "Current")),
        pcie_width_max=_int(_tree_get(section, *link, "Link Width", "Max")),
        temperature_c=_int(_tree_get(section, "Temperature", "GPU Current Temp")),
        mig_mode=_on_off(_tree_get(section, "MIG Mode", "Current")),
        mig_mode_pending=_on_off(_tree_get(section, "MIG Mode", "Pending")),
        vbios=_tree_get(section, "VBIOS Version"),
        product_brand=_tree_get(section, "Product Brand"),
        product_architecture=_tree_get(section, "Product Architecture"),
        ecc_volatile_correctable=vol_corr,
        ecc_volatile_uncorrectable=vol_unc,
        ecc_aggregate_correctable=agg_corr,
        ecc_aggregate_uncorrectable=agg_unc,
        retired_pages_sbe=_int(_tree_get(retired, "Single Bit ECC")),
        retired_pages_dbe=_int(_tree_get(retired, "Double Bit ECC")),
        retired_pages_pending=_any_true(
            _yes_no(_tree_get(retired, "Pending Page Blacklist")),
            _yes_no(_tree_get(retired, "Pending Page Retirement")),
            _yes_no(_tree_get(retired, "Pending")),
        ),
        remapped_rows_correctable=_int(_tree_get(remapped, "Correctable Error")),
        remapped_rows_uncorrectable=_int(_tree_get(remapped, "Uncorrectable Error")),
        remapped_rows_pending=_yes_no(_tree_get(remapped, "Pending")),
        remapped_rows_failure=_yes_no(_tree_get(remapped, "Remapping Failure Occurred")),
        remap_banks_max=_int(_tree_get(remapped, histogram, "Max")),
        remap_banks_high=_int(_tree_get(remapped, histogram, "High")),
        remap_banks_partial=_int(_tree_get(remapped, histogram, "Partial")),
        remap_banks_low=_int(_tree_get(remapped, histogram, "Low")),
        remap_banks_none=_int(_tree_get(remapped, histogram, "None")),
        sram_threshold_exceeded=_yes_no(
            _tree_get(section, "ECC Errors", "Aggregate", "SRAM Threshold Exceeded")
        ),
        channel_repair_pending=_yes_no(_tree_get(section, "ECC Errors", "Channel Repair Pending")),
        tpc_repair_pending=_yes_no(_tree_get(section, "ECC Errors", "TPC Repair Pending")),
        unrepairable_memory=_yes_no(_tree_get(section, "ECC Errors", "Unrepairable Memory")),
        power_draw_w=_float(
            _tree_first(power, ("Power Draw",), ("Average Power Draw",), ("Instant Power Draw",))
        ),
        power_limit_w=_float(
            _tree_first(power, ("Enforced Power Limit",), ("Current Power Limit",), ("Power Limit",))
        ),
        default_power_limit_w=_float(_tree_get(power, "Default Power Limit")),
        max_power_limit_w=_float(_tree_get(power, "Max Power Limit")),
        clock_event_reasons=reasons,
        clock_event_reasons_known=reasons_known,
        performance_state=_pstate(_tree_get(section, "Performance State")),
        # "Gpu" up to R535, "GPU" from R580 (the 580.159.04 capture)
        utilization_gpu_pct=_int(_tree_first(section, ("Utilization", "Gpu"), ("Utilization", "GPU"))),
        # absolute thresholds only, not the "... T.Limit Temp" margins
        temperature_slowdown_c=_int(_tree_get(section, "Temperature", "GPU Slowdown Temp")),
        temperature_max_c=_int(_tree_get(section, "Temperature", "GPU Shutdown Temp")),
        virtualization_mode=_tree_get(section, "GPU Virtualization Mode", "Virtualization Mode"),
        compute_mode=_compute_mode(_tree_get(section, "Compute Mode")),
        processes=processes,
        processes_known=processes_known,
        faults=faults,
        cell_faults=cell_faults,
        pcie_replays=_int(_tree_get(section, "PCI", "Replays Since Reset")),
        pcie_replay_rollovers=_int(_tree_get(section, "PCI", "Replay Number Rollovers")),
        board_part_number=_tree_get(section, "Board Part Number"),
        fabric_state=_tree_get(section, "Fabric", "State"),
        fabric_status=_tree_get(section, "Fabric", "Status"),
    )


def _tree_leaves(tree: Mapping[str, Any], prefix: str = "") -> Iterable[tuple[str, str]]:
    """(path, value) of every value of a -q text tree, the process list left out (a process
    name is free text)."""
    for key, value in tree.items():
        if key == "Processes":
            continue
        path = f"{prefix}{key}"
        if isinstance(value, Mapping):
            yield from _tree_leaves(value, f"{path}/")
        else:
            yield path, value


# Top-level sections of a -q GPU record that every complete record has, whatever the driver
# (R450 .. R590 captures): a last record without one of them was cut off.
_TEXT_RECORD_KEYS = ("Product Name", "PCI", "Processes")
_TEXT_CUT = "the nvidia-smi -q output ends mid-record: incomplete probe, rerun"


def _text_block_cut(first: Mapping[str, Any], last: Mapping[str, Any], single: bool) -> bool:
    """Whether the last -q GPU record ends early: it lacks a section the first record has (or,
    when it is the only record, one that every full record has)."""
    if not single:
        # the sections every record has, and the first record's closing one (sections such as
        # "MIG Devices" may differ from GPU to GPU on a mixed box; the record's end does not)
        required = [key for key in _TEXT_RECORD_KEYS if key in first]
        required += list(first)[-1:]
        return any(key not in last for key in required)
    if "Processes" in last:
        return False
    # `-q -d MEMORY` and friends print a few sections without the product name: not a cut
    return "Product Name" in last or len(last) < 2


def parse_text_q(text: str) -> GpuReport:
    """Parse the plain-text `nvidia-smi -q` form."""
    tree = _text_tree(text)
    warnings: list[str] = []
    blocks = _text_gpu_blocks(text)
    attached = _int(_tree_get(tree, "Attached GPUs"))
    complete = True
    if blocks:
        first = _text_tree("\n".join(blocks[0][1]))
        last = first if len(blocks) == 1 else _text_tree("\n".join(blocks[-1][1]))
        if _text_block_cut(first, last, len(blocks) == 1):
            complete = False
            if not text.endswith("\n") and blocks[-1][1]:
                # the last line itself was cut mid-value ("Product Name : NVIDIA H1"): drop it
                blocks[-1] = (blocks[-1][0], blocks[-1][1][:-1])
    elif attached:
        complete = False  # "Attached GPUs : 8" and not one GPU record after it
    gpus = [_text_gpu(key, lines, position, warnings) for position, (key, lines) in enumerate(blocks)]
    driver = _tree_get(tree, "Driver Version")
    if driver is None:
        warnings.append("no 'Driver Version' in nvidia-smi -q text")
    if attached is not None and attached != len(gpus):
        warnings.append(f"Attached GPUs says {attached} but {len(gpus)} GPU sections found")
    if not complete:
        warnings.append(_TEXT_CUT)
    return GpuReport(
        "text",
        driver,
        _tree_get(tree, "CUDA Version"),
        attached,
        tuple(gpus),
        tuple(warnings),
        complete=complete,
    )


# ---------------------------------------------------------------- sniffing


def parse_any(text: str) -> GpuReport:
    """Recognise which nvidia-smi output form `text` is and parse it."""
    head = text.lstrip()
    if not head:
        return _unknown("empty nvidia-smi output")
    if (
        head.startswith("<?xml")
        or head.startswith("<!DOCTYPE nvidia_smi_log")
        or head.startswith("<nvidia_smi_log")
    ):
        return parse_xml(text)
    if "NVSMI LOG" in head[:200] or re.search(r"(?m)^Attached GPUs\s+:", text):
        return parse_text_q(text)
    if "NVIDIA-SMI" in text and "Driver Version:" in text:
        return parse_table(text)
    first_line = head.splitlines()[0]
    if "," in first_line and _header_names(next(csv.reader([first_line], skipinitialspace=True))):
        return parse_query_csv(text, ())
    return _unknown("output not recognised as any nvidia-smi format")
