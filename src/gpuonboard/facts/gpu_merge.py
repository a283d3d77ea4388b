"""Every answer nvidia-smi gave, merged into one GpuReport that says where each field came from.

The host is asked in every cheap format at once (`-q -x`, `-q`, the `--query-gpu` CSV, the
default table, `-L`, `--query-compute-apps`): formats answer different questions (the CSV lists
no processes, the table cuts names, `-q -x` may be blocked by a provider's policy), so no format
wins alone. Each field comes from the richest format that read it, a GPU's faults from every
format that read it; the GPU set is the widest any format listed; a format the provider refuses
is a fact of its own (`Refusal`), never a broken driver. Pure: no I/O.

Its parts: one GPU's fields from its formats (`gpu_fields`), the GPU set and its gap
(`gpu_set`), the GPUs nvidia-smi could not open (`gpu_unopened`).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from gpuonboard.facts import gpu_agree
from gpuonboard.facts.container_banner import banner_lines
from gpuonboard.facts.csvtext import csv_rows
from gpuonboard.facts.gpu_failed import failed_outputs, failure_clashes, missing_in_session
from gpuonboard.facts.gpu_fields import _FIELD_RANK, _merge_gpu
from gpuonboard.facts.gpu_ids import bus_key
from gpuonboard.facts.gpu_list import GpuList, ListedGpu
from gpuonboard.facts.gpu_probes import APPS_PROBE, ENV_DRIVER_PROBE, GPU_SOURCES, LIST_PROBE, NVIDIA_SMI_ARGS
from gpuonboard.facts.gpu_retired import RETIRED_PROBE, with_retired_pages
from gpuonboard.facts.gpu_set import (
    _base,
    _counted,
    _one_per_address,
    _outlisted,
    _same,
    _set_clashes,
    _set_gap,
    _wider,
)
from gpuonboard.facts.gpu_unopened import _with_unopened, unopened_gpus
from gpuonboard.facts.gpu_views import CONTAINER_VIEWS, view_label, with_views
from gpuonboard.facts.nvidia_smi import GpuInfo, GpuProcess, GpuReport
from gpuonboard.facts.nvidia_smi.faults import INFOROM_FAULT, _field_faults, inforom_corrupted
from gpuonboard.facts.nvidia_smi.query_csv import NO_NAME
from gpuonboard.facts.nvidia_smi.values import _clean, _is_version
from gpuonboard.facts.probe import ProbeOutput
from gpuonboard.once import lazy_re

# the nvidia-smi calls that list no GPU (the compute apps, `topo -m`, `nvlink`)
_OTHER_CALLS = tuple(
    name for name in NVIDIA_SMI_ARGS if name not in (*(n for n, _, _ in GPU_SOURCES), LIST_PROBE)
)
APPS_FIELDS: tuple[str, ...] = ("gpu_uuid", "pid", "process_name", "used_memory")
# A format refused on purpose (a provider's policy, the login's permissions), as opposed to a
# driver that cannot answer: its words, case-insensitive
_REFUSAL = lazy_re(
    r"disabled on this (?:instance|machine|host|server|node)|\bpolicy\b|by (?:the )?(?:administrator|"
    r"provider|vendor)\b|\bnot allowed\b|\bis restricted\b",
    re.IGNORECASE,
)
# NVML's own errors ("GPU access blocked by the operating system", "Insufficient Permissions")
# are causes of their own, each with its advice (nvidia_smi_failure), never a format refused
_NVML = lazy_re(r"\bNVML\b")
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


@dataclass
class _Read:
    """What the GPU probes' outputs gave, one format at a time (`merge`'s first pass)."""

    reports: list[tuple[str, GpuReport]] = field(default_factory=list)
    # answered (a driver version), no GPU row read
    unread: list[tuple[str, GpuReport]] = field(default_factory=list)
    refusals: list[Refusal] = field(default_factory=list)
    # (each output's CUDA version, why it is a view)
    told: list[tuple[str | None, str]] = field(default_factory=list)
    # format label -> the saved file it was read from ("" live)
    files: dict[str, str] = field(default_factory=dict)


def _read_sources(raw: Mapping[str, ProbeOutput], parse: Callable[[str], GpuReport]) -> _Read:
    """Pure: each GPU probe's output (GPU_SOURCES) read once: its report, or its refusal."""
    got = _Read()
    seen: dict[str, GpuReport] = {}
    for probe, _label, args in GPU_SOURCES:
        out = raw.get(probe)
        if out is None or out.absent:
            continue
        line = refusal_line(out)
        if line is not None:
            got.refusals.append(Refusal(probe, args, line))
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
        got.told.append((report.cuda_version, out.partial))
        report = _as_view(report, out)
        if report.gpus and not (report.complete or report.gap or report.cut_said):
            report = _left_out(report, out.stdout)
        if report.gpus and all(r is not report for _, r in got.reports):
            got.reports.append((report.source, report))
            got.files.setdefault(report.source, out.saved_as)
        if report.source == "csv":
            got.reports += _second_queries(out, parse)
        if not report.gpus and report.driver_version and not report.complete:
            got.unread.append((report.source, report))
    return got


