"""Every answer nvidia-smi gave, merged into one GpuReport that says where each field came from.

The host is asked in every cheap format at once (`-q -x`, `-q`, the `--query-gpu` CSV, the
default table, `-L`, `--query-compute-apps`): formats answer different questions (the CSV lists
no processes, the table cuts names, `-q -x` may be blocked by a provider's policy), so no format
wins alone. Each field comes from the richest format that read it, a GPU's faults from every
format that read it; the GPU set is the widest any format listed; a format the provider refuses
is a fact of its own (`Refusal`), never a broken driver. Pure: no I/O.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gpuonboard.facts import gpu_agree
from gpuonboard.facts.container_banner import banner_lines
from gpuonboard.facts.csvtext import csv_rows
from gpuonboard.facts.gpu_ids import bus_key
from gpuonboard.facts.gpu_list import GpuList, ListedGpu
from gpuonboard.facts.gpu_probes import APPS_PROBE, ENV_DRIVER_PROBE, GPU_SOURCES, LIST_PROBE, NVIDIA_SMI_ARGS
from gpuonboard.facts.gpu_views import HIGHEST as _HIGHEST
from gpuonboard.facts.gpu_views import SLOWDOWNS as _SLOWDOWNS
from gpuonboard.facts.gpu_views import fault_seen, view_label, with_views
from gpuonboard.facts.nvidia_smi import GpuInfo, GpuProcess, GpuReport
from gpuonboard.facts.nvidia_smi.faults import INFOROM_FAULT, _field_faults, inforom_corrupted
from gpuonboard.facts.nvidia_smi.query_csv import NO_NAME
from gpuonboard.facts.nvidia_smi.reasons import CLOCK_EVENT_REASONS
from gpuonboard.facts.nvidia_smi.values import _clean, _is_version
from gpuonboard.facts.probe import ProbeOutput

# the nvidia-smi calls that list no GPU (the compute apps, `topo -m`, `nvlink`)
_OTHER_CALLS = tuple(
    name for name in NVIDIA_SMI_ARGS if name not in (*(n for n, _, _ in GPU_SOURCES), LIST_PROBE)
)
APPS_FIELDS: tuple[str, ...] = ("gpu_uuid", "pid", "process_name", "used_memory")
# where a field is taken from, in order: a named field of a GPU comes from the first of these
# formats that read it (-L's names are whole, the table's may be cut with "...")
_FIELD_RANK = ("xml", "text", "csv", "csv2", "list", "table")

# A format refused on purpose (a provider's policy, the login's permissions), as opposed to a
# driver that cannot answer: its words, case-insensitive
_REFUSAL = re.compile(
    r"disabled on this (?:instance|machine|host|server|node)|\bpolicy\b|by (?:the )?(?:administrator|"
    r"provider|vendor)\b|\bnot allowed\b|\bis restricted\b",
    re.IGNORECASE,
)
# NVML's own errors ("GPU access blocked by the operating system", "Insufficient Permissions")
# are causes of their own, each with its advice (nvidia_smi_failure), never a format refused
_NVML = re.compile(r"\bNVML\b")
# words each of _REFUSAL's branches holds, lower-cased: an ASCII text (nvidia-smi's) holding
# none of them has no refusal, without the case-blind regex's slow walk of each of its lines
_REFUSAL_WORDS = ("disabled on this ", "policy", "by ", "not allowed", "is restricted")


@dataclass(frozen=True)
class Refusal:
    """One nvidia-smi format the host refused to give (`-q -x` disabled by the provider)."""

    probe: str
    args: str
    line: str  # nvidia-smi's own words

    def sentence(self) -> str:
        """'the host refuses nvidia-smi -q -x: ERROR: ... disabled ... by the provider's policy'."""
        return f"the host refuses nvidia-smi {self.args}: {self.line[:200]}"


