"""Pure parsers for `nvidia-smi nvlink -s` (`--status`): each GPU's NVLink links and speeds,
and `nvidia-smi nvlink -e` (`--errorcounters`): each link's error counters.

Real shapes (tests/fixtures/real/nvidia-smi-nvlink-s__*):

    GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-...)
             Link 0: 25 GB/s                         (per-link speed: the link is up)
             Link 3: <inactive>                      (trained down / never came up)
    GPU 0: NVIDIA L40S (UUID: GPU-...)
    Device does not have or support Nvlink           (a PCIe-only card)
    GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-...)
    Nvlink queries are not supported for Devices in MIG mode

A PCIe box may also print nothing at all (the A10 capture of leptonai/gpud is empty). A link
counts as active only with a speed figure: `<inactive>` or an unknown word is not evidence of
a working link. `Link N, P2P is supported: true` lines (`nvlink -c`, pasted together with -s)
are capability lines, not links, and are skipped; a GPU's block of them alone (`nvlink -c`
pasted alone) has the note CAPABILITIES (no link state: `capabilities_only`), its last one cut
mid-line leaving the block cut (`cut_gpu`).

A listing cut short (a dropped session, a scroll-back limit, a paste) can end inside a GPU's
header (`GPU 1: NVIDIA H8`): its last GPU block then has no `Link N:` line and no note, and
the status is not `complete` (`cut_gpu` names that GPU; its name may be cut mid-word). A cut
before the header's index (`GP`, the listing's last line: bottlerocket-os/bottlerocket#4418) is
`cut_header`: not `complete` either, the GPUs after the last block read not known. The same
holds for `nvlink -e`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any, Generic, Protocol, TypeVar

from gpuonboard.facts.elision import ELISION
from gpuonboard.facts.joined_entries import entries
from gpuonboard.once import lazy_re

__all__ = [
    "GpuNvlink",
    "GpuNvlinkErrors",
    "NvlinkErrors",
    "NvlinkLink",
    "NvlinkStatus",
    "parse_nvlink_errors",
    "parse_nvlink_status",
]

# what a GPU's note says instead of links
UNSUPPORTED = "unsupported"  # the card has no NVLink
MIG_MODE = "mig"  # the driver refuses NVLink queries in MIG mode: not a hardware fact
ALL_INACTIVE = "all_inactive"  # NVML: every link is inactive


@dataclass(frozen=True)
class NvlinkLink:
    """One link line: its number, speed in GB/s when up, and the text as printed."""

    link: int
    speed_gbps: float | None  # GB/s (bytes) as nvidia-smi prints it; None when not up
    text: str

    @property
    def active(self) -> bool:
        """Up: nvidia-smi printed a speed for it."""
        return self.speed_gbps is not None


@dataclass(frozen=True)
class GpuNvlink:
    """One GPU's block of `nvlink -s`."""

    index: int
    name: str
    uuid: str | None
    links: tuple[NvlinkLink, ...] = ()
    note: str | None = None  # UNSUPPORTED / MIG_MODE / ALL_INACTIVE / CAPABILITIES, else None
    note_text: str | None = None  # the driver's sentence behind `note`

    @property
    def active_links(self) -> int:
        """How many links are up."""
        return sum(1 for link in self.links if link.active)

    @property
    def total_links(self) -> int:
        """How many links were listed (up or not)."""
        return len(self.links)

    @property
    def speeds(self) -> tuple[float, ...]:
        """The distinct speeds (GB/s) of the links that are up, ascending."""
        return tuple(sorted({link.speed_gbps for link in self.links if link.speed_gbps is not None}))


class _Block(Protocol):
    """A GPU's block of a listing: its index, its link lines, its note (None: none printed)."""

    @property
    def index(self) -> int: ...
    @property
    def links(self) -> Any: ...
    @property
    def note(self) -> str | None: ...


_B = TypeVar("_B", bound=_Block)