def _left_out(report: GpuReport, text: str) -> GpuReport:
    """Pure: an output not whole whose paste left lines out by hand (`...` where a GPU row's
    readings were: a page quoting a table) says so, not "cut off" (its `cut_said`)."""
    from gpuonboard.facts.elision import elided

    why = elided(text)
    return dataclasses.replace(report, cut_said=why) if why else report


def _as_view(report: GpuReport, out: ProbeOutput) -> GpuReport:
    """Pure: a view of some GPUs (`-i 0`): what it leaves out is not known to be missing, unless
    the output says it shows every GPU attached (`Attached GPUs : 1`) and ran on the box: in a
    container (`kubectl exec POD -- nvidia-smi -q`) `Attached GPUs` counts the container's GPUs,
    as its table's rows do."""
    shows_all = (
        report.attached_gpus is not None
        and len(report.gpus) >= report.attached_gpus
        and not any(view in out.partial for view in CONTAINER_VIEWS)
    )
    if out.partial and not shows_all and out.exit_code != 0:
        # (a call that failed after printing its rows: a cut, each row a GPU, never a view)
        return dataclasses.replace(report, complete=False, cut_said=out.partial)
    if out.partial and not shows_all:
        return dataclasses.replace(report, complete=False, gap=out.partial)
    return report


def merge(
    raw: Mapping[str, ProbeOutput],
    parse: Callable[[str], GpuReport],
    parse_list: ListParser | None = None,
) -> GpuEvidence:
    """Pure: the GPU probes' outputs -> one GpuReport with per-field provenance, the formats
    that answered and those refused. `parse` reads any nvidia-smi format (it recognises the
    text, whatever arguments were asked); `parse_list` reads `nvidia-smi -L`."""
    got = _read_sources(raw, parse)
    reports, unread, refusals = got.reports, got.unread, got.refusals
    unread += _env_driver(raw.get(ENV_DRIVER_PROBE))
    listed, listed_whole = _listing(raw.get(LIST_PROBE), parse_list)
    listed_as = "list"
    nvlink_gap = ""
    if not given(raw.get(LIST_PROBE)):
        listed, nvlink_gap, listed_as = nvlink_listing(raw)
        listed_whole = not nvlink_gap
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
    # (an output that says nvidia-smi failed as a whole, beside one that listed GPUs: named)
    lister = _lister(reports, got.files, listed, listed_as)
    notes: list[str] = []  # (failures that are a call's own, or that a later listing superseded)
    failed = failure_clashes(failed_outputs(raw, parse, lister[2] if lister else 0, notes), lister, notes)
    notes += missing_in_session(raw, lister)  # (a session's `command not found` before its listing)
    union = _union(reports, listed, unopened, listed_whole, unread, failed, listed_as)
    merged = _with_inforom(union, [*outputs, *warned])
    # (whose banner gave the CUDA version kept: a container's exec'd nvidia-smi tells its own)
    cuda_told = tuple(why for cuda, why in got.told if cuda and cuda == merged.cuda_version)
    merged = dataclasses.replace(merged, cuda_told_by=cuda_told, warnings=(*merged.warnings, *notes))
    merged = _with_listing_gap_and_apps(merged, raw, bool(listed))
    if nvlink_gap and not merged.complete and not merged.gap and listed_as == merged.source:
        merged = dataclasses.replace(merged, gap=nvlink_gap)  # (why the nvlink listing is not whole)
    answered = tuple(dict.fromkeys(label for label, _ in reports)) + ((listed_as,) if listed else ())
    return GpuEvidence(merged, answered, tuple(refusals), len(listed) if listed else None)