@dataclass(frozen=True)
class GpuEvidence:
    """The merged GPU report and what each format did: answered, refused, failed or absent."""

    report: GpuReport | None
    answered: tuple[str, ...]  # format labels that listed GPUs, richest first
    refusals: tuple[Refusal, ...]
    # the `-L` listing's GPU count (None: not given or unreadable)
    listed: int | None = None

    @property
    def blocked_by_policy(self) -> bool:
        """Some format was refused on purpose: say so, never 'repair the driver'."""
        return bool(self.refusals)


def refusal_line(out: ProbeOutput) -> str | None:
    """The line of a refused format (provider policy, permissions); None when it is not one."""
    for text in (out.stdout, out.stderr):
        lines = _head_lines(text, 40)
        if not _may_refuse(lines):
            continue
        # (a container image's banner above the tool's output: the image's words, not the tool's)
        banner = banner_lines(lines)
        for i, line in enumerate(lines[:20] if not banner else lines[: max(banner) + 21]):
            if i not in banner and _REFUSAL.search(line) and not _NVML.search(line):
                return line.strip()
    return None


def _may_refuse(lines: list[str]) -> bool:
    """Whether any of `lines` may hold a refusal: False only for ASCII lines none of which holds
    one of _REFUSAL_WORDS in any case (outside ASCII the regex's case folds are wider)."""
    text = "\n".join(lines)
    if not text.isascii():
        return True
    lower = text.lower()
    return any(word in lower for word in _REFUSAL_WORDS)


def _head_lines(text: str, count: int, chunk: int = 8192) -> list[str]:
    """text.splitlines()[:count] without splitting the rest of a long output (a -q -x of 8 GPUs
    is ~170 KB): the lines of a head that holds more than `count` of them are the text's own
    (each of the first `count` ends where the text's does: a line follows it in the head)."""
    head = text[:chunk].splitlines()
    return head[:count] if len(head) > count else text.splitlines()[:count]


# nvidia-smi's line for a GPU it cannot open, printed in place of that GPU's record or row
# ("Unable to determine the device handle for gpu 0000:9B:00.0: Unknown Error", "... for GPU
# 00000000:02:00.0: GPU is lost. Reboot the system to recover this GPU"); newer drivers put the
# GPU's index first ("... for GPU1: 0000:34:00.0: Unknown Error", R610 over a table of GPUs 0,
# 2 and 3: tests/fixtures/real/nvidia-smi__rtx-pro-6000-blackwell__4gpu-1-lost__driver610.57.04.txt)
_NO_HANDLE = re.compile(
    r"Unable to (?:determine|detect) the device handle for gpu\s*(?:(\d+)\s*:\s*)?"
    r"([0-9a-f]{4,8}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-9a-f])\s*:?\s*(.*)",
    re.IGNORECASE,
)


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
_NO_HANDLE_ANY = re.compile("|".join(re.escape(w) for w in _NO_HANDLE_WORDS), re.IGNORECASE)


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


def _same(a: GpuInfo, b: GpuInfo) -> bool:
    """One physical GPU in two formats: by PCI address, else UUID, else index."""
    ka, kb = bus_key(a.pci_bus_id), bus_key(b.pci_bus_id)
    if ka and kb:
        return ka == kb
    ua, ub = gpu_agree.uuid_of(a), gpu_agree.uuid_of(b)
    if ua and ub:
        return ua == ub
    return a.index == b.index


# a merged GPU's own (its formats' provenance and readings), or the format's it took a field from
_OWN = (
    "index",
    "provenance",
    "processes_open",
    "record_cut",
    "parts_read",
    "power_limit_requested",
    "readings",
)
_FIELDS = [f for f in dataclasses.fields(GpuInfo) if f.name not in _OWN]
# what every format that read the GPU says, never one of them chosen: a fault one format shows
# while another read the GPU is a GPU that changed between the calls or a flaky one, a fault
# either way (`-L` names a GPU but reads none of its values: it neither shows nor clears one)
_UNION = {"faults", "cell_faults"}
# paired with the flag that says whether the format could say
_WITH_FLAG = {"processes": "processes_known", "clock_event_reasons": "clock_event_reasons_known"}


