"""Clock event (formerly "throttle") reasons: :data:`CLOCK_EVENT_REASONS` in NVML bit order,
read from per-reason Active / Not Active states (-q -x, -q, CSV) or from a hex bitmask (CSV)."""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from typing import NamedTuple

from gpuonboard.facts.nvidia_smi.values import _clean

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
    # the R2xx-R3xx name of the 0x2 reason (NVML's nvmlClocksThrottleReasonUserDefinedClocks)
    "user_defined_clocks": "applications_clocks_setting",
}
# NVML's nvmlClocksThrottleReasonUnknown (bit 63, "some other unspecified factor is reducing the
# clocks"), printed by R3xx drivers as `Unknown` / <clocks_throttle_reason_unknown>; an active
# reason this tool does not know (that one, or a newer driver's) is kept under its own name
# after the known ones, never dropped: it holds the clocks back all the same
UNKNOWN_REASON_BIT = 63


@functools.lru_cache(maxsize=256)  # (a handful of labels, ~10 a GPU: computed once each)
def _reason_name(label: str) -> str:
    """Normalise an XML tag or -q label to a CLOCK_EVENT_REASONS name (may stay unknown)."""
    name = label.strip().lower()
    for prefix in ("clocks_event_reason_", "clocks_throttle_reason_"):
        if name.startswith(prefix):
            name = name[len(prefix) :]
    name = re.sub(r"[^a-z0-9]+", "_", name).strip("_")
    return _REASON_ALIASES.get(name, name)


def _ordered(reasons: set[str]) -> tuple[str, ...]:
    """Known reasons in bit order, then the others (reasons this tool does not know) by name."""
    return tuple(r for r in CLOCK_EVENT_REASONS if r in reasons) + tuple(
        sorted(r for r in reasons if r not in CLOCK_EVENT_REASONS)
    )


class Reasons(NamedTuple):
    """A GPU's clock event reasons as one output gave them."""

    active: tuple[str, ...]  # the active ones, in bit order (then the unknown ones by name)
    known: bool  # whether any reason's state was read
    read: tuple[str, ...]  # the reasons whose state (Active / Not Active) was read


NO_REASONS = Reasons((), False, ())


def _reasons_from_states(
    states: Sequence[tuple[str, str | None]], where: str, warnings: list[str]
) -> Reasons:
    """The reasons from (label, 'Active'/'Not Active') pairs; a label whose value is N/A, empty or
    a fault marker is left out of `read` (not read there, never Not Active)."""
    active: set[str] = set()
    read: set[str] = set()
    for label, raw in states:
        value = _clean(raw)
        if value is None:
            continue
        name = _reason_name(label)
        lowered = value.lower()
        if lowered not in ("active", "not active"):
            continue
        read.add(name)
        if name not in CLOCK_EVENT_REASONS and name != "unknown":  # (NVML's own: named, no warning)
            warnings.append(f"{where}: unknown clock event reason {label!r} ({value})")
        if lowered == "active":
            active.add(name)
    return Reasons(_ordered(active), bool(read), _ordered(read))


def _reasons_from_mask(value: str | None, where: str, warnings: list[str]) -> Reasons | None:
    """The reasons from a hex bitmask such as '0x0000000000000001' (every reason read, NVML's
    `unknown` too); None if absent."""
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
    active |= {
        "unknown" if bit == UNKNOWN_REASON_BIT else f"unknown_bit_{bit}"
        for bit in range(len(CLOCK_EVENT_REASONS), max(64, unknown.bit_length()))
        if unknown & (1 << bit)
    }
    # (bit 63, NVML's `unknown`, is in the mask as the others are: read, Not Active unless set)
    return Reasons(_ordered(active), True, (*CLOCK_EVENT_REASONS, "unknown"))
