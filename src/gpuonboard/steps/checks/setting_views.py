"""Rules judged over each nvidia-smi format's reading of a GPU setting the formats read otherwise.

The merge (facts/gpu_merge.py) takes each field from the richest format that read it; a
setting two formats read otherwise (persistence mode Enabled in `-q -x`, Disabled in the
table) is kept in every format's reading (`GpuInfo.readings`, `gpu_agree.setting_reads`). The calls ran at
separate moments and the setting may have changed between them in either direction, so
neither reading is the box's alone: each rule is judged again over the GPUs as each format
read them, and a rule whose verdict one reading changes takes the worst of them, naming every
format's value. A disagreement about a setting is then never a pass while a format of the same
box reads it as failing the rule. Pure: no I/O.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence
from typing import Any

from gpuonboard.facts import gpu_agree
from gpuonboard.facts.nvidia_smi import GpuInfo
from gpuonboard.steps.base import VERDICT_RANK, Check

# the settings the fabric rules (fabric_health.py) read of a GPU
FABRIC_SETTINGS = ("fabric_state", "fabric_status")
# a rule's checks over some GPUs
Judge = Callable[[list[GpuInfo]], list[Check]]


def setting_advice(labels: Sequence[str]) -> str:
    """The advice of a check the formats `labels` read otherwise: rerun those formats."""
    calls = [gpu_agree.format_call(label) for label in labels]
    named = ", ".join(calls[:-1]) + f" and {calls[-1]}" if len(calls) > 1 else "".join(calls)
    return (
        "the nvidia-smi formats of this box read this setting otherwise (separate calls: the setting"
        " changed between them, or a driver that reports it inconsistently); the verdict is the worst"
        f" of their readings: rerun {named} and check that they agree"
    )


def _advised(detail: str, advice: str) -> str:
    """`detail` and then `advice`, each its own sentence where `detail` ends one."""
    if not detail:
        return advice
    if detail.rstrip().endswith("."):
        return f"{detail.rstrip()} {advice[:1].upper()}{advice[1:]}."
    return f"{detail}; {advice}"


def _as_read(gpus: Sequence[GpuInfo], label: str, fields: Sequence[str] = ()) -> list[GpuInfo]:
    """`gpus` with each disputed setting (of `fields`, all where empty) that format `label` read
    as it read it, with its pair (gpu_agree.PAIRS) as that format read it, None where it read
    none: never one format's MIG mode beside another's pending mode."""
    out = []
    for g in gpus:
        mine = {f: v for f, lab, v in gpu_agree.setting_reads(g.readings) if lab == label}
        values: dict[str, Any] = {
            p: mine.get(p) for f in gpu_agree.disputed(g, fields) if f in mine for p in gpu_agree.paired(f)
        }
        out.append(dataclasses.replace(g, **values) if values else g)
    return out


def _labels(gpus: Sequence[GpuInfo], only: Sequence[str] = ()) -> list[str]:
    """The formats that read a disputed setting (of `only`, all where empty)."""
    return list(
        dict.fromkeys(
            lab
            for g in gpus
            for field in gpu_agree.disputed(g, only)
            for f, lab, _ in gpu_agree.setting_reads(g.readings)
            if f == field
        )
    )


def _fields(gpus: Sequence[GpuInfo], only: Sequence[str] = ()) -> list[str]:
    """The disputed settings (of `only`, all where empty)."""
    return list(dict.fromkeys(f for g in gpus for f in gpu_agree.disputed(g, only)))


def _same(a: Check, b: Check) -> bool:
    return a.verdict == b.verdict and a.actual == b.actual


def judged_per_reading(gpus: list[GpuInfo], judge: Judge, only: Sequence[str] = ()) -> list[Check]:
    """`judge(gpus)`, each check whose verdict or finding another format's reading of a disputed
    setting (of `only`, the settings `judge` reads, all where empty) changes replaced by the
    worst of them (fail > warn > unverified > pass), its actual naming every format's value of
    the settings that change it."""
    checks = judge(gpus)
    labels = _labels(gpus, only)
    if not labels:
        return checks
    views = {label: _by_name(judge(_as_read(gpus, label, only))) for label in labels}

    @functools.cache
    def one_field(label: str, field: str) -> dict[str, Check]:
        return _by_name(judge(_as_read(gpus, label, (field,))))

    out = []
    for check in checks:
        readings = [v[check.name] for v in views.values() if check.name in v]
        if all(_same(check, r) for r in readings):
            out.append(check)
            continue
        worst = max([check, *readings], key=lambda c: VERDICT_RANK[c.verdict])
        fields = _changing(one_field, check, labels, _fields(gpus, only))
        said = [s for g in gpus for s in gpu_agree.setting_said(g, fields)]
        advice = setting_advice(_labels(gpus, fields))
        settled = _settled(gpus, views, check.name, fields) if worst.verdict == "fail" else None
        if settled is not None and settled.verdict != "fail":
            worst, advice = settled, _IN_TRANSIT
        out.append(
            dataclasses.replace(
                worst,
                actual=f"{worst.actual}; the formats disagree: {'; '.join(said)}",
                detail=_advised(worst.detail, advice),
            )
        )
    return out


# a fabric registration read In Progress by one call and Completed by another: a state that moves
# on its own (In Progress -> Completed while the box boots and the fabric manager registers the
# GPUs), not a setting someone changed
_IN_TRANSIT = (
    "one nvidia-smi call read the GPUs' fabric registration In Progress and another Completed:"
    " registration moves from In Progress to Completed after boot, so the box may have been read"
    " before it settled; rerun `nvidia-smi -q` (its Fabric section) a minute later: In Progress"
    " then fails, Completed / Success passes"
)


def _settled(
    gpus: Sequence[GpuInfo], views: dict[str, dict[str, Check]], name: str, fields: Sequence[str]
) -> Check | None:
    """Where the only disagreement that changes check `name` is a fabric state in transit (each
    GPU's readings In Progress and Completed, `fields` of the fabric's): the check as the formats
    that read Completed on every such GPU judge it, at least `unverified` (never a pass: the
    other reading stands until a rerun settles it); None otherwise (the worst reading wins)."""
    if not fields or not set(fields) <= set(FABRIC_SETTINGS):
        return None
    moving = [g for g in gpus if "fabric_state" in gpu_agree.disputed(g)]
    states = {
        str(v).strip().lower()
        for g in moving
        for f, _, v in gpu_agree.setting_reads(g.readings)
        if f == "fabric_state"
    }
    if not moving or states != {"in progress", "completed"}:
        return None
    done = [
        view[name]
        for label, view in views.items()
        if name in view
        and all(
            any(
                f == "fabric_state" and lab == label and str(v).strip().lower() == "completed"
                for f, lab, v in gpu_agree.setting_reads(g.readings)
            )
            for g in moving
        )
    ]
    if not done:
        return None
    judged = max(done, key=lambda c: VERDICT_RANK[c.verdict])
    return (
        judged
        if VERDICT_RANK[judged.verdict] > VERDICT_RANK["unverified"]
        else dataclasses.replace(judged, verdict="unverified")
    )


def _by_name(checks: list[Check]) -> dict[str, Check]:
    """Each check by its name (the first of a name judged twice)."""
    out: dict[str, Check] = {}
    for c in checks:
        out.setdefault(c.name, c)
    return out


def _changing(
    one_field: Callable[[str, str], dict[str, Check]],
    check: Check,
    labels: Sequence[str],
    disputed: Sequence[str],
) -> list[str]:
    """The disputed settings that change `check`: each whose reading by some format alone
    (`one_field(label, field)`: the checks with that one setting as `label` read it) changes it;
    every disputed setting where none alone does (only their readings together)."""
    fields = [
        f
        for f in disputed
        if any(
            (c := one_field(label, f).get(check.name)) is not None and not _same(check, c) for label in labels
        )
    ]
    return fields or list(disputed)
