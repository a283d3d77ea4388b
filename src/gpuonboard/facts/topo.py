"""Pure parser for `nvidia-smi topo -m` (the GPU/NIC connection matrix)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from itertools import combinations
from types import MappingProxyType

__all__ = ["Topology", "all_pairs_nvlink", "interconnect", "nvlink_orphans", "parse_topo", "weakest_link"]


def _frozen_map() -> Mapping[str, str]:
    """An empty read-only mapping (default for optional fields)."""
    return MappingProxyType({})


@dataclass(frozen=True)
class Topology:
    """GPU-to-GPU links and affinities as `nvidia-smi topo -m` prints them."""

    gpus: tuple[str, ...]
    links: Mapping[tuple[str, str], str]  # ("GPU0", "GPU1") -> "NV18"; GPU pairs only, both orders
    nics: tuple[str, ...]  # row labels as printed: "NIC0" (newer drivers) or "mlx5_0" (older)
    cpu_affinity: Mapping[str, str]  # "GPU0" -> "0-63,128-191"
    numa_affinity: Mapping[str, str]  # "GPU0" -> "0"
    warnings: tuple[str, ...] = ()
    nic_legend: Mapping[str, str] = field(default_factory=_frozen_map)  # "NIC0" -> "mlx5_0"


_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_GPU_LABEL = re.compile(r"^GPU\d+$")
_NVLINK = re.compile(r"^NV(\d+)$")
_LEGEND_NIC = re.compile(r"^\s*(NIC\d+)\s*:\s*(\S+)\s*$")
# Worst-last order of the PCIe path kinds; "SOC" is the pre-2017 spelling of "SYS".
_PCIE_RANK = {"PIX": 1, "PXB": 2, "PHB": 3, "NODE": 4, "SYS": 5, "SOC": 5}


def parse_topo(text: str) -> Topology:
    """Parse `nvidia-smi topo -m` (tab separated; ANSI escapes, NIC rows and legends allowed)."""
    lines = [_ANSI.sub("", line) for line in text.splitlines()]
    header_at = next(
        (
            i
            for i, line in enumerate(lines)
            if "\t" in line and any(_GPU_LABEL.match(c.strip()) for c in line.split("\t"))
        ),
        None,
    )
    if header_at is None:
        return Topology(
            (),
            MappingProxyType({}),
            (),
            _frozen_map(),
            _frozen_map(),
            ("no tab-separated GPU matrix found in topo output",),
        )
    columns = [c.strip() for c in lines[header_at].split("\t")[1:]]
    warnings: list[str] = []
    gpus: list[str] = []
    nics: list[str] = []
    links: dict[tuple[str, str], str] = {}
    cpu_affinity: dict[str, str] = {}
    numa_affinity: dict[str, str] = {}
    for line in lines[header_at + 1 :]:
        if not line.strip():
            break  # the matrix ends at the first blank line; the legend follows
        cells = [c.strip() for c in line.split("\t")]
        label, values = cells[0], cells[1:]
        if not _GPU_LABEL.match(label):
            nics.append(label)
            continue
        gpus.append(label)
        if len(values) < len(columns):
            warnings.append(f"{label}: {len(values)} cells for {len(columns)} columns")
        for column, value in zip(columns, values, strict=False):
            if _GPU_LABEL.match(column) and column != label:
                links[(label, column)] = value
            elif column == "CPU Affinity" and value:
                cpu_affinity[label] = value
            elif column == "NUMA Affinity" and value:
                numa_affinity[label] = value
    legend = {}
    for line in lines[header_at + 1 :]:
        match = _LEGEND_NIC.match(line)
        if match:
            legend[match.group(1)] = match.group(2)
    for a, b in combinations(gpus, 2):
        if (a, b) not in links and (b, a) not in links:
            warnings.append(f"no link value for {a}-{b}")
    return Topology(
        tuple(gpus),
        MappingProxyType(links),
        tuple(nics),
        MappingProxyType(cpu_affinity),
        MappingProxyType(numa_affinity),
        tuple(warnings),
        MappingProxyType(legend),
    )


def _pair_links(t: Topology) -> list[str]:
    """The link value of every unordered GPU pair ('' when the matrix lacks it)."""
    return [t.links.get((a, b)) or t.links.get((b, a)) or "" for a, b in combinations(t.gpus, 2)]


def _badness(link: str) -> tuple[int, int]:
    """Sort key, higher = slower: NV# (more links first) < PIX < PXB < PHB < NODE < SYS < other."""
    match = _NVLINK.match(link)
    if match:
        return (0, -int(match.group(1)))
    if link == "X":
        return (-1, 0)
    return (_PCIE_RANK.get(link, 9), 0)


def all_pairs_nvlink(t: Topology) -> bool | None:
    """True when every GPU pair is joined by NVLink; None with fewer than two GPUs."""
    if len(t.gpus) < 2:
        return None
    return all(_NVLINK.match(link) for link in _pair_links(t))


def interconnect(t: Topology) -> str:
    """'nvlink' / 'pcie' / 'mixed' across all GPU pairs; 'single' (1 GPU) or 'unknown' (none)."""
    if not t.gpus:
        return "unknown"
    if len(t.gpus) == 1:
        return "single"
    nvlink = [bool(_NVLINK.match(link)) for link in _pair_links(t)]
    if all(nvlink):
        return "nvlink"
    if not any(nvlink):
        return "pcie"
    return "mixed"


def nvlink_orphans(t: Topology) -> list[str]:
    """GPUs with NVLink to no other GPU, on a box where some GPU pair has NVLink: a board
    design joins each GPU to at least one other (NVSwitch to all, bridges in pairs), so such a
    GPU has lost its links (a dead NVLink, a missing bridge)."""

    def linked(gpu: str) -> bool:
        return any(
            _NVLINK.match(t.links.get((gpu, o)) or t.links.get((o, gpu)) or "") for o in t.gpus if o != gpu
        )

    with_links = [g for g in t.gpus if linked(g)]
    return [g for g in t.gpus if g not in with_links] if with_links else []


def weakest_link(t: Topology) -> str | None:
    """The slowest GPU-to-GPU link (e.g. 'SYS', 'NV18'); None with fewer than two GPUs."""
    pairs = _pair_links(t)
    if not pairs:
        return None
    return max(pairs, key=_badness)
