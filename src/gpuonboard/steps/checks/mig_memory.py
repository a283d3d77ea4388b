"""What a GPU in MIG mode shows of its memory where its own row says N/A: the MIG devices'
rows of nvidia-smi's table (`|  0    5   0   0  |  29MiB / 33280MiB  | 32      0 |`), each a
slice's own memory (the device CUDA sees) and its volatile uncorrectable ECC count. The vram
rule judges the slices given where no GPU total was read (a slice is what a job gets, not the
whole GPU), foreign_processes reads their memory used as the GPU's, the ECC rule their volatile counts."""

from __future__ import annotations

from dataclasses import replace

from gpuonboard.facts.nvidia_smi import GpuInfo
from gpuonboard.steps.base import Check
from gpuonboard.steps.checks.missing_facts import CUT_SAID
from gpuonboard.units import format_bytes

MIG_SLICES_SHORT = (
    "the GPU is in MIG mode and what CUDA sees is its MIG slices, each a share of the GPU's memory,"
    " not the whole GPU ordered: MIG slices given as GPUs; ask the vendor for whole GPUs (MIG mode"
    " off: `nvidia-smi -mig 0` and a GPU reset) or for the slices that were ordered"
)


def slices_used_mib(g: GpuInfo) -> int | None:
    """The memory `g`'s MIG slices use, each GPU instance once (the compute instances of one GPU
    instance share its memory, and each of their rows repeats it); None where any slice's figure
    is unread."""
    if not g.mig_slices or any(s.memory_used_mib is None for s in g.mig_slices):
        return None
    by_instance: dict[object, int] = {}
    for i, s in enumerate(g.mig_slices):
        by_instance[s.gpu_instance if s.gpu_instance is not None else f"row {i}"] = s.memory_used_mib or 0
    return sum(by_instance.values())


def with_slices_used(g: GpuInfo) -> GpuInfo:
    """`g` with its MIG slices' memory used as its own where its own row gave none (MIG mode's
    N/A): a job on a slice shows there."""
    if g.memory_used_mib is not None or (used := slices_used_mib(g)) is None:
        return g
    return replace(g, memory_used_mib=used)


def mig_vram(expected: str, gpus: list[GpuInfo], least_bytes: float, unread: str = "") -> Check | None:
    """vram of GPUs in MIG mode whose own memory total is not shown, judged by their MIG slices'
    (each a device CUDA runs a job on, with only its share of the memory): the smallest; None
    where a GPU has no slice's total read. `unread`: the GPUs nvidia-smi could not read (not
    among `gpus`), named after the slices read, as the whole GPUs' rule names them."""
    sizes = [[s.memory_total_mib for s in g.mig_slices if s.memory_total_mib is not None] for g in gpus]
    if not gpus or not all(sizes):
        return None
    smallest = min(min(each) for each in sizes)
    count = sum(len(each) for each in sizes)
    actual = (
        f"{smallest} MiB ({format_bytes(smallest * 1024 * 1024, binary=True)})"
        + (" smallest of" if count > 1 else " in")
        + f" {count} MIG slice{'s' if count > 1 else ''} (MIG mode on: the GPU's own total not shown)"
        + (f" of the {len(gpus)} GPUs read; {unread}" if unread else "")
    )
    if smallest * 1024 * 1024 >= least_bytes:
        return Check("vram", expected, actual, "pass")
    return Check("vram", expected, actual, "fail", MIG_SLICES_SHORT)


def with_slice_ecc(g: GpuInfo) -> GpuInfo:
    """`g` with its MIG slices' volatile uncorrectable counts (summed) as its own where its own
    row gave none (MIG mode: the table prints the ECC mode in that cell)."""
    counts = [s.ecc_volatile_uncorrectable for s in g.mig_slices]
    if g.ecc_volatile_uncorrectable is not None or not counts or None in counts:
        return g
    return replace(g, ecc_volatile_uncorrectable=sum(c for c in counts if c is not None))


def slice_counts_only(g: GpuInfo) -> bool:
    """`g`'s volatile uncorrectable count is read only from its MIG slices' rows."""
    return g.ecc_volatile_uncorrectable is None and with_slice_ecc(g) is not g


# where a GPU's MIG slices' rows were cut from the table (GpuInfo.mig_slices_cut)
MIG_CUT_ADVICE = (
    "the output was cut short in or before its `MIG devices:` table (printed after the GPU rows),"
    " so what only that table gives is in the part cut away, not missing: an incomplete probe, no"
    " evidence about the hardware; rerun `nvidia-smi` and save its whole output"
)


def slices_cut_said(gpus: list[GpuInfo], what: str) -> str:
    """'GPU 0 is in MIG mode, where the table gives each slice's `what` on its row of the `MIG
    devices:` table (the output was cut short ...)' where a GPU of `gpus` had its MIG slices'
    rows cut away (their memory, their ECC counts are in the part cut), '' where none did."""
    cut = [g for g in gpus if g.mig_slices_cut]
    if not cut:
        return ""
    names = ", ".join(g.called() for g in cut)
    return (
        f"{names} {'is' if len(cut) == 1 else 'are'} in MIG mode, where the table gives each slice's"
        f" {what} on its row of the `MIG devices:` table {CUT_SAID} in or before that table:"
        " those rows are in the part cut away)"
    )
