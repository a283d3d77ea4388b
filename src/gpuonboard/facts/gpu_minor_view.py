"""Whether an `nvidia-smi -q` or `-q -x` output shows only some of the box's GPUs by what it
prints of each: a GPU's Minor Number (the N of its /dev/nvidiaN, which the driver gives each
GPU of the machine in turn from 0) at or above the number of GPUs nvidia-smi counts attached. A
container or a job given one GPU of eight sees `Attached GPUs : 1` and that GPU's own minor,
4 (NVIDIA/CUDALibrarySamples#104's A100-SXM4-80GB): the GPUs with the lower minors are the
box's, not in this view. Its count is then no shortfall of the box (never a fail), as a view
of some GPUs by its copied command (`nvidia-smi -i 0`, `docker exec`) is not."""

from __future__ import annotations

import re

from gpuonboard.facts.nvidia_smi import GpuReport

__all__ = ["minor_view"]

# `    Minor Number                    : 4` (-q) and `<minor_number>4</minor_number>` (-q -x)
_MINOR = re.compile(
    r"^[ \t]*Minor Number[ \t]*:[ \t]*(\d+)[ \t]*$|<minor_number>\s*(\d+)\s*</minor_number>", re.M
)


def minor_view(text: str, report: GpuReport) -> str:
    """Why the GPUs of the -q / -q -x `text` (parsed as `report`) are a view of part of the box
    (a GPU's minor number at or above the GPUs counted attached), "" where nothing says so (no
    minor printed: N/A on Windows, another format; every minor below the count)."""
    if report.source not in ("text", "xml") or not report.gpus:
        return ""
    minors = [int(a or b) for a, b in _MINOR.findall(text)]
    count = max(report.attached_gpus or 0, len(report.gpus))
    if not minors or max(minors) < count:
        return ""
    top = max(minors)
    gpus = f"{count} GPU{'s' if count != 1 else ''}"
    return (
        f"a GPU's Minor Number is {top} (/dev/nvidia{top}) where nvidia-smi counts {gpus} attached:"
        " a view of some of the box's GPUs (a container's or a job's), those of the lower minor"
        " numbers not in it"
    )
