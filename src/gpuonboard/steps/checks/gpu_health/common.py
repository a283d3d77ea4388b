"""What every gpu_health rule shares: the default thresholds, the hard-throttle reasons, a GPU's
label in a row, a list of GPUs said short, and whether a GPU is idle."""

from __future__ import annotations

from gpuonboard.facts.nvidia_smi import GpuInfo
from gpuonboard.steps.checks.ngc import gpu_class

DEFAULTS: dict[str, float] = {
    "temperature_warn": 80,  # degrees C
    "temperature_fail": 87,
    "power_cap_warn": 0.98,  # enforced limit / default limit
    "power_cap_fail": 0.85,
}
HARD_THROTTLE = ("hw_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown", "sw_thermal_slowdown")
IDLE_PSTATES = {f"P{i}" for i in range(5, 16)}
# what to do about a field the operating system refused to read (faults.BLOCKED_ERRORS): no
# fault of the GPU, a view of it that this login is not given
BLOCKED_ADVICE = (
    "the operating system refused nvidia-smi this reading (NVML's `GPU access blocked by the"
    " operating system`: a sandboxed container such as gVisor's, a WSL2 or Hyper-V guest, or a"
    " device cgroup passes the GPU's control calls on only in part), which says nothing of the"
    " GPU: read it with nvidia-smi on the host itself (outside the sandbox or guest), or ask the"
    " vendor for the host's `nvidia-smi -q`"
)


def sandboxed_advice(sandbox: str) -> str:
    """What to do about readings nvidia-smi could not make inside a sandbox or guest (`sandbox`:
    its kernel log's first line): no evidence of the GPU either way."""
    return (
        f"this login sees the GPUs from inside a sandbox or guest (its kernel log's first line"
        f" {sandbox!r}), whose nvidia-smi cannot read what the sandbox does not pass on to the"
        " driver (gVisor's prints ERR! for the performance state and ECC), so this says nothing"
        " of the GPU: read these fields with nvidia-smi on the host itself, or ask the vendor for"
        " the host's `nvidia-smi -q`"
    )


def gpu_label(g: GpuInfo) -> str:
    return g.called()


def held_as_datacenter(g: GpuInfo) -> bool:
    """A data-centre GPU, or one whose model this output did not name (a `nvidia-smi -q -d ECC`
    view prints no Product Name): a fact missing there is unverified, never excused as a
    consumer card's or a model's without the feature."""
    return not g.name.strip() or gpu_class(g.name, g.product_brand) == "datacenter"


def may_have_ecc(g: GpuInfo) -> bool:
    """A GPU that has ECC memory or may have it: a data-centre or workstation card, or one this
    tool does not recognise (a new model, a vGPU profile's name); only a GeForce card is taken
    to have none. Where such a GPU's ECC facts were not read, they are unknown, not absent."""
    return held_as_datacenter(g) or gpu_class(g.name, g.product_brand) != "consumer"


def no_ecc_said(g: GpuInfo) -> bool:
    """nvidia-smi printed N/A for the card's ECC mode, outside a vGPU guest (whose driver hides
    the board's ECC: a V100's or an A6000's profile may print N/A)."""
    return g.ecc_na and (g.virtualization_mode or "").upper() != "VGPU"


def is_idle(g: GpuInfo) -> bool:
    """Idle GPUs downshift their PCIe link and clocks to save power (not a fault)."""
    return (
        "gpu_idle" in g.clock_event_reasons
        or (g.performance_state in IDLE_PSTATES)
        or (g.utilization_gpu_pct == 0 and g.performance_state is None)
    )


def gpu_list(some: list[GpuInfo], every: list[GpuInfo]) -> str:
    """'GPU 0, GPU 3', or 'all 8 GPUs' when `some` is every GPU of the host ('all 3 CSV rows'
    where the rows are not known to be GPUs)."""
    if len(some) == len(every) > 1:
        return f"all {len(every)} {'CSV rows' if some[0].csv_row is not None else 'GPUs'}"
    return ", ".join(gpu_label(g) for g in some)
