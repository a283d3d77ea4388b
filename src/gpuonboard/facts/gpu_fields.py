"""One GPU read by several nvidia-smi formats, merged field by field (the per-GPU part of
facts/gpu_merge.py): each field from the richest format that read it, the faults every format
that read the GPU shows, a growing count's highest and every slowdown any format saw. Pure: no I/O.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from gpuonboard.facts.gpu_agree import LISTINGS
from gpuonboard.facts.gpu_views import HIGHEST as _HIGHEST
from gpuonboard.facts.gpu_views import SLOWDOWNS as _SLOWDOWNS
from gpuonboard.facts.gpu_views import fault_seen
from gpuonboard.facts.nvidia_smi import GpuInfo
from gpuonboard.facts.nvidia_smi.reasons import CLOCK_EVENT_REASONS

# where a field is taken from, in order: a named field of a GPU comes from the first of these
# formats that read it (-L's names are whole, the table's may be cut with "...")
_FIELD_RANK = ("xml", "text", "csv", "csv2", "list", "nvlink", "nvlink_e", "table")


# a merged GPU's own (its formats' provenance and readings), or the format's it took a field from
_OWN = (
    "index",
    "provenance",
    "processes_open",
    "record_cut",
    "parts_read",
    "power_limit_requested",
    "readings",
)


_FIELDS = [f for f in dataclasses.fields(GpuInfo) if f.name not in _OWN]


# what every format that read the GPU says, never one of them chosen: a fault one format shows
# while another read the GPU is a GPU that changed between the calls or a flaky one, a fault
# either way (`-L` names a GPU but reads none of its values: it neither shows nor clears one)
_UNION = {"faults", "cell_faults"}


# paired with the flag that says whether the format could say
_WITH_FLAG = {"processes": "processes_known", "clock_event_reasons": "clock_event_reasons_known"}


def _unset(value: object) -> bool:
    return value is None or value == () or value is False or value == ""


def _merge_gpu(base: GpuInfo, copies: Sequence[tuple[str, GpuInfo]]) -> GpuInfo:
    """One GPU from its copies in several formats (ranked richest first)."""
    if len(copies) == 1 and copies[0][1] is base and copies[0][0] in _FIELD_RANK:
        # one format read this GPU (the copy is the base itself): each field would come from it
        # as it is, _FROM_BEST's and the flagged ones too, and one source keeps base.provenance
        return base
    ranked = sorted(copies, key=lambda c: _FIELD_RANK.index(c[0]))
    values: dict[str, Any] = {}
    provenance: list[tuple[str, str]] = []
    for f in _FIELDS:
        if f.name in _WITH_FLAG.values():
            continue
        if f.name in _UNION:
            read = [(label, g) for label, g in ranked if label not in LISTINGS] or ranked[:1]
            values[f.name] = _all_faults(f.name, read)
            continue
        flag = _WITH_FLAG.get(f.name)
        # (a CSV's requested limit, read for want of its enforced one, after every enforced reading)
        order = (
            sorted(ranked, key=lambda c: c[1].power_limit_requested) if f.name == "power_limit_w" else ranked
        )
        for label, gpu in order:
            known = getattr(gpu, flag) if flag else not _unset(getattr(gpu, f.name))
            if f.name == "name" and gpu.name.endswith("...") and label == "table":
                known = known and len(ranked) == 1  # a cut name only when no other format has it
            if known:
                values[f.name] = getattr(gpu, f.name)
                if flag:
                    values[flag] = True
                if f.name == "processes":  # (whether that list may go on past a cut: its own say)
                    values["processes_open"] = gpu.processes_open
                provenance.append((f.name, label))
                break
    _worst_read(values, provenance, ranked)
    # (some format's record of it was cut short: a field is whole where a whole record read it)
    values["record_cut"] = any(g.record_cut for _, g in ranked)
    # (the parts a cut record read are its format's: each format's in its reading, `readings`)
    values["parts_read"] = ranked[0][1].parts_read if len(ranked) == 1 else ()
    limit_from = dict(provenance).get("power_limit_w")
    values["power_limit_requested"] = any(
        g.power_limit_requested for label, g in ranked if label == limit_from
    )
    sources = {label for _, label in provenance}
    return dataclasses.replace(
        base,
        **values,
        provenance=tuple(provenance) if len(sources) > 1 else base.provenance,
        readings=tuple(ranked) if len(ranked) > 1 else (),
    )


def _worst_read(
    values: dict[str, Any], provenance: list[tuple[str, str]], ranked: Sequence[tuple[str, GpuInfo]]
) -> None:
    """Where formats read one GPU's fault evidence otherwise, the worst of them in `values` (and
    its format in `provenance`): a count's highest (-q's 0 uncorrectable ECC errors beside the
    CSV's 2 is 2, from the CSV), a recovery action the driver asks for in any format (the CSV's
    "Reset" beside -q's "None"), and every slowdown any format saw among the clock-event reasons
    (the CSV's hw_slowdown beside -q's none), an unknown one too, and every reason any format
    read the state of (clock_event_reasons_read). The richest format's answer alone would pass a GPU
    another format of the same box shows a fault on."""
    for name in _HIGHEST:
        read = [(label, value) for label, g in ranked if (value := getattr(g, name)) is not None]
        if read and (top := max(read, key=lambda r: r[1]))[1] != values.get(name):
            values[name] = top[1]
            provenance[:] = [p for p in provenance if p[0] != name] + [(name, top[0])]
    pending = [
        (label, g.recovery_action) for label, g in ranked if (g.recovery_action or "none").lower() != "none"
    ]
    if pending and (values.get("recovery_action") or "none").lower() == "none":
        values["recovery_action"] = pending[0][1]
        provenance[:] = [p for p in provenance if p[0] != "recovery_action"] + [
            ("recovery_action", pending[0][0])
        ]
    if not values.get("clock_event_reasons_known"):
        return
    known = [g for _, g in ranked if g.clock_event_reasons_known]
    # (a reason this tool does not know, R3xx's `unknown` or an unlisted mask bit, holds the
    # clocks back as a slowdown does: kept whichever format saw it)
    seen = [
        r for g in known for r in g.clock_event_reasons if r in _SLOWDOWNS or r not in CLOCK_EVENT_REASONS
    ]
    if added := [r for r in dict.fromkeys(seen) if r not in values["clock_event_reasons"]]:
        values["clock_event_reasons"] = (*values["clock_event_reasons"], *added)
    # a reason is read on this GPU where any format read its state (-q's N/A beside the CSV's
    # Not Active: read there), never unread because the richest format printed no value
    values["clock_event_reasons_read"] = tuple(
        dict.fromkeys(r for g in known for r in g.clock_event_reasons_read)
    )


def _all_faults(field: str, read: Sequence[tuple[str, GpuInfo]]) -> tuple[str, ...]:
    """The faults (`field`: faults or cell_faults) every format that read one GPU shows. A
    whole-GPU fault that another format read the GPU without names both (`fault_seen`)."""
    clean = [label for label, g in read if not g.faults]
    out: list[str] = []
    for label, g in read:
        faults = getattr(g, field)
        out += [fault_seen(f, label, clean) for f in faults] if field == "faults" else faults
    return tuple(dict.fromkeys(out))