def _with_listing_gap_and_apps(merged: GpuReport, raw: Mapping[str, ProbeOutput], listed: bool) -> GpuReport:
    """Pure: `merged` with why the `-L` listing is a view (its gap), and the compute-apps list
    where a GPU's own format could not list processes."""
    list_out = raw.get(LIST_PROBE)
    if listed and list_out is not None and list_out.partial and not merged.complete and not merged.gap:
        merged = dataclasses.replace(merged, gap=list_out.partial)  # (why the listing is a view)
    apps_out = raw.get(APPS_PROBE)
    if apps_out is not None and apps_out.exit_code == 0 and merged.gpus:
        apps = parse_compute_apps(apps_out.stdout)
        if apps is not None:
            merged = dataclasses.replace(merged, gpus=tuple(_with_processes(list(merged.gpus), apps)))
    retired = raw.get(RETIRED_PROBE)  # (a saved --query-retired-pages CSV: its pages counted)
    if retired is not None and retired.exit_code == 0 and merged.gpus:
        counted = with_retired_pages(merged.gpus, retired.stdout, not retired.partial)
        merged = dataclasses.replace(merged, gpus=tuple(counted))
    return merged


def _lister(
    reports: Sequence[tuple[str, GpuReport]],
    files: Mapping[str, str],
    listed: Sequence[GpuInfo],
    listed_as: str = "list",
) -> tuple[str, str, int] | None:
    """The output that listed the most GPUs (its format label, its file, its GPU count), richest
    format first among equals; `-L`'s where it lists more."""
    best = max(reports, key=lambda r: len(r[1].gpus), default=None)
    if best is None or len(listed) > len(best[1].gpus):
        return (listed_as, "", len(listed)) if listed else None
    return best[0], files.get(best[0], ""), len(best[1].gpus)


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


# the nvlink calls whose GPU lines (`GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-...)`) are `-L`'s
NVLINK_PROBES = ("nvidia_nvlink", "nvidia_nvlink_errors")


def given(out: ProbeOutput | None) -> bool:
    """The output was probed or saved (offline, the probes not given are 'not probed')."""
    return out is not None and out.stderr != "not probed"


