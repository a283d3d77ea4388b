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
not taken into the name. A `GPU N: ... (UUID: ...)` with more text after its `)` than a
joined listing's next `GPU N:` is no `-L` line: another command's lines joined onto one
(`nvidia-smi nvlink -s`'s `GPU 0: ... (UUID: GPU-...) Link 0: 25 GB/s ...`): no GPU of such a
text is read, the listing not whole, and `GpuList.trailed` counts such lines (offline refuses a
file that holds one with a sentence: api/offline.py).

A listing cut short (a dropped session, a capture or paste cut mid-line) is not whole
(`GpuList.complete` False), on the format's own signs: a `(UUID: GPU-` whose UUID is neither
whole (8-4-4-4-12) nor closed by `)`; a last line the text ends inside (no final newline) that is
no whole entry (a GPU line without its `(UUID:`/`(S/N:` part, whose name may be cut: `GPU 0:
NVIDIA L40` of an L40S, kept nameless; a MIG line cut mid-UUID; any unreadable line). A clean
cut between lines leaves none of them and cannot be told from a shorter listing.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from gpuonboard.facts.joined_entries import entries
from gpuonboard.once import lazy_re

__all__ = [
    "GpuList",
    "ends_at_name",
    "ListedGpu",
    "MigDevice",
    "parse_gpu_list",
    "parse_gpu_list_tuples",
]


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
    # False when the listing was cut short mid-line (see the module's docstring): an incomplete
    # probe, its GPU count and a cut GPU's name no evidence
    complete: bool = True
    # the GPU lines with more text after their `(UUID: ...)` than a joined listing's next entry
    # (see the module's docstring): another output's lines joined on, no GPU of the text read
    trailed: int = 0


_GPU = lazy_re(r"^GPU\s+(\d+):\s*(.*?)\s*(?:\((UUID|S/N):\s*([^)]*?)\s*(?:(\))|$))?\s*$")
# where lines were joined (a one-line paste, a lost newline): a `GPU N:` or `MIG ... Device N:`
# right after an entry's closing `)` (facts/joined_entries.py)
_ENTRY_END, _ENTRY = (")",), r"GPU\s+\d+:\s|MIG\s+\S+\s+Device\s+\d+:"
# a GPU line's `(UUID: ...)` / `(S/N: ...)` with more text after its `)` (group 1)
_TRAILED = lazy_re(r"^GPU\s+(\d+):.*?\((?:UUID|S/N):[^)]*\)\s*(\S.*)$")
# a joined listing's next entry that the text ends inside (`... (UUID: GPU-...) GP`)
_NEXT_BEGUN = lazy_re(r",?\s*(?:G(?:P(?:U(?:\s+\d*:?)?)?)?|M(?:I(?:G\b.*)?)?)\s*")
_MIG = lazy_re(r"^\s*MIG\s+(\S+)\s+Device\s+(\d+):\s*(?:\(UUID:\s*([^)]*?)\s*(?:(\))|$))?\s*$")
# a whole UUID: GPU-<8-4-4-4-12>, MIG-<8-4-4-4-12>, or R450's MIG-GPU-<8-4-4-4-12>/<gi>/<ci>
_WHOLE_UUID = lazy_re(
    r"^(?:GPU|MIG(?:-GPU)?)-[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12}(?:/\d+/\d+)?$", re.IGNORECASE
)


def _cut_entry(kind: str | None, ident: str | None, closed: bool, at_end: bool) -> bool:
    """Whether a GPU or MIG entry was cut: a UUID begun that is neither whole nor closed by `)`,
    or, on a last line the text ends inside (`at_end`), an entry neither closed nor holding a
    whole UUID (a name or serial that may go on: `GPU 0: NVIDIA L40` of an L40S)."""
    whole_uuid = kind == "UUID" and bool(ident) and bool(_WHOLE_UUID.match(ident or ""))
    if kind == "UUID" and not closed and not whole_uuid:
        return True
    return at_end and not closed and not whole_uuid


def _parts(text: str) -> tuple[list[str], int]:
    """The listing's entries (a joined line split at each `GPU N:`), and the index of the entry
    the text ends inside (no final newline), -1 when it ends with a newline."""
    parts = [part for line in text.splitlines() for part in entries(line, _ENTRY_END, _ENTRY)]
    tail = text.rsplit("\n", 1)[-1]
    filled = [i for i, part in enumerate(parts) if part.strip()]
    return parts, (filled[-1] if tail.strip() and filled else -1)


def parse_gpu_list(text: str) -> GpuList:
    """Parse `nvidia-smi -L` into GPUs (index, name, UUID) with their MIG devices."""
    gpus: list[ListedGpu] = []
    warnings: list[str] = []
    cut: list[str] = []
    joined: list[str] = []  # (a GPU line with more text after its `)`)
    lines, open_at = _parts(text)
    for at, line in enumerate(lines):
        if not line.strip():
            continue
        if (t := _TRAILED.match(line)) and not (at == open_at and _NEXT_BEGUN.fullmatch(t.group(2))):
            joined.append(f"GPU {t.group(1)}'s line goes on after its `)`: {t.group(2)[:40]!r}")
        elif m := _GPU.match(line):
            index, name, kind, ident = int(m.group(1)), m.group(2), m.group(3), m.group(4)
            if _cut_entry(kind, ident, bool(m.group(5)), at == open_at):
                cut.append(f"GPU {index}'s {kind or 'name'}")
                name = name if kind is not None else ""  # the name may go on: not read
                ident = None  # a UUID cut short identifies nothing
            uuid = ident if kind == "UUID" and ident else None
            gpus.append(ListedGpu(index=index, name=name, uuid=uuid))
        elif (m := _MIG.match(line)) and gpus:
            parent = gpus[-1]
            uuid = m.group(3) or None
            if _cut_entry("UUID" if m.group(3) is not None else None, uuid, bool(m.group(4)), at == open_at):
                cut.append(f"a MIG device of GPU {parent.index}")
                uuid = None
            mig = MigDevice(profile=m.group(1), index=int(m.group(2)), uuid=uuid)
            gpus[-1] = ListedGpu(parent.index, parent.name, parent.uuid, (*parent.mig_devices, mig))
        else:
            warnings.append(f"nvidia-smi -L: unexpected line {line.strip()!r}")
            if at == open_at:
                cut.append("its last line")
    if cut:
        warnings.append(f"nvidia-smi -L ends mid-entry ({', '.join(cut)} cut short): incomplete probe, rerun")
    if joined:  # (another output's lines: no GPU of it is a listing's)
        said = f"nvidia-smi -L: {'; '.join(joined)}: no listing as nvidia-smi prints it, save it again"
        return GpuList((), (*warnings, said), complete=False, trailed=len(joined))
    return GpuList(tuple(gpus), tuple(warnings), complete=not cut)


def ends_at_name(text: str) -> str:
    """Why a typed `nvidia-smi -L`'s output that ends a saved session is cut: its last line is a
    GPU line that stops at the name, without the `(UUID: ...)` every driver since R260 prints
    (XuehaiPan/nvitop#8 ends `GPU 0: NVIDIA A100-SXM4-80GB`); "" otherwise. Only for a typed
    command's output: collect_env's GPU lines are -L's with the UUIDs taken out, whole."""
    lines = [line for line in text.splitlines() if line.strip()]
    m = _GPU.match(lines[-1]) if lines else None
    if m is None or m.group(3) is not None:
        return ""
    return (
        f"the session ends at GPU {m.group(1)}'s line of `nvidia-smi -L` without its `(UUID: ...)`"
        " part (cut after the name)"
    )


def parse_gpu_list_tuples(text: str) -> Sequence[tuple[int, str, str | None]]:
    """(index, name, uuid) per GPU."""
    return [(g.index, g.name, g.uuid) for g in parse_gpu_list(text).gpus]
