"""What nvidia-smi prints where it cannot read a value (:data:`FAULT_WORDS`, "ERR!", NVML's
error strings :data:`NVML_FIELD_ERRORS` such as "[Unknown Error]"), and the judgement of one GPU
record: the whole GPU unreadable (GpuInfo.faults) or one field only (GpuInfo.cell_faults, with a
reader's name for the field)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from gpuonboard.once import lazy_re

# nvidia-smi's words for a GPU it cannot read: the table prints "ERR!" in its cells (a GPU
# fallen off the bus, a GSP timeout: Xid 79 / 119), the other forms "[GPU requires reset]" or
# "[GPU is lost]". "Unknown Error" is not one: healthy GPUs print it for a single sensor.
FAULT_WORDS: tuple[str, ...] = (
    "ERR!",
    "GPU requires reset",
    "GPU is lost",
    "Unable to determine the device handle",
    "Unable to detect the device handle",  # (Windows' nvidia-smi's words)
)
_FAULT = lazy_re("|".join(re.escape(w) for w in FAULT_WORDS), re.IGNORECASE)
# The words that speak for the whole GPU wherever they stand (a record of a GPU that needs a
# reset or fell off the bus); ERR! speaks for its own cell only, unless it is the GPU's name or
# most of its row.
_GPU_FAULT_WORDS: tuple[str, ...] = FAULT_WORDS[1:]
_GPU_FAULT = lazy_re("|".join(re.escape(w) for w in _GPU_FAULT_WORDS), re.IGNORECASE)
# NVML's error strings (nvmlErrorString: NVIDIA's list as DCGM copies it in
# sdk/nvidia/nvml/nvml_error_strings.h, and NVML_ERROR_NOT_READY's "System is not in ready
# state") that nvidia-smi prints as a field's value when the query for that field FAILED: the
# field's fault, never its value ("Fan Speed : System is not in ready state" on a GeForce
# RTX 3090 whose driver says "Reset Required : Yes", R535). Not here: "Not Supported",
# "Insufficient Permissions" and "Requested functionality has been deprecated" (no value, no
# fault: values._MISSING), and the errors of a call made wrongly ("Invalid Argument",
# "Insufficient Size", ...), which say nothing of the GPU. "GPU requires reset" and "GPU is
# lost" speak for the whole GPU (FAULT_WORDS).
NVML_FIELD_ERRORS: tuple[str, ...] = (
    "Unknown Error",
    "System is not in ready state",
    "Timeout",
    "Insufficient Resources",
    "Insufficient Memory",
    "Insufficient External Power",
    "Corrupted infoROM",
    "Interrupt Request Issue",
    "Uninitialized",
    "Driver Not Loaded",
    "GPU access blocked by the operating system",
    "Driver/library version mismatch",
    "In use by another client",
)
_NVML_ERROR = "|".join(re.escape(w) for w in NVML_FIELD_ERRORS)
# What nvidia-smi prints in ONE table cell it could not read (one sensor, one query) while the
# GPU answered otherwise: that cell's fault (GpuInfo.cell_faults), its value None; or, as any
# cell, a word that speaks for the whole GPU ("[GPU is lost]": table._table_row_faults)
_GPU_WORDS = "|".join(re.escape(w) for w in _GPU_FAULT_WORDS[:2])
_CELL_FAULT = re.compile(rf"^\s*(ERR!|\[N/A\]|\[?(?:{_NVML_ERROR}|{_GPU_WORDS})\]?)\s*$", re.IGNORECASE)
# In the -q / -q -x / CSV forms "[N/A]" / "N/A" is the ordinary "not supported"; only the table
# prints a bracketed [N/A] for a value it failed to read.
_FIELD_FAULT = re.compile(rf"^\s*(ERR!|\[?(?:{_NVML_ERROR})\]?)\s*$", re.IGNORECASE)
# Fields whose value IS an NVML return string, printed as such: the fabric registration's status
# ("Success", "Insufficient Resources" on a GPU the fabric manager could not place): a value the
# fabric rule judges, not a query that failed
_STATUS_FIELDS = frozenset({"Fabric/Status", "fabric/status", "fabric.status"})
# the fabric registration's State beside each spelling of its Status: NVML fills the Status
# only where the State is Completed (one call gives both), so a Status beside another State
# (In Progress, Not Started, N/A) is no reading, nor is its ERR! a fault
_STATE_OF_STATUS = {
    "Fabric/Status": "Fabric/State",
    "fabric/status": "fabric/state",
    "fabric.status": "fabric.state",
}
# What any fault of a record holds somewhere (a GPU-level word, or a field marker): a record
# none of whose values holds one has no fault, without a look at each of its fields. An NVML
# error string is a field's whole value, so never next to a "_": the XML's tags (searched with
# its values, as xml_q once searched the whole document) hold "timeout" in `<access_timeout_recovery>`
_ANY_FAULT = lazy_re(
    "|".join(
        [*(re.escape(w) for w in FAULT_WORDS), *(rf"(?<!_){re.escape(w)}(?!_)" for w in NVML_FIELD_ERRORS)]
    ),
    re.IGNORECASE,
)
_GPU_FAULT_LOWER = tuple(w.lower() for w in FAULT_WORDS)
_FIELD_ERROR_LOWER = tuple(w.lower() for w in NVML_FIELD_ERRORS)


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


# the reader's name of the fields the driver's recovery verdict is read from (gpu_recovery)
RECOVERY_STATE = "recovery state"
# the reader's name of the fabric registration's Status (fabric_manager)
FABRIC_STATUS = "fabric status"
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
    # the engines' use (gpu_health/usage.py ENGINES) and the encoder's sessions
    "Utilization/Encoder": "encoder use",
    "utilization/encoder_util": "encoder use",
    "Utilization/Decoder": "decoder use",
    "utilization/decoder_util": "decoder use",
    "Utilization/JPEG": "JPEG use",
    "utilization/jpeg_util": "JPEG use",
    "Utilization/OFA": "OFA use",
    "utilization/ofa_util": "OFA use",
    "Encoder Stats/Active Sessions": "encoder sessions",
    "encoder_stats/session_count": "encoder sessions",
    # the driver's recovery verdict (values._recovery_action), in -q, -q -x and CSV spellings
    # the fabric registration's status (fabric_manager; an NVML string, or ERR! unread)
    "Fabric/Status": FABRIC_STATUS,
    "fabric/status": FABRIC_STATUS,
    "fabric.status": FABRIC_STATUS,
    # and its State (fabric_manager reads it: a marker there is no State)
    "Fabric/State": "fabric state",
    "fabric/state": "fabric state",
    "fabric.state": "fabric state",
    "GPU Recovery Action": RECOVERY_STATE,
    "gpu_recovery_action": RECOVERY_STATE,
    "GPU Reset Status/Reset Required": RECOVERY_STATE,
    "GPU Reset Status/Drain and Reset Recommended": RECOVERY_STATE,
    "gpu_reset_status/reset_required": RECOVERY_STATE,
    "gpu_reset_status/drain_and_reset_recommended": RECOVERY_STATE,
    "reset_status.reset_required": RECOVERY_STATE,
    "reset_status.drain_and_reset_recommended": RECOVERY_STATE,
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
    ("GPU Power Readings/Default Power Limit", "default power limit"),
    ("Power Readings/Default Power Limit", "default power limit"),
    ("gpu_power_readings/default_power_limit", "default power limit"),
    ("power_readings/default_power_limit", "default power limit"),
    ("GPU Power Readings/Requested Power Limit", "requested power limit"),
    ("Power Readings/Requested Power Limit", "requested power limit"),
    ("gpu_power_readings/requested_power_limit", "requested power limit"),
    ("power_readings/requested_power_limit", "requested power limit"),
    ("GPU Power Readings/Current Power Limit", "power cap"),
    ("GPU Power Readings/Enforced Power Limit", "power cap"),
    ("Power Readings/Power Limit", "power cap"),
    ("Power Readings/Enforced Power Limit", "power cap"),
    ("gpu_power_readings/current_power_limit", "power cap"),
    ("gpu_power_readings/enforced_power_limit", "power cap"),
    ("power_readings/power_limit", "power cap"),
    ("power_readings/enforced_power_limit", "power cap"),
)


# nvidia-smi's line, beside any of its outputs, for a GPU whose infoROM (the board's store of its
# ECC, page-retirement and configuration records) fails its checksum: "WARNING: infoROM is
# corrupted at gpu 0008:00:00.0" (R460 on Azure's V100s, after the table; DCGM's health watch
# warns of it: reflash or replace the board). Judged as that GPU's cell fault INFOROM_FAULT.
INFOROM_LINE = re.compile(
    r"^[ \t]*WARNING: infoROM is corrupted at gpu"
    r" ([0-9a-f]{4,8}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-9a-f])[ \t]*(?:\r?\n|$)",
    re.IGNORECASE | re.MULTILINE,
)
INFOROM_FAULT = "infoROM reads corrupted"


def inforom_corrupted(text: str) -> list[str]:
    """The PCI addresses nvidia-smi's infoROM warnings in `text` name, in order, once each."""
    if "is corrupted at gpu" not in text:  # (a plain search first: most outputs have none)
        return []
    return list(dict.fromkeys(m.group(1) for m in INFOROM_LINE.finditer(text)))


