"""The NVIDIA kernel driver's own file of a GPU it drives, `/proc/driver/nvidia/gpus/<bus>/information`
(`Model:           NVIDIA A10`, `GPU UUID:`, `Bus Location:    0000:07:00.0`, `GPU Firmware:`):
it exists only while nvidia.ko is loaded and holds that GPU. Read where nvidia-smi is missing, it
says the driver is loaded and its utilities are what is missing (a container given the GPU
without the driver's `utility` capability, nvidia-utils not installed), never that no driver is
installed. Several files printed back to back (`cat /proc/driver/nvidia/gpus/*/information`) are
read each. Pure: no I/O."""

from __future__ import annotations

import re
from typing import NamedTuple

# the probe a saved information file is read as (offline: api/saved_forms.py)
GPU_INFO_PROBE = "nvidia_gpu_information"
GPU_INFO_FILE = "/proc/driver/nvidia/gpus/<bus>/information"

# one `Key:  value` line of the file (nv-procfs.c's `seq_printf(s, "Model: \t\t %s\n", ...)`)
_FIELD = re.compile(r"^[ \t]*([A-Z][A-Za-z ]*?):[ \t]*(.*?)[ \t]*$")
# the file's keys (of drivers from R300 on; `GPU Firmware` and `GPU Excluded` of later ones)
_KEYS = frozenset(
    {
        "Model",
        "IRQ",
        "GPU UUID",
        "Video BIOS",
        "Bus Type",
        "DMA Size",
        "DMA Mask",
        "Bus Location",
        "Device Minor",
        "GPU Firmware",
        "GPU Excluded",
        "Blacklisted",
    }
)


class GpuInformation(NamedTuple):
    """One GPU's file: its model, UUID, bus location and GSP firmware's version ("" if not said)."""

    model: str
    uuid: str
    bus: str
    firmware: str


def looks_like_gpu_information(text: str) -> bool:
    """Whether every line of `text` is a field of the file (blank lines between files), its
    first a `Model:` line and a `GPU UUID:` or `Bus Location:` among them."""
    fields = [_FIELD.match(line) for line in text.splitlines() if line.strip()]
    if not fields or any(f is None or f.group(1) not in _KEYS for f in fields):
        return False
    keys = [f.group(1) for f in fields if f is not None]
    return keys[0] == "Model" and ("GPU UUID" in keys or "Bus Location" in keys)


def gpu_information(text: str) -> list[GpuInformation]:
    """Each GPU's fields, a `Model:` line starting the next file; [] for another text."""
    if not looks_like_gpu_information(text):
        return []
    found: list[dict[str, str]] = []
    for line in text.splitlines():
        if (field := _FIELD.match(line)) is None or not line.strip():
            continue
        if field.group(1) == "Model":
            found.append({})
        found[-1][field.group(1)] = field.group(2)
    return [
        GpuInformation(
            f.get("Model", ""), f.get("GPU UUID", ""), f.get("Bus Location", ""), f.get("GPU Firmware", "")
        )
        for f in found
    ]


def information_said(text: str) -> str:
    """ "/proc/driver/nvidia/gpus/0000:07:00.0/information: NVIDIA A10, firmware 535.129.03" (one
    GPU), "... 2 GPUs' files: NVIDIA A10 at 0000:07:00.0, ..." (several); "" for another text."""
    gpus = gpu_information(text)
    if not gpus:
        return ""

    def one(g: GpuInformation) -> str:
        firmware = f", firmware {g.firmware}" if g.firmware and g.firmware != "N/A" else ""
        return f"{g.model or 'a GPU'}{firmware}"

    if len(gpus) == 1:
        bus = gpus[0].bus or "<bus>"
        return f"/proc/driver/nvidia/gpus/{bus}/information: {one(gpus[0])}"
    listed = ", ".join(f"{one(g)} at {g.bus or '?'}" for g in gpus)
    return f"/proc/driver/nvidia/gpus/*/information, {len(gpus)} GPUs' files: {listed}"
