"""What the prove steps' rules share: the step's summary sentence, the sentences for a box
whose torch ran on the CPU (a broken driver, no CUDA build, GPUs hidden from torch), and the
GPU count nvidia-smi gave. Pure, over facts and figures."""

from __future__ import annotations

from gpuonboard.connection.gather import Facts
from gpuonboard.connection.probe_commands import TIMED_OUT
from gpuonboard.facts.nvidia_smi_failure import nvidia_smi_failure as smi_failure
from gpuonboard.steps.base import Check


def _gpu_count(facts: Facts) -> int:
    return len(facts.gpu.gpus) if facts.gpu else 0


def nvidia_smi_failure(facts: Facts) -> str | None:
    """Why nvidia-smi listed no GPU on a box that has it (a broken driver: exit 9 "couldn't
    communicate with the NVIDIA driver", or it hung), or None: it listed GPUs, it is absent, or
    it said "No devices were found" (only those two mean "no GPU on this host"). The line quoted
    is the one naming the cause (`facts.nvidia_smi_failure`: a warning may come first)."""
    if facts.gpu and facts.gpu.gpus:
        return None
    raw = facts.gpu_raw if "nvidia_smi" in facts.raw else None
    if raw is None or raw.absent or "No devices were found" in raw.stdout + raw.stderr:
        return None
    if raw.exit_code == TIMED_OUT:
        return "nvidia-smi did not answer (stopped after its timeout)"
    if raw.exit_code == 0:
        return None
    line, _ = smi_failure(raw.stdout, raw.stderr)
    return f"nvidia-smi failed (exit code {raw.exit_code})" + (f": {line[:160]}" if line else "")


def broken_driver_sentence(failure: str) -> str:
    """The one sentence for a box whose nvidia-smi fails (`failure`, as nvidia_smi_failure says
    it): it ran on the CPU, not a GPU-less box; what to do follows the cause its quoted line names
    (`facts.nvidia_smi_failure`), else: fix the driver."""
    _, advice = smi_failure(failure, "")
    advice = advice or "fix the driver (see acceptance's nvidia_driver and gpu_health) and run prove again"
    return (
        f"{failure}: the NVIDIA driver does not answer, so this ran on the CPU and proves nothing"
        f" about the GPUs; {advice}"
    )


def no_cuda_sentence(gpu_count: int, where: str) -> str:
    """The one sentence for a box whose nvidia-smi lists GPUs while torch ran on the CPU."""
    return (
        f"the box lists {gpu_count} GPU(s) but torch in {where} has no CUDA: nothing ran on the GPUs;"
        " use the NGC container (train_in_container) or a CUDA build of torch"
    )


def hidden_gpus_sentence(seen: int, gpu_count: int) -> str:
    """The one sentence for a box where torch sees fewer GPUs than nvidia-smi lists."""
    return (
        f"torch sees {seen} of the {gpu_count} GPUs nvidia-smi lists, so {gpu_count - seen} of them were"
        " not exercised: check CUDA_VISIBLE_DEVICES in the host's environment, MIG mode (acceptance's"
        " mig_mode), and `dmesg` for a GPU that CUDA cannot use (Xid)"
    )


def _pct(x: float) -> str:
    return f"{x * 100:.0f} %"


def _summary(what: str, checks: list[Check]) -> tuple[str, bool]:
    """A step's one sentence over its checks and whether it failed: the failed checks, else the
    warnings, naming the checks that could not be judged (`unverified`: never counted a pass)."""
    fails = [c.name for c in checks if c.verdict == "fail"]
    warns = [c.name for c in checks if c.verdict == "warn"]
    unverified = [c.name for c in checks if c.verdict == "unverified"]
    if fails:
        return f"{what}: {len(fails)} check(s) failed: {', '.join(fails)}", True
    judged = f"{len(unverified)} check(s) not judged: {', '.join(unverified)}"
    if warns:
        msg = f"{what}: passed with {len(warns)} warning(s): {', '.join(warns)}"
        return (f"{msg}; {judged}" if unverified else msg), False
    if unverified:
        return f"{what}: {judged}; the other {len(checks) - len(unverified)} passed", False
    return f"{what}: all {len(checks)} checks passed", False
