"""Shared value parsing for every nvidia-smi form: the 'no value' spellings ("N/A",
"[Not Supported]", ...), numbers with their units (MiB, W, C), On/Off, Yes/No, P-states and
compute modes. Pure functions of one raw value each; None where nvidia-smi gave no value."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

from gpuonboard.facts.nvidia_smi.faults import _FIELD_FAULT, NVML_FIELD_ERRORS, _cell_fault

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
    # a field whose query failed (faults.NVML_FIELD_ERRORS: GpuInfo.cell_faults names it)
    *(word.lower() for word in NVML_FIELD_ERRORS),
}


_LEADING_INT = re.compile(r"^\s*(-?\d+)")
_NUMBER_UNIT = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*$")
# every memory unit nvidia-smi has printed: MiB/GiB/KiB; before R331 "MB" (and "GB") for the same
# binary units ("14MB /  6143MB" on a 6 GiB GTX TITAN, R325)
_MIB_PER_UNIT = {
    "": 1.0,
    "mib": 1.0,
    "mb": 1.0,
    "gib": 1024.0,
    "gb": 1024.0,
    "kib": 1.0 / 1024,
    "kb": 1.0 / 1024,
    "b": 1.0 / 1024 / 1024,
}
# a version number: "610.57.04", "13.3"; what follows it in a field is a note, not the version
_VERSION_TOKEN = re.compile(r"^(\d+(?:\.\d+)+)(?![\w.])")
_VERSION_NUMBER = re.compile(r"\d+(?:\.\d+)+")


_Node = TypeVar("_Node")


def _first_deep(
    roots: Sequence[_Node],
    labels: Sequence[str],
    get: Callable[[_Node, str], str | None],
    children: Callable[[_Node], Iterable[_Node]],
) -> str | None:
    """The value of the first of `labels` that has one, looked up in `roots` and then, level by
    level, in their sub-sections (R610 nests the power limits one level deeper than before): a
    shallower reading wins over a deeper one, an earlier label over a later one at one depth.
    One search for the `-q` text's tree and the `-q -x` XML, each with its own accessors."""
    level = list(roots)
    while level:
        for label in labels:
            for block in level:
                value = get(block, label)
                if value is not None:
                    return value
        level = [child for block in level for child in children(block)]
    return None


# _clean's answers by the value as printed: a GPU's record repeats a few values ("N/A", "0",
# "Enabled", "No") in ~100 fields, each read the same every time (forgotten all at once when full)
_CLEANED: dict[str, str | None] = {}
_CLEANED_MAX = 4096


def _clean(value: str | None) -> str | None:
    """Strip a raw value and map nvidia-smi's 'no value' spellings to None."""
    if value is None:
        return None
    try:
        return _CLEANED[value]
    except KeyError:
        pass
    cleaned = _clean_anew(value)
    if len(value) <= 64:  # (a long text is seldom printed twice)
        if len(_CLEANED) >= _CLEANED_MAX:
            _CLEANED.clear()
        _CLEANED[value] = cleaned
    return cleaned


def _clean_anew(value: str) -> str | None:
    """_clean of a value not read before."""
    value = value.strip()
    if value.lower() in _MISSING:
        return None
    # Any other bracketed value is a status, not data, e.g. "[GPU requires reset]".
    if value.startswith("[") and value.endswith("]"):
        return None
    return value


def _is_na(value: str | None) -> bool:
    """Whether nvidia-smi printed N/A here (`N/A`, `[N/A]`): said to be not applicable, where a
    value left out of the output says nothing."""
    return value is not None and value.strip().strip("[]").strip().lower() == "n/a"


def _version(value: str | None, label: str, warnings: list[str]) -> str | None:
    """A version field read as its leading version number: R610 prints "610.57.04 [Deprecated;
    will be removed in CUDA 14.0. Use KMD Version instead]"; the note is kept in `warnings`. A
    value with no leading version number is kept as printed (the merge prefers a version)."""
    cleaned = _clean(value)
    if cleaned is None:
        return None
    match = _VERSION_TOKEN.match(cleaned)
    if match is None:
        return cleaned
    note = cleaned[match.end() :].strip()
    if note:
        warnings.append(f"{label} reads {cleaned!r}: read as {match.group(1)}")
    return match.group(1)


# nvidia-smi's CUDA version where it finds no CUDA driver (libcuda) to ask: the table's "CUDA
# Version: N/A" (a vGPU host's KVM driver, which has none: 550.54.10 in a904055262/PVE-manager-
# status#14), -q's and -q -x's "Not Found" (the same host driver, R470 and R580; a container
# started without the `compute` driver capability: weaviate/weaviate-helm#101)
_NO_CUDA = frozenset({"n/a", "not found"})