def without_inforom_lines(text: str) -> str:
    """`text` without nvidia-smi's infoROM warnings (they are no part of the format they stand
    beside: a CSV or an XML is read as if they were not there; the merge judges them). A saved
    output's warnings go back to its stderr by facts/stderr_lines.py."""
    return INFOROM_LINE.sub("", text) if inforom_corrupted(text) else text


# the reader's names above: the sensors and settings the health rules read, and the infoROM
_JUDGED_NAMES = frozenset(_FIELD_NAMES.values()) | {name for _prefix, name in _FIELD_PREFIXES} | {"infoROM"}


# the fields each rule reads, by a cell fault's field name (the reader's name: "power cap", or
# the CSV's field: "memory.used", matched whole; a -q label path or -q -x element path, by a
# word it holds: "PCI/GPU Link Info/PCIe Generation/Current"): a pass over the other GPUs is no
# pass where one GPU's field read a fault marker (`ERR!`, `[Unknown Error]`): gpu_health's step
# makes it unverified, and sensor_faults counts the field as judged. Whole names where a word
# would also take fields no rule reads (`BAR1 Memory Usage/Used`, `Min Power Limit`).
_RULE_FIELDS: Mapping[str, tuple[frozenset[str], tuple[str, ...]]] = {
    "temperature": (
        frozenset({"temperature sensor"}),
        ("temperature.gpu", "slowdown temp", "gpu_temp_slow_threshold"),
    ),
    "power_limit": (
        frozenset({"power cap", "default power limit", "requested power limit"}),
        ("power.limit", "power.default_limit"),
    ),
    "mig_mode": (frozenset({"mig mode"}), ("mig mode", "mig_mode", "mig.mode")),
    "persistence_mode": (frozenset({"persistence mode", "persistence_mode"}), ()),
    "foreign_processes": (
        frozenset(
            {"utilization", "memory usage", "memory.used", "utilization.gpu", "encoder.stats.sessioncount"}
            | {f"{engine} use" for engine in ("encoder", "decoder", "jpeg", "ofa")}
            | {f"utilization.{engine}" for engine in ("encoder", "decoder", "jpeg", "ofa")}
            | {"encoder sessions"}
        ),
        (),
    ),
    "pcie_link": (frozenset(), ("pcie generation", "link width", "link_gen", "link_width", "pcie.link")),
    "pcie_replays": (frozenset(), ("replay",)),
    "throttling": (frozenset(), ("clocks event", "clocks_event", "throttle", "clocks_throttle")),
    "memory_repair": (frozenset(), ("remapped", "retired", "remapper", "retired_pages", "remapped_rows")),
}
FIELD_RULES = tuple(_RULE_FIELDS)  # the rules a cell fault can leave unverified


