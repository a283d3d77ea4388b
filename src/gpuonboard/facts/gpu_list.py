"""Pure parser for `nvidia-smi -L` (one line per GPU, an indented line per MIG device).

Real shapes (tests/fixtures/real/nvidia-smi-L__*):

    GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-00000000-0000-0000-0000-000000000000)
      MIG 3g.40gb     Device  0: (UUID: MIG-00000000-0000-0000-0000-000000000000)
      MIG 1c.3g.71gb  Device  0: (UUID: MIG-...)      (a compute-instance profile, H200)

Old drivers print `GPU 0: Tesla K80 (S/N: 0324...)` or no UUID at all: the name is kept and
the UUID is None. Any other non-empty line ("No devices were found", "NVIDIA-SMI has failed
...") is kept as a warning, never read as a GPU.

Pasted listings come mangled in two real ways (tests/fixtures/real/nvidia-smi-L__*): a one-line
form field joins the lines (`GPU 0: ... (UUID: GPU-...) GPU 1: ... (UUID: GPU-...)`, or with
", " between them): each `GPU N:` after a closing `)` starts a GPU of its own; and a line whose
closing `)` was lost (`GPU 0: GeForce GTX 1660 Ti (UUID: GPU-e18a...`): the UUID is still read,
not taken into the name.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["GpuList", "ListedGpu", "MigDevice", "parse_gpu_list", "parse_gpu_list_tuples"]


@dataclass(frozen=True)
class MigDevice:
    """One MIG device under a GPU: profile (`3g.40gb`, `1c.3g.71gb`), device index, UUID."""

    profile: str
    index: int
    uuid: str | None


@dataclass(frozen=True)
class ListedGpu:
    """One GPU line of `nvidia-smi -L` with the MIG devices listed under it."""

    index: int
    name: str
    uuid: str | None
    mig_devices: tuple[MigDevice, ...] = ()


@dataclass(frozen=True)
class GpuList:
    """Everything `nvidia-smi -L` said: the GPUs in order, and lines that were not GPUs."""

    gpus: tuple[ListedGpu, ...]
    warnings: tuple[str, ...] = ()


_GPU = re.compile(r"^GPU\s+(\d+):\s*(.*?)\s*(?:\((UUID|S/N):\s*([^)]*?)\s*(?:\)|$))?\s*$")
# where lines were joined (a one-line paste): a `GPU N:` right after a GPU entry's closing `)`
_JOINED = re.compile(r"(?<=\))\s*,?\s+(?=GPU\s+\d+:\s)")
_MIG = re.compile(r"^\s+MIG\s+(\S+)\s+Device\s+(\d+):\s*(?:\(UUID:\s*([^)]*?)\s*\))?\s*$")


def parse_gpu_list(text: str) -> GpuList:
    """Parse `nvidia-smi -L` into GPUs (index, name, UUID) with their MIG devices."""
    gpus: list[ListedGpu] = []
    warnings: list[str] = []
    lines = [part for line in text.splitlines() for part in _JOINED.split(line)]
    for line in lines:
        if not line.strip():
            continue
        if m := _GPU.match(line):
            index, name, kind, ident = int(m.group(1)), m.group(2), m.group(3), m.group(4)
            uuid = ident if kind == "UUID" and ident else None
            gpus.append(ListedGpu(index=index, name=name, uuid=uuid))
        elif (m := _MIG.match(line)) and gpus:
            parent = gpus[-1]
            mig = MigDevice(profile=m.group(1), index=int(m.group(2)), uuid=m.group(3) or None)
            gpus[-1] = ListedGpu(parent.index, parent.name, parent.uuid, (*parent.mig_devices, mig))
        else:
            warnings.append(f"nvidia-smi -L: unexpected line {line.strip()!r}")
    return GpuList(tuple(gpus), tuple(warnings))


def parse_gpu_list_tuples(text: str) -> Sequence[tuple[int, str, str | None]]:
    """(index, name, uuid) per GPU: the shape facts/gpu_merge.py's ListParser reads."""
    return [(g.index, g.name, g.uuid) for g in parse_gpu_list(text).gpus]