def _unset(value: object) -> bool:
    return value is None or value == () or value is False or value == ""


def _merge_gpu(base: GpuInfo, copies: Sequence[tuple[str, GpuInfo]]) -> GpuInfo:
    """One GPU from its copies in several formats (ranked richest first)."""
    if len(copies) == 1 and copies[0][1] is base and copies[0][0] in _FIELD_RANK:
        # one format read this GPU (the copy is the base itself): each field would come from it
        # as it is, _FROM_BEST's and the flagged ones too, and one source keeps base.provenance
        return base
    ranked = sorted(copies, key=lambda c: _FIELD_RANK.index(c[0]))
    values: dict[str, Any] = {}
    provenance: list[tuple[str, str]] = []
    for f in _FIELDS:
        if f.name in _WITH_FLAG.values():
            continue
        if f.name in _UNION:
            read = [(label, g) for label, g in ranked if label != "list"] or ranked[:1]
            values[f.name] = _all_faults(f.name, read)
            continue
        flag = _WITH_FLAG.get(f.name)
        # (a CSV's requested limit, read for want of its enforced one, after every enforced reading)
        order = (
            sorted(ranked, key=lambda c: c[1].power_limit_requested) if f.name == "power_limit_w" else ranked
        )
        for label, gpu in order:
            known = getattr(gpu, flag) if flag else not _unset(getattr(gpu, f.name))
            if f.name == "name" and gpu.name.endswith("...") and label == "table":
                known = known and len(ranked) == 1  # a cut name only when no other format has it
            if known:
                values[f.name] = getattr(gpu, f.name)
                if flag:
                    values[flag] = True
                if f.name == "processes":  # (whether that list may go on past a cut: its own say)
                    values["processes_open"] = gpu.processes_open
                provenance.append((f.name, label))
                break
    _worst_read(values, provenance, ranked)
    # (some format's record of it was cut short: a field is whole where a whole record read it)
    values["record_cut"] = any(g.record_cut for _, g in ranked)
    # (the parts a cut record read are its format's: each format's in its reading, `readings`)
    values["parts_read"] = ranked[0][1].parts_read if len(ranked) == 1 else ()
    limit_from = dict(provenance).get("power_limit_w")
    values["power_limit_requested"] = any(
        g.power_limit_requested for label, g in ranked if label == limit_from
    )
    sources = {label for _, label in provenance}
    return dataclasses.replace(
        base,
        **values,
        provenance=tuple(provenance) if len(sources) > 1 else base.provenance,
        readings=tuple(ranked) if len(ranked) > 1 else (),
    )


