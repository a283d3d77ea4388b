"""The GPUs nvidia-smi names as unopenable ("Unable to determine the device handle for gpu
ADDR: CAUSE") in any of its outputs, and their place in the merged GPU set (facts/gpu_merge.py):
a fault of the GPU another format read at that address, else an unreadable GPU of its own.
Pure: no I/O.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence

from gpuonboard.facts.gpu_agree import LISTINGS
from gpuonboard.facts.gpu_ids import bus_key
from gpuonboard.facts.gpu_views import fault_seen
from gpuonboard.facts.nvidia_smi import GpuInfo
from gpuonboard.once import lazy_re

# nvidia-smi's line for a GPU it cannot open, printed in place of that GPU's record or row
# ("Unable to determine the device handle for gpu 0000:9B:00.0: Unknown Error", "... for GPU
# 00000000:02:00.0: GPU is lost. Reboot the system to recover this GPU"); newer drivers put the
# GPU's index first ("... for GPU1: 0000:34:00.0: Unknown Error", R610 over a table of GPUs 0,
# 2 and 3: tests/fixtures/real/nvidia-smi__rtx-pro-6000-blackwell__4gpu-1-lost__driver610.57.04.txt)
_NO_HANDLE = lazy_re(
    r"Unable to (?:determine|detect) the device handle for gpu\s*(?:(\d+)\s*:\s*)?"
    r"([0-9a-f]{4,8}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-9a-f])\s*:?\s*(.*)",
    re.IGNORECASE,
)


def names_unopened(line: str) -> bool:
    """Whether `line` is nvidia-smi's line for a GPU it cannot open (_NO_HANDLE)."""
    return _NO_HANDLE.search(line) is not None


def unopened_gpus(texts: Sequence[str], labels: Sequence[str] = ()) -> list[GpuInfo]:
    """The GPUs nvidia-smi names as unopenable ("Unable to determine the device handle for gpu
    ADDR: CAUSE") in any of its outputs: each is a GPU that is there and cannot be read, a fault
    (a GPU fallen off the bus), never a GPU missing from a cut-off output. With `labels` (each
    text's format), each GPU's provenance names the format whose output said so."""
    found: dict[str, GpuInfo] = {}
    for i, text in enumerate(texts):
        if not _may_name_unopened(text):  # (a whole XML record per GPU: no line-by-line search)
            continue
        for line in text.splitlines():
            m = _NO_HANDLE.search(line)
            key = bus_key(m.group(2)) if m else None
            if m and key and key not in found:
                cause = m.group(3).strip().rstrip(".") or "Unknown Error"
                index = int(m.group(1)) if m.group(1) else -1  # -1: not printed
                said = (("faults", labels[i]),) if i < len(labels) else ()
                found[key] = GpuInfo(
                    index=index,
                    name="",
                    pci_bus_id=m.group(2),
                    faults=(f"no device handle: {cause[:120]}",),
                    provenance=said,
                )
    return list(found.values())


# (Windows' nvidia-smi says "Unable to detect the device handle for GPU0000:B1:00.0: ...")
_NO_HANDLE_WORDS = (
    "Unable to determine the device handle for gpu",
    "Unable to detect the device handle for gpu",
)


_NO_HANDLE_ANY = lazy_re("|".join(re.escape(w) for w in _NO_HANDLE_WORDS), re.IGNORECASE)


def _first_free(taken: set[int]) -> int:
    """The smallest GPU index not in `taken`."""
    return next(i for i in range(len(taken) + 1) if i not in taken)


def _may_name_unopened(text: str) -> bool:
    """Whether `text` holds _NO_HANDLE's words anywhere (each line it matches holds them). ASCII
    text is searched lower-cased: the same there, and far faster than the case-blind regex."""
    if text.isascii():
        lower = text.lower()
        return any(w.lower() in lower for w in _NO_HANDLE_WORDS)
    return _NO_HANDLE_ANY.search(text) is not None


def _unopened_at(gpu: GpuInfo, lost: GpuInfo, copies: Sequence[tuple[str, GpuInfo]]) -> GpuInfo:
    """`gpu` (read by some format) with the fault of the output that could not open it (`lost`,
    at its PCI address): never a GPU of its own, never cleared by the format that read it."""
    label = next((where for field, where in lost.provenance if field == "faults"), "")
    clean = [c for c, g in copies if c not in LISTINGS and not g.faults]
    faults = [fault_seen(f, label, clean) if label else f for f in lost.faults]
    return dataclasses.replace(gpu, faults=tuple(dict.fromkeys((*gpu.faults, *faults))))


def _with_unopened(
    gpus: list[GpuInfo], unopened: Sequence[GpuInfo], copies: list[list[tuple[str, GpuInfo]]]
) -> list[GpuInfo]:
    """`gpus` with each GPU nvidia-smi could not open: a fault of the GPU another format read at
    its address, else an unreadable GPU of its own, at the index nvidia-smi printed or the first
    one no listed GPU holds (it numbers the GPUs it opens as it would all: 0, 2, 3 leave 1)."""
    gpus = list(gpus)
    for g in unopened:
        at = [i for i, x in enumerate(gpus) if bus_key(x.pci_bus_id) == bus_key(g.pci_bus_id)]
        if at:
            gpus[at[0]] = _unopened_at(gpus[at[0]], g, copies[at[0]] if at[0] < len(copies) else [])
            continue
        taken = {x.index for x in gpus}
        index = g.index if g.index >= 0 and g.index not in taken else _first_free(taken)
        gpus.append(dataclasses.replace(g, index=index))
    return gpus
