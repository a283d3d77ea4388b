"""`nvidia-smi --query-retired-pages=gpu_uuid,retired_pages.address,retired_pages.cause
--format=csv`: one row per retired page (its GPU, its address, `Single Bit ECC` or `Double Bit
ECC`), judged as the `Retired Pages` section of `-q` is: its counts per GPU fill the retired-page
counts memory_repair reads (steps/checks/gpu_health/memory.py: 63 pages fail, a double-bit page
warns), pending retirement still from `-q` / `--query-gpu=retired_pages.pending`.

A row whose address is no number (`[N/A], Single Bit ECC`) is no retired page: nvidia-smi prints
one such row per cause for a GPU without page retirement (an A100 80GB PCIe on driver 580, which
remaps rows instead), so that GPU's counts are not read from it. A GPU no row names has retired
no page only where the output is the box's whole answer (no `-i`) and every GPU it names is one
of the box's GPUs read (an empty answer, the header alone, so too): never a 0 for a GPU the
output may not cover."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence

from gpuonboard.facts.csvtext import csv_rows
from gpuonboard.facts.gpu_ids import bus_key
from gpuonboard.facts.nvidia_smi import GpuInfo

# the probe a saved retired-pages CSV is read as (offline only: api/saved_retired.py), its rows
# `gpu_uuid,gpu_bus_id,address,cause` without header
RETIRED_PROBE = "nvidia_smi_retired"
_ADDRESS = re.compile(r"0x[0-9a-fA-F]+|\d+")
_CAUSES = {"single bit ecc": "sbe", "double bit ecc": "dbe"}


@dataclasses.dataclass
class _Pages:
    pages: set[tuple[int, str]] = dataclasses.field(default_factory=set)  # (address, sbe|dbe)
    unread: bool = False  # (a row of no page: `[N/A]` address, or a cause not known)

    def count(self, kind: str) -> int:
        return sum(1 for _, k in self.pages if k == kind)


def _by_gpu(text: str) -> dict[tuple[str, str], _Pages] | None:
    """(uuid, bus key) -> the distinct pages of that GPU; None where a row is not of this form. A
    page is counted once however many rows name it: a sampled save (`--query-retired-pages=
    timestamp,gpu_uuid,... -l 1 -f FILE`, as monitoring scripts keep it) repeats every retired
    page on every tick."""
    out: dict[tuple[str, str], _Pages] = {}
    for row in csv_rows(text) or []:
        if not "".join(row).strip():
            continue
        if len(row) != 4:
            return None
        uuid, bus, address, cause = (cell.strip() for cell in row)
        pages = out.setdefault((uuid, bus_key(bus) or ""), _Pages())
        kind = _CAUSES.get(cause.lower())
        if kind is None or not _ADDRESS.fullmatch(address):
            pages.unread = True
        else:
            pages.pages.add((int(address, 16 if address.startswith("0x") else 10), kind))
    return out


def _gpu_of(key: tuple[str, str], gpus: Sequence[GpuInfo]) -> GpuInfo | None:
    uuid, bus = key
    return next(
        (g for g in gpus if (uuid and g.uuid == uuid) or (bus and bus_key(g.pci_bus_id) == bus)),
        None,
    )


def with_retired_pages(gpus: Sequence[GpuInfo], text: str, whole: bool) -> list[GpuInfo]:
    """`gpus` with the retired-page counts a retired-pages CSV (`text`: RETIRED_PROBE's rows) gives
    them; `whole`: the output is the box's whole answer (no `-i`, not cut). A count read by another
    format too keeps the larger (a count that only grows: captures of two times)."""
    found = _by_gpu(text)
    if found is None:
        return list(gpus)
    placed = {key: _gpu_of(key, gpus) for key in found}
    every = whole and all(g is not None for g in placed.values())
    out = []
    for g in gpus:
        mine = [found[key] for key, at in placed.items() if at is g]
        if any(p.unread for p in mine) or g.faults or not (mine or every):
            out.append(g)
            continue
        sbe, dbe = sum(p.count("sbe") for p in mine), sum(p.count("dbe") for p in mine)
        out.append(
            dataclasses.replace(
                g,
                retired_pages_sbe=max(sbe, g.retired_pages_sbe or 0),
                retired_pages_dbe=max(dbe, g.retired_pages_dbe or 0),
            )
        )
    return out