def _cuda_version(value: str | None, label: str, warnings: list[str]) -> str | None:
    """The CUDA version as `_version` reads it, but nvidia-smi's word for no CUDA driver (N/A,
    Not Found) kept as printed: an answer (`no_cuda`), where a CUDA version left out says nothing;
    R610's note after it (`N/A [Deprecated; will be removed in CUDA 14.0. ...]`) is no part of it."""
    if value is not None:
        word = _TRAILING_NOTE.sub("", value.strip()) or value.strip()
        if word.strip("[]").strip().lower() in _NO_CUDA:
            return word.strip("[]").strip()
        # a fault marker where the version stands (the WSL2 table's `CUDA Version: ERR!`,
        # microsoft/WSL#11589): nvidia-smi could not read it, kept as printed (`cuda_unread`),
        # never dropped as no value nor read as no CUDA driver
        if _FIELD_FAULT.match(word):
            return word.strip()
    return _version(value, label, warnings)


# a note nvidia-smi prints after a value (R610: "[Deprecated; will be removed in CUDA 14.0. Use
# CUDA UMD Version instead]")
_TRAILING_NOTE = re.compile(r"\s+\[[^\[\]]*\]$")


def read_cuda(printed: Iterable[str | None], label: str, warnings: list[str]) -> str | None:
    """The CUDA version of any format from the values printed under its labels, the preferred
    label first (R610's "CUDA UMD Version", then "CUDA Version"), each as printed (never cleaned
    of N/A first): the first that says a version or no CUDA driver (`_cuda_version`). One reading
    for the table, `-q` and `-q -x`, so each keeps nvidia-smi's words for no CUDA driver."""
    for value in printed:
        read = _cuda_version(value, label, warnings)
        if read is not None:
            return read
    return None


def cuda_unread(cuda_version: str | None) -> bool:
    """Whether nvidia-smi printed a fault marker as the CUDA version (`_cuda_version`'s ERR!,
    `[Unknown Error]`): it could not read it, which says neither a version nor no CUDA driver."""
    return cuda_version is not None and _FIELD_FAULT.match(cuda_version) is not None


def no_cuda(cuda_version: str | None) -> bool:
    """Whether nvidia-smi said it found no CUDA driver (`_cuda_version`'s N/A or Not Found)."""
    return cuda_version is not None and cuda_version.lower() in _NO_CUDA


def _is_version(value: str | None) -> bool:
    """Whether `value` is a bare version number ("610.57.04", "13.3")."""
    return value is not None and _VERSION_NUMBER.fullmatch(value) is not None


_Read = TypeVar("_Read")
# the tables of the readers kept by value (_by_value), for the tests
_READ_TABLES: list[dict[str, object]] = []


def _by_value(read: Callable[[str | None], _Read]) -> Callable[[str | None], _Read]:
    """`read` (a pure reader of one value) with its answer kept by the value as printed, as
    _clean's are (values of up to 64 characters; forgotten all at once when _CLEANED_MAX are
    kept): a GPU's record reads ~50 numbers and flags, most of them a few values ("0", "N/A",
    "No", "Enabled"), read the same every time."""
    table: dict[str, _Read] = {}
    _READ_TABLES.append(table)  # type: ignore[arg-type]

    @functools.wraps(read)
    def reading(value: str | None) -> _Read:
        if type(value) is not str or len(value) > 64:
            return read(value)
        try:
            return table[value]
        except KeyError:
            pass
        answer = read(value)
        if len(table) >= _CLEANED_MAX:
            table.clear()
        table[value] = answer
        return answer

    return reading


@_by_value
def _int(value: str | None) -> int | None:
    """Leading integer of a value such as '27 C', '16x', '81920 MiB'; None when absent."""
    cleaned = _clean(value)
    if cleaned is None:
        return None
    match = _LEADING_INT.match(cleaned)
    return int(match.group(1)) if match else None


# how nvidia-smi prints a value NVML cannot give for this GPU (NVML_ERROR_NOT_SUPPORTED)
_UNSUPPORTED = {"n/a", "[n/a]", "not supported", "[not supported]"}


def _unified(total: str | None) -> bool | None:
    """Pure: what a GPU's memory total (as printed) says of its memory: True where nvidia-smi
    printed it as not supported (NVML cannot size a framebuffer the GPU does not have: the
    GB10's memory is the system's, `Not Supported` in the table, `[N/A]` in the CSV), False where
    it printed a size, None where it said neither (not asked, a cell it could not read)."""
    if total is None:
        return None
    if total.strip().lower() in _UNSUPPORTED:
        return True
    return False if _mib(total) is not None else None


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


@_by_value
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


@_by_value
def _float(value: str | None) -> float | None:
    """Leading number of a value such as '26.78 W' or '700.00'; None when absent."""
    cleaned = _clean(value)
    if cleaned is None:
        return None
    match = _LEADING_FLOAT.match(cleaned)
    return float(match.group(1)) if match else None


# a yes/no value followed by a paste's annotation that holds no word (`Yes   <===`, `No  *`)
_ANNOTATED = re.compile(r"^(\S+)\s+[^\w\s][^\w]*$")


