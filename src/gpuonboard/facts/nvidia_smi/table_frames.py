"""The tables of a text that holds several, one after another: `nvidia-smi -l N` (or `watch
nvidia-smi`) prints a whole table every N seconds, each under its date line, and a capture of it
is cut wherever its poster stopped copying; a paste may also begin inside an earlier frame (its
Processes table only). :func:`table_frames` parts them at each banner, so each is read as one
table and the reader keeps the newest that holds GPU rows: a frame's GPU rows, or a later
frame's cut, never hide another frame's (before, the first Processes table ended the GPU rows,
and a text whose first lines were an earlier frame's process list read no GPU at all)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TypeVar

from gpuonboard.facts.nvidia_smi.model import GpuInfo, GpuProcess, GpuReport
from gpuonboard.once import lazy_re

_T = TypeVar("_T")

# the banner line of a table: `| NVIDIA-SMI 525.125.06   Driver Version: ...` (R610: KMD Version)
_BANNER = lazy_re(r"^\s*\|\s*NVIDIA-SMI\s+\S+.*\b(?:Driver|KMD) Version:")
# the box's top border above the banner, and nvidia-smi's own date line above that
_TOP = lazy_re(r"^\s*\+-{10,}[-+]*\+\s*$")
_DATE = lazy_re(r"^\s*[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4}\s*$")
_PROCESSES = lazy_re(r"(?i)\bprocesses:")
_ROW = lazy_re(r"^\s*\|.*\S.*\|\s*$")

FRAMES_READ = "the nvidia-smi output holds {count} tables one after another (`nvidia-smi -l`, `watch`): "


def _start(lines: Sequence[str], banner: int) -> int:
    """Where the frame of the banner at `banner` begins: its top border and date line above it."""
    start = banner
    if start > 0 and _TOP.match(lines[start - 1]):
        start -= 1
    if start > 0 and _DATE.match(lines[start - 1]):
        start -= 1
    return start


def table_frames(lines: Sequence[str]) -> tuple[list[str], list[list[str]]]:
    """(the lines before the first frame where they are the tail of an earlier one, its process
    table; else nothing), and the frames, each from its date line or border to the next's. One
    frame (the common table) is the text's lines whole, its head included."""
    banners = [i for i, line in enumerate(lines) if _BANNER.match(line)]
    starts = [_start(lines, i) for i in banners]
    # (a last frame cut before its banner: its date line, maybe its top border, after the frames)
    late = [i for i, line in enumerate(lines) if starts and i > banners[-1] and _DATE.match(line)]
    if late and all(_TOP.match(line) or not line.strip() for line in lines[late[-1] + 1 :]):
        starts.append(late[-1])
    head = list(lines[: starts[0]]) if starts else []
    # (the tail of an earlier frame: a box row of its Processes table above the first banner)
    orphan = any(_PROCESSES.search(line) or _ROW.match(line) for line in head)
    if len(starts) < 2 and not orphan:
        return [], [list(lines)]
    frames = [list(lines[a:b]) for a, b in zip(starts, [*starts[1:], len(lines)], strict=True)]
    if not orphan:
        frames[0] = head + frames[0]
        head = []
    return head, frames


# a command line that prints the table again and again: `nvidia-smi -l 5`, `--loop=5`, `-lms 500`,
# `--loop-ms=500`, `watch -n 1 nvidia-smi`
_LOOPED = lazy_re(
    r"\bnvidia-smi\b[^|;&\n]*\s(?:-l|--loop|-lms|--loop-ms)(?:[=\s]|$)|\bwatch\b[^|;&\n]*\bnvidia-smi\b"
)


def looped(command: str) -> bool:
    """Whether `command` (a copied command line) prints nvidia-smi's table again and again, so
    the several tables of its output are one run's frames, not outputs of several runs or boxes."""
    return _LOOPED.search(command) is not None


def _bus(gpu: GpuInfo) -> str | None:
    bus = (gpu.pci_bus_id or "").strip().upper()
    return bus if bus and "X" not in bus.split(":")[-1] and "*" not in bus else None


def _keys(gpus: Sequence[GpuInfo]) -> list[tuple[str, str | int]]:
    """How the GPUs of one frame are matched to their rows in another: their bus ids where each
    GPU's was read and no two share one (a redacted or edited capture), else their indexes."""
    buses = [_bus(gpu) for gpu in gpus]
    if all(buses) and len(set(buses)) == len(buses):
        return [("bus", bus or "") for bus in buses]
    return [("index", gpu.index) for gpu in gpus]


def _most(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else max(a, b)


def _union(a: tuple[_T, ...], b: Sequence[_T]) -> tuple[_T, ...]:
    return (*a, *(x for x in b if x not in a))


def _carried(gpu: GpuInfo, seen: GpuInfo) -> GpuInfo:
    """`gpu` (the frame judged) with what another frame said of it: its faults, its processes,
    its busiest figures (a fault or a process seen at any moment of the run is never dropped)."""
    return replace(
        gpu,
        faults=_union(gpu.faults, seen.faults),
        cell_faults=_union(gpu.cell_faults, seen.cell_faults),
        processes=_union(gpu.processes, seen.processes),
        processes_known=gpu.processes_known or bool(seen.processes),
        utilization_gpu_pct=_most(gpu.utilization_gpu_pct, seen.utilization_gpu_pct),
        memory_used_mib=_most(gpu.memory_used_mib, seen.memory_used_mib),
    )


CARRIED = "what the other tables say of its GPUs (faults, processes, the busiest figures) is read with it"


def carry_frames(
    report: GpuReport, others: Sequence[GpuReport], orphan: dict[int, list[GpuProcess]]
) -> GpuReport:
    """The frame judged (`report`) with every other frame's evidence carried into its GPUs,
    matched by bus id (else index), and the process rows of an earlier frame's list above the
    first table (`orphan`, by GPU index). A GPU another frame lists that the judged one lacks
    leaves the GPUs unsure: the report is not whole."""
    gpus = list(report.gpus)
    warnings = list(report.warnings)
    complete = report.complete
    for other in others:
        mine, theirs = _keys(gpus), _keys(other.gpus)
        if not (mine and theirs and mine[0][0] == theirs[0][0] == "bus"):  # (both by index)
            mine, theirs = [("index", g.index) for g in gpus], [("index", g.index) for g in other.gpus]
        where = {key: n for n, key in enumerate(mine)}
        for seen, key in zip(other.gpus, theirs, strict=True):
            n = where.get(key)
            if n is None:
                warnings.append(
                    f"another table of this output lists GPU {seen.index}, which the table read lacks"
                )
                complete = False
                continue
            gpus[n] = _carried(gpus[n], seen)
    at = {gpu.index: n for n, gpu in enumerate(gpus)}
    for index, rows in sorted(orphan.items()):
        if index not in at:
            warnings.append(f"an earlier table's process list names GPU {index}, which the table read lacks")
            complete = False
            continue
        gpus[at[index]] = _carried(gpus[at[index]], replace(gpus[at[index]], processes=tuple(rows)))
    return replace(report, gpus=tuple(gpus), warnings=(*warnings, CARRIED), complete=complete)
