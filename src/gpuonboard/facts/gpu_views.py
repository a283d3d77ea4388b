"""A container's view of the box's GPUs (`docker logs CTR`, `kubectl exec POD -- nvidia-smi`) saved
beside the box's own nvidia-smi output of that format (api/unread.py `joined_gpu_view`): the same
GPUs read through the same driver, so each GPU's fault evidence there (an unreadable GPU, a cell
fault, a count of errors, a repair pending, a slowdown) is the box's, folded into the box's GPU it
names by PCI address or UUID, its source named. Only the view's GPU set is a view (no count)."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from typing import Any

from gpuonboard.facts import gpu_agree
from gpuonboard.facts.gpu_ids import bus_key
from gpuonboard.facts.nvidia_smi import GpuInfo, GpuReport
from gpuonboard.facts.nvidia_smi.reasons import CLOCK_EVENT_REASONS

# how an output's copied command says its nvidia-smi ran in a container (api/narrowed.py,
# api/saved_forms.py): one already running (`docker exec`, `kubectl exec`), or one it started
# (`docker run`); a view of that container's GPUs, never the box's all (facts/gpu_merge.py)
IN_RUNNING_CONTAINER = "the container it ran in"
IN_STARTED_CONTAINER = "a container it started"
CONTAINER_VIEWS = (IN_RUNNING_CONTAINER, IN_STARTED_CONTAINER)
# how an output's copied command says it listed some of the box's own GPUs (api/narrowed.py): a
# `-i N` it asked for, or an HPC container runtime on the login's own machine (`apptainer|singularity
# exec --nv`, `enroot`: the host's GPUs, unless a job's cgroup or NVIDIA_VISIBLE_DEVICES narrows
# them). Each hides GPUs, never makes them up: the GPUs it lists are on the box, a floor
# (steps/checks/missing_facts.py view_floor); a container's, a pod's or a job step's on another
# node (`kubectl exec`, `srun`, `pdsh`) may be another machine's
ASKED_FOR = "shows only the GPUs it asked for"
RUNTIME_GIVEN = (
    "shows the GPUs its container runtime was given (with `--nv` the host's, unless a job's cgroup"
    " or NVIDIA_VISIBLE_DEVICES narrows them)"
)

__all__ = ["HIGHEST", "SLOWDOWNS", "fault_evidence", "fault_seen", "view_label", "view_match", "with_views"]

# counts that only grow between two calls (ECC errors since the driver loaded or ever, retired
# pages, remapped rows, PCIe replays): the highest any format read is the box's, a lower one an
# earlier reading, never a clean bill beside it
HIGHEST = (
    "ecc_volatile_correctable",
    "ecc_volatile_uncorrectable",
    "ecc_aggregate_correctable",
    "ecc_aggregate_uncorrectable",
    "retired_pages_sbe",
    "retired_pages_dbe",
    "remapped_rows_correctable",
    "remapped_rows_uncorrectable",
    "pcie_replays",
    "pcie_replay_rollovers",
)
# the clock-event reasons of a slowdown (hardware, thermal, power brake): one any format saw is
# the box's, as a fault is, whatever the richest format read at its moment
SLOWDOWNS = ("hw_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown", "sw_thermal_slowdown")
# the GPU's memory-repair flags: True in any reading of it is the box's
_PENDING = (
    "retired_pages_pending",
    "remapped_rows_pending",
    "remapped_rows_failure",
    "sram_threshold_exceeded",
    "channel_repair_pending",
    "tpc_repair_pending",
    "unrepairable_memory",
)


def fault_seen(fault: str, label: str, clean: Sequence[str]) -> str:
    """`fault` as one format (`label`) saw it, naming the formats that read the GPU without it
    ('no device handle: Unknown Error in the table while -q -x read it: ...'): the box changed
    between the calls or the GPU is flaky, a fault either way, never one answer chosen."""
    others = [gpu_agree.FORMAT_NAMES.get(c, c) for c in dict.fromkeys(clean) if c != label]
    if not others:
        return fault
    return (
        f"{fault} in {gpu_agree.FORMAT_NAMES.get(label, label)} while {' and '.join(others)} read it:"
        " a GPU that changed between the calls, or a flaky one"
    )


# how a session's earlier output of the box, before a command changed its state, is named where
# it is kept beside the later one (api/state_change.py): "the earlier output (before `nvidia-smi -pm 1`)"
EARLIER = "the earlier output "


def view_label(partial: str) -> str:
    """How a fault of a container's view is sourced: "`docker logs gpu-burn` (a container's view)"
    from its ProbeOutput.partial ("`docker logs gpu-burn` shows only the GPUs of ..."); the
    session's earlier output of the box (EARLIER) as it is named."""
    if partial.startswith(EARLIER):
        return partial
    found = re.match(r"\s*(`[^`]+`)", partial)
    return f"{found.group(1) if found else 'a container'} (a container's view)"


