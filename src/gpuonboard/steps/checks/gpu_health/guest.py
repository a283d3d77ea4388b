"""Signs, in any output of the box, that the login runs in a WSL2 guest: its GPU is the Windows
host's, handed to Linux through GPU paravirtualisation (dxgkrnl, `/dev/dxg`), neither bare metal
nor PCI pass-through, so `virtualization` warns (round 37, measure37e 07, 08). NVIDIA's CUDA on
WSL user guide (https://docs.nvidia.com/cuda/wsl-user-guide/): the Windows driver is the one
driver, mapped into the guest as libcuda and nvidia-smi under /usr/lib/wsl/lib; no Linux display
driver is installed in the guest."""

from __future__ import annotations

from gpuonboard.connection.gather import Facts
from gpuonboard.once import lazy_re
from gpuonboard.steps.checks.driver_banner import banner_windows_driver

# a WSL2 kernel's release (`6.6.87.2-microsoft-standard-WSL2`, `5.10.16.3-microsoft-standard-WSL2`,
# `4.19.104-microsoft-standard`): uname's, a kernel log's banner, Python's `platform.platform()`
_WSL_KERNEL = lazy_re(r"\b\d+\.\d+[\w.]*-microsoft-standard(?:-WSL2)?\b")
# the guest's mapped Windows driver files (`which nvidia-smi` -> /usr/lib/wsl/lib/nvidia-smi)
_WSL_LIB = lazy_re(r"/usr/lib/wsl/(?:lib|drivers)/[\w./-]*")
# the paravirtual GPU driver's kernel lines (`hv_vmbus: registering driver dxgkrnl`, `misc dxg:`)
_DXG = lazy_re(r"\bregistering driver dxgkrnl\b|\bmisc dxg: dxgk:")


def wsl_sign(facts: Facts) -> str | None:
    """What says the login is a WSL2 guest (the first sign found), or None. Each pattern runs
    only on an output that holds its literal part (a plain `in`): an 8-GPU box's outputs are
    hundreds of kilobytes where the kernel pattern's digits backtrack (8 ms a host before)."""
    texts = [facts.kernel or "", *(out.stdout for out in facts.raw.values())]
    for text in texts:
        if "-microsoft-standard" in text and (m := _WSL_KERNEL.search(text)):
            return f"kernel {m.group(0)}"
    for text in texts:
        if "/usr/lib/wsl/" in text and (m := _WSL_LIB.search(text)):
            return f"{m.group(0)}, the WSL2 guest's mapped Windows driver"
        if "dxg" in text and _DXG.search(text):
            return "the dxgkrnl paravirtual GPU driver in its kernel log"
    for text in texts:
        if pair := banner_windows_driver(text):
            return (
                f"driver {pair[1]}, a Windows driver's version, beside nvidia-smi {pair[0]}: most"
                " likely the Windows driver seen from a WSL2 guest"
            )
    return None
