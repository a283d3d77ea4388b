"""The vGPU profile names a guest's NVIDIA driver prints ('GRID A100-4C', 'NVIDIA RTXA6000-24Q',
'GRID A100-2-10C'): `vgpu_profile` reads one, `is_vgpu` tells a vGPU (a guest's share of a GPU)
from the GPU (`model_match` compares the profiles; `ngc` asks before it grants CUDA forward
compatibility)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpuonboard.once import lazy_re

# NVIDIA vGPU type names, as a guest's nvidia-smi prints them: "GRID A100-4C" (older drivers),
# "NVIDIA A100-4C", "NVIDIA RTXA6000-24Q", "GRID P4-1Q", "NVIDIA RTX Pro 6000 Blackwell DC-48C",
# "GRID A100-2-10C" (MIG-backed: 2 compute slices, 10 GB): <board>-[<slices>-]<framebuffer GB>
# <series>, and a MIG-backed type's attribute after it: ME, NOME, MEALL or GFX, its MIG profile's
# +me, -me, +me.all or +gfx ("A100-1-5CME", "DC-1-24CGFX": NVIDIA/vgpu-device-manager
# pkg/types/vgpu.go, migBackedRegex). The board's own letters name a board, not a product marker:
# A100D, V100D/V100DX (the 32 GB V100 PCIe/SXM2), A100X, H100XM, H100L. (Kepler's "GRID K280Q"
# style is not read.)
_VGPU = re.compile(
    r"^\s*(?:(?:GRID|NVIDIA)\s+)?(?P<board>[A-Z][A-Z0-9]*(?:[ -][A-Z0-9]+)*?)-(?:(?P<slices>\d+)-)?"
    r"(?P<fb>\d+)(?P<series>[ABCQ])(?(slices)(?P<attr>MEALL|NOME|ME|GFX)?)\s*$",
    re.IGNORECASE,
)
# the word vGPU in a GPU's name ('NVIDIA vGPU-48GB', 'NVIDIA vGPU 32GB'): never a physical GPU's
# (data/gpu_pci_ids.yml holds no name with it), so a share of one, named as such
_SAYS_VGPU = lazy_re(r"(?<![A-Za-z0-9])vGPU(?![A-Za-z])", re.IGNORECASE)
_VGPU_ATTRIBUTES = {
    "ME": "with media extensions",
    "NOME": "without media extensions",
    "MEALL": "with all media extensions",
    "GFX": "with graphics",
}
_VGPU_SERIES = {
    "A": "A-series: virtual applications",
    "B": "B-series: virtual PC",
    "C": "C-series: compute",
    "Q": "Q-series: RTX virtual workstation",
}


@dataclass(frozen=True)
class VgpuProfile:
    """A vGPU type parsed from its name: a share of a board's framebuffer, not the whole GPU."""

    board: str  # as printed: 'A100', 'A100D', 'RTXA6000', 'RTX Pro 6000 Blackwell DC'
    slices: int | None  # MIG-backed profiles: the compute slices ('A100-2-10C': 2)
    framebuffer_gb: int
    series: str  # 'C'
    attribute: str = ""  # a MIG-backed type's: 'ME' ('A100-1-5CME'), 'NOME', 'MEALL', 'GFX'

    @property
    def profile(self) -> str:
        """The profile as NVIDIA names it, without GRID/NVIDIA: 'A100-4C', 'A100-2-10C', 'A100-1-5CME'."""
        slices = f"{self.slices}-" if self.slices is not None else ""
        return f"{self.board}-{slices}{self.framebuffer_gb}{self.series}{self.attribute}"

    def describe(self) -> str:
        """'a vGPU profile with 4 GB of the A100 board's framebuffer (C-series: compute)'."""
        slices = f" on {self.slices} compute slice(s)" if self.slices is not None else ""
        if self.attribute:
            slices += f" {_VGPU_ATTRIBUTES[self.attribute]}"
        size = f"{self.framebuffer_gb} GB" if self.framebuffer_gb else "less than 1 GB"  # ('M60-0B': 512 MB)
        return (
            f"a vGPU profile with {size} of the {self.board} board's framebuffer"
            f"{slices} ({_VGPU_SERIES[self.series]})"
        )


def vgpu_profile(name: str) -> VgpuProfile | None:
    """The vGPU profile a GPU name is ('GRID A100-4C', 'NVIDIA RTXA6000-24Q'), else None."""
    m = _VGPU.match(name)
    if m is None or not any(c.isdecimal() for c in m.group("board")):
        return None
    slices = m.group("slices")
    return VgpuProfile(
        board=m.group("board"),
        slices=int(slices) if slices is not None else None,
        framebuffer_gb=int(m.group("fb")),
        series=m.group("series").upper(),
        attribute=(m.group("attr") or "").upper(),
    )


def is_vgpu(name: str, brand: str | None = None, virtualization_mode: str | None = None) -> bool:
    """A vGPU (a guest's share of a GPU, not the GPU): a vGPU profile's name, a vGPU product
    brand ('NVIDIA Virtual Compute Server', 'NVIDIA RTX Virtual Workstation', 'NVIDIA Virtual
    PC'; not 'GRID' alone, the brand of physical GRID boards too), or the virtualization mode
    VGPU that `nvidia-smi -q` reports."""
    if vgpu_profile(name) is not None:
        return True
    if "virtual" in (brand or "").lower():
        return True
    return (virtualization_mode or "").strip().upper() == "VGPU"


def says_vgpu(name: str) -> bool:
    """A GPU name that says vGPU itself, no NVIDIA vGPU profile's (a rental's renamed share,
    AutoDL's 'NVIDIA vGPU-48GB'): a share of a GPU by its name, whose licence and board are not
    told (so `is_vgpu`, which asks for a licence, leaves it out)."""
    return _SAYS_VGPU.search(name) is not None