def view_match(gpu: GpuInfo, gpus: Sequence[GpuInfo]) -> GpuInfo | None:
    """The GPU of `gpus` that is `gpu` by PCI address (not where both UUIDs are read and differ:
    identical servers share bus addresses), else by UUID; never by index (a container numbers the
    GPUs it was given from 0)."""
    key = bus_key(gpu.pci_bus_id)
    uuid = gpu_agree.uuid_of(gpu)
    if key:
        same = next((g for g in gpus if bus_key(g.pci_bus_id) == key), None)
        # (one bus address, two UUIDs read: another box of the same build, where a pod can run)
        other = same is not None and uuid and (theirs := gpu_agree.uuid_of(same)) and theirs != uuid
        return None if other else same
    return next((g for g in gpus if uuid and gpu_agree.uuid_of(g) == uuid), None) if uuid else None


def fault_evidence(g: GpuInfo) -> bool:
    """Whether a GPU's reading shows any fault evidence _folded carries: a fault, a cell fault, a
    count of errors above 0, a repair pending, a recovery action, a slowdown."""
    counts = any(getattr(g, name) for name in HIGHEST)
    flags = any(getattr(g, name) for name in _PENDING)
    slowed = any(r in SLOWDOWNS or r not in CLOCK_EVENT_REASONS for r in g.clock_event_reasons)
    acts = (g.recovery_action or "none").lower() != "none"
    return bool(g.faults or g.cell_faults or counts or flags or slowed or acts)


def with_views(report: GpuReport, label: str, views: Sequence[tuple[str, GpuReport]]) -> GpuReport:
    """`report` (the box's own output, of format `label`) with each GPU's fault evidence in the
    container views (`views`: each its view_label and its report) folded in; a view's GPU that
    names none of the box's is left (api/unread.py joins no such view)."""
    gpus = []
    for g in report.gpus:
        for said, view in views:
            seen = next((v for v in view.gpus if view_match(v, [g])), None)
            if seen is not None:
                g = _folded(g, label, seen, said)
        gpus.append(g)
    return dataclasses.replace(report, gpus=tuple(gpus))


def _folded(g: GpuInfo, label: str, seen: GpuInfo, said: str) -> GpuInfo:
    """The box's GPU `g` with the faults, highest counts, repairs pending, recovery action and
    slowdowns its reading in a container's view (`seen`, from `said`) shows, each from `said`."""
    values: dict[str, Any] = {}
    came: list[tuple[str, str]] = []
    clean = [] if g.faults else [label]
    if added := [fault_seen(f, said, clean) for f in seen.faults if f not in g.faults]:
        values["faults"], came = (*g.faults, *added), [("faults", said)]
    if cells := [f"{f} (in {said})" for f in seen.cell_faults if f not in g.cell_faults]:
        values["cell_faults"] = (*g.cell_faults, *cells)
    for name in HIGHEST:
        mine, its = getattr(g, name), getattr(seen, name)
        if its is not None and (mine is None or its > mine):
            values[name], came = its, [*came, (name, said)]
    for name in _PENDING:
        if getattr(seen, name) and not getattr(g, name):
            values[name], came = True, [*came, (name, said)]
    if (seen.recovery_action or "none").lower() != "none" and (g.recovery_action or "none").lower() == "none":
        values["recovery_action"], came = seen.recovery_action, [*came, ("recovery_action", said)]
    slowed = [r for r in seen.clock_event_reasons if r in SLOWDOWNS or r not in CLOCK_EVENT_REASONS]
    if g.clock_event_reasons_known and (more := [r for r in slowed if r not in g.clock_event_reasons]):
        values["clock_event_reasons"] = (*g.clock_event_reasons, *dict.fromkeys(more))
        came.append(("clock_event_reasons", said))
    if not values:
        return g
    named = {field for field, _ in came}
    provenance = (*(p for p in g.provenance if p[0] not in named), *came)
    return dataclasses.replace(g, **values, provenance=provenance)
