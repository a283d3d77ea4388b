"""The GPU set of the merged nvidia-smi formats (facts/gpu_merge.py): which format's listing
is the set and whether it is whole, a wider listing beside it, a GPU listed twice at one PCI
address, the GPU numbers it skips (the set's gap), and where whole listings name other GPUs.
Pure: no I/O.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from gpuonboard.facts import gpu_agree
from gpuonboard.facts.gpu_fields import _FIELDS, _unset
from gpuonboard.facts.gpu_ids import bus_key
from gpuonboard.facts.nvidia_smi import GpuInfo, GpuReport


def _same(a: GpuInfo, b: GpuInfo) -> bool:
    """One physical GPU in two formats: by PCI address, else UUID, else index."""
    ka, kb = bus_key(a.pci_bus_id), bus_key(b.pci_bus_id)
    if ka and kb:
        return ka == kb
    ua, ub = gpu_agree.uuid_of(a), gpu_agree.uuid_of(b)
    if ua and ub:
        return ua == ub
    return a.index == b.index


def _base(
    ranked: list[tuple[str, GpuReport]], listed: list[GpuInfo], listed_whole: bool = True
) -> tuple[list[GpuInfo], bool, GpuReport | None]:
    """The GPU set, whether it is whole, and the report it came from: the richest format that
    listed every GPU it says is attached; where every format was cut short, the widest of them
    (not whole), or `-L`'s listing when it names more (whole unless the listing itself was cut
    short mid-line: a listing, not a cut record)."""
    whole = [r for _, r in ranked if r.complete and len(r.gpus) >= (r.attached_gpus or 0)]
    if whole:
        return list(whole[0].gpus), True, whole[0]
    widest = max((r for _, r in ranked), key=lambda r: len(r.gpus)) if ranked else None
    if widest is None or len(listed) > len(widest.gpus):
        return listed, bool(listed) and listed_whole, None
    return list(widest.gpus), False, widest


def _wider(
    base: list[GpuInfo],
    ranked: list[tuple[str, GpuReport]],
    listed: list[GpuInfo],
    unopened: Sequence[GpuInfo] = (),
    listed_as: str = "list",
) -> tuple[str, list[GpuInfo], GpuReport | None] | None:
    """The widest other format of this box that lists every GPU of `base` and more: (its label,
    its GPUs, its report; None for `-L`). `base` then lists some GPUs only: an output cut short at
    a line end (a CSV's rows, `-L`'s lines: no sign of its own) or captured at another time, never
    the box's count. A format naming none of `base`'s GPUs is another capture (left as it is).
    The GPUs nvidia-smi named as unopenable (`unopened`) beside `base` count as `base`'s: a
    listing of as many is no wider (an `-L` of 4 beside a table of 3 and a lost GPU)."""
    sets: list[tuple[str, list[GpuInfo], GpuReport | None]] = [
        (label, list(r.gpus), r) for label, r in ranked
    ]
    sets += [(listed_as, listed, None)] if listed else []
    lost = [g for g in unopened if not any(bus_key(x.pci_bus_id) == bus_key(g.pci_bus_id) for x in base)]
    found = [s for s in sets if base and len(s[1]) > len(base) + len(lost) and _all_among(base, s[1])]
    return max(found, key=lambda s: len(s[1]), default=None)


def _one_per_address(gpus: list[GpuInfo]) -> tuple[list[GpuInfo], list[int]]:
    """A GPU listed at the PCI address of a GPU listed before it is no GPU of its own to count
    (one device, or a driver that cannot tell them apart): a fault naming that GPU. One with the
    same number, or the same record in every field, is that GPU's again (a paste that repeated
    lines): dropped, and its number returned (the output is then not whole, never a GPU fault)."""
    first: dict[str, int] = {}  # address -> its first GPU's place in `out`
    out: list[GpuInfo] = []
    repeated = []
    for g in gpus:
        key = bus_key(g.pci_bus_id)
        was = out[first[key]] if key in first else None
        if key and was is not None and (was.index == g.index or _same_record(was, g)):
            repeated.append(was.index)  # (what either copy read is that GPU's: a block's header
            out[first[key]] = _filled(was, g)  # alone, then the block, keeps the block's values)
            continue
        if was is not None:
            fault = f"the PCI address of GPU {was.index} ({g.pci_bus_id})"
            g = dataclasses.replace(g, faults=(*g.faults, fault))
        elif key:
            first[key] = len(out)
        out.append(g)
    return out, repeated


def _fragment(g: GpuInfo) -> bool:
    """A record that names no model and holds no fault: a `-q` block's header line alone (the
    rest of the block pasted under a second copy of it)."""
    return (
        not g.name.strip()
        and not g.faults
        and not g.cell_faults
        and all(
            getattr(g, f) is None for f in ("memory_total_mib", "temperature_c", "uuid", "performance_state")
        )
    )


def _filled(a: GpuInfo, b: GpuInfo) -> GpuInfo:
    """`a` with the fields it left unset taken from `b` (one GPU's two copies)."""
    return dataclasses.replace(
        a,
        **{
            f.name: getattr(b, f.name)
            for f in dataclasses.fields(GpuInfo)
            if f.name not in ("index", "csv_row") and _unset(getattr(a, f.name))
        },
    )


def _same_record(a: GpuInfo, b: GpuInfo) -> bool:
    """Two records of one address that disagree in no field both give, with the same faults
    (none, or the same): one GPU's record repeated by a paste (a `-q` block or a CSV row pasted
    twice, or a block's header alone before it, numbered by where it stands). A second GPU a
    driver lists at that address reads otherwise (`ERR!` beside a healthy one)."""
    if _fragment(a) or _fragment(b):
        return True
    if a.faults != b.faults or a.cell_faults != b.cell_faults:
        return False
    return all(
        (x := getattr(a, f.name)) == (y := getattr(b, f.name)) or _unset(x) or _unset(y)
        for f in _FIELDS
        if f.name != "csv_row"
    )


def _set_gap(gpus: Sequence[GpuInfo], gap: str, repeated: Sequence[int]) -> tuple[str, list[int]]:
    """Why the merged GPU set is not known whole (`gap`, the formats' own reasons, first; then
    a GPU listed twice at one address; then GPU numbers the output skips), and the numbers it
    skips: nvidia-smi numbers every GPU it lists from 0, so GPU 7 alone is a view of some GPUs
    (`nvidia-smi -i 7`) or a paste cut, never a 1-GPU box."""
    numbers = {g.index for g in gpus}
    skipped = [i for i in range(max(numbers, default=-1) + 1) if i not in numbers]
    if repeated and not gap:
        twice = ", ".join(f"GPU {i}" for i in dict.fromkeys(repeated))
        gap = f"it lists {twice} twice at one PCI address (a paste that repeated its lines)"
    if skipped and not gap:
        shown = ", ".join(map(str, skipped[:8])) + (" ..." if len(skipped) > 8 else "")
        why = "a GPU nvidia-smi could not open, a view of some GPUs with nvidia-smi -i, or a cut paste"
        gap = f"it lists GPU {max(numbers)} but not GPU {shown} ({why})"
    return gap, skipped


def _counted(gpus: Sequence[GpuInfo], attached: int | None, listed: Sequence[GpuInfo]) -> bool:
    """Whether a whole listing counts the GPU set whose some record was cut short: a whole `-L`
    (`listed`) of as many GPUs, each one of them, or `Attached GPUs` of as many (a line above
    the records)."""
    if listed and len(listed) == len(gpus) and _all_among(listed, gpus):
        return True
    return attached is not None and attached == len(gpus)


def _outlisted(
    base: list[GpuInfo],
    base_report: GpuReport | None,
    wider: tuple[str, list[GpuInfo], GpuReport | None],
    listed_as: str = "list",
) -> str:
    """What says the chosen format lists some GPUs only: 'the `nvidia-smi --query-gpu` CSV lists
    1 GPU(s) but the plain `nvidia-smi` table lists 2 (...)'."""
    narrow = base_report.source if base_report else listed_as
    shown = gpu_agree.format_call(narrow) if narrow in gpu_agree.FORMATS else "one format"
    return (
        f"{shown} lists {len(base)} GPU(s) but {gpu_agree.format_call(wider[0])} lists"
        f" {len(wider[1])} (an output cut short, or captures of other times)"
    )


def _set_clashes(
    gpus: list[GpuInfo], ranked: list[tuple[str, GpuReport]], listed: list[GpuInfo], listed_as: str = "list"
) -> list[tuple[str, str]]:
    """Where the whole listings (and `listed`, `-L`'s whole one) name other GPUs than the set. A
    listing of some of the GPUs the others list is one cut at a line end, no disagreement, unless
    it says it lists them all (its count of GPUs attached: a GPU lost between calls)."""
    whole_lists = [
        (label, r.gpus)
        for label, r in ranked
        if _lists_all(r) and (r.attached_gpus == len(r.gpus) or not _some_of(r.gpus, gpus))
    ]
    if listed and not _some_of(listed, gpus):
        whole_lists.append((listed_as, tuple(listed)))
    return gpu_agree.set_clashes(gpus, whole_lists, _same) if len(whole_lists) > 1 else []


def _some_of(listing: Sequence[GpuInfo], gpus: Sequence[GpuInfo]) -> bool:
    """Whether `listing` lists fewer GPUs than `gpus`, each one of them (a listing cut short)."""
    return len(listing) < len(gpus) and _all_among(listing, gpus)


def _all_among(some: Sequence[GpuInfo], gpus: Sequence[GpuInfo]) -> bool:
    """Whether each GPU of `some` is one of `gpus`."""
    return all(any(_same(g, c) for g in gpus) for c in some)


def _lists_all(report: GpuReport) -> bool:
    """Whether `report` lists every GPU it read (not cut short, no rows that may be samples, as
    many as it says are attached): a listing whose leaving a GPU out is a disagreement."""
    return report.complete and not report.gap and len(report.gpus) >= (report.attached_gpus or 0)