def rule_reads(rule: str, cell_fault: str) -> bool:
    """Whether `rule` reads the field of a cell fault ('GPU 3: temperature sensor reads ERR!' ->
    its field 'temperature sensor')."""
    names, words = _RULE_FIELDS.get(rule, (frozenset(), ()))
    field = cell_fault.rsplit(" reads ", 1)[0].lower()
    return field in names or any(w in field for w in words)


# NVML's errors that say the operating system, not the GPU, refused the call
# (NVML_ERROR_OPERATING_SYSTEM: a gVisor sandbox's nvproxy answering `ECC Mode : Current : GPU
# access blocked by the operating system` for the control calls it does not pass on
# (github.com/google/gvisor/pull/10676), a WSL2 or Hyper-V guest, a device cgroup): a field so
# printed is not read, and says nothing of the GPU's sensors or state
BLOCKED_ERRORS: tuple[str, ...] = ("GPU access blocked by the operating system",)
_BLOCKED = lazy_re("|".join(re.escape(w) for w in BLOCKED_ERRORS), re.IGNORECASE)


def blocked_fault(cell_fault: str) -> bool:
    """Whether a cell fault ('ECC reads GPU access blocked by the operating system') is a call
    the operating system refused (BLOCKED_ERRORS), no fault of the GPU."""
    return bool(_BLOCKED.search(cell_fault.rsplit(" reads ", 1)[-1]))