def nvlink_listing(raw: Mapping[str, ProbeOutput]) -> tuple[list[GpuInfo], str, str]:
    """Where no `-L` was given: the GPU lines of `nvlink -s` (else of `nvlink -e`), NVML's
    names and UUIDs as `-L` prints them, read as `-L`'s (before, a saved `nvlink -s` alone was
    "no nvidia-smi output was given" for gpu_model and gpu_count). Whole where the listing is: it
    starts at GPU 0, no GPU's block is cut (in its header before its UUID, the name is then not
    kept: it may be cut mid-word), no line was left out by hand (`......`) or could not be read,
    and no view of some GPUs was said (a copied `-i 0`). A view no line says (`nvlink -s -i 0`
    saved without its command) lists fewer GPUs with no sign: gpu_count never fails on this
    listing alone. Returns the GPUs, why the listing is not whole ('' where it is) and its
    format's label."""
    from gpuonboard.facts.elision import elided
    from gpuonboard.facts.nvlink import NvlinkErrors, NvlinkStatus, parse_nvlink_errors, parse_nvlink_status

    for name, label in zip(NVLINK_PROBES, gpu_agree.NVLINK_LISTINGS, strict=True):
        out = raw.get(name)
        if out is None or out.exit_code != 0 or refusal_line(out) or not out.stdout.strip():
            continue
        blocks: NvlinkStatus | NvlinkErrors = (
            parse_nvlink_status(out.stdout) if label == "nvlink" else parse_nvlink_errors(out.stdout)
        )
        if not blocks.gpus:
            continue
        indexes = [g.index for g in blocks.gpus]
        # (a GPU line that goes on after its UUID with no verdict nvidia-smi prints there: lines
        # a chat or a page joined, the next lines' GPUs perhaps among them)
        joined = next((g.note_text for g in blocks.gpus if g.note_text and g.note is None), None)
        why = (
            elided(out.stdout)
            or (f"a GPU line goes on after its UUID (`{joined[:40]}`): lines joined" if joined else "")
            or (f"it ends inside GPU {blocks.cut_gpu}'s block" if blocks.cut_gpu is not None else "")
            or (f"it ends inside the next GPU's header (`{blocks.cut_header}`)" if blocks.cut_header else "")
            or (f"a line was not read ({blocks.warnings[0].partition(': ')[2]})" if blocks.warnings else "")
            or (f"it starts at GPU {indexes[0]}" if indexes != list(range(len(indexes))) else "")
            or out.partial
        )
        # (a cut GPU's name kept where its header is whole, to its UUID's `)`: m39b 13)
        listed = [
            ListedGpu(g.index, "" if g.index == blocks.cut_gpu and not g.uuid else g.name, g.uuid)
            for g in blocks.gpus
        ]
        capabilities = isinstance(blocks, NvlinkStatus) and blocks.capabilities_only
        call = "nvlink -c` (capabilities)" if capabilities else f"{NVIDIA_SMI_ARGS[name]}`"
        said = why and f"the `nvidia-smi {call} listing is not whole: {why}"
        return [_listed_gpu(g) for g in listed], said, label
    return [], "", "list"


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
        mig_devices=len(g.mig_devices) or None,
        faults=faults,
        cell_faults=cell_faults,
    )


def _best_version(values: Sequence[str | None]) -> str | None:
    """The first of `values` (richest format first) that is a version number; only where none
    is, the first given at all: a value that is no version never wins over one that is."""
    given = [v for v in values if v]
    return next((v for v in given if _is_version(v)), given[0] if given else None)


# how the sentence of a whole view beside a whole `-L` ends (gpu_count names it with its count)
VIEW_COUNTED = "the count is `-L`'s"
# the formats whose whole output shows it was not cut (a table's Processes box closed, -q's
# records and Attached GPUs): one listing fewer GPUs than a whole `-L` is a view of some GPUs
_CLOSED_FORMATS = ("table", "text", "xml")


def _whole_view(
    base_report: GpuReport | None,
    ranked: list[tuple[str, GpuReport]],
    wider: tuple[str, list[GpuInfo], GpuReport | None],
    listed_whole: bool,
) -> str:
    """Where a whole table (or -q) lists one of the GPUs a whole `-L` of the box lists, among its
    lines: the sentence that it is a view of that GPU (`nvidia-smi -i 0`), the count `-L`'s; ''
    otherwise (several GPUs, a format cut short, or one that cannot show its own cut: a CSV)."""
    if wider[2] is not None or not listed_whole or base_report is None or not base_report.complete:
        return ""
    label = next((lab for lab, r in ranked if r is base_report), "")
    if label not in _CLOSED_FORMATS:
        return ""
    n, total = len(base_report.gpus), len(wider[1])
    if n != 1:  # (a table of 7 of -L's 8: a GPU that fell off between them may be gone; not a view)
        return ""
    shown = ", ".join(f"GPU {g.index}" for g in base_report.gpus)
    return (
        f"{gpu_agree.format_call(label)} shows {shown} only, its GPU rows whole, of the {total} GPUs"
        f" `nvidia-smi -L` lists: a view of {'that GPU' if n == 1 else 'those GPUs'} (`nvidia-smi -i`),"
        f" {VIEW_COUNTED}"
    )


