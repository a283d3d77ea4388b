"""Signs, in any output of the box, that the login runs in a WSL2 guest: its GPU is the Windows
host's, handed to Linux through GPU paravirtualisation (dxgkrnl, `/dev/dxg`), neither bare metal
nor PCI pass-through, so `virtualization` warns (round 37, measure37e 07, 08). NVIDIA's CUDA on
WSL user guide (https://docs.nvidia.com/cuda/wsl-user-guide/): the Windows driver is the one
driver, mapped into the guest as libcuda and nvidia-smi under /usr/lib/wsl/lib; no Linux display
driver is installed in the guest."""

from __future__ import annotations

import re

from gpuonboard.connection.gather import Facts

# a WSL2 kernel's release (`6.6.87.2-microsoft-standard-WSL2`, `5.10.16.3-microsoft-standard-WSL2`,
# `4.19.104-microsoft-standard`): uname's, a kernel log's banner, Python's `platform.platform()`
_WSL_KERNEL = re.compile(r"\b\d+\.\d+[\w.]*-microsoft-standard(?:-WSL2)?\b")
# the guest's mapped Windows driver files (`which nvidia-smi` -> /usr/lib/wsl/lib/nvidia-smi)
_WSL_LIB = re.compile(r"/usr/lib/wsl/(?:lib|drivers)/[\w./-]*")
# the paravirtual GPU driver's kernel lines (`hv_vmbus: registering driver dxgkrnl`, `misc dxg:`)
_DXG = re.compile(r"\bregistering driver dxgkrnl\b|\bmisc dxg: dxgk:")
# the table's banner: `NVIDIA-SMI 580.102.01   Driver Version: 581.57` (R610: KMD Version)
_BANNER = re.compile(
    r"NVIDIA-SMI\s+(\d+\.\d+(?:\.\d+)?)\s.*?\b(?:Driver|KMD) Version:\s*(\d+\.\d+(?:\.\d+)?)\b"
)


def _older(tool: str, driver: str) -> bool:
    """Whether nvidia-smi's version is older than the driver's, of its branch or the one or two
    before (WSL2: 580 beside 581; never the old layout's tool number `5.319.37` of driver 319.37)."""
    have, want = tuple(map(int, tool.split("."))), tuple(map(int, driver.split(".")))
    return want[0] - 2 <= have[0] and have < want


def banner_windows_driver(text: str) -> tuple[str, str] | None:
    """(nvidia-smi's version, the driver's) where a table's banner shows a WSL2 guest's pair: the
    Windows driver's two-part version (`581.57`) beside an older nvidia-smi of the Linux side
    (`580.102.01`, `530.47`); None otherwise (Colab's newer tool over its driver, a Linux box's
    mixed packages of three-part versions, one version in both)."""
    for tool, driver in _BANNER.findall(text):
        if driver.count(".") == 1 and tool != driver and _older(tool, driver):
            return tool, driver
    return None


def wsl_sign(facts: Facts) -> str | None:
    """What says the login is a WSL2 guest (the first sign found), or None."""
    texts = [facts.kernel or "", *(out.stdout for out in facts.raw.values())]
    for text in texts:
        if m := _WSL_KERNEL.search(text):
            return f"kernel {m.group(0)}"
    for text in texts:
        if m := _WSL_LIB.search(text):
            return f"{m.group(0)}, the WSL2 guest's mapped Windows driver"
        if _DXG.search(text):
            return "the dxgkrnl paravirtual GPU driver in its kernel log"
    for text in texts:
        if pair := banner_windows_driver(text):
            return (
                f"driver {pair[1]}, a Windows driver's version, beside nvidia-smi {pair[0]}: most"
                " likely the Windows driver seen from a WSL2 guest"
            )
    return None