@dataclass(frozen=True)
class _Blocks(Generic[_B]):
    """Every GPU block of a listing, in order, plus lines not understood (NvlinkStatus and
    NvlinkErrors: `nvlink -s` and `nvlink -e` end cut alike)."""

    gpus: tuple[_B, ...]
    warnings: tuple[str, ...] = ()
    # the listing's last line where it is the start of the next GPU's header, cut before its
    # index (`GP`, `GPU `): the GPUs after the last block read are not known
    cut_header: str = ""
    # a line the paste put in place of lines it left out by hand (`...<snip>...`, facts/elision):
    # the links it stands for are not listed, never read as absent
    elided: str = ""
    # that line is the listing's last, no GPU block after it: the GPUs after the last read (and
    # that GPU's links after it) are not known, as where the listing is cut (cut_where)
    elided_last: str = ""

    def by_index(self, index: int) -> _B | None:
        """The block of GPU `index`, if listed."""
        return next((g for g in self.gpus if g.index == index), None)

    @property
    def cut_gpu(self) -> int | None:
        """The GPU whose block the listing ends inside (None: the listing is whole): its last,
        with neither a link line nor a note (the listing cut inside its header)."""
        last = self.gpus[-1] if self.gpus else None
        return last.index if last is not None and not last.links and last.note is None else None

    @property
    def complete(self) -> bool:
        """False when the listing ends inside a GPU's block (cut_gpu) or header (cut_header), or
        in a line left out by hand (elided_last)."""
        return self.cut_gpu is None and not self.cut_header and not self.elided_last

    @property
    def cut_where(self) -> str:
        """Where the listing is cut, as the rules say it ('GPU 2 (listing cut short)', 'the GPU
        after GPU 1 (listing cut short in its header `GP`)'); '' where it is whole."""
        if self.cut_gpu is not None:
            return f"GPU {self.cut_gpu} (listing cut short)"
        if self.cut_header and self.gpus:
            last, cut = self.gpus[-1].index, self.cut_header
            return f"the GPU after GPU {last} (listing cut short in its header `{cut}`)"
        if self.elided_last and self.gpus:
            last, line = self.gpus[-1].index, self.elided_last
            return f"the GPUs after GPU {last} (left out by hand: `{line}` ends the listing)"
        return ""


@dataclass(frozen=True)
class NvlinkStatus(_Blocks[GpuNvlink]):
    """Every GPU block of `nvidia-smi nvlink -s`, in order, plus lines not understood."""

    # `Link N, P2P is supported: true` lines read (`nvlink -c`'s, skipped: no link state)
    capability_lines: int = 0

    @property
    def capabilities_only(self) -> bool:
        """The listing is `nvidia-smi nvlink -c`'s (`--capabilities`) alone: capability lines and
        no link line, so it shows what each link supports, never whether a link is up."""
        return self.capability_lines > 0 and not any(g.links for g in self.gpus)


_GPU = re.compile(r"^\s*GPU\s+(\d+):\s*(.*?)\s*\(UUID:\s*([^)]*?)\s*\)\s*(.*)$")
_GPU_NO_UUID = lazy_re(r"^\s*GPU\s+(\d+):\s*(.*?)\s*()()$")
_LINK = lazy_re(r"^\s*Link\s+(\d+):\s*(.*?)\s*$")
_CAPABILITY = re.compile(r"^\s*Link\s+\d+,\s")
_SPEED = lazy_re(r"^(\d+(?:\.\d+)?)\s*GB/s$", re.I)
# a link line with a speed in one match: what _LINK then _SPEED read of it (value, speed), for
# the ~12 lines a GPU of a whole listing; a line it does not match is read as before
_LINK_SPEED = re.compile(r"^\s*Link\s+(\d+):\s*((\d+(?:\.\d+)?)\s*(?i:GB/s))\s*$")
# a whole capability line (`Link 0, P2P is supported: true`): a last one that is not is cut short
_WHOLE_CAPABILITY = lazy_re(r"^\s*Link\s+\d+,\s[^:]*:\s*(?:true|false)\s*$", re.I)
# what a GPU's block of capability lines alone says in place of links
CAPABILITIES = "capabilities"
# where a chat joined a link, note or GPU line onto the one before (`Link 0: 25.781 GB/s Link 1:
# ...`, every two lines one): after a speed, `<inactive>`, a note's last word, the GPU line's `)`
# or a paste's elision dots, bare or before a note (`...<snip>...`: facts/joined_entries.py);
# and the next GPU's header cut before its colon at the joined line's end (`... GB/s GP`:
# _HEADER_START)
_ENTRY_END = ("GB/s", "<inactive>", "inActive", "inactive", "MIG mode", "Nvlink", "NVLink", ")", "..", "…")
_ENTRY = r"Link\s+\d+:\s|GPU\s+\d+:\s|(?<=\s)(?:\.{2,}|…)(?=\s|$|[\[(<{])|(?<=\s)G(?:P(?:U(?:\s+\d*)?)?)?\s*$"


