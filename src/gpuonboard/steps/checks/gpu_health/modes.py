"""The mode rules of gpu_health: persistence mode, MIG mode (now and pending a reset), and
virtualisation (bare metal, pass-through or vGPU)."""

from __future__ import annotations

import re

from gpuonboard.facts.nvidia_smi import GpuInfo
from gpuonboard.steps.base import Check
from gpuonboard.steps.checks.gpu_health.common import gpu_label, gpu_list


def rule_persistence(gpus: list[GpuInfo]) -> Check:
    """Persistence mode on (else every CUDA start pays driver initialisation)."""
    off = [gpu_label(g) for g in gpus if g.persistence_mode == "Disabled"]
    if off:
        return Check(
            "persistence_mode",
            "Enabled",
            f"Disabled on {', '.join(off)}",
            "warn",
            "enable it with `sudo nvidia-smi -pm 1` (or the nvidia-persistenced service)",
        )
    # N/A (an integrated GPU, some vGPUs) is not "Enabled": say that it was not reported
    known = [g for g in gpus if g.persistence_mode is not None]
    return Check("persistence_mode", "Enabled", "Enabled" if known else "not reported", "pass")


# GPUs that have MIG (NVIDIA's MIG user guide, "Supported GPUs": A100, A30, H100, H200, H800,
# H20, A800, B200, GB200, RTX PRO 6000 Blackwell); others print N/A, which is no MIG at all
_MIG_CAPABLE = re.compile(
    r"\b(A100|A30|A800|H100|H200|H800|H20|GH200|B200|GB200|B300|GB300)\b", re.IGNORECASE
)


def rule_mig(gpus: list[GpuInfo]) -> Check:
    """MIG splits a GPU into instances: CUDA then sees only MIG instances (one per process, or
    none until instances are created), so a whole-GPU order is not usable for training.

    WARN when MIG is enabled now, or pending (enabled after the next GPU reset / reboot): some
    rentals are MIG slices on purpose, and the order has no field saying which; the report's
    headline names the warning ("GO with 1 warning: mig_mode"), and the message says what to ask.
    """
    on = [g for g in gpus if g.mig_mode == "Enabled"]
    pending_on = [g for g in gpus if g.mig_mode != "Enabled" and g.mig_mode_pending == "Enabled"]
    pending_off = [g for g in on if g.mig_mode_pending == "Disabled"]
    unknown = [g for g in gpus if g.mig_mode is None and _MIG_CAPABLE.search(g.name)]
    if not on and not pending_on and unknown:
        # a MIG-capable GPU whose mode no format reported: whole GPUs are not shown
        return Check(
            "mig_mode",
            "Disabled (whole GPUs)",
            f"not reported for {gpu_list(unknown, gpus)}",
            "unverified",
            "`nvidia-smi -L` lists MIG devices under a GPU in MIG mode; `nvidia-smi -q` shows the mode",
        )
    if not on and not pending_on:
        return Check("mig_mode", "Disabled (whole GPUs)", "Disabled", "pass")
    parts = []
    if on:
        text = f"Enabled on {gpu_list(on, gpus)}"
        if pending_off:
            text += f" (Disabled pending a GPU reset on {gpu_list(pending_off, gpus)})"
        parts.append(text)
    if pending_on:
        parts.append(f"Enabled pending a GPU reset on {gpu_list(pending_on, gpus)}")
    todo = [g for g in on + pending_on if g not in pending_off]
    if todo:
        fix = (
            "ask the vendor to disable MIG with `sudo nvidia-smi -i N -mig 0` for N in"
            f" {', '.join(str(g.index) for g in todo)}, then reset those GPUs"
            " (`sudo nvidia-smi -i N -r`) or reboot, and check again"
        )
    else:
        fix = (
            "MIG is already set to Disabled from the next GPU reset: ask the vendor to reset the"
            " GPUs (`sudo nvidia-smi -i N -r`) or reboot, and check again"
        )
    return Check(
        "mig_mode",
        "Disabled (whole GPUs)",
        "; ".join(parts),
        "warn",
        "MIG mode partitions each GPU into instances: CUDA sees only MIG instances (or none), so"
        f" whole GPUs cannot be used for training; if whole GPUs were ordered, {fix}.",
    )


def rule_virtualization(gpus: list[GpuInfo]) -> Check:
    """Report pass-through or vGPU: bare metal vs a VM changes what you pay for."""
    modes = sorted({g.virtualization_mode for g in gpus if g.virtualization_mode})
    if not modes:
        return Check("virtualization", "(information)", "not reported", "pass")
    vgpu = [m for m in modes if "VGPU" in m.upper()]
    if vgpu:
        return Check(
            "virtualization",
            "bare metal or pass-through",
            ", ".join(modes),
            "warn",
            "a vGPU shares the physical GPU; check the order said so",
        )
    return Check("virtualization", "bare metal or pass-through", ", ".join(modes), "pass")
