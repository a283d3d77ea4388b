"""Display-only adapters NVIDIA ships inside its own boxes beside the compute GPUs (the DGX
Station A100's `NVIDIA DGX Display`: data/gpu_name_markers.yml `display_adapters`): nvidia-smi
lists them as GPUs, but an order's model, count and memory are of the compute GPUs. The rules
that judge those (gpu_model, gpu_count, vram) read the facts without them, where a compute GPU is
listed beside them, and name them."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from gpuonboard.connection.gather import Facts
from gpuonboard.facts.nvidia_smi import GpuInfo
from gpuonboard.resources import DATA_DIR, table_rows
from gpuonboard.steps.base import Check
from gpuonboard.steps.checks.once import loaded_once

MARKERS_FILE = DATA_DIR / "gpu_name_markers.yml"


@loaded_once
def display_adapters(path: str = str(MARKERS_FILE)) -> dict[str, str]:
    """{name as nvidia-smi prints it, folded: the box it ships in} of `display_adapters`."""
    rows = table_rows(Path(path), "display_adapters")
    return {" ".join(str(r["name"]).split()).casefold(): str(r.get("box") or "") for r in rows}


def is_display_adapter(g: GpuInfo) -> bool:
    """`g` is named as a display-only adapter of data/gpu_name_markers.yml."""
    return " ".join(g.name.split()).casefold() in display_adapters()


def without_display_adapters(facts: Facts) -> tuple[Facts, list[GpuInfo]]:
    """(the facts with the display adapters left out of the GPU listing, the adapters left out),
    where a GPU that is none is listed beside them; (facts, []) otherwise."""
    report = facts.gpu
    if report is None:
        return facts, []
    shown = [g for g in report.gpus if is_display_adapter(g) and not g.faults]
    kept = tuple(g for g in report.gpus if g not in shown)
    if not shown or not kept:
        return facts, []
    attached = report.attached_gpus - len(shown) if report.attached_gpus is not None else None
    gpu = dataclasses.replace(report, gpus=kept, attached_gpus=attached)
    return dataclasses.replace(facts, gpu=gpu), shown


def named_beside(check: Check, shown: list[GpuInfo]) -> Check:
    """`check` with the display adapters left out named in its actual."""
    if not shown:
        return check
    boxes = sorted({display_adapters()[" ".join(g.name.split()).casefold()] for g in shown} - {""})
    said = ", ".join(f"GPU {g.index} {g.name.strip()}" for g in shown)
    whose = f"the {' / '.join(boxes)}'s display adapter" if boxes else "a display adapter"
    return dataclasses.replace(check, actual=f"{check.actual}; {said} left out ({whose}, not a compute GPU)")