def _worst_read(
    values: dict[str, Any], provenance: list[tuple[str, str]], ranked: Sequence[tuple[str, GpuInfo]]
) -> None:
    """Where formats read one GPU's fault evidence otherwise, the worst of them in `values` (and
    its format in `provenance`): a count's highest (-q's 0 uncorrectable ECC errors beside the
    CSV's 2 is 2, from the CSV), a recovery action the driver asks for in any format (the CSV's
    "Reset" beside -q's "None"), and every slowdown any format saw among the clock-event reasons
    (the CSV's hw_slowdown beside -q's none), an unknown one too, and every reason any format
    read the state of (clock_event_reasons_read). The richest format's answer alone would pass a GPU
    another format of the same box shows a fault on."""
    for name in _HIGHEST:
        read = [(label, value) for label, g in ranked if (value := getattr(g, name)) is not None]
        if read and (top := max(read, key=lambda r: r[1]))[1] != values.get(name):
            values[name] = top[1]
            provenance[:] = [p for p in provenance if p[0] != name] + [(name, top[0])]
    pending = [
        (label, g.recovery_action) for label, g in ranked if (g.recovery_action or "none").lower() != "none"
    ]
    if pending and (values.get("recovery_action") or "none").lower() == "none":
        values["recovery_action"] = pending[0][1]
        provenance[:] = [p for p in provenance if p[0] != "recovery_action"] + [
            ("recovery_action", pending[0][0])
        ]
    if not values.get("clock_event_reasons_known"):
        return
    known = [g for _, g in ranked if g.clock_event_reasons_known]
    # (a reason this tool does not know, R3xx's `unknown` or an unlisted mask bit, holds the
    # clocks back as a slowdown does: kept whichever format saw it)
    seen = [
        r for g in known for r in g.clock_event_reasons if r in _SLOWDOWNS or r not in CLOCK_EVENT_REASONS
    ]
    if added := [r for r in dict.fromkeys(seen) if r not in values["clock_event_reasons"]]:
        values["clock_event_reasons"] = (*values["clock_event_reasons"], *added)
    # a reason is read on this GPU where any format read its state (-q's N/A beside the CSV's
    # Not Active: read there), never unread because the richest format printed no value
    values["clock_event_reasons_read"] = tuple(
        dict.fromkeys(r for g in known for r in g.clock_event_reasons_read)
    )


def _all_faults(field: str, read: Sequence[tuple[str, GpuInfo]]) -> tuple[str, ...]:
    """The faults (`field`: faults or cell_faults) every format that read one GPU shows. A
    whole-GPU fault that another format read the GPU without names both (`fault_seen`)."""
    clean = [label for label, g in read if not g.faults]
    out: list[str] = []
    for label, g in read:
        faults = getattr(g, field)
        out += [fault_seen(f, label, clean) for f in faults] if field == "faults" else faults
    return tuple(dict.fromkeys(out))


def _unopened_at(gpu: GpuInfo, lost: GpuInfo, copies: Sequence[tuple[str, GpuInfo]]) -> GpuInfo:
    """`gpu` (read by some format) with the fault of the output that could not open it (`lost`,
    at its PCI address): never a GPU of its own, never cleared by the format that read it."""
    label = next((where for field, where in lost.provenance if field == "faults"), "")
    clean = [c for c, g in copies if c != "list" and not g.faults]
    faults = [fault_seen(f, label, clean) if label else f for f in lost.faults]
    return dataclasses.replace(gpu, faults=tuple(dict.fromkeys((*gpu.faults, *faults))))


def parse_compute_apps(text: str) -> dict[str, list[GpuProcess]] | None:
    """`--query-compute-apps=gpu_uuid,pid,process_name,used_memory --format=csv,noheader,nounits`
    -> processes per GPU UUID; {} for an empty list (no process); None when the text is not
    such an output (a replayed other format, an error line)."""
    out: dict[str, list[GpuProcess]] = {}
    rows = csv_rows(text)
    if rows is None:
        return None
    for row in rows:
        if not row or not "".join(row).strip():
            continue
        if len(row) != len(APPS_FIELDS):
            return None
        uuid, pid, name, mem = (cell.strip() for cell in row)
        if not uuid.upper().startswith(("GPU-", "MIG-")) or not pid.isdecimal():
            return None
        used = int(mem) if mem.isdecimal() else None
        out.setdefault(uuid, []).append(GpuProcess(int(pid), name, "C", used))
    return out


