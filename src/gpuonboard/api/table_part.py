"""A part of nvidia-smi's default table pasted without its `NVIDIA-SMI` banner (GPU rows alone,
as a post quotes the rows it is about) whose cells show a fault (`ERR!` as a fan speed, a power
draw or a temperature; `GPU is lost`, `Unknown Error`): the fault is printed, positive evidence,
so the part is read as a view of some GPUs (the driver and the GPU count unverified) and the
fault judged; a part that shows no fault is refused as before (api/saved_forms.py other_form)."""

from __future__ import annotations

from gpuonboard.facts.nvidia_smi.table import parse_table
from gpuonboard.facts.probe import ProbeOutput

# the probe a table is read as (facts/gpu_probes.py GPU_SOURCES)
TABLE_PROBE = "nvidia_smi_table"


def table_part_view(text: str) -> ProbeOutput | None:
    """A banner-less part of nvidia-smi's table whose GPU rows show a fault, read as a view of
    those GPUs (ProbeOutput.partial names why); None for any other text."""
    if "NVIDIA-SMI" in text:
        return None
    rows = parse_table(text).gpus
    faulted = [g for g in rows if g.faults or g.cell_faults]
    if not faulted:
        return None
    shown = ", ".join(f"GPU {g.index}" for g in rows)
    why = (
        f"a part of nvidia-smi's table (the rows of {shown}, without its `NVIDIA-SMI` banner) shows"
        " only the GPUs pasted, so the driver and the number of GPUs are not known from it"
    )
    return ProbeOutput(text, "", 0, why)
