"""vram of a GPU with no memory of its own (nvidia-smi's `Not Supported` memory: GpuInfo.
memory_unified): an integrated GPU (a Jetson Orin or Thor module, the GB10 of a DGX Spark) shares
the system's RAM with the CPU, so nvidia-smi never gives its total and no setting of the
provider's makes it: the sentence names the GPU's kind and points at the system's memory."""

from __future__ import annotations

from gpuonboard.facts.nvidia_smi import GpuInfo
from gpuonboard.steps.base import Check
from gpuonboard.steps.checks.ngc import gpu_class

# (a word of the name, the integrated GPU it names)
_KINDS = (
    ("ORIN", "a Jetson Orin module's integrated GPU"),
    ("THOR", "a Jetson Thor module's integrated GPU"),
    ("GB10", "the GB10's (DGX Spark) GPU"),
    ("NVGPU", "a Jetson module's integrated GPU"),
    ("TEGRA", "a Jetson (Tegra) module's integrated GPU"),
)


def _kind(name: str) -> str:
    words = name.upper().replace("(", " ").replace(")", " ").split()
    return next((said for word, said in _KINDS if word in words), "an integrated GPU")


def unified_vram(expected: str, gpus: list[GpuInfo]) -> Check | None:
    """vram where every GPU read says its memory size is not supported (no data-centre card's
    HBM): unverified, saying the memory is the system's; None otherwise."""
    if not gpus or not all(g.memory_unified and g.memory_total_mib is None for g in gpus):
        return None
    if any(gpu_class(g.name, g.product_brand) == "datacenter" for g in gpus):
        return None
    kinds = sorted({_kind(g.name) for g in gpus})
    names = sorted({g.name.strip() for g in gpus})
    return Check(
        "vram",
        expected,
        f"unknown: nvidia-smi gives no memory total for {', '.join(names)} (`Not Supported`):"
        f" {' / '.join(kinds)}, which shares the system's memory",
        "unverified",
        "an integrated GPU has no memory of its own: it shares the system's RAM with the CPU, so"
        " nvidia-smi never reports a GPU memory total for it and no setting changes that; what a"
        " job may use is the system's memory, less what the system holds (`free -g`: the ram rule)",
    )