def _with_processes(gpus: list[GpuInfo], apps: Mapping[str, list[GpuProcess]]) -> list[GpuInfo]:
    """The compute-apps list where a GPU's own format could not list processes: by the GPU's
    UUID (one GPU and one UUID listed: that GPU's); a GPU whose UUID the output does not give,
    where some process is on a GPU no UUID names, keeps its list unknown (never "none")."""
    uuids = {g.uuid for g in gpus if g.uuid}
    if len(gpus) == 1 and len(apps) == 1 and not gpus[0].uuid:
        apps = {"": next(iter(apps.values()))}  # (the one GPU's: its output gave no UUID)
    placed_all = all(uuid in uuids or uuid == "" for uuid in apps)
    out = []
    for g in gpus:
        if not g.processes_known and not g.faults and (g.uuid or placed_all):
            found = tuple(apps.get(g.uuid or "", ()))
            g = dataclasses.replace(
                g,
                processes=found,
                processes_known=True,
                provenance=(*g.provenance, ("processes", "compute_apps")),
            )
        out.append(g)
    return out


# `nvidia-smi -L` -> (index, name, uuid, MIG devices listed under it) per GPU
ListParser = Callable[[str], GpuList]


def merge(
    raw: Mapping[str, ProbeOutput],
    parse: Callable[[str], GpuReport],
    parse_list: ListParser | None = None,
) -> GpuEvidence:
    """Pure: the GPU probes' outputs -> one GpuReport with per-field provenance, the formats
    that answered and those refused. `parse` reads any nvidia-smi format (it recognises the
    text, whatever arguments were asked); `parse_list` reads `nvidia-smi -L`."""
    reports: list[tuple[str, GpuReport]] = []
    unread: list[tuple[str, GpuReport]] = []  # answered (a driver version), no GPU row read
    refusals: list[Refusal] = []
    seen: dict[str, GpuReport] = {}
    told: list[tuple[str | None, str]] = []  # (each output's CUDA version, why it is a view)
    for probe, _label, args in GPU_SOURCES:
        out = raw.get(probe)
        if out is None or out.absent:
            continue
        line = refusal_line(out)
        if line is not None:
            refusals.append(Refusal(probe, args, line))
            continue
        if not out.stdout.strip():
            continue
        report = seen.get(out.stdout) or parse(out.stdout)
        seen[out.stdout] = report
        if report.source != "csv" and out.beside and report.gpus:
            # (a container's view of these GPUs beside the box's own output: its faults are the box's)
            report = with_views(
                report, report.source, [(view_label(o.partial), parse(o.stdout)) for o in out.beside]
            )
        told.append((report.cuda_version, out.partial))
        # a view of some GPUs (`-i 0`): what it leaves out is not known to be missing, unless
        # the output says it shows every GPU attached (`Attached GPUs : 1`)
        shows_all = report.attached_gpus is not None and len(report.gpus) >= report.attached_gpus
        if out.partial and not shows_all and out.exit_code != 0:
            # (a call that failed after printing its rows: a cut, each row a GPU, never a view)
            report = dataclasses.replace(report, complete=False, cut_said=out.partial)
        elif out.partial and not shows_all:
            report = dataclasses.replace(report, complete=False, gap=out.partial)
        if report.gpus and all(r is not report for _, r in reports):
            reports.append((report.source, report))
        if report.source == "csv":
            reports += _second_queries(out, parse)
        if not report.gpus and report.driver_version and not report.complete:
            unread.append((report.source, report))
    unread += _env_driver(raw.get(ENV_DRIVER_PROBE))
    listed, listed_whole = _listing(raw.get(LIST_PROBE), parse_list)
    names = [(name, label) for name, label, _ in GPU_SOURCES] + [(LIST_PROBE, "list")]
    said = [(label, o.stdout + "\n" + o.stderr) for name, label in names if (o := raw.get(name)) is not None]
    said += _view_texts(raw)
    outputs = [text for _, text in said]
    unopened = unopened_gpus(outputs, [label for label, _ in said])
    if not reports and not listed and unopened:
        # rows cut off or mangled under a lost GPU's line: that GPU is still a fault of the box
        gap = "nvidia-smi answered, but no GPU row of its output could be read (cut short or mangled)"
        reports = [(label, dataclasses.replace(r, gap=r.gap or gap)) for label, r in unread[:1]]
    if not reports and not listed:
        return GpuEvidence(None, (), tuple(refusals), None)
    # (an infoROM warning of any nvidia-smi call names its GPU: `topo -m`'s exit 14 too)
    warned = [o.stderr for name in _OTHER_CALLS if (o := raw.get(name)) is not None]
    merged = _with_inforom(_union(reports, listed, unopened, listed_whole, unread), [*outputs, *warned])
    # (whose banner gave the CUDA version kept: a container's exec'd nvidia-smi tells its own)
    cuda_told = tuple(why for cuda, why in told if cuda and cuda == merged.cuda_version)
    merged = dataclasses.replace(merged, cuda_told_by=cuda_told)
    list_out = raw.get(LIST_PROBE)
    if listed and list_out is not None and list_out.partial and not merged.complete and not merged.gap:
        merged = dataclasses.replace(merged, gap=list_out.partial)  # (why the listing is a view)
    apps_out = raw.get(APPS_PROBE)
    if apps_out is not None and apps_out.exit_code == 0 and merged.gpus:
        apps = parse_compute_apps(apps_out.stdout)
        if apps is not None:
            merged = dataclasses.replace(merged, gpus=tuple(_with_processes(list(merged.gpus), apps)))
    answered = tuple(dict.fromkeys(label for label, _ in reports)) + (("list",) if listed else ())
    return GpuEvidence(merged, answered, tuple(refusals), len(listed) if listed else None)


