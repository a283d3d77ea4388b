"""gpu_count's advice where the GPUs listed are a share of a bigger machine's: a container, or a
cgroup, given some of its GPUs sees them numbered from 0 (`Attached GPUs : 1`, index 0), but
nvidia-smi -q keeps each GPU's `Minor Number`, the machine's /dev/nvidiaN: a GPU numbered 4
shows at least 5 GPUs on the machine. The short count stays a fail (the login was not given
what was ordered); the advice asks for the rest to be given to it, not installed. Minor numbers
listed from 0 with a gap (0, 1, 2, 4 ...) are the machine's own GPUs less one the driver numbered
that is not listed (failed, or fallen off the bus): the advice names the missing number and asks
for it to be repaired or replaced, never for a share."""

from __future__ import annotations

from collections.abc import Sequence

from gpuonboard.facts.nvidia_smi import GpuInfo

__all__ = ["share_advice"]


def share_advice(gpus: Sequence[GpuInfo], listed: int) -> str | None:
    """The advice where a GPU's minor number or index shows more GPUs on the machine than the
    `listed` this login sees; None where none does."""
    if (gap := _gap_advice(gpus, listed)) is not None:
        return gap
    minor = max((g.minor_number for g in gpus if g.minor_number is not None), default=-1)
    index = max((g.index for g in gpus), default=-1)
    machine = max(minor, index) + 1
    if machine <= listed:
        return None
    which = f"a GPU's minor number is {minor}" if minor >= index else f"a GPU's index is {index}"
    return (
        f"this login sees {listed} of the machine's GPUs ({which}: the machine has at least"
        f" {machine}; a container's or a cgroup's share, or a GPU the driver numbered that"
        " nvidia-smi does not list): ask the vendor to give the rest of the ordered GPUs to this"
        " login or container, not to install them"
    )


def _gap_advice(gpus: Sequence[GpuInfo], listed: int) -> str | None:
    """The advice where the GPUs' minor numbers start at 0 and skip some (/dev/nvidia3 of 0-7
    missing): a GPU the driver numbered that nvidia-smi does not list; None where they do not."""
    minors = sorted({g.minor_number for g in gpus if g.minor_number is not None})
    if len(minors) != len(gpus) or not minors or minors[0] != 0:
        return None
    gaps = sorted(set(range(minors[-1] + 1)) - set(minors))
    if not gaps:
        return None
    numbers = ", ".join(str(n) for n in gaps)
    plural = "s" if len(gaps) > 1 else ""
    return (
        f"the minor numbers listed skip {numbers} (/dev/nvidia{gaps[0]}{' ...' if plural else ''}):"
        f" a GPU{plural} the driver numbered that nvidia-smi does not list (failed, or fallen off"
        " the bus: `dmesg` shows its Xid); ask the vendor to repair or replace"
        f" {'them' if plural else 'it'}, or for the box that was ordered"
    )
