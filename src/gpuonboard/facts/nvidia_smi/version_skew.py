"""An nvidia-smi newer than the driver it talks to: a container's or a newer userspace nvidia-smi
against an older kernel driver (Colab's `NVIDIA-SMI 450.36.06` over `Driver Version: 418.67`).
Such a tool asks the driver for fields the driver's branch does not have, and prints them as a
fault marker (the K80's `MIG M.` cell reads `ERR!`): no reading of the GPU, never a failing
sensor. Only the table's banner names both versions (`-q` and `-q -x` print the driver's alone).
A fault marker in a field both branches know is still a fault."""

from __future__ import annotations

from dataclasses import replace

from gpuonboard.facts.nvidia_smi.model import GpuReport
from gpuonboard.once import lazy_re

# the table's banner: `NVIDIA-SMI 450.36.06    Driver Version: 418.67`
_TOOL_VERSION = lazy_re(r"NVIDIA-SMI\s+(\d+\.\d+(?:\.\d+)?)\b")
# the driver branch that first has each field a table cell reads (its reader's name), so a driver
# before it cannot answer it: MIG mode came with R450 (the A100's launch; NVIDIA's MIG user guide,
# https://docs.nvidia.com/datacenter/tesla/mig-user-guide/ "Supported GPUs": R450 and later)
FIELD_SINCE = {"MIG mode": 450}
# what a cell fault of such a field says after its marker (rules match it: steps/checks)
SKEW_SAID = "is newer than the driver"


def tool_version(text: str) -> str | None:
    """The nvidia-smi version the table's banner names (`450.36.06`), None without one."""
    match = _TOOL_VERSION.search(text)
    return match.group(1) if match else None


def _branch(version: str | None) -> int | None:
    head = (version or "").split(".", 1)[0]
    return int(head) if head.isdigit() else None


def with_version_skew(report: GpuReport, text: str) -> GpuReport:
    """`report` (the table's) with each cell fault of a field the driver's branch does not have
    (FIELD_SINCE), where the banner's nvidia-smi is of a newer branch than the driver, saying so:
    'MIG mode reads ERR! (nvidia-smi 450.36.06 is newer than the driver 418.67: fields the driver
    lacks read ERR!)'; any other report as it is."""
    tool = tool_version(text)
    tool_branch, driver_branch = _branch(tool), _branch(report.driver_version)
    if tool_branch is None or driver_branch is None or tool_branch <= driver_branch:
        return report

    def said(fault: str) -> str:
        field, _, marker = fault.rpartition(" reads ")
        if FIELD_SINCE.get(field, 0) <= driver_branch or SKEW_SAID in fault:
            return fault
        return (
            f"{fault} (nvidia-smi {tool} {SKEW_SAID} {report.driver_version}: fields the driver lacks"
            f" read {marker})"
        )

    gpus = tuple(replace(g, cell_faults=tuple(said(f) for f in g.cell_faults)) for g in report.gpus)
    return replace(report, gpus=gpus)