def _view_texts(raw: Mapping[str, ProbeOutput]) -> list[tuple[str, str]]:
    """(its label, its text) of each container's view of the GPUs kept beside the box's own
    nvidia-smi output (api/unread.py `joined_gpu_view`): the GPUs it could not open, or whose
    infoROM it warns of, are the box's too."""
    outs = [raw.get(name) for name, label, _ in GPU_SOURCES if label != "csv"]
    return [(view_label(v.partial), v.stdout + "\n" + v.stderr) for o in outs if o for v in o.beside]


def _env_driver(out: ProbeOutput | None) -> list[tuple[str, GpuReport]]:
    """The driver version a collect_env report read from the box's nvidia-smi (its table's
    banner value), as the format "env": a version answer with no GPU row, merged and compared
    as a table cut below its banner is."""
    version = out.stdout.strip() if out is not None else ""
    if not _is_version(version):
        return []
    return [("env", GpuReport("env", version, None, None, (), complete=False))]


def _second_queries(out: ProbeOutput, parse: Callable[[str], GpuReport]) -> list[tuple[str, GpuReport]]:
    """The `--query-gpu` CSV of the box saved beside `out` asking other fields (the offline
    reader joins such a file to the first: api/unread.py `joined_queries`), as the format
    "csv2": merged by GPU as any two formats are, each field's source kept, a field both read
    otherwise a disagreement (gpu_agree)."""
    reports = [parse(o.stdout) for o in out.beside]
    return [
        # (a second query need not ask `name`: the first's names are the GPUs')
        ("csv2", dataclasses.replace(r, source="csv2", warnings=tuple(w for w in r.warnings if w != NO_NAME)))
        for r in reports
        if r.source == "csv" and r.gpus
    ]


def _with_inforom(report: GpuReport, outputs: Sequence[str]) -> GpuReport:
    """`report` with the GPUs whose infoROM nvidia-smi warns is corrupted (in any of its outputs,
    stdout or stderr) holding that cell fault; an address no listed GPU has is kept unplaced."""
    named = {bus_key(a): a for text in outputs for a in inforom_corrupted(text)}
    if not named:
        return report
    gpus = []
    for g in report.gpus:
        if bus_key(g.pci_bus_id) in named:
            g = dataclasses.replace(g, cell_faults=tuple(dict.fromkeys((*g.cell_faults, INFOROM_FAULT))))
        gpus.append(g)
    placed = {bus_key(g.pci_bus_id) for g in gpus}
    unplaced = tuple(f"GPU at PCI {a}: {INFOROM_FAULT}" for k, a in named.items() if k not in placed)
    return dataclasses.replace(report, gpus=tuple(gpus), unplaced_faults=report.unplaced_faults + unplaced)