@_by_value
def _yes_no(value: str | None) -> bool | None:
    """'Yes'/'No' (also 'True'/'False', '1'/'0') as a bool, an annotation without words after it
    left out; None when absent or unknown."""
    cleaned = _clean(value)
    if cleaned is None:
        return None
    lowered = _ANNOTATED.sub(r"\1", cleaned.lower())
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


# the raw parts of one GPU's ECC totals, (correctable, uncorrectable), each section's in one order
EccParts = tuple[tuple[str | None, ...], tuple[str | None, ...]]


def _parts_total(here: Sequence[str | None], there: Sequence[str | None]) -> int | None:
    """The total of one ECC section's parts (`here`: SRAM and DRAM counts as printed), or None.

    A part printed without a count (`N/A`, `[Not Supported]`, empty, a fault marker) where the
    other section (`there`: volatile for aggregate, aggregate for volatile) gives that part a
    count was not read here: the total is unknown, never the sum of the other parts (a GH200's
    `DRAM Uncorrectable : N/A` beside `SRAM ... : 0` was 0 errors). A part neither section
    counts is one this GPU does not report (a vGPU guest's SRAM: `N/A` in both) and is left out;
    None when no part is counted. Errors the parts read count whatever the rest says: a total
    of them (at least that many) is kept where it is not 0."""
    total = _total(*(_int(raw) for raw in here))
    unread = any(
        raw is not None and _int(raw) is None and i < len(there) and _int(there[i]) is not None
        for i, raw in enumerate(here)
    )
    return None if unread and not total else total


def _ecc_totals(volatile: EccParts, aggregate: EccParts) -> tuple[int | None, ...]:
    """(volatile correctable, volatile uncorrectable, aggregate correctable, aggregate
    uncorrectable) from each section's raw parts (_parts_total)."""
    return (
        _parts_total(volatile[0], aggregate[0]),
        _parts_total(volatile[1], aggregate[1]),
        _parts_total(aggregate[0], volatile[0]),
        _parts_total(aggregate[1], volatile[1]),
    )


def _pstate(value: str | None) -> str | None:
    """'P0'..'P15' as printed; None for N/A or anything else."""
    cleaned = _clean(value)
    if cleaned is None:
        return None
    match = _PSTATE.match(cleaned.upper())
    return f"P{int(match.group(1))}" if match else None


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


# how nvidia-smi says a status field has no value here (no fabric: a PCIe card, a VM slice)
# (`ERR!`: nvidia-smi could not read the value, no status; `[Unknown Error]` is an NVML status)
_NO_STATUS = {"", "n/a", "[n/a]", "not supported", "[not supported]", "err!"}


def _nvml_status(value: str | None) -> str | None:
    """A field whose value is an NVML return string (the fabric registration's status:
    "Success", "Insufficient Resources"), as printed; None where nvidia-smi gave none. Not
    _clean: NVML's error strings are that field's values, not a failed query."""
    if value is None or value.strip().lower() in _NO_STATUS:
        return None
    return value.strip()


def _recovery_action(
    action: str | None, reset_required: str | None, drain_and_reset: str | None
) -> str | None:
    """What the driver asks to be done to a GPU before it is used again, in NVML's GPU Recovery
    Action words (R570+: "None", "Reset", "Drain and Reset", ...), from whichever spelling the
    driver printed: the action itself, or R5xx's "GPU Reset Status" (Reset Required: Yes ->
    "Reset"; Drain and Reset Recommended: Yes -> "Drain and Reset"; both No -> "None"). A
    pending action in either spelling wins over "None" in the other. None: neither was said
    (N/A, [N/A], deprecated, a failed query, or not printed), or one of them could not be read
    (`Reset Required : ERR!` beside `Drain and Reset Recommended : No` says no "None")."""
    stated = _clean(action)
    drain, reset = _yes_no(drain_and_reset), _yes_no(reset_required)
    if stated is not None and stated.lower() != "none":
        return stated
    if drain:
        return "Drain and Reset"
    if reset:
        return "Reset"
    if any(_cell_fault(v, _FIELD_FAULT) for v in (action, reset_required, drain_and_reset)):
        return None
    if stated is not None or drain is False or reset is False:
        return "None"
    return None


# the fields of the Fabric -> Health block: (key, as the -q text labels it); the key is -q -x's
# tag under fabric/health and the CSV's `fabric.health.<key>` (R570+; a GB300's -q prints them
# all, NVIDIA/k8s-test-infra#677)
FABRIC_HEALTH = (
    ("summary", "Summary"),
    ("bandwidth", "Bandwidth"),
    ("route_recovery_in_progress", "Route Recovery in progress"),
    ("route_unhealthy", "Route Unhealthy"),
    ("access_timeout_recovery", "Access Timeout Recovery"),
    ("incorrect_configuration", "Incorrect Configuration"),
)


def fabric_health(read: Callable[[str, str], str | None]) -> tuple[tuple[str, str], ...]:
    """The Health block's fields that have a value, each read by `read(key, label)` as written."""
    out = []
    for key, label in FABRIC_HEALTH:
        value = _clean(read(key, label))
        if value is not None:
            out.append((key, value))
    return tuple(out)