# the start of a GPU's header line, cut before its colon (`G`, `GP`, `GPU`, `GPU 1`): a listing's
# last line so is the listing cut short inside the next GPU's header
_HEADER_START = re.compile(r"^G(?:P(?:U(?:\s+\d*)?)?)?$")


def _cut_header(text: str, gpus: list[Any], line: str) -> bool:
    """The line is the listing's last and the start of a GPU header cut short (_HEADER_START),
    after a GPU block read."""
    rest = text.rstrip()
    return bool(gpus) and _HEADER_START.match(line.strip()) is not None and rest.endswith(line.strip())


def _note(text: str) -> str | None:
    low = text.lower()
    if "does not have or support nvlink" in low:
        return UNSUPPORTED
    if "mig mode" in low:
        return MIG_MODE
    if "all links are inactive" in low:
        return ALL_INACTIVE
    return None


def _with_links(gpu: GpuNvlink, links: list[NvlinkLink]) -> GpuNvlink:
    """A GPU's block with its links put in (its `nvlink -c` note dropped where `-s` lines follow)."""
    if not links:
        return gpu
    if gpu.note == CAPABILITIES:
        gpu = replace(gpu, note=None, note_text=None)
    return replace(gpu, links=tuple(links))


def parse_nvlink_status(text: str) -> NvlinkStatus:
    """Parse `nvidia-smi nvlink -s` into per-GPU links (active when a speed is printed); a last
    GPU block with neither a link line nor a note is a listing cut short (not `complete`)."""
    gpus: list[GpuNvlink] = []
    links: list[list[NvlinkLink]] = []  # each GPU's links, put in its record at the end
    warnings: list[str] = []
    cut = ""  # (the next GPU's header, cut before its index: _cut_header)
    elided = ""  # (a line left out by hand: its first)
    last_elided = ""  # (the last line read, where it was one)
    capability = 0  # (`nvlink -c`'s lines: skipped, counted)

    for line in (part for whole in text.splitlines() for part in entries(whole, _ENTRY_END, _ENTRY)):
        last_elided = last_elided if not line.strip() else ""
        if gpus and (m := _LINK_SPEED.match(line)):  # (no blank, capability or GPU line)
            links[-1].append(NvlinkLink(int(m.group(1)), float(m.group(3)), m.group(2)))
            continue
        if not line.strip():
            continue
        if _CAPABILITY.match(line):
            capability += 1
            if gpus and not links[-1] and gpus[-1].note is None and _WHOLE_CAPABILITY.match(line):
                said = "`nvidia-smi nvlink -c` lines only (what each link supports, not whether it is up)"
                gpus[-1] = replace(gpus[-1], note=CAPABILITIES, note_text=said)
            elif gpus and gpus[-1].note == CAPABILITIES and not _WHOLE_CAPABILITY.match(line):
                gpus[-1] = replace(gpus[-1], note=None, note_text=None)  # (cut in it: cut_gpu)
            continue
        if m := _GPU.match(line) or _GPU_NO_UUID.match(line):
            gpus.append(GpuNvlink(int(m.group(1)), m.group(2), m.group(3) or None))
            links.append([])
            if tail := m.group(4).strip():  # some builds print the verdict on the GPU line
                gpus[-1] = replace(gpus[-1], note=_note(tail), note_text=tail)
            continue
        if gpus and (m := _LINK.match(line)):
            value = m.group(2).rstrip("`").rstrip()  # (a paste's stray closing backtick: round 34)
            speed = _SPEED.match(value)
            if speed is None and "inactive" not in value.lower():
                # neither a speed nor `<inactive>` (`nvlink -R`'s "Remote Device ...", two lines
                # glued): no word on whether the link is up
                warnings.append(f"nvidia-smi nvlink -s: link line not read {line.strip()!r}")
                continue
            links[-1].append(NvlinkLink(int(m.group(1)), float(speed.group(1)) if speed else None, value))
            continue
        if gpus and (note := _note(line)):
            gpus[-1] = replace(gpus[-1], note=note, note_text=line.strip())
            continue
        if _cut_header(text, gpus, line):
            cut = line.strip()
            continue
        if gpus and ELISION.match(line):
            elided, last_elided = elided or line.strip(), line.strip()
            continue
        warnings.append(f"nvidia-smi nvlink -s: unexpected line {line.strip()!r}")
    return NvlinkStatus(
        tuple(_with_links(g, ls) for g, ls in zip(gpus, links, strict=True)),
        tuple(warnings),
        cut,
        elided,
        last_elided,
        capability,
    )