def _listing(out: ProbeOutput | None, parse_list: ListParser | None) -> tuple[list[GpuInfo], bool]:
    """`-L`'s GPUs, and whether the listing is whole (False: cut short mid-line, see
    facts/gpu_list.py: its count is no count, and a GPU whose name was cut is listed nameless)."""
    if out is None or parse_list is None or out.exit_code != 0 or refusal_line(out):
        return [], True
    listing = parse_list(out.stdout)
    if out.partial:
        listing = dataclasses.replace(listing, complete=False)
    return [_listed_gpu(g) for g in listing.gpus], listing.complete


def _listed_gpu(g: ListedGpu) -> GpuInfo:
    """One `-L` line as a GPU, its name and UUID judged as any format's fields (_field_faults):
    "[GPU is lost]" / "[GPU requires reset]" in either, or a fault marker (ERR!, an NVML error
    string) as the name, make the GPU unreadable; a name nvidia-smi could not give ("N/A",
    "[Not Supported]") is none (the GPU listed, its model unverified), never a model."""
    faults, cell_faults = _field_faults([("name", g.name), ("uuid", g.uuid or "")], "name")
    return GpuInfo(
        index=g.index,
        name=_clean(g.name) or "",
        uuid=_clean(g.uuid),
        # MIG devices listed under a GPU mean MIG is on: -L says so even where no other format does
        mig_mode="Enabled" if g.mig_devices else None,
        faults=faults,
        cell_faults=cell_faults,
    )


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
    sets += [("list", listed, None)] if listed else []
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


def _best_version(values: Sequence[str | None]) -> str | None:
    """The first of `values` (richest format first) that is a version number; only where none
    is, the first given at all: a value that is no version never wins over one that is."""
    given = [v for v in values if v]
    return next((v for v in given if _is_version(v)), given[0] if given else None)


