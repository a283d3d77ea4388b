"""Saved outputs of an nvidia-smi operation that NVML refused (`nvidia-smi nvlink -g 0`: its GPU
line, then `NVML: Unable to get the NvLink link utilization counter control for link 0:
Insufficient Permissions`): refused naming the operation and why (the user-known names of the
saved outputs' kinds are in api/kind_names.py)."""

from __future__ import annotations

import re

# NVML's refusal of one operation, `NVML: ` before it or not: its words, then the error
_REFUSED = re.compile(
    r"^(?:NVML:\s*)?(?:Failed|Unable) to (?P<what>.+?):\s*"
    r"(?P<why>Insufficient Permissions|No permission|Not Supported)\.?$",
    re.I,
)
# the GPU line nvidia-smi prints above each GPU's answer (`nvlink`, `-L`'s shape)
_GPU_LINE = re.compile(r"^GPU \d+: .+$")
# a copied nvidia-smi command (after a prompt or alone)
_SMI_COMMAND = re.compile(r"\bnvidia-smi(?:\.exe)?\s+(?P<args>[^|;&<>]*)")

_WHY = {
    "insufficient permissions": "the query needs root, run it with sudo",
    "no permission": "the query needs root, run it with sudo",
    "not supported": "this GPU or driver does not support it",
}


def nvml_refusal(where: str, text: str, copied: str) -> str | None:
    """The sentence naming an nvidia-smi operation NVML refused, with its GPU lines or without:
    the command (from the copied line), what was refused and why; None for any other text."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    refused = [m for line in lines if (m := _REFUSED.match(line))]
    if not refused or any(not (_REFUSED.match(line) or _GPU_LINE.match(line)) for line in lines):
        return None
    first = refused[0]
    why = first.group("why")
    command = _SMI_COMMAND.search(copied or "")
    args = " ".join(command.group("args").split()) if command else ""
    named = f"`nvidia-smi {args}`" if args else "an nvidia-smi operation"
    topic = "of the links" if "nvlink" in (args + first.group("what")).lower() else "of the GPUs"
    save = "`nvidia-smi nvlink -s` (and `nvidia-smi -q`)" if topic == "of the links" else "`nvidia-smi -q`"
    return (
        f"{where}: {named} refused by NVML ({why}: {_WHY[why.lower()]}): `{first.group(0)[:160]}`;"
        f" it tells nothing {topic}: save {save} of the box."
    )
