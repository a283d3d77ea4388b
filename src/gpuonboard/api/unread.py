"""Saved outputs that read nothing of the box (a kernel log reader's refusal, the shell's
`nvidia-smi: command not found`) beside one of their kind that read it: no rival views of the box
(`dmesg` refused, then `sudo dmesg`), so the one that read the box is judged and the other noted."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, TypeVar

from gpuonboard.api.kind_names import kind_name
from gpuonboard.errors import UsageError
from gpuonboard.facts.extra_probes import KERNEL_LOG_REFUSED
from gpuonboard.facts.gpu_ids import bus_key
from gpuonboard.facts.gpu_views import IN_RUNNING_CONTAINER
from gpuonboard.facts.infiniband import rdma_format
from gpuonboard.facts.mcelog import joined_mcelog, mcelog_only
from gpuonboard.facts.probe import ProbeOutput
from gpuonboard.once import lazy_re

if TYPE_CHECKING:
    from gpuonboard.facts.cpu import CpuInfo
    from gpuonboard.facts.nvidia_smi import GpuInfo

T = TypeVar("T")


def unread(out: ProbeOutput) -> str:
    """Why a saved output read nothing of the box, as the box said it (a kernel log reader's
    refusal, the shell's `nvidia-smi: command not found`); "" for one that read something. Such
    an output gives way to one of its kind that read the box (`sudo dmesg` after `dmesg`)."""
    if out.stdout.strip() or out.exit_code not in (127, KERNEL_LOG_REFUSED):
        return ""
    return out.stderr.strip() or f"exit code {out.exit_code}"


def gives_way(first: T, then: T, why: Callable[[T], str]) -> tuple[T, T] | None:
    """(the one that gives way, the one kept) of two outputs of one kind where one read nothing of
    the box (`why` of it not "": refused, its tool not found) and so is no rival of the other (of
    two such, the first is kept); None where both read the box (two views: neither may be
    dropped). One rule for a saved session (api/transcript.py) and a folder (keeps_first)."""
    if why(then):
        return then, first
    if why(first):
        return first, then
    return None


def joined_boots(kind: str, first: ProbeOutput, then: ProbeOutput) -> ProbeOutput | None:
    """One kernel log of two where one is of an earlier boot (`journalctl -k -b -1`, then `dmesg`
    of the boot the box runs now, either order): no rival views but two boots. The one of this
    boot (else the first) is judged, the other kept in its `history`, each log read apart
    (steps/checks/fabric_health.py: the earlier boot's faults are history). None otherwise (two
    of this boot, or one that read nothing)."""
    if kind != "kernel_log" or not (first.earlier_boot or then.earlier_boot) or unread(first) or unread(then):
        return None
    base, other = (then, first) if first.earlier_boot and not then.earlier_boot else (first, then)
    return replace(base, history=(*base.history, *other.history, other.stdout))


def joined_greps(
    kind: str, first: ProbeOutput, then: ProbeOutput, one_session: bool = False
) -> ProbeOutput | None:
    """One kernel log of two of this boot that their commands each narrowed (`sudo dmesg | grep
    error`, then `sudo dmesg | grep -i NVRM` typed at one prompt: measure37d 19): two excerpts
    of the one log, no rival views. The first is judged, narrowed (a pass unverified), the other
    kept in its `beside`, each of its faults the first does not hold added once
    (steps/checks/fabric_health.py). None otherwise: a whole log beside an excerpt, another boot's,
    one that read nothing (rivals, or joined_boots), two not known to be of one box and one boot
    (not two commands of one saved session, `one_session`: two files, two boxes' perhaps; two
    hosts named by the journal's lines; a rotated older log, `kern.log.1`, `syslog.2.gz`)."""
    outs = (first, *first.beside, then)
    if kind != "kernel_log" or any(not o.partial or o.earlier_boot or o.history or unread(o) for o in outs):
        return None
    if not one_session or any(_ROTATED.search(o.partial) for o in outs):
        return None
    from gpuonboard.facts.kernel_wrap import host_of

    named = {host for o in outs for line in o.stdout.splitlines() if (host := host_of(line))}
    if len(named) > 1:
        return None
    return replace(first, beside=(*first.beside, then, *then.beside))


# a rotated log's file, as a command names it (`/var/log/kern.log.1`, `syslog.2.gz`,
# `messages-20261129`): an older log than this boot's, perhaps another boot's
_ROTATED = lazy_re(r"[\w-]*(?:\.log|syslog|messages|kern|dmesg|warn)(?:\.\d+|-\d{8})(?:\.gz|\.xz|\.bz2)?\b")
# where a session's command was read from: `FILE line 3 (`cmd`)`, `FILE lines 1-3 (...)`
_SESSION_WHERE = lazy_re(r"^(.+?) lines? \d+(?:-\d+)? \(")


def one_session(where: str, other: str) -> bool:
    """Whether two outputs were read from one saved file (two commands of one session, two pieces
    of one script's output), by where each was read from."""
    one, two = _SESSION_WHERE.match(where), _SESSION_WHERE.match(other)
    return one is not None and two is not None and one.group(1) == two.group(1)


# the probes whose saved outputs in different formats are views of one box, merged by their rule
# (steps/checks/rdma_ports.py: ibstat's rate beside ibv_devinfo's state), by the format of each
_FORMATS: dict[str, Callable[[str], str]] = {"rdma_ports": rdma_format}


def joined_formats(kind: str, first: ProbeOutput, then: ProbeOutput) -> ProbeOutput | None:
    """One output of two of a probe whose formats answer different questions (`ibstat` and
    `ibv_devinfo` of one box's RDMA ports), each read and merged: the first, with the other in its
    `beside`. None for two in one format (a narrower view or a later state: rivals), or one that
    read nothing."""
    format_of = _FORMATS.get(kind)
    if format_of is None or unread(first) or unread(then):
        return None
    formats = {format_of(out.stdout) for out in (first, *first.beside)}
    if format_of(then.stdout) in formats:
        return None
    return replace(first, beside=(*first.beside, then, *then.beside))


def joined_memory(kind: str, first: ProbeOutput, then: ProbeOutput) -> ProbeOutput | None:
    """One output of several `free` answers of one box (`free -h`, `free -k`, `free -b`, `cat
    /proc/meminfo`) whose Mem totals agree within what each printed (`-h`'s `125Gi` is 125-126
    GiB): the most exact is read, the others kept in its `beside`. None where a total was not
    read, the ranges do not meet (two boxes, or a box that changed: rivals, refused naming
    both), or one shows only part of the box or a container's view."""
    boxs, aside = _box_views(first)
    if kind != "free" or any(unread(o) or o.partial or o.in_container for o in (first, then, *boxs)):
        return None
    from gpuonboard.facts.memory import read_memory

    read = [(o, read_memory(o.stdout)) for o in (first, *boxs, then)]
    ranges = [
        (m.total_bytes - m.total_spread[0], m.total_bytes + m.total_spread[1])
        for _, m in read
        if m.total_bytes
    ]
    if len(ranges) != len(read) or max(low for low, _ in ranges) > min(high for _, high in ranges):
        return None
    exact = min(range(len(read)), key=lambda at: sum(read[at][1].total_spread))
    main = read[exact][0]
    return replace(main, beside=(*(o for at, (o, _) in enumerate(read) if at != exact), *aside))


def _cpu_read(out: ProbeOutput) -> CpuInfo:
    from gpuonboard.facts import cpu

    text = out.stdout
    return cpu.parse_cpuinfo(text) if cpu.looks_like_cpuinfo(text) else cpu.parse_lscpu(text)


def _cpus_agree(one: CpuInfo, other: CpuInfo) -> bool:
    """Whether two readings of a box's CPUs say the same where both say it: the CPUs online (a
    /proc/cpuinfo lists those only), the cores where no CPU is offline, the CPUs offline."""
    if (one.source == "lscpu") != (other.source == "lscpu"):
        listing, cpuinfo = (one, other) if one.source == "lscpu" else (other, one)
        online = listing.logical_cpus - (listing.offline_cpus or 0) if listing.logical_cpus else None
        said = [(online, cpuinfo.logical_cpus)]
        if not listing.offline_cpus:
            said.append((listing.physical_cores, cpuinfo.physical_cores))
    else:
        said = [
            (one.logical_cpus, other.logical_cpus),
            (one.physical_cores, other.physical_cores),
            (one.offline_cpus or 0, other.offline_cpus or 0),
        ]
    return all(a == b for a, b in said if a is not None and b is not None)


def joined_cpus(kind: str, first: ProbeOutput, then: ProbeOutput) -> ProbeOutput | None:
    """One output of several answers of one box to what its CPUs are (`lscpu`, `lscpu -J`, `cat
    /proc/cpuinfo`) that agree where both say it (_cpus_agree): the whole lscpu that counts the
    cores is read before a cut or filtered one, and before a /proc/cpuinfo (which lists the online
    CPUs only); a whole /proc/cpuinfo that counts them before an lscpu that does not (unless that
    lscpu lists CPUs offline, which the /proc/cpuinfo cannot show); the others kept in `beside`.
    None where they disagree (rivals, refused naming both), or one shows only part of the box or
    a container's view (joined_container: a container's kept beside, aside)."""
    boxs, aside = _box_views(first)
    outs = (first, *boxs, then)
    if kind != "lscpu" or any(unread(o) or o.partial or o.in_container for o in outs):
        return None
    read = [(o, _cpu_read(o)) for o in outs]
    if not all(_cpus_agree(a, b) for at, (_, a) in enumerate(read) for _, b in read[at + 1 :]):
        return None

    def worse(at: int) -> tuple[bool, bool, bool, int]:
        # (an lscpu listing CPUs offline keeps them in sight even without a core count)
        info = read[at][1]
        uncounted = info.physical_cores is None and not info.offline_cpus
        return (bool(info.cut or info.filtered), uncounted, info.source != "lscpu", at)

    best = min(range(len(read)), key=worse)
    return replace(read[best][0], beside=(*(o for at, (o, _) in enumerate(read) if at != best), *aside))


def _box_views(out: ProbeOutput) -> tuple[tuple[ProbeOutput, ...], tuple[ProbeOutput, ...]]:
    """(the outputs beside `out` that are the box's own answers, those a container gave:
    joined_container's, kept as notes only)."""
    return (
        tuple(o for o in out.beside if not o.in_container),
        tuple(o for o in out.beside if o.in_container),
    )


def _more_than_the_box(kind: str, box: ProbeOutput, container: ProbeOutput) -> bool:
    """Whether a container's answer (free, lscpu) says more memory or CPUs than the box's own:
    then it is no container of that box (two boxes, or a box that changed)."""
    if kind == "free":
        from gpuonboard.facts.memory import read_memory

        mine, its = read_memory(box.stdout), read_memory(container.stdout)
        if mine.total_bytes is None or its.total_bytes is None:
            return True
        return its.total_bytes - its.total_spread[0] > mine.total_bytes + mine.total_spread[1]
    mine_cpus, its_cpus = _cpu_read(box).logical_cpus, _cpu_read(container).logical_cpus
    return mine_cpus is None or its_cpus is None or its_cpus > mine_cpus


def joined_container(kind: str, first: ProbeOutput, then: ProbeOutput) -> ProbeOutput | None:
    """One output of the box's own `free` or `lscpu` (or /proc/meminfo, /proc/cpuinfo) and one run
    in a container (`docker exec app free -h`: ProbeOutput.in_container), either order: no rival
    views, as the container's shows its share (lxcfs) or the host's: the box's own, read whole, is
    judged, the container's kept in its `beside` and noted. None for any other two, or where the
    container's says more than the box's (no container of that box)."""
    if kind not in ("free", "lscpu") or unread(first) or unread(then):
        return None
    if then.in_container and not first.in_container and not first.partial:
        box, container = first, then
    elif first.in_container and not then.in_container and not then.partial and not first.beside:
        box, container = then, first
    else:
        return None
    if _more_than_the_box(kind, box, container):
        return None
    return replace(box, beside=(*box.beside, container, *container.beside))


def joined_gpu_view(kind: str, first: ProbeOutput, then: ProbeOutput) -> ProbeOutput | None:
    """One nvidia-smi output of the box's own (its table, -q, -q -x) and one of the same format a
    container printed (`kubectl logs POD`, `kubectl exec POD -- nvidia-smi`: its `partial` says
    IN_RUNNING_CONTAINER), either order: two places, no rival views of the box. The box's own is
    judged (cut short, it is read as cut), the container's kept in its `beside` and noted: the same
    GPUs through the same driver, so each GPU's faults there are the box's, folded into the box's
    GPU by PCI address or UUID (facts/gpu_views.py); only its GPU set is a view. None for any other
    two, a CSV (a second CSV in `beside` is merged as the box's), or a view with a GPU that names
    none of the box's GPUs by PCI address or UUID where the box's listing is whole (no container of
    that box) or that GPU shows a fault (one it could not open too: beyond a cut of the box's
    output, its fault could not be placed)."""
    if not kind.startswith("nvidia_smi") or kind == "nvidia_smi_csv" or unread(first) or unread(then):
        return None
    views = [IN_RUNNING_CONTAINER in o.partial for o in (first, then)]
    if views == [False, True] and not first.partial and not first.beside:
        box, view = first, then
    elif views == [True, False] and not then.partial and not first.beside:
        box, view = then, first
    else:
        return None
    from gpuonboard.facts.gpu_merge import unopened_gpus
    from gpuonboard.facts.gpu_views import fault_evidence, view_match
    from gpuonboard.facts.nvidia_smi import parse_any

    mine = parse_any(box.stdout)
    its = (*parse_any(view.stdout).gpus, *unopened_gpus([view.stdout + "\n" + view.stderr]))
    unmatched = [g for g in its if view_match(g, mine.gpus) is None]
    if any(fault_evidence(g) for g in unmatched) or (mine.complete and unmatched):
        return None
    return replace(box, beside=(*box.beside, view))


# how disagreement's clause sets two readings apart (keeps_first's advice then is to save one box's)
DISAGREE = "are not the first's"
# what to do with two files of one command's output that are not one answer (two runs at two
# times, two boxes'): each was passed as a file of its own, so "one file per command" is no help
ONE_PER_COMMAND = (
    "this tool judges one output of each command, of one box at one time: pass only the one to"
    " judge (the latest, the box now), or run `invoke facts` on each file by itself"
)


def disagreement(kind: str, first: ProbeOutput, then: ProbeOutput) -> str:
    """Why two outputs of one kind are rivals, as a clause: where one shows part of the box or a
    container's view, what it shows (its command named); where two free outputs' Mem totals, or
    two lscpu answers, were read whole and disagree, both named (two boxes); "" otherwise."""
    views = [o.partial or o.in_container for o in (first, then) if o.partial or o.in_container]
    if kind == "lscpu" and not (unread(first) or unread(then)):
        # (a view's CPUs that disagree with the other's: said as a disagreement, the view after it)
        one, other = _cpu_read(first), _cpu_read(then)
        if one.logical_cpus and other.logical_cpus and not _cpus_agree(one, other):
            lxcfs = (
                ", or a container: lxcfs shows its CPUs in /proc/cpuinfo, while lscpu may show the host's"
                if (one.source == "lscpu") != (other.source == "lscpu")
                else ""
            )
            boxes = "two boxes, a box" if lxcfs else "two boxes, or a box"
            return (
                f" whose {_cpus_said(other)} {DISAGREE} {_cpus_said(one)} ({boxes} that changed"
                f" between them{lxcfs}{''.join('; ' + view for view in views)})"
            )
    if views:
        return f" ({'; '.join(views)})"
    if unread(first) or unread(then) or kind != "free":
        return ""
        return ""
    from gpuonboard.facts.memory import read_memory

    first_total, then_total = read_memory(first.stdout).total_bytes, read_memory(then.stdout).total_bytes
    if first_total is None or then_total is None or joined_memory(kind, first, then) is not None:
        return ""
    return (
        f" whose Mem total, {then_total / 2**30:.3f} GiB, {DISAGREE.replace('are', 'is')}"
        f" {first_total / 2**30:.3f} GiB"
        " (two boxes, or a box whose memory changed between them)"
    )


def _cpus_said(info: CpuInfo) -> str:
    """`16 CPUs, 8 cores (lscpu)`, `4 CPUs online (/proc/cpuinfo)`: a reading of the CPUs."""
    online = " online" if info.source != "lscpu" else ""
    offline = f", {info.offline_cpus} offline" if info.offline_cpus else ""
    cores = f", {info.physical_cores} cores" if info.physical_cores is not None else ""
    return f"{info.logical_cpus} CPUs{online}{offline}{cores} ({info.source})"


def joined_queries(
    kind: str, first: ProbeOutput, then: ProbeOutput, names: tuple[str, str]
) -> ProbeOutput | None:
    """One output of two `--query-gpu` CSVs of the box asking other fields (one `name,
    memory.total`, the other `driver_version, pcie.link.gen.current`): the first, with the
    other in its `beside`, merged by GPU as two formats are (facts/gpu_merge.py: the format
    "csv2"). None for two asking the same fields (two samples: rivals) or one that read nothing.
    Two that cannot be of one box (a GPU of one none of the other's by index, UUID or PCI
    address where both give it; as many GPUs in neither with no such key) are refused, naming
    both files (`names`)."""
    from gpuonboard.facts.nvidia_smi import parse_any
    from gpuonboard.facts.nvidia_smi.query_csv import query_fields

    if kind != "nvidia_smi_csv" or first.beside or unread(first) or unread(then):
        return None
    fields = (query_fields(first.stdout), query_fields(then.stdout))
    if fields[0] is None or fields[1] is None or set(fields[0]) == set(fields[1]):
        return None
    a, b = parse_any(first.stdout), parse_any(then.stdout)
    if a.source != "csv" or b.source != "csv" or not a.gpus or not b.gpus:
        return None
    keyless = all(_keyless_rows(r.gpus, f) for r, f in ((a, fields[0]), (b, fields[1])))
    if (a.gap or b.gap) and not keyless:
        return None
    shared = set(fields[0]) & set(fields[1])
    why = _not_one_box(a.gpus, b.gpus, shared) or (
        _rows_differ((first.stdout, then.stdout), shared) if keyless else ""
    )
    if why:
        raise UsageError(
            f"{names[1]} and {names[0]}: two --query-gpu CSV outputs that cannot be of one box ({why});"
            " pass the files of one box."
        )
    return replace(first, beside=(then,))


# the CSV fields that name a GPU, each with how its value is compared
_GPU_KEYS: tuple[tuple[str, Callable[[GpuInfo], object]], ...] = (
    ("uuid", lambda g: (g.uuid or "").strip().upper() or None),
    ("pci.bus_id", lambda g: bus_key(g.pci_bus_id)),
    ("index", lambda g: g.index),
)


def _not_one_box(a: Sequence[GpuInfo], b: Sequence[GpuInfo], shared: set[str]) -> str:
    """Why two CSVs' GPUs cannot be one box's, "" where they may: by the first key both give
    (uuid, pci.bus_id, index), each GPU of the narrower among the other's (a `-i 0` query is a
    view of some); with none, as many GPUs (matched by order)."""
    for field, key in _GPU_KEYS:
        if field in shared:
            few, many = sorted(({key(g) for g in a}, {key(g) for g in b}), key=len)
            if not few & many:
                return f"no GPU in common: no {field} of one is in a row of the other"
            return "" if few <= many else f"a GPU's {field} in one is in no row of the other"
    if len(a) != len(b):
        return f"{len(a)} and {len(b)} GPUs, and no index, uuid or pci.bus_id in both to match them by"
    return ""


def _keyless_rows(gpus: Sequence[GpuInfo], fields: Sequence[str]) -> bool:
    """A CSV of several rows asking none of index, uuid, pci.bus_id: its rows cannot be told
    apart as GPUs or as samples of one (`csv_row`), yet nvidia-smi prints a query's GPUs in one
    order, PCI bus order, each time: two such CSVs of one box match row by row."""
    return len(gpus) > 1 and not {field for field, _ in _GPU_KEYS} & set(fields)


# the CSV fields a GPU's reading changes between two calls (a moment's figures): two queries of
# one box may read them otherwise; every other field both ask names the GPU or its settings
_MOMENT = re.compile(
    r"^(timestamp|temperature\.|utilization\.|memory\.(used|free|reserved)|power\.draw|fan\.|pstate"
    r"|clocks\.(current\.|sm|gr|mem|video)|clocks_(event|throttle)_reasons|encoder\.|pcie\.link\.\w+\.current)"
)
_UNIT = re.compile(r"\s*(MiB|W|%|MHz|C)$")


def _rows_differ(texts: tuple[str, str], shared: set[str]) -> str:
    """Where two keyless CSVs of as many rows (matched by order) read a field that names a GPU
    or its settings (not a moment's figure, _MOMENT) otherwise in one row: 'row 2 reads name
    NVIDIA A100 in one, NVIDIA H100 in the other'; "" where every such field agrees."""
    from gpuonboard.facts.csvtext import first_csv_row
    from gpuonboard.facts.nvidia_smi.query_csv import query_fields

    tables = []
    for text in texts:
        names = query_fields(text) or ()
        lines = [line for line in text.splitlines() if line.strip()][1:]
        rows = [[_UNIT.sub("", cell.strip()) for cell in first_csv_row(line)] for line in lines]
        tables.append([dict(zip(names, row, strict=False)) for row in rows])
    for number, (one, other) in enumerate(zip(*tables, strict=False), start=1):
        for field in sorted(shared):
            if not _MOMENT.match(field) and one.get(field) != other.get(field):
                return f"row {number} reads {field} {one.get(field)} in one, {other.get(field)} in the other"
    return ""


def _matched_by(both: object) -> str:
    """How the GPUs of two joined CSVs (`both`: the first, the other in its `beside`) were
    matched: by a key naming one GPU (uuid, pci.bus_id), else by index or order only, which
    nothing in the files ties to one box."""
    from gpuonboard.facts.nvidia_smi.query_csv import query_fields

    if not isinstance(both, ProbeOutput):
        return "its GPUs matched by index or order"
    texts = [both.stdout, *(o.stdout for o in both.beside)]
    fields = [set(query_fields(t) or ()) for t in texts]
    shared = set.intersection(*fields) if len(fields) == 2 else set()
    key = next((field for field, _ in _GPU_KEYS if field in shared), "")
    if key in ("uuid", "pci.bus_id"):
        return f"its GPUs matched by {key}"
    how = (
        "by index only"
        if key
        else "by order only (one row each, or as many rows: nvidia-smi prints a query's GPUs in PCI"
        " bus order each time, and every field both read of a GPU agrees)"
    )
    return f"its GPUs matched {how}: nothing in both files shows they are one box's; add uuid to both queries"


def output_cut(kind: str, out: ProbeOutput) -> str:
    """Why an output is cut short, as its reader says it (an RDMA port listing ending inside a
    record, an lsblk table ending inside a row); "" where it is whole or its reader does not say."""
    if kind == "rdma_ports":
        from gpuonboard.facts.infiniband import parse_rdma

        report = parse_rdma(out.stdout)
        return report.cut or ("" if report.complete else "it says it stopped early")
    if kind == "lsblk":
        from gpuonboard.facts.lsblk_table import table_cut

        return table_cut(out.stdout)
    return ""


def joined(kind: str, first: ProbeOutput, then: ProbeOutput, one_file: bool = False) -> ProbeOutput | None:
    """Two outputs of one kind read as one (joined_boots, joined_formats, joined_memory,
    joined_cpus); None where they are rivals. `one_file`: both were read from one saved file."""
    return (
        joined_boots(kind, first, then)
        or joined_greps(kind, first, then, one_file)  # (two greps of this boot's log, one session)
        or joined_mcelog(kind, first, then)  # (mcelog's records beside the kernel log: facts/mcelog)
        or joined_formats(kind, first, then)
        or joined_container(kind, first, then)
        or joined_gpu_view(kind, first, then)
        or joined_env_list(kind, first, then)
        or joined_remote_links(kind, first, then)
        or joined_memory(kind, first, then)
        or joined_cpus(kind, first, then)
    )


# `nvidia-smi nvlink -R`'s link line (`Link 0: Remote Device 00000000:D5:00.0: Link 0`), and any
# listing's GPU line
_REMOTE_LINK = re.compile(r"^\s*Link \d+: Remote Device\b", re.M)
_ANY_LINK = re.compile(r"^\s*Link \d+:", re.M)
_NVLINK_GPU = re.compile(r"^\s*GPU \d+:.*$", re.M)


def joined_remote_links(kind: str, first: ProbeOutput, then: ProbeOutput) -> ProbeOutput | None:
    """`nvidia-smi nvlink -R` (each link's remote device) and `nvlink -s` (each link's state) of
    the same GPUs, either order: two listings, not two answers to one question (the dropped case
    of m35c: refused as "two `nvidia-smi nvlink -s` outputs"); the status is judged. None for any
    other two, or where their GPU lines differ."""
    if kind != "nvidia_nvlink":
        return None
    remote = [
        len(_REMOTE_LINK.findall(o.stdout)) == len(_ANY_LINK.findall(o.stdout)) > 0 for o in (first, then)
    ]
    gpus = [[" ".join(g.split()) for g in _NVLINK_GPU.findall(o.stdout)] for o in (first, then)]
    if remote[0] == remote[1] or gpus[0] != gpus[1] or not gpus[0]:
        return None
    return then if remote[0] else first


# an `nvidia-smi -L` line's UUID (a MIG device's too), which collect_env's GPU lines leave out
_LIST_UUID = re.compile(r"\s*\(UUID: [^)]*\)\s*$")


def joined_env_list(kind: str, first: ProbeOutput, then: ProbeOutput) -> ProbeOutput | None:
    """One GPU list of `nvidia-smi -L` and a collect_env report's (its -L lines with the UUIDs
    taken out: api/collect_env.py), either order, whose lines are the same once the UUIDs are
    taken out: the same answer of the box, the one with UUIDs read. None for any other two (other
    GPUs: two boxes or a box that changed, rivals), or where either is cut, a view or unread."""
    outs = (first, then)
    if kind != "nvidia_smi_list" or any(unread(o) or o.partial or o.in_container or o.beside for o in outs):
        return None
    lines = [[_LIST_UUID.sub("", ln).rstrip() for ln in o.stdout.splitlines() if ln.strip()] for o in outs]
    with_uuids = ["(UUID:" in o.stdout for o in outs]
    if lines[0] != lines[1] or not lines[0] or with_uuids[0] == with_uuids[1]:
        return None
    return first if with_uuids[0] else then


def joined_said(kind: str, both: object = None) -> str:
    """What two outputs joined as one (`both`: their ProbeOutput) are, for the note that says so."""
    beside = both.beside if isinstance(both, ProbeOutput) else ()
    # (the container's output just joined: the last kept beside, joined_container appends it)
    container = next((o.in_container for o in reversed(beside) if o.in_container), "")
    if container:
        return (
            f"the box's own {kind_name(kind)} output and one run in a container ({container}),"
            " the box's judged"
        )
    view = next((o.partial for o in reversed(beside) if IN_RUNNING_CONTAINER in o.partial), "")
    if view and kind.startswith("nvidia_smi"):
        return (
            f"the box's own {kind_name(kind)} output and a container's view of its GPUs ({view}),"
            " the box's judged and each GPU's faults in the view judged as its own (the same GPUs,"
            " matched by PCI address or UUID)"
        )
    if kind == "nvidia_smi_csv":
        return (
            "two `nvidia-smi --query-gpu` CSV outputs of the box asking other fields, each read and"
            f" merged by GPU (the second named `the second CSV query`), {_matched_by(both)}"
        )
    if kind == "kernel_log" and any(mcelog_only(o.stdout) for o in beside):
        return "the kernel log and mcelog's records of the machine checks it logged, both read"
    if kind == "kernel_log" and isinstance(both, ProbeOutput) and not both.history:  # (joined_greps)
        return (
            "two excerpts of the kernel log of this boot, each narrowed by its command, read as one"
            " (each fault once; no pass: the lines neither kept are not known)"
        )
    if kind == "kernel_log":
        return "the kernel logs of two boots of the box, each read (the earlier boot's faults as history)"
    if kind == "nvidia_smi_list" and not beside:  # (joined_env_list)
        return (
            "nvidia-smi -L's GPU list and a collect_env report's, the same GPUs once -L's UUIDs are"
            " taken out, the one with UUIDs judged"
        )
    if kind == "nvidia_nvlink":  # (joined_remote_links)
        return (
            "`nvidia-smi nvlink -R`'s listing of where each link goes and `nvlink -s`'s link states"
            " of the same GPUs, the link states judged"
        )
    if kind == "free":
        return "two free outputs of the box whose Mem totals agree, the more exact one judged"
    if kind == "lscpu":
        return "two answers of the box to what its CPUs are that agree, the whole lscpu judged first"
    return f"two {kind_name(kind)} outputs of the box in two formats, each read and merged"


def keeps_first(
    kind: str,
    out: ProbeOutput,
    where: str,
    raw: MutableMapping[str, ProbeOutput],
    origin: Mapping[str, str],
    notes: list[str],
    same_box: bool = True,
) -> bool:
    """Whether the output of `kind` read before is kept over `out` (of file `where`): two kernel
    logs of two boots of one box, or two RDMA port listings in two formats, are kept together in
    `raw` (joined, noted: True); an output
    that read nothing of the box (unread: refused, its tool not found) gives way to one that did,
    noted (of two such, the first is kept); two that read the box are refused (exit 2), and so
    are any two not known to be of one box and one time (`same_box` False: files of two folders,
    such as two hosts' or two runs' raw/<host>/ folders, where a box whose driver broke since
    would be judged on another's or its own older answer)."""
    if kind not in raw:
        return False
    both = (
        (
            joined(kind, raw[kind], out, one_session(origin[kind], where))
            or joined_queries(kind, raw[kind], out, (origin[kind], where))
        )
        if same_box
        else None
    )
    if both is not None:
        raw[kind] = both
        notes.append(f"{where} and {origin[kind]}: {joined_said(kind, both)}.")
        return True
    pair = gives_way((origin[kind], raw[kind]), (where, out), lambda read: unread(read[1]))
    if not same_box or pair is None:
        differ = disagreement(kind, raw[kind], out)
        advice = (
            "save the outputs of one box, taken at one time"
            if DISAGREE.replace("are ", "") in differ
            else ONE_PER_COMMAND
        )
        raise UsageError(
            f"{where}: a second {kind_name(kind)} output (the first is {origin[kind]}){differ}; {advice}."
        )
    (lost, lost_out), (keep, _) = pair
    notes.append(f"{lost}: not read: it answered `{unread(lost_out)}`; {keep} is judged.")
    return lost == where