# --- nvidia-smi nvlink -e (--errorcounters) -------------------------------------------------
#
# Real shapes (tests/fixtures/real/nvidia-smi-nvlink-e__*):
#
#     GPU 0: NVIDIA A100-SXM4-40GB (UUID: GPU-...)
#     \t Link 0: Replay Errors: 0                   (tab + space indent; 9 spaces where pasted)
#     \t Link 0: Recovery Errors: 0
#     \t Link 0: CRC Errors: 0
#                                                   (a blank line after each link)
# Newer drivers print other counter names on the same `Link N: NAME: VALUE` shape (Hopper /
# Blackwell: "Malformed packet Errors", "Rx Errors", "Local link integrity Errors", "Symbol
# Errors", "Effective BER", "FEC Errors - 3" ...): any name is kept as printed. A value that is
# not a whole number ("N/A", "ERR!", a BER such as "1.5e-15") is no count: it is kept as printed
# in `unread` (a counter the rule judges printed N/A is no zero). `nvidia-smi
# nvlink -e -i N` run in a loop, with `=== GPU N ... ===` echo lines between, and a pasted `[...]`
# elision become warnings, not data. -ec (`--crcerrorcounters`) is a different command (per-lane
# CRC counters): not this parser's input.

_ERR_LINE = lazy_re(r"^\s*Link\s+(\d+):\s*([^:]*?[A-Za-z][^:]*?)\s*:\s*(\S.*?)\s*$")
_COUNT = lazy_re(r"^\d+$")


@dataclass(frozen=True)
class GpuNvlinkErrors:
    """One GPU's block of `nvlink -e`: per link, counter name (as printed) -> count."""

    index: int
    name: str
    uuid: str | None
    links: dict[int, dict[str, int]]
    note: str | None = None  # UNSUPPORTED / MIG_MODE / ALL_INACTIVE / CAPABILITIES, else None
    note_text: str | None = None
    # per link, counter name (as printed) -> the value printed where it is no count (N/A, ERR!,
    # a BER figure): never a zero
    unread: dict[int, dict[str, str]] = field(default_factory=dict)

    def counter(self, link: int, name: str) -> int | None:
        """A link's count for `name` (case-insensitive), None when not printed."""
        low = name.lower()
        return next((v for k, v in self.links.get(link, {}).items() if k.lower() == low), None)


@dataclass(frozen=True)
class NvlinkErrors(_Blocks[GpuNvlinkErrors]):
    """Every GPU block of `nvidia-smi nvlink -e`, in order, plus lines not understood."""


def parse_nvlink_errors(text: str) -> NvlinkErrors:
    """Parse `nvidia-smi nvlink -e` into per GPU index, per link, counter name -> count.

    Counter names are kept as nvidia-smi prints them ("Replay Errors", "Rx remote Errors");
    values that are not whole numbers (N/A, ERR!, BER figures) go to the GPU's `unread`; a GPU line that says
    NVLink is unsupported / refused in MIG mode sets the GPU's `note` (as in nvlink -s).
    """
    gpus: list[GpuNvlinkErrors] = []
    warnings: list[str] = []
    cut = ""
    for line in text.splitlines():
        if not line.strip():
            continue
        if m := _GPU.match(line) or _GPU_NO_UUID.match(line):
            gpus.append(GpuNvlinkErrors(int(m.group(1)), m.group(2), m.group(3) or None, {}))
            if tail := m.group(4).strip():
                gpus[-1] = replace(gpus[-1], note=_note(tail), note_text=tail)
            continue
        if gpus and (m := _ERR_LINE.match(line)):
            value, link = m.group(3), int(m.group(1))
            counts = gpus[-1].links.setdefault(link, {})
            if _COUNT.match(value):
                counts[m.group(2)] = int(value)
            else:
                gpus[-1].unread.setdefault(link, {})[m.group(2)] = value
            continue
        if gpus and (note := _note(line)):
            gpus[-1] = replace(gpus[-1], note=note, note_text=line.strip())
            continue
        if _cut_header(text, gpus, line):
            cut = line.strip()
            continue
        warnings.append(f"nvidia-smi nvlink -e: unexpected line {line.strip()!r}")
    return NvlinkErrors(tuple(gpus), tuple(warnings), cut)
