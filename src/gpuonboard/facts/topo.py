"""Pure parser for `nvidia-smi topo -m` (the GPU/NIC connection matrix)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from itertools import combinations
from types import MappingProxyType

from gpuonboard.once import lazy_re

__all__ = [
    "NO_LEGEND",
    "PCIE_PATHS_ONLY",
    "Topology",
    "all_pairs_nvlink",
    "foreign_links",
    "interconnect",
    "nvlink_orphans",
    "parse_topo",
    "weakest_link",
]

# What `nvidia-smi topo -mp` (`--matrix_pci`) shows: the same matrix as `topo -m`, with each GPU
# pair's PCIe path where `-m` prints NV# (an NVLink box's GPUs read SYS/NODE there) and a legend
# without the NV# line. Such a matrix says nothing about NVLink.
PCIE_PATHS_ONLY = "shows the PCIe paths only, never NVLink"
# why a matrix saved without any legend cannot show NVLink (Topology.pcie_only's start): under a
# copied `nvidia-smi topo -m`, its legend was cut away and takes nothing from it
NO_LEGEND = "no legend (NV# line) was saved with it"


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
    # every GPU the header names has its row and every GPU pair a link value: False for a
    # matrix cut short (a paste of its first rows, an output cut off), whose missing GPUs and
    # links are unknown, not absent
    complete: bool = True
    # why this matrix cannot show NVLink ("" when it can): a legend without the NV# line (a `topo
    # -mp` view, or a legend cut short) or, offline, a copied `topo -mp` command line
    pcie_only: str = ""
    # the GPUs the header names, in order (a cut matrix's rowless GPUs too)
    gpu_columns: tuple[str, ...] = ()
    # the matrix is known to print NV# wherever NVLink joins two GPUs (offline: a copied `nvidia-smi
    # topo -m` command line), so a whole row without one is a GPU with NVLink to no other
    shows_nvlink: bool = False


_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def _plain(text: str) -> str:
    """`text` without its ANSI escapes (the search only where an escape may be: most captures
    have none, and the matrix of 8 GPUs and 10 NICs has ~500 cells)."""
    return _ANSI.sub("", text) if "\x1b" in text else text


_GPU_LABEL = re.compile(r"^GPU\d+$")
_NVLINK = re.compile(r"^NV(\d+)$")
_LEGEND_NIC = re.compile(r"^\s*(NIC\d+)\s*:\s*(\S+)\s*$")
# a line of the legend of path kinds ("  SYS  = Connection traversing ...", "  NV#  = ...")
_LEGEND_KIND = re.compile(r"^\s*(X|SYS|SOC|NODE|PHB|PXB|PIX|NV#)\s+=\s*(.*)$")
# How the legend of a driver from before NVLink words its kinds ("SOC = Path traverses a
# socket-level link (e.g. QPI)", Kepler/Maxwell boxes, 2015): it had no NV# line because no GPU
# had NVLink, so its matrix is a whole `topo -m`. Every NVLink-era legend, `-mp`'s too, says
# "Connection traversing ..." (SOC alone is no sign: legends of 2016-17 print SOC beside NV#).
_PRE_NVLINK_WORDING = "Path traverses"
# Worst-last order of the PCIe path kinds; "SOC" is the pre-2017 spelling of "SYS".
_PCIE_RANK = {"PIX": 1, "PXB": 2, "PHB": 3, "NODE": 4, "SYS": 5, "SOC": 5}


# A header cell of several words ("CPU Affinity", ...) is one cell, not one per word.
_TOKEN = lazy_re(r"(?:CPU Affinity|NUMA Affinity|GPU NUMA ID|\S)+")


def _fields(line: str) -> list[str]:
    """The cells of one matrix line, tab separated or space aligned.

    nvidia-smi separates cells by tabs; a capture pasted from a terminal or a document has them
    expanded to spaces (tab stops every 8 columns). There every cell starts on a tab stop
    (" X " one column after it), so a gap that passes a whole further stop is an empty cell
    (an empty "CPU Affinity", the blank before "GPU NUMA ID"), exactly as the tabs said. A line
    whose cells do not sit on tab stops (re-spaced by hand) is read cell by cell in order."""
    if "\t" in line:
        return [_plain(c).strip() for c in line.split("\t")]
    tokens = [(m.start(), m.end(), m.group(0)) for m in _TOKEN.finditer(line)]
    starts = [start - 1 if _plain(text) == "X" and start % 8 == 1 else start for start, _, text in tokens]
    if not all(start % 8 == 0 for start in starts):
        cells = [_plain(text) for _, _, text in tokens]
        return [""] + cells if line[:1].isspace() else cells
    fields: list[str] = []
    stop = 0  # where the next cell may start: the tab stop after the previous cell
    for start, (_, end, text) in zip(starts, tokens, strict=True):
        fields.extend([""] * ((start - stop) // 8))
        fields.append(_plain(text).strip())
        stop = (end // 8 + 1) * 8
    return fields


# The labels a header prints: GPUs, NICs ("NIC0", or an older driver's device names "mlx5_0",
# "mlx5_bond_0", "hfi1_0") and the affinity columns.
_HEADER_LABEL = re.compile(r"GPU NUMA ID|CPU Affinity|NUMA Affinity|GPU\d+|NIC\d+|[a-z][a-z0-9_]*?_\d+")


def _unglued(fields: list[str]) -> list[str]:
    """The header's cells with labels a paste glued together split apart: `NIC11NIC12`,
    `NIC11CPU Affinity` (real: vLLM's collect_env reports of B200 nodes, whose re-spacing lost
    the gap between two labels) are two columns, else every column after them is read one to
    the left (CPU affinity read from a NIC's column, NUMA affinity from the CPU list). A cell is
    split only when it is wholly made of known label shapes."""
    cells: list[str] = []
    for cell in fields:
        parts = _HEADER_LABEL.findall(cell)
        cells.extend(parts if len(parts) > 1 and "".join(parts) == cell else [cell])
    return cells


def _is_header(fields: list[str]) -> bool:
    """The column header: GPU labels and no self cell ("X"), which every matrix row has."""
    return any(_GPU_LABEL.match(c) for c in _unglued(fields)) and "X" not in fields


def _header_rest(line: str, header: list[str]) -> list[str]:
    """The labels of `header`'s wrapped rest (a line of header labels only, `GPU7    NIC0 ...`);
    [] for any other line (a matrix row has its X, a NIC row its links), and for a lone label
    of a GPU the header has (`GPU0`: a capture cut right after a row's label)."""
    cells = [c for c in _unglued(_fields(line)) if c]
    if len(cells) == 1 and _GPU_LABEL.match(cells[0]) and cells[0] in header:
        return []
    return cells if cells and all(_HEADER_LABEL.fullmatch(c) for c in cells) else []


def _rows_unindented(lines: list[str]) -> list[str]:
    """The lines after the header with the indent the matrix's rows share (up to the first blank
    line) taken off them: a page's or a report's indent of the whole output, which a paste's
    dedent could not remove where a wrapped legend line under it is indented less (a row
    `  GPU0  X  NODE` was read as a NIC's row, and no GPU row as read)."""
    end = next((i for i, line in enumerate(lines) if not line.strip()), len(lines))
    rows = lines[:end]
    indent = min((len(line) - len(line.lstrip(" ")) for line in rows), default=0)
    return [line[indent:] for line in rows] + lines[end:]


def parse_topo(text: str) -> Topology:
    """Parse `nvidia-smi topo -m` (tab separated or space aligned; ANSI escapes, NIC rows and
    legends allowed)."""
    lines = text.splitlines()
    header_at = next((i for i, line in enumerate(lines) if _is_header(_fields(line))), None)
    if header_at is None and (headerless := _headerless(lines)) is not None:
        return headerless
    if header_at is None:
        return Topology(
            (),
            MappingProxyType({}),
            (),
            _frozen_map(),
            _frozen_map(),
            ("no GPU matrix found in topo output",),
        )
    header = _unglued(_fields(lines[header_at]))
    while header_at + 1 < len(lines) and (rest := _header_rest(lines[header_at + 1], header)):
        header_at += 1  # a header wrapped at a label (`GPU7  NIC0 ...` under it): one header
        header += rest
    columns = header[1:] if header and header[0] == "" else header
    gpu_columns = {c for c in columns if _GPU_LABEL.match(c)}  # (matched once, not once a row)
    warnings: list[str] = []
    gpus: list[str] = []
    nics: list[str] = []
    links: dict[tuple[str, str], str] = {}
    cpu_affinity: dict[str, str] = {}
    numa_affinity: dict[str, str] = {}
    for line in _rows_unindented(lines[header_at + 1 :]):
        if not line.strip():
            break  # the matrix ends at the first blank line; the legend follows
        # a row's cell is one word: a tab typed or pasted as a space (`mlx5_0 PIX\tSYS`, a paste
        # that made `GPU0\t X \tNV12` of `GPU0 X NV12`) splits them
        cells = [word for cell in _fields(line) for word in (cell.split() or [""])]
        label, values = cells[0], cells[1:]
        if not _GPU_LABEL.match(label):
            nics.append(label)
            continue
        gpus.append(label)
        if len(values) < len(columns):
            warnings.append(f"{label}: {len(values)} cells for {len(columns)} columns")
        if label in columns and values[columns.index(label) : columns.index(label) + 1] != ["X"]:
            # its own cell is not under its own column: a cell lost or added before it shifted
            # the row, whose links would be read from its neighbours' columns
            warnings.append(f"{label}: its row's X is not under {label}: its cells cannot be placed")
            continue
        for column, value in zip(columns, values, strict=False):
            if column in gpu_columns and column != label:
                links[(label, column)] = value
            elif column == "CPU Affinity" and value:
                cpu_affinity[label] = value
            elif column == "NUMA Affinity" and value:
                numa_affinity[label] = value
    legend, pcie_only = _legend(lines[header_at + 1 :])
    unlinked = [(a, b) for a, b in combinations(gpus, 2) if not (links.get((a, b)) or links.get((b, a)))]
    warnings += [f"no link value for {a}-{b}" for a, b in unlinked]
    rowless = sorted(gpu_columns - set(gpus), key=lambda c: int(c[3:]))
    if rowless:
        warnings.append(f"the matrix ends before the row of {', '.join(rowless)}: the output was cut short")
    return Topology(
        tuple(gpus),
        MappingProxyType(links),
        tuple(nics),
        MappingProxyType(cpu_affinity),
        MappingProxyType(numa_affinity),
        tuple(warnings),
        MappingProxyType(legend),
        complete=not rowless and not unlinked,
        pcie_only=pcie_only,
        gpu_columns=tuple(c for c in columns if c in gpu_columns),
    )


def _headerless(lines: list[str]) -> Topology | None:
    """The matrix's GPU rows read without its header row (a paste or an excerpt that lost it,
    vllm-project/vllm#16336): each row's name says which GPU it is, and its own cell (X) stands
    in its own column, the GPUs' columns first in their order, so GPU N's X is its N+1th cell; a
    column with an NV# in it is a GPU's (no NIC has NVLink). The GPUs' links are read from those
    columns; the columns after them (more GPUs, NICs, affinities) are not known, so the matrix is
    incomplete, and it prints NV# (never a `-mp` view) only where some cell is one. None where
    fewer than two GPU rows hold their X, or a row's X is not under its own column (its cells
    cannot be placed)."""
    rows: list[tuple[str, list[str]]] = []
    for line in lines:
        cells = [word for cell in _fields(line.strip()) for word in (cell.split() or [""])]
        if len(cells) > 1 and _GPU_LABEL.match(cells[0]) and "X" in cells[1:]:
            rows.append((cells[0], cells[1:]))
    # (one row alone, `GPU0 X`, shows no link: no matrix)
    if len(rows) < 2 or any(values.index("X") != int(label[3:]) for label, values in rows):
        return None
    nvlink_at = [i for _, values in rows for i, v in enumerate(values) if _NVLINK.match(v)]
    width = max([int(label[3:]) + 1 for label, _ in rows] + [i + 1 for i in nvlink_at])
    columns = [f"GPU{i}" for i in range(width)]
    links = {
        (label, column): value
        for label, values in rows
        for column, value in zip(columns, values, strict=False)
        if column != label and value
    }
    gpus = tuple(label for label, _ in rows)
    rowless = [c for c in columns if c not in gpus]
    said = "the matrix's header row is missing: its GPUs' columns were read from each row's own X cell"
    cut = (
        [f"the matrix ends before the row of {', '.join(rowless)}: the output was cut short"]
        if rowless
        else []
    )
    return Topology(
        gpus,
        MappingProxyType(links),
        (),
        _frozen_map(),
        _frozen_map(),
        (said, *cut),
        complete=False,
        gpu_columns=tuple(columns),
        shows_nvlink=bool(nvlink_at),
    )


def _legend(lines: list[str]) -> tuple[dict[str, str], str]:
    """The NIC names of the legend ("NIC0" -> "mlx5_0"), and why its matrix cannot show NVLink
    ("" when it can): every NVLink-era `topo -m` legend names NV# after the PCIe kinds (a PCIe
    box's too), `topo -mp`'s ends at PIX. A legend cut before its NV# line reads the same, so
    such a matrix is unknown for NVLink (never claimed a `-mp`, never a box without NVLink), and
    so is a matrix saved without any legend (go-gpuallocator#17's paste: `-mp` prints the same
    cells); a pre-NVLink driver's legend (no NV# line, its own wording) is a whole `topo -m`."""
    nics: dict[str, str] = {}
    kinds: set[str] = set()
    old_driver = False
    for line in lines:
        if match := _LEGEND_NIC.match(_plain(line)):
            nics[match.group(1)] = match.group(2)
        elif match := _LEGEND_KIND.match(_plain(line)):
            kinds.add(match.group(1))
            old_driver = old_driver or match.group(2).startswith(_PRE_NVLINK_WORDING)
    if "NV#" in kinds or old_driver:
        return nics, ""
    why = "its legend has no NV# (NVLink) line: cut short, or `nvidia-smi topo -mp`"
    if not kinds:  # (no legend at all: a paste of the matrix alone reads as `-mp`'s does)
        why = f"{NO_LEGEND}: cut short, or `nvidia-smi topo -mp`"
    return nics, f"{why}, which {PCIE_PATHS_ONLY}"


def rows_read(t: Topology) -> list[str]:
    """The GPUs whose row was read (its cells or its CPU affinity: a bare `GPU1` label below a cut
    is no row read), in order."""
    return [g for g in t.gpus if g in t.cpu_affinity or any(a == g for a, _ in t.links)]


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


def foreign_links(t: Topology) -> list[str]:
    """The GPU-pair cells that are not links `topo -m` prints (NV#, PIX, PXB, PHB, NODE, SYS/SOC),
    sorted: a matrix of another `nvidia-smi topo` view in the same layout, `-p2p r`/`w`/`rw`/...
    (peer-to-peer status: OK, CNS, GNS, TNS, NS, DR, U), which says nothing of the links."""
    return sorted({v for v in _pair_links(t) if v and not _NVLINK.match(v) and v not in _PCIE_RANK})


def all_pairs_nvlink(t: Topology) -> bool | None:
    """True when every GPU pair is joined by NVLink; None with fewer than two GPUs."""
    if len(t.gpus) < 2:
        return None
    return all(_NVLINK.match(link) for link in _pair_links(t))


def interconnect(t: Topology) -> str:
    """'nvlink' / 'pcie' / 'mixed' across all GPU pairs; 'single' (1 GPU) or 'unknown' (none, or
    a matrix of PCIe paths only, `topo -mp`, which cannot tell PCIe from NVLink)."""
    if not t.gpus:
        return "unknown"
    if len(t.gpus) == 1:
        return "single"
    nvlink = [bool(_NVLINK.match(link)) for link in _pair_links(t)]
    if all(nvlink):
        return "nvlink"
    if not any(nvlink):
        return "unknown" if t.pcie_only else "pcie"
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


def whole_rows_without_nvlink(t: Topology) -> list[str]:
    """The GPUs whose row of a matrix known to print NV# (`shows_nvlink`) was read whole, a link
    to every other GPU the header names, none of them NV#: each has NVLink to no other GPU, which
    rows cut away cannot change (a legend cut away too says nothing against the command). [] where
    the matrix may print PCIe paths only (`-mp`, or no command known)."""
    if not t.shows_nvlink:
        return []
    return [
        g
        for g in t.gpus
        if len(t.gpu_columns) > 1
        and all(t.links.get((g, c)) for c in t.gpu_columns if c != g)
        and not any(_NVLINK.match(t.links[(g, c)]) for c in t.gpu_columns if c != g)
    ]


def weakest_link(t: Topology) -> str | None:
    """The slowest GPU-to-GPU link (e.g. 'SYS', 'NV18'); None with fewer than two GPUs."""
    pairs = _pair_links(t)
    if not pairs:
        return None
    return max(pairs, key=_badness)