def blocked_faults(cell_faults: Iterable[str]) -> frozenset[str]:
    """The cell faults of one GPU that the operating system's refusal explains: each naming a
    BLOCKED_ERRORS word, and the table's `ERR!` (which it prints for any NVML error) of a field
    another format of that GPU read as refused (the gVisor sandbox's ECC cell beside its `-q`'s
    `ECC Mode : GPU access blocked by the operating system`)."""
    faults = list(cell_faults)
    refused = {f for f in faults if blocked_fault(f)}
    fields = {f.rsplit(" reads ", 1)[0] for f in refused}
    return frozenset(
        refused | {f for f in faults if f.endswith(" reads ERR!") and f.rsplit(" reads ", 1)[0] in fields}
    )


# The fields a sandbox is known to refuse nvidia-smi, by their reader's names: gVisor's nvproxy
# does not pass on the performance state's and ECC's control calls (google/gvisor PR 10675: "shows
# `ERR!` under the `Perf` column for each GPU"; PR 10676: ECC "blocked by the operating system").
# Any other field's ERR! inside a sandbox is the GPU's, as outside it.
SANDBOX_REFUSED_FIELDS = frozenset({"performance state", "ECC"})


def fault_field(cell_fault: str) -> str:
    """The reader's name of a cell fault's field ('pstate reads ERR!' -> 'performance state')."""
    field = cell_fault.rsplit(" reads ", 1)[0]
    return _CSV_ROW_FIELDS.get(field, field)


def judged_field(cell_fault: str) -> bool:
    """Whether a cell fault ('fan sensor reads ERR!') is of a field the health rules read: a
    named sensor or setting, or a --query-gpu field (the probe asks only for those). A -q / -q -x
    field outside them ("Addressing Mode : Unknown Error" on a healthy 8 x RTX 4090 box, R535)
    is no sensor and no check rests on it."""
    field = cell_fault.rsplit(" reads ", 1)[0]
    if any(rule_reads(rule, cell_fault) for rule in FIELD_RULES):
        return True
    return field in _JUDGED_NAMES or ("." in field and "/" not in field and " " not in field)


def _field_name(path: str) -> str:
    """A reader's name for the field at `path` ('Fan Speed' -> 'fan sensor')."""
    if path in _FIELD_NAMES:
        return _FIELD_NAMES[path]
    for prefix, name in _FIELD_PREFIXES:
        if path.startswith(prefix):
            return name
    return path


# The readings of a GPU's table row (persistence, ECC, fan, temperature, P-state, power draw and
# cap, memory, utilization), by their reader's names: most of them unreadable makes the GPU
# unreadable, in the table (table._table_row_faults) and in the other forms alike
ROW_FIELDS: tuple[str, ...] = (
    "persistence mode",
    "ECC",
    "fan sensor",
    "temperature sensor",
    "performance state",
    "power draw",
    "power cap",
    "memory usage",
    "utilization",
)


