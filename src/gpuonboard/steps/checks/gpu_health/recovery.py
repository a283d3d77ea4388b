"""The driver's own verdict on a GPU after a fault: NVML's GPU Recovery Action (R570+), or R5xx's
GPU Reset Status read in its words (Reset Required: Yes is `Reset`, Drain and Reset Recommended:
Yes is `Drain and Reset`), what must be done to the GPU before it can be trusted with work again."""

from __future__ import annotations

from gpuonboard.facts.nvidia_smi import GpuInfo
from gpuonboard.facts.nvidia_smi.faults import RECOVERY_STATE
from gpuonboard.steps.base import Check
from gpuonboard.steps.checks.gpu_health.common import gpu_label

# NVIDIA's words for each action (the A100/H100 memory error management guide, "Error Recovery
# and Response Flags"), lower-cased -> what to ask the vendor for; an action not listed here is
# still a failure, quoted as the driver printed it
_ADVICE = {
    "reset": "its processes stopped and the GPU reset (`nvidia-smi -r`)",
    "reboot": "a reboot of the box (the fault may have left the OS inconsistent)",
    "system reboot": "a reboot of the box",
    "bus reset": "a reset of the GPU's PCIe bus",
    "drain p2p": "its peer-to-peer (NVLink) traffic drained",
    "drain and reset": "its peer-to-peer (NVLink) traffic drained and the GPU reset",
}


def rule_recovery_action(gpus: list[GpuInfo]) -> Check | None:
    """FAIL for a GPU whose driver asks for a recovery action (anything but `None`): it hit a
    fault that the action must clear first. PASS when every GPU that reports it says `None` (or,
    R5xx, `No` to both reset questions). None (no row) when no GPU reports it (a driver before
    R5xx's reset status, the table)."""
    told = [g for g in gpus if g.recovery_action is not None]
    # a GPU whose recovery fields nvidia-smi could not read (`Reset Required : ERR!`): not told
    unread = [g for g in gpus if g.recovery_action is None and _recovery_unread(g)]
    if not told and not unread:
        return None
    pending = [g for g in told if (g.recovery_action or "").lower() != "none"]
    if not pending and unread:
        said = "; ".join(f"{gpu_label(g)}: {_recovery_unread(g)}" for g in unread)
        shown = f"None on {len(told)} GPU{'s' if len(told) != 1 else ''}; " if told else ""
        return Check(
            "gpu_recovery",
            "no recovery action pending",
            f"{shown}{said}",
            "unverified",
            "nvidia-smi could not read whether the driver asks for a reset of "
            f"{'these GPUs' if len(unread) > 1 else 'this GPU'}; rerun `nvidia-smi -q` and, if the"
            " field still cannot be read, ask the vendor to check the GPU",
        )
    if not pending:
        shown = f"all {len(told)} GPUs" if len(told) > 1 else gpu_label(told[0])
        return Check("gpu_recovery", "no recovery action pending", f"None on {shown}", "pass")
    actual = "; ".join(f"{gpu_label(g)}: {g.recovery_action}" for g in pending)
    asks = sorted({_ADVICE.get(str(g.recovery_action).lower(), f"'{g.recovery_action}'") for g in pending})
    return Check(
        "gpu_recovery",
        "no recovery action pending",
        actual,
        "fail",
        f"the driver holds {'these GPUs' if len(pending) > 1 else 'this GPU'} unusable after a fault"
        f" until it gets {' / '.join(asks)}; ask the vendor to do it, then rerun `invoke check`"
        " (a GPU that needs it again is one to replace)",
    )


def _recovery_unread(gpu: GpuInfo) -> str:
    """The cell faults of `gpu`'s recovery fields ('recovery state reads ERR!'), joined; ""
    where it has none."""
    return ", ".join(c for c in gpu.cell_faults if c.startswith(f"{RECOVERY_STATE} reads "))