def _union(
    reports: list[tuple[str, GpuReport]],
    listed: list[GpuInfo],
    unopened: Sequence[GpuInfo] = (),
    listed_whole: bool = True,
    banners: Sequence[tuple[str, GpuReport]] = (),
) -> GpuReport:
    """One GPU set (`_base`), each GPU's fields from the richest format that read it. A GPU of
    another format that matches none of the set (another PCI address) is not added: formats of
    one box name the same GPUs, and two boxes' outputs are never one box. A GPU nvidia-smi
    names as unopenable is added as an unreadable GPU (a fault). Where the set is `-L`'s listing
    and that was cut short (`listed_whole` False), the report is not whole. `banners` are the
    formats that answered their versions but no GPU row (a table cut below its banner): their
    driver and CUDA versions are answers of the box too, merged and compared as any format's."""
    ranked = sorted(reports, key=lambda r: _FIELD_RANK.index(r[0]) if r[0] in _FIELD_RANK else 9)
    # (the `-L` of datadog-agent#33120 beside a table cut below its banner: `-L` prints no
    # version, the banner's was the box's only one and was dropped)
    versioned = ranked + sorted(banners, key=lambda r: _FIELD_RANK.index(r[0]) if r[0] in _FIELD_RANK else 9)
    pool: list[tuple[str, GpuInfo]] = [(label, g) for label, rep in ranked for g in rep.gpus]
    pool += [("list", g) for g in listed]
    base, whole, base_report = _base(ranked, listed, listed_whole)
    outlisted = ""
    if (wider := _wider(base, ranked, listed, unopened)) is not None:
        outlisted = _outlisted(base, base_report, wider)
        base, whole, base_report = wider[1], False, wider[2]
    # a GPU's copies are in the other formats: never another GPU of its own listing, even one
    # on the same PCI address (nvidia-smi listing two GPUs at one address, one of them ERR!,
    # would otherwise lend the healthy one's values to the faulty one)
    own = {id(c) for c in base}
    copies = [[(label, c) for label, c in pool if _same(g, c) and (c is g or id(c) not in own)] for g in base]
    gpus = [_merge_gpu(g, of_g) for g, of_g in zip(base, copies, strict=True)]
    # what two formats say otherwise is named, each with its format, never one of them chosen
    clashes = gpu_agree.version_clashes(versioned)
    clashes += [c for g, of_g in zip(gpus, copies, strict=True) for c in gpu_agree.gpu_clashes(g, of_g)]
    gpus = _with_unopened(gpus, unopened, copies)
    gpus.sort(key=lambda x: x.index)
    gpus, repeated = _one_per_address(gpus)
    clashes += _set_clashes(gpus, ranked, listed if listed_whole else [])
    # a whole listing (the richest format that listed every GPU it says is attached) is the
    # count: another format's other count is another capture, never this box's missing GPUs
    counts = [r.attached_gpus for _, r in ranked if r.attached_gpus is not None]
    attached = (base_report.attached_gpus if whole and base_report else None) or max(counts, default=None)
    warnings = [w for _, r in ranked for w in r.warnings]
    said = list(dict.fromkeys(sentence for _, sentence in clashes))
    first = [gpu_agree.disagreement(said), base_report.gap if base_report else "", outlisted]
    gap, skipped = _set_gap(gpus, "; ".join(filter(None, first)), repeated)

    # cut short: the set's own output was (a report's, or -L's cut mid-line), or it lists
    # fewer GPUs than are attached; where the set is `-L`'s, each GPU's values come from the
    # other formats: one of them cut short (a `-q -i 0` cut inside its record beside a whole `-L`
    # of 4) is a record cut, the set whole (`set_whole`), never a whole report
    complete = (
        not (base_report is not None and not base_report.complete)
        and (base_report is not None or (whole and all(r.complete for _, r in ranked if r.gpus)))
        and len(gpus) >= (attached or 0)
        and (whole or len(gpus) >= len(listed))
        and not (skipped or repeated or clashes or outlisted)
    )
    flawed = bool(gap or skipped or repeated or clashes)
    return GpuReport(
        source="+".join(dict.fromkeys(label for label, _ in ranked)) or "list",
        driver_version=_best_version([r.driver_version for _, r in versioned]),
        cuda_version=_best_version([r.cuda_version for _, r in versioned]),
        attached_gpus=attached,
        gpus=tuple(sorted(gpus, key=lambda g: g.index)),
        warnings=tuple(dict.fromkeys(warnings)),
        complete=complete,
        set_whole=complete or (not flawed and _counted(gpus, attached, listed if listed_whole else [])),
        gap=gap,
        cut_said=base_report.cut_said if base_report else "",
        disagreements=tuple(said),
        disputed=tuple(dict.fromkeys(field for field, _ in clashes)),
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
    base: list[GpuInfo], base_report: GpuReport | None, wider: tuple[str, list[GpuInfo], GpuReport | None]
) -> str:
    """What says the chosen format lists some GPUs only: 'the `nvidia-smi --query-gpu` CSV lists
    1 GPU(s) but the plain `nvidia-smi` table lists 2 (...)'."""
    narrow = base_report.source if base_report else "list"
    shown = gpu_agree.format_call(narrow) if narrow in gpu_agree.FORMATS else "one format"
    return (
        f"{shown} lists {len(base)} GPU(s) but {gpu_agree.format_call(wider[0])} lists"
        f" {len(wider[1])} (an output cut short, or captures of other times)"
    )


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


def _set_clashes(
    gpus: list[GpuInfo], ranked: list[tuple[str, GpuReport]], listed: list[GpuInfo]
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
        whole_lists.append(("list", tuple(listed)))
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