# the --query-gpu fields of those readings (a CSV cell fault keeps the field's own name)
_CSV_ROW_FIELDS: Mapping[str, str] = {
    "persistence_mode": "persistence mode",
    "ecc.mode.current": "ECC",
    "fan.speed": "fan sensor",
    "temperature.gpu": "temperature sensor",
    "pstate": "performance state",
    "power.draw": "power draw",
    "power.draw.average": "power draw",
    "power.draw.instant": "power draw",
    "enforced.power.limit": "power cap",
    "power.limit": "power cap",
    "memory.total": "memory usage",
    "memory.used": "memory usage",
    "utilization.gpu": "utilization",
}


def most_of_row(unreadable: int) -> bool:
    """Whether `unreadable` readings are most of a GPU's row (ROW_FIELDS): the GPU is unreadable,
    not one sensor of it."""
    return unreadable * 2 > len(ROW_FIELDS)


def _field_faults(
    leaves: Iterable[tuple[str, str]], name_path: str
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(faults, cell_faults) of one GPU record's (path, value) leaves (-q, -q -x, CSV).

    A GPU-level word anywhere ("GPU requires reset", "GPU is lost", "Unable to determine the
    device handle"), a fault marker (ERR!, an NVML error string) as the product name, or markers
    in most of the row's readings (ROW_FIELDS, as the table judges its row) make the GPU
    unreadable; a marker in any other field is that field's fault only. A field whose value is
    an NVML status (_STATUS_FIELDS) is a value, not a fault, unless it is nvidia-smi's own
    `ERR!` (no NVML string: the status could not be read) beside a State that reads Completed,
    or none (not given: a CSV of the status alone; or itself a fault marker, no State read)."""
    leaves = list(leaves)
    state = {path: value.strip() for path, value in leaves}

    def unread_status(path: str, value: str) -> bool:
        said = state.get(_STATE_OF_STATUS[path], "Completed")
        return value.strip() == "ERR!" and (
            said == "Completed" or _cell_fault(said, _FIELD_FAULT) is not None
        )

    leaves = [
        (path, value) for path, value in leaves if path not in _STATUS_FIELDS or unread_status(path, value)
    ]
    if not _may_fault(value for _path, value in leaves):
        return (), ()
    faults = _gpu_faults(value for _path, value in leaves)
    cell_faults: list[str] = []
    markers: dict[str, str] = {}  # reader's name of a row reading -> its marker
    for path, value in leaves:
        marker = _cell_fault(value, _FIELD_FAULT)
        if marker is None:
            continue
        if path == name_path:
            faults = _faults([*faults, marker]) or (marker,)
            continue
        name = _field_name(path)
        row_name = _CSV_ROW_FIELDS.get(path, name)
        if row_name in ROW_FIELDS:
            markers.setdefault(row_name, marker)
        sentence = f"{name} reads {marker}"
        if sentence not in cell_faults:
            cell_faults.append(sentence)
    if not faults and most_of_row(len(markers)):
        found = list(markers.values())
        faults = _faults(found) or tuple(dict.fromkeys(found))
    return faults, (() if faults else tuple(cell_faults))


def _may_fault(values: Iterable[str]) -> bool:
    """Whether any of `values` holds a fault word or marker (one search over them all: no word
    holds a line break, so none is found across two values). ASCII text (nvidia-smi's) is
    searched lower-cased, ~20x faster than the case-blind regex, and the same there: the regex's
    wider folds (a long s for an s, a Kelvin sign for a k) are of characters outside ASCII."""
    text = "\n".join(values)
    if text.isascii():
        lower = text.lower()
        # ERR! only where the text has a "!" (lower-casing makes none): its search of ~170 KB
        # of XML is the slowest of the five
        bang = "!" in text
        if any(word in lower for word in _GPU_FAULT_LOWER if bang or "!" not in word):
            return True
        return any(word in lower and _holds_value_word(lower, word) for word in _FIELD_ERROR_LOWER)
    return _ANY_FAULT.search(text) is not None


def _holds_value_word(lower: str, word: str) -> bool:
    """Whether `word` stands in `lower` with no "_" either side (_ANY_FAULT's guard)."""
    at = lower.find(word)
    while at >= 0:
        end = at + len(word)
        if (at == 0 or lower[at - 1] != "_") and (end == len(lower) or lower[end] != "_"):
            return True
        at = lower.find(word, at + 1)
    return False