def _union(
    reports: list[tuple[str, GpuReport]],
    listed: list[GpuInfo],
    unopened: Sequence[GpuInfo] = (),
    listed_whole: bool = True,
    banners: Sequence[tuple[str, GpuReport]] = (),
    failed: Sequence[tuple[str, str]] = (),
    listed_as: str = "list",
) -> GpuReport:
    """One GPU set (`_base`), each GPU's fields from the richest format that read it. A GPU of
    another format that matches none of the set (another PCI address) is not added: formats of
    one box name the same GPUs, and two boxes' outputs are never one box. A GPU nvidia-smi
    names as unopenable is added as an unreadable GPU (a fault). Where the set is `-L`'s listing
    and that was cut short (`listed_whole` False), the report is not whole. `banners` are the
    formats that answered their versions but no GPU row (a table cut below its banner): their
    driver and CUDA versions are answers of the box too, merged and compared as any format's.
    `failed` are the disagreements of outputs that say nvidia-smi failed as a whole (gpu_failed)."""
    ranked = sorted(reports, key=lambda r: _FIELD_RANK.index(r[0]) if r[0] in _FIELD_RANK else 9)
    # (the `-L` of datadog-agent#33120 beside a table cut below its banner: `-L` prints no
    # version, the banner's was the box's only one and was dropped)
    versioned = ranked + sorted(banners, key=lambda r: _FIELD_RANK.index(r[0]) if r[0] in _FIELD_RANK else 9)
    pool: list[tuple[str, GpuInfo]] = [(label, g) for label, rep in ranked for g in rep.gpus]
    pool += [(listed_as, g) for g in listed]
    base, whole, base_report = _base(ranked, listed, listed_whole)
    outlisted = view = ""
    if (wider := _wider(base, ranked, listed, unopened, listed_as)) is not None:
        view = _whole_view(base_report, ranked, wider, listed_whole)
        outlisted = "" if view else _outlisted(base, base_report, wider, listed_as)
        base, whole, base_report = wider[1], bool(view), wider[2]
    # a GPU's copies are in the other formats: never another GPU of its own listing, even one
    # on the same PCI address (nvidia-smi listing two GPUs at one address, one of them ERR!,
    # would otherwise lend the healthy one's values to the faulty one)
    own = {id(c) for c in base}
    copies = [[(label, c) for label, c in pool if _same(g, c) and (c is g or id(c) not in own)] for g in base]
    gpus = [_merge_gpu(g, of_g) for g, of_g in zip(base, copies, strict=True)]
    # what two formats say otherwise is named, each with its format, never one of them chosen
    clashes = gpu_agree.version_clashes(versioned) + list(failed)
    clashes += [c for g, of_g in zip(gpus, copies, strict=True) for c in gpu_agree.gpu_clashes(g, of_g)]
    gpus = _with_unopened(gpus, unopened, copies)
    gpus.sort(key=lambda x: x.index)
    gpus, repeated = _one_per_address(gpus)
    clashes += _set_clashes(gpus, ranked, listed if listed_whole else [], listed_as)
    # a whole listing (the richest format that listed every GPU it says is attached) is the
    # count: another format's other count is another capture, never this box's missing GPUs
    counts = [r.attached_gpus for _, r in ranked if r.attached_gpus is not None]
    attached = (base_report.attached_gpus if whole and base_report else None) or max(counts, default=None)
    warnings = [w for _, r in ranked for w in r.warnings] + ([view] if view else [])
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
        source="+".join(dict.fromkeys(label for label, _ in ranked)) or listed_as,
        driver_version=_best_version([r.driver_version for _, r in versioned]),
        cuda_version=_best_version([r.cuda_version for _, r in versioned]),
        attached_gpus=attached,
        gpus=tuple(sorted(gpus, key=lambda g: g.index)),
        warnings=tuple(dict.fromkeys(warnings)),
        complete=complete,
        set_whole=complete or (not flawed and _counted(gpus, attached, listed if listed_whole else [])),
        gap=gap,
        # (the lost indentation of one GPU's -q record, no other gap joined to it)
        gap_spares_names=bool(base_report and base_report.gap_spares_names and gap == base_report.gap),
        cut_said=base_report.cut_said if base_report else "",
        disagreements=tuple(said),
        disputed=tuple(dict.fromkeys(field for field, _ in clashes)),
    )
