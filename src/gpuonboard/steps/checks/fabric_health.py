"""Fabric health rules: Xid / SXid in the kernel log, NVLink links, Fabric Manager, RDMA ports.

Pure functions from parsed facts to one `Check` each (or None where a rule does not apply to
this box). Thresholds and actions live in data files with a source per row:
data/xid.yml (NVIDIA's Xid catalog and Fabric Manager guide, via leptonai/gpud, AWS and
Azure health checks) and data/nvlink_links.yml (links per GPU model, NVIDIA datasheets and
real captures). Absence of evidence is never a pass: an unreadable log or a missing output
is `unverified`.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from gpuonboard.facts.fabric_manager import FabricManagerState
from gpuonboard.facts.infiniband import IbPort
from gpuonboard.facts.kernel_log import KernelEvent, implied_xids, load_nvrm_faults, pci_key
from gpuonboard.facts.nvlink import (
    ALL_INACTIVE,
    MIG_MODE,
    UNSUPPORTED,
    GpuNvlinkErrors,
    NvlinkErrors,
    NvlinkStatus,
)
from gpuonboard.resources import DATA_DIR, table_rows
from gpuonboard.steps.base import Check
from gpuonboard.steps.checks.once import loaded_once

if TYPE_CHECKING:
    from gpuonboard.connection.gather import Facts
    from gpuonboard.inventory import OrderSpec

__all__ = [
    "ErrorThreshold",
    "ModelLinks",
    "health_checks",
    "load_nvlink_error_thresholds",
    "rdma_check",
    "XidEntry",
    "load_nvlink_models",
    "load_xid_catalogue",
    "nvlink_model",
    "rule_fabric_manager",
    "rule_nvlink",
    "rule_nvlink_errors",
    "rule_rdma",
    "rule_sxid",
    "rule_xid",
    "xid_action",
]

DATA = DATA_DIR
XID_FILE = DATA / "xid.yml"
NVLINK_FILE = DATA / "nvlink_links.yml"
NVLINK_ERRORS_FILE = DATA / "nvlink_errors.yml"
ACTIONS = ("ignore", "check_app", "reset_gpu", "reboot", "replace", "update_driver", "from_message")
FAILING = ("reset_gpu", "reboot", "replace", "update_driver")
# what the renter asks the vendor to do, per action
_ASK = {
    "reset_gpu": "ask the vendor to reset the GPU (nvidia-smi -r, or a reboot) and to check it stays clean",
    "reboot": "ask the vendor to reboot the host and to check the GPU comes back",
    "replace": "ask the vendor to inspect and replace the GPU (or the box)",
    "update_driver": "ask the vendor to update the GPU driver / firmware",
}
NVSWITCH_MIN_GPUS = 8  # HGX 8-GPU boards link through NVSwitch; 4-GPU HGX boards link directly


@dataclass(frozen=True)
class XidEntry:
    """One row of data/xid.yml."""

    code: int
    name: str
    action: str
    verified: bool


@dataclass(frozen=True)
class ModelLinks:
    """One row of data/nvlink_links.yml."""

    match: str
    links: int | None
    nvswitch: bool
    source: str
    verified: bool


@dataclass(frozen=True)
class ErrorThreshold:
    """One row of data/nvlink_errors.yml: when a counter's count warns or fails."""

    name: str
    warn_at: int | None
    fail_at: int | None
    source: str
    verified: bool


@loaded_once
def load_xid_catalogue(path: Path = XID_FILE) -> tuple[Mapping[int, XidEntry], Mapping[int, XidEntry]]:
    """(Xid code -> entry, SXid code -> entry) from data/xid.yml; ValueError on a bad row."""
    out: list[dict[int, XidEntry]] = []
    for key in ("xid", "sxid"):
        table: dict[int, XidEntry] = {}
        for row in table_rows(path, key):
            code, action = row.get("code"), row.get("action")
            if not isinstance(code, int) or action not in ACTIONS or code in table:
                raise ValueError(f"{path}: {key} row {row!r}: bad or duplicate code, or unknown action")
            table[code] = XidEntry(code, str(row.get("name", "")), str(action), bool(row.get("verified")))
        out.append(table)
    return out[0], out[1]


@loaded_once
def load_nvlink_models(path: Path = NVLINK_FILE) -> tuple[ModelLinks, ...]:
    """The rows of data/nvlink_links.yml in order (first match wins)."""
    rows = []
    for row in table_rows(path, "models"):
        links = row.get("links")
        if not isinstance(row.get("match"), str) or not (links is None or isinstance(links, int)):
            raise ValueError(f"{path}: models row {row!r}: needs match (text) and links (number or null)")
        rows.append(
            ModelLinks(
                row["match"],
                links,
                bool(row.get("nvswitch")),
                str(row.get("source", "")),
                bool(row.get("verified")),
            )
        )
    return tuple(rows)


@loaded_once
def load_nvlink_error_thresholds(path: Path = NVLINK_ERRORS_FILE) -> tuple[ErrorThreshold, ...]:
    """The rows of data/nvlink_errors.yml (ValueError on a bad or duplicate row)."""
    rows: list[ErrorThreshold] = []
    for row in table_rows(path, "counters"):
        name, warn, fail = row.get("name"), row.get("warn_at"), row.get("fail_at")
        limits_ok = all(v is None or (isinstance(v, int) and v >= 1) for v in (warn, fail))
        if not isinstance(name, str) or not limits_ok or (warn is None and fail is None):
            raise ValueError(f"{path}: counters row {row!r}: needs name and warn_at / fail_at (>= 1 or null)")
        if any(r.name.lower() == name.lower() for r in rows):
            raise ValueError(f"{path}: counter {name!r} listed twice")
        rows.append(ErrorThreshold(name, warn, fail, str(row.get("source", "")), bool(row.get("verified"))))
    return tuple(rows)


@functools.cache
def _model_pattern(match: str) -> re.Pattern[str]:
    """`match` as whole tokens: not inside a longer letter/digit run ("H200" is not in "GH200",
    "B200" not in "GB200", "H20" not in "H200"); "-" and spaces separate tokens."""
    return re.compile(rf"(?<![a-z0-9]){re.escape(match.lower())}(?![a-z0-9])")


def nvlink_model(gpu_name: str) -> ModelLinks | None:
    """The nvlink_links.yml row of a GPU name as nvidia-smi prints it (None: unknown model).
    A row's `match` must stand as whole tokens in the name (case-insensitive), first row wins."""
    low = gpu_name.lower()
    return next((m for m in load_nvlink_models() if _model_pattern(m.match).search(low)), None)


def xid_action(event: KernelEvent) -> tuple[str, str]:
    """(action, name) of one Xid/SXid event per data/xid.yml; an unknown code is `replace`
    (a code NVIDIA does not list on a box being accepted is for the vendor to explain)."""
    if event.kind == "nvrm":
        # a driver fault sentence without an Xid (data/nvrm_faults.yml); an action the table
        # does not know is `replace` (the vendor explains it)
        fault = next((f for f in load_nvrm_faults() if f.id == event.fault), None)
        if fault is None:
            return "replace", "NVRM fault not in data/nvrm_faults.yml"
        return (fault.action if fault.action in FAILING else "replace"), fault.name
    xids, sxids = load_xid_catalogue()
    entry = (sxids if event.kind == "sxid" else xids).get(event.code)
    if entry is None:
        return "replace", "not in NVIDIA's catalogue"
    if entry.action == "from_message":
        return _recovery_action(event.message), entry.name
    return entry.action, entry.name


# Xid 154: the driver prints "GPU recovery action changed from 0x%x (%s) to 0x%x (%s)"; what the
# GPU needs NOW is the value after "to" (the "from" half is the action being left behind).
# Codes: NVML nvmlDeviceGpuRecoveryAction_t (nvml.h; NVIDIA/DCGM sdk/nvidia/nvml/dcgm_nvml.h):
# 0 NONE, 1 GPU_RESET, 2 NODE_REBOOT, 3 DRAIN_P2P, 4 DRAIN_AND_RESET. Actions per NVIDIA's Xid
# catalogue (Xid 154: "follow the recovery action in the message"; data/xid.yml) and DCGM's
# health watch (modules/health/DcgmHealthWatch.cpp; dcgmlib/src/dcgm_errors.c): NONE = healthy;
# GPU_RESET, DRAIN_P2P ("terminate P2P processes, check again") and DRAIN_AND_RESET ("reset the
# GPU after work drained") = a GPU reset (DCGM_ERROR_RESET); NODE_REBOOT = reboot.
_RECOVERY_TO = re.compile(r"\bto\s+(?:0x([0-9a-f]+))?\s*(?:\(([^)]*)\))?", re.I)
_RECOVERY_CODES = {0: "ignore", 1: "reset_gpu", 2: "reboot", 3: "reset_gpu", 4: "reset_gpu"}


def _recovery_action(message: str) -> str:
    """The action of an Xid 154 message: the recovery action it changed TO. Read by code, else
    by the printed name ("None", "GPU Reset Required" / "PF FLR", "Node Reboot Required" /
    "OS Reboot", "Drain P2P", "Drain and Reset"); a target that cannot be read is `replace`
    (the vendor explains it), never a pass."""
    found = [m for m in _RECOVERY_TO.finditer(message) if m.group(1) or m.group(2)]
    if not found:
        return "replace"
    code_text, name = found[-1].group(1), (found[-1].group(2) or "").strip().lower()
    if code_text is not None and int(code_text, 16) in _RECOVERY_CODES:
        return _RECOVERY_CODES[int(code_text, 16)]
    if name == "none":
        return "ignore"
    if "reboot" in name:
        return "reboot"
    if "reset" in name or "drain" in name or "flr" in name:
        return "reset_gpu"
    return "replace"


def _gpu_label(pci: str, gpus: Mapping[str, int]) -> str:
    if not pci:
        return "a GPU (no PCI address in the message)"
    index = gpus.get(pci_key(pci))
    return f"GPU {index} ({pci})" if index is not None else f"GPU at PCI {pci}"


def _summarise(events: Sequence[KernelEvent], gpus: Mapping[str, int], what: str) -> list[tuple[str, str]]:
    """(action, 'GPU 3 (0000:9b:00): Xid 119 GSP RPC Timeout x4') per (device, code), worst first."""
    groups: dict[tuple[str, int, str | None], list[KernelEvent]] = {}
    for e in events:
        groups.setdefault((pci_key(e.pci), e.code, e.fault), []).append(e)
    rank = {
        a: i for i, a in enumerate(("replace", "reboot", "update_driver", "reset_gpu", "check_app", "ignore"))
    }
    out = []
    for (_, code, _fault), group in groups.items():
        action, name = xid_action(group[0])
        who = (
            f"NVSwitch {group[0].device} ({group[0].pci})"
            if group[0].kind == "sxid"
            else _gpu_label(group[0].pci, gpus)
        )
        times = f" x{len(group)}" if len(group) > 1 else ""
        event = f"{what} {code} {name}" if group[0].kind != "nvrm" else f"driver message (no Xid): {name}"
        if group[0].implied_by is not None:
            event += f" (its own line not in the log; named as the cause by Xid {group[0].implied_by})"
        out.append((action, f"{who}: {event}{times} -> {action}"))
    return sorted(out, key=lambda item: rank.get(item[0], 0))


def _pci_index(gpus: Sequence[tuple[int, str | None]]) -> dict[str, int]:
    return {pci_key(pci): index for index, pci in gpus if pci}


def _event_rule(
    name: str,
    what: str,
    events: Sequence[KernelEvent],
    probe_ok: bool,
    why_unread: str,
    gpus: Sequence[tuple[int, str | None]],
    covers_boot: bool | None,
) -> Check:
    expected = f"no {what} since boot needing action"
    if not probe_ok:
        return Check(
            name,
            expected,
            f"kernel log not readable: {why_unread or 'no reason given'}",
            "unverified",
            f"give the login user read access to the kernel log (sudo, or kernel.dmesg_restrict=0) so {what}"
            " errors can be checked; until then GPU faults since boot are unknown.",
        )
    span = "" if covers_boot is not False else " (the log no longer reaches back to boot)"
    if not events:
        return Check(name, expected, f"no {what} in the kernel log{span}", "pass")
    lines = _summarise(events, _pci_index(gpus), what)
    actions = [a for a, _ in lines]
    actual = "; ".join(text for _, text in lines) + span
    worst = next((a for a in ("replace", "reboot", "update_driver", "reset_gpu") if a in actions), None)
    if worst is not None:
        return Check(
            name,
            expected,
            actual,
            "fail",
            f"{_ASK[worst][0].upper()}{_ASK[worst][1:]}, per NVIDIA's {what} catalogue,"
            " before accepting the box.",
        )
    if "check_app" in actions:
        return Check(
            name,
            expected,
            actual,
            "warn",
            f"application-level {what}s (a program faulted on this GPU since boot): ask the vendor what ran"
            " on the box, and watch for them again under your own load.",
        )
    return Check(name, expected, actual, "pass", f"informational {what}s only (NVIDIA's catalogue: ignore).")


def _with_unread(check: Check, unread: Sequence[KernelEvent], what: str, judged: bool) -> Check:
    """`check` with the kernel log's unreadable `what` lines counted: a log with one cannot pass
    or warn (unverified, the line quoted); a failure stays a failure and names them too.
    `judged`: some readable events were judged (else the check's "no ..." text is dropped)."""
    if not unread or check.verdict == "unverified":
        return check
    n = len(unread)
    said = f"{n} {what} line{'s' if n > 1 else ''} this tool cannot read (first: {unread[0].message!r})"
    if check.verdict == "fail":
        return replace(check, actual=f"{check.actual}; also {said}")
    return Check(
        check.name,
        check.expected,
        f"{check.actual}; {said}" if judged else said,
        "unverified",
        f"the kernel log has {what} lines whose code could not be read, so {what} errors since boot are"
        f" not known: read them by hand (`dmesg | grep {what}`) and look each code up in NVIDIA's"
        " catalogue before accepting the box.",
    )


def rule_xid(
    events: Sequence[KernelEvent],
    probe_ok: bool,
    why_unread: str = "",
    gpus: Sequence[tuple[int, str | None]] = (),
    covers_boot: bool | None = None,
) -> Check:
    """GPU Xid errors since boot, classified by data/xid.yml: none = pass; reset/reboot/replace =
    fail naming GPU, PCI address, code, name and action; application-level (13, 31 ...) = warn;
    informational (43, 45, 63 ...) = pass; log unreadable = unverified with why. An Xid a logged
    line names as its cause ("... caused by previous Xid 149") is judged as if logged. The driver's
    GPU fault sentences without an Xid (data/nvrm_faults.yml: fallen off the bus, RmInitAdapter
    failed, probe failed, GSP start-up / timeout) are judged alike: fail, naming the PCI address.
    An `NVRM: Xid` line whose code cannot be read makes a passing or warning log unverified.
    `gpus`: (index, PCI bus id) pairs from nvidia-smi so each Xid names its GPU index (an address
    that matches none, an old driver's `0001:00`, is named as printed)."""
    xids = [e for e in events if e.kind == "xid"]
    logged = {(pci_key(e.pci), e.code) for e in xids}
    # an Xid a later line names as its cause ("caused by previous Xid 149") happened, whether or
    # not its own line is still in the log
    xids += implied_xids(xids)
    same_as = {f.id: f.same_as_xid for f in load_nvrm_faults()}
    # a fault sentence whose Xid the log also has for that GPU (fallen off the bus + Xid 79) is
    # that Xid's text: listed once
    xids += [
        e for e in events if e.kind == "nvrm" and (pci_key(e.pci), same_as.get(e.fault or "")) not in logged
    ]
    check = _event_rule("gpu_xid", "Xid", xids, probe_ok, why_unread, gpus, covers_boot)
    return _with_unread(check, [e for e in events if e.kind == "xid_unread"], "Xid", bool(xids))


# NVIDIA's Fabric Manager User Guide, "NVSwitch SXid Errors": "Non-fatal SXids are for
# informational purposes only": FM aborts no CUDA job and blocks no launch, though jobs may see a
# performance drop or briefly no progress; a fatal SXid aborts the jobs on the GPUs behind that
# port (Xid 74 / 45) and needs the GPUs and NVSwitches reset ("If the problem persists, reboot").
_SXID_ORDER = {"fail": 0, "warn": 1, "pass": 2}


def _sxid_judgement(event: KernelEvent) -> tuple[str, str, str]:
    """(verdict, action, name) of one SXid event: the driver's own Fatal / Non-fatal word for it
    first (fatal fails: the catalogue's action, else a reboot; non-fatal passes where the
    catalogue says ignore, else warns as `watch`, never a replace-the-box failure), then
    data/xid.yml where the log does not say (reboot fails; a code not in it fails as replace)."""
    entry = load_xid_catalogue()[1].get(event.code)
    name = entry.name if entry is not None else "not in NVIDIA's catalogue"
    action = entry.action if entry is not None else "replace"
    if event.severity == "fatal":
        return "fail", action if entry is not None and action in FAILING else "reboot", name
    if event.severity == "non-fatal":
        return ("pass", "ignore", name) if action == "ignore" else ("warn", "watch", name)
    return ("fail" if action in FAILING else "pass"), action, name


def _sxid_lines(sxids: Sequence[KernelEvent]) -> list[tuple[str, str, str]]:
    """(verdict, action, 'NVSwitch nvidia-nvswitch2 (0000:85:00.0): SXid 12028 ..., non-fatal
    x2 -> watch') per (switch, code, driver's word), failures first."""
    groups: dict[tuple[str | None, str, int, str | None], list[KernelEvent]] = {}
    for e in sxids:
        groups.setdefault((e.device, pci_key(e.pci), e.code, e.severity), []).append(e)
    out = []
    for (device, _, code, severity), group in groups.items():
        verdict, action, name = _sxid_judgement(group[0])
        said = f", {severity}" if severity else ""
        times = f" x{len(group)}" if len(group) > 1 else ""
        text = f"NVSwitch {device} ({group[0].pci}): SXid {code} {name}{said}{times} -> {action}"
        out.append((verdict, action, text))
    return sorted(out, key=lambda item: _SXID_ORDER[item[0]])


def _sxid_check(sxids: Sequence[KernelEvent], covers_boot: bool | None) -> Check:
    """The nvswitch_sxid check of a readable log with SXid events."""
    expected = "no SXid since boot needing action"
    lines = _sxid_lines(sxids)
    span = "" if covers_boot is not False else " (the log no longer reaches back to boot)"
    actual = "; ".join(text for _, _, text in lines) + span
    verdict = lines[0][0]
    if verdict == "fail":
        ask = _ASK["replace" if any(a == "replace" for _, a, _ in lines) else "reboot"]
        return Check(
            "nvswitch_sxid",
            expected,
            actual,
            "fail",
            f"{ask[0].upper()}{ask[1:]}, per NVIDIA's SXid catalogue and Fabric Manager guide (a fatal SXid"
            " needs the GPUs and NVSwitches reset), before accepting the box.",
        )
    if verdict == "warn":
        return Check(
            "nvswitch_sxid",
            expected,
            actual,
            "warn",
            "the driver logged these SXids as non-fatal (NVIDIA's Fabric Manager guide: no CUDA job is"
            " aborted, but NVLink traffic may slow or stall for a while): ask the vendor what caused them,"
            " and watch for them again under your own load.",
        )
    return Check(
        "nvswitch_sxid", expected, actual, "pass", "informational SXids only (NVIDIA's catalogue: ignore)."
    )


def rule_sxid(
    events: Sequence[KernelEvent],
    probe_ok: bool,
    why_unread: str = "",
    covers_boot: bool | None = None,
) -> Check:
    """NVSwitch SXid errors since boot, one per event (its `Severity` / `Data` lines are part of
    it), judged by the driver's own Fatal / Non-fatal word for each event with data/xid.yml
    `sxid` (Fabric Manager User Guide): a fatal SXid fails; a non-fatal one passes where the
    catalogue says ignore (single-bit ECC ...) and warns otherwise (12028 stalls NVLink traffic;
    a code not in the catalogue); a line that says neither is judged by the catalogue alone.
    An SXid line whose code cannot be read makes a passing or warning log unverified."""
    sxids = [e for e in events if e.kind == "sxid"]
    if probe_ok and sxids:
        check = _sxid_check(sxids, covers_boot)
    else:
        check = _event_rule("nvswitch_sxid", "SXid", sxids, probe_ok, why_unread, (), covers_boot)
    return _with_unread(check, [e for e in events if e.kind == "sxid_unread"], "SXid", bool(sxids))


def rule_nvlink(gpu_models: Sequence[str], nvlink_status: NvlinkStatus | None) -> Check | None:
    """Active NVLink links per GPU vs data/nvlink_links.yml on NVLink-board (SXM) models.

    None when no GPU is an NVLink-board model (PCIe cards: not applicable). Fewer links than the
    model has = fail naming the GPUs and counts (NVML's "all links are inActive" = 0 active:
    fail); no nvlink output, or MIG mode (the driver refuses NVLink queries) = unverified."""
    expected_links = {i: m for i, name in enumerate(gpu_models) if (m := nvlink_model(name)) and m.links}
    if not expected_links:
        return None
    counts = sorted({m.links for m in expected_links.values() if m.links})
    expected = f"{'/'.join(map(str, counts))} active NVLink links on each of {len(expected_links)} GPU(s)"
    if nvlink_status is None or not nvlink_status.gpus:
        return Check(
            "nvlink_links",
            expected,
            "no `nvidia-smi nvlink -s` output",
            "unverified",
            "nvidia-smi nvlink -s gave nothing to read; run it on the box (as root) to see each GPU's links.",
        )
    short: list[str] = []
    unread: list[str] = []
    for index, model in sorted(expected_links.items()):
        block = nvlink_status.by_index(index)
        if block is not None and block.note == ALL_INACTIVE and not any(link.active for link in block.links):
            # NVML's "Unable to retrieve Nvlink information as all links are inActive": the model
            # has NVLink links and none is up (Azure/azurehpc-health-checks azure_gpu_nvlink.nhc
            # fails the node on this sentence: "GPU N has all nvlinks inactive").
            short.append(f"GPU {index}: 0 of {model.links} links active (all links inactive)")
            continue
        if block is None or block.note == MIG_MODE or (not block.links and block.note != UNSUPPORTED):
            why = "MIG mode" if block is not None and block.note == MIG_MODE else "not listed"
            unread.append(f"GPU {index} ({why})")
            continue
        assert model.links is not None
        if block.active_links < model.links:
            down = [str(link.link) for link in block.links if not link.active]
            if not down and block.total_links < model.links:
                # every link printed is up, the others are not printed at all: the listing was
                # cut short (a paste elided with `...`), which is no evidence of a link down
                unread.append(f"GPU {index} ({block.total_links} of {model.links} links listed, all up)")
                continue
            detail = f", inactive link(s) {', '.join(down)}" if down else ""
            short.append(f"GPU {index}: {block.active_links} of {model.links} links active{detail}")
    if short:
        return Check(
            "nvlink_links",
            expected,
            "; ".join(short),
            "fail",
            "NVLink links are down: GPU-to-GPU traffic falls back to slower paths; ask the vendor to"
            " reseat / repair the baseboard (or reset the GPUs) and show `nvidia-smi nvlink"
            " -s` with all links up.",
        )
    if unread:
        return Check(
            "nvlink_links",
            expected,
            f"links not readable for {', '.join(unread)}",
            "unverified",
            "NVLink status could not be read for these GPUs (in MIG mode the driver refuses NVLink"
            " queries; a listing cut short names only some links): run `nvidia-smi nvlink -s` on the"
            " box and save its whole output.",
        )
    speeds = sorted({s for g in nvlink_status.gpus for s in g.speeds})
    at = f" at {'/'.join(f'{s:g}' for s in speeds)} GB/s" if speeds else ""
    return Check("nvlink_links", expected, f"all links active on {len(expected_links)} GPU(s){at}", "pass")


def _nvlink_unread_why(block: GpuNvlinkErrors | None) -> str:
    """Why a GPU's NVLink error counters were not read: MIG mode, not listed, no counters, or the
    driver's own sentence."""
    why = "MIG mode" if block is not None and block.note == MIG_MODE else "not listed"
    if block is not None and block.note not in (None, MIG_MODE):
        why = block.note_text or str(block.note)
    elif block is not None and block.note is None:
        why = "no counters printed"
    return why


@dataclass
class _NvlinkTally:
    """The NVLink error counters read: hits that fail or warn, GPUs not read, links and counters
    seen."""

    failing: list[str] = field(default_factory=list)
    warning: list[str] = field(default_factory=list)
    unread: list[str] = field(default_factory=list)
    links: int = 0
    judged: int = 0


def _tally_nvlink_errors(expected: Mapping[int, ModelLinks], errors: NvlinkErrors) -> _NvlinkTally:
    """Each expected GPU's links' counters against data/nvlink_errors.yml (counters it does not
    list are not judged)."""
    limits = {t.name.lower(): t for t in load_nvlink_error_thresholds()}
    tally = _NvlinkTally()
    for index in sorted(expected):
        block = errors.by_index(index)
        if block is None or block.note is not None or not block.links:
            tally.unread.append(f"GPU {index} ({_nvlink_unread_why(block)})")
            continue
        for link, counters in sorted(block.links.items()):
            tally.links += 1
            for name, count in counters.items():
                limit = limits.get(name.lower())
                if limit is None:
                    continue
                tally.judged += 1
                hit = f"GPU {index} link {link}: {name} {count}"
                if limit.fail_at is not None and count >= limit.fail_at:
                    tally.failing.append(hit)
                elif limit.warn_at is not None and count >= limit.warn_at:
                    tally.warning.append(hit)
    return tally


def _nvlink_errors_check(want: str, tally: _NvlinkTally, gpu_count: int) -> Check:
    """The `nvlink_errors` row from the tally: fail, warn, unverified (unread / nothing judged) or
    pass, in that order."""
    read = f" (links of {', '.join(tally.unread)} not read)" if tally.unread else ""
    if tally.failing:
        return Check(
            "nvlink_errors",
            want,
            "; ".join(tally.failing + tally.warning) + read,
            "fail",
            "NVLink links are retrying / retraining (NVIDIA DCGM counts any replay or recovery error as a"
            " failure): ask the vendor to reseat or replace the NVLink bridge / board (or the GPU) and show"
            " `nvidia-smi nvlink -e` with these counters at zero after a clean run.",
        )
    if tally.warning:
        return Check(
            "nvlink_errors",
            want,
            "; ".join(tally.warning) + read,
            "warn",
            "CRC errors on these links since the driver loaded (NVIDIA DCGM warns on any; it fails a link"
            " only at 100+ per second): read `nvidia-smi nvlink -e` again after a load test, and ask the"
            " vendor to reseat or replace the NVLink bridge / board if the counts keep rising.",
        )
    if tally.unread:
        return Check(
            "nvlink_errors",
            want,
            f"counters not readable for {', '.join(tally.unread)}",
            "unverified",
            "NVLink error counters could not be read for these GPUs (in MIG mode the driver refuses NVLink"
            " queries).",
        )
    if not tally.judged:
        return Check(
            "nvlink_errors",
            want,
            f"{tally.links} link(s) listed, none with a counter gpuonboard knows",
            "unverified",
            "nvidia-smi nvlink -e printed no replay / recovery / CRC (or newer-driver error) counters;"
            " the counters could not be judged.",
        )
    return Check(
        "nvlink_errors",
        want,
        f"all NVLink error counters zero on {tally.links} link(s) of {gpu_count} GPU(s)",
        "pass",
    )


def rule_nvlink_errors(gpu_models: Sequence[str], errors: NvlinkErrors | None) -> Check | None:
    """NVLink error counters (`nvidia-smi nvlink -e`) per GPU and link vs data/nvlink_errors.yml
    (NVIDIA DCGM's NVLink health watch) on NVLink-board (SXM) models.

    None when no GPU is an NVLink-board model. A recovery or replay error (or, on newer drivers,
    a symbol / malformed-packet / integrity ... error) = fail naming GPU, link and counter; CRC
    errors = warn (DCGM fails them only by rate, which one reading cannot give); all zero = pass;
    no output, MIG mode, or a GPU not listed = unverified. Counters the data file does not
    list (traffic counts, FEC histograms, BER figures) are not judged."""
    expected = {i: m for i, name in enumerate(gpu_models) if (m := nvlink_model(name)) and m.links}
    if not expected:
        return None
    want = f"no NVLink replay / recovery errors and no CRC errors on each of {len(expected)} GPU(s)"
    if errors is None or not errors.gpus:
        return Check(
            "nvlink_errors",
            want,
            "no `nvidia-smi nvlink -e` output",
            "unverified",
            "nvidia-smi nvlink -e gave nothing to read; run it on the box to see each link's error counters.",
        )
    return _nvlink_errors_check(want, _tally_nvlink_errors(expected, errors), len(expected))


_FM_ASK = (
    "ask the vendor to install and start nvidia-fabricmanager (same version as the driver) and to show"
    " `nvidia-smi -q | grep -A2 Fabric` reading Completed / Success on every GPU: an NVSwitch box"
    " without a running fabric manager cannot run multi-GPU CUDA work."
)
_FM_EXPECTED = "fabric manager active; every GPU's fabric state Completed / Success"


def _fabric_state_faults(reported: Sequence[tuple[int, str | None, str | None]]) -> list[str]:
    """GPUs whose fabric registration is not Completed, then Completed ones whose status is not
    Success."""
    bad = [f"GPU {i}: {s}" + (f" / {st}" if st else "") for i, s, st in reported if s != "Completed"]
    bad += [
        f"GPU {i}: status {st}" for i, s, st in reported if s == "Completed" and st not in (None, "Success")
    ]
    return bad


def _fm_text(fm: FabricManagerState | None) -> str:
    """The service's state as the row says it: not probed, not installed, or its state."""
    if fm is None:
        return "not probed"
    if fm.unit_present is False:
        return "not installed"
    return fm.state + (f" ({fm.detail})" if fm.detail and fm.state == "unknown" else "")


def _whole_box_check(fm: FabricManagerState | None, complete: bool, nvswitch_gpus: int) -> Check:
    """The `fabric_manager` row of a whole NVSwitch box whose GPUs report no bad fabric state:
    by the service's state, then by whether every GPU reported Completed."""
    expected, ask, fm_text = _FM_EXPECTED, _FM_ASK, _fm_text(fm)
    if fm is not None and fm.running:
        if complete:
            return Check(
                "fabric_manager", expected, "fabric manager active; fabric Completed on every GPU", "pass"
            )
        return Check(
            "fabric_manager",
            expected,
            "fabric manager active; GPU fabric state not reported",
            "pass",
            "nvidia-smi did not report the GPUs' fabric state (older driver): the running"
            " service is the evidence.",
        )
    if fm is not None and (fm.unit_present is False or fm.state in ("inactive", "failed")):
        if complete:  # registered, but the daemon is gone: new jobs may fail to set up the fabric
            return Check(
                "fabric_manager",
                expected,
                f"fabric manager {fm_text}; fabric Completed on every GPU",
                "warn",
                "the GPUs registered with the fabric but nvidia-fabricmanager is not running now; " + ask,
            )
        return Check(
            "fabric_manager",
            expected,
            f"fabric manager {fm_text} on an {nvswitch_gpus}-GPU NVSwitch box",
            "fail",
            ask,
        )
    if complete:
        return Check(
            "fabric_manager", expected, f"fabric manager {fm_text}; fabric Completed on every GPU", "pass"
        )
    return Check(
        "fabric_manager",
        expected,
        f"fabric manager {fm_text}; GPU fabric state not reported",
        "unverified",
        "neither the service state nor the GPUs' fabric state could be read; run `systemctl status"
        " nvidia-fabricmanager` and `nvidia-smi -q | grep -A2 Fabric` on the box.",
    )


def rule_fabric_manager(
    gpu_models: Sequence[str],
    fabric_states: Sequence[tuple[str | None, str | None]],
    fm: FabricManagerState | None,
) -> Check | None:
    """NVSwitch boxes (8+ GPUs of an NVSwitch model in data/nvlink_links.yml, or any GPU that
    reports a `Fabric` state in nvidia-smi -q): the GPUs' fabric registration must be
    "Completed" / "Success", and on a whole 8-GPU box nvidia-fabricmanager must be running.
    Source: NVIDIA Fabric Manager User Guide (without it, CUDA init fails on NVSwitch systems).
    `fabric_states`: (fabric_state, fabric_status) per GPU (None = not reported). None when
    the rule does not apply (PCIe cards, 4-GPU HGX boards without NVSwitch, no GPU)."""
    models = [nvlink_model(n) for n in gpu_models]
    nvswitch_gpus = sum(1 for m in models if m is not None and m.nvswitch)
    reported = [(i, s, st) for i, (s, st) in enumerate(fabric_states) if s not in (None, "N/A")]
    whole_box = nvswitch_gpus >= NVSWITCH_MIN_GPUS
    if not whole_box and not reported:
        return None
    bad = _fabric_state_faults(reported)
    complete = bool(reported) and not bad and len(reported) >= len(gpu_models)
    if bad:
        return Check(
            "fabric_manager",
            _FM_EXPECTED,
            f"fabric manager {_fm_text(fm)}; " + "; ".join(bad),
            "fail",
            _FM_ASK,
        )
    if not whole_box:  # a slice of an NVSwitch host (VM): the host runs FM; the GPUs' state tells
        return Check(
            "fabric_manager", _FM_EXPECTED, f"fabric state Completed on {len(reported)} GPU(s)", "pass"
        )
    return _whole_box_check(fm, complete, nvswitch_gpus)


def rule_rdma(
    order_rdma: tuple[int, float] | None, ports: Sequence[IbPort] | None, complete: bool = True
) -> Check | None:
    """Ordered RDMA (`rdma: "8x400G"` -> (8, 400.0)) vs ACTIVE ports (InfiniBand or RoCE) at that
    rate or more: fewer = fail naming the ports down or slow; no port data = unverified; an
    active port whose rate is not reported (ibv_devinfo without -v) cannot count: unverified;
    a listing that stopped early (`complete` False: ibstat's `ibpanic:` line) with too few good
    ports = unverified (the ports not listed are not known to be down).
    None when the order asks for no RDMA."""
    if order_rdma is None:
        return None
    count, gbit = order_rdma
    expected = f"{count} RDMA port(s) ACTIVE at >= {gbit:g} Gb/s"
    if ports is None:
        return Check(
            "rdma_ports",
            expected,
            "RDMA ports not readable",
            "unverified",
            "the RDMA port listing could not be read; run `ibv_devinfo -v` or list"
            " /sys/class/infiniband on the box.",
        )
    good = [p for p in ports if p.active and p.rate_gbps is not None and p.rate_gbps >= gbit]
    unknown = [p for p in ports if p.active and p.rate_gbps is None]
    others = [p for p in ports if p not in good and p not in unknown]

    def show(p: IbPort) -> str:
        rate = f"{p.rate_gbps:g} Gb/s" if p.rate_gbps is not None else "rate ?"
        return f"{p.device}/{p.port} {p.state} {rate} {p.link_layer or ''}".rstrip()

    actual = f"{len(good)} of {len(ports)} port(s) ACTIVE at >= {gbit:g} Gb/s"
    if len(good) >= count:
        return Check("rdma_ports", expected, actual, "pass")
    if not complete:
        return Check(
            "rdma_ports",
            expected,
            actual + " (the listing stopped early: the ports after it are not listed)",
            "unverified",
            "the RDMA port listing stopped before its end (ibstat stops at a device it cannot"
            " open); list /sys/class/infiniband/*/ports/* or run `ibv_devinfo -v` on the box.",
        )
    if len(good) + len(unknown) >= count:
        return Check(
            "rdma_ports",
            expected,
            actual + f"; {len(unknown)} active with no rate reported",
            "unverified",
            "the port rate was not reported (ibv_devinfo without -v); read"
            " /sys/class/infiniband/*/ports/*/rate.",
        )
    if not ports:
        return Check(
            "rdma_ports",
            expected,
            "no RDMA device found",
            "fail",
            "no InfiniBand/RoCE device is visible (driver not loaded, or no NIC): ask the"
            " vendor for the ordered"
            " RDMA NICs with their driver (MLNX_OFED / DOCA-OFED) loaded.",
        )
    return Check(
        "rdma_ports",
        expected,
        actual + (f"; short: {', '.join(show(p) for p in others)}" if others else ""),
        "fail",
        "fewer RDMA ports are up at the ordered rate than ordered: ask the vendor to check cables, switch"
        " ports and NIC firmware, and show `ibv_devinfo -v` with every port PORT_ACTIVE"
        " at the ordered speed.",
    )


def health_checks(facts: Facts) -> list[Check]:
    """The order-free fabric rules for the outputs there are: Xid / SXid from the kernel log,
    NVLink links from `nvlink -s`, Fabric Manager from its state."""
    from gpuonboard.facts import fabric_manager, kernel_log, nvlink

    checks: list[Check | None] = []
    gpus = sorted(facts.gpu.gpus, key=lambda g: g.index) if facts.gpu is not None else []
    if facts.given("kernel_log"):
        out = facts.raw["kernel_log"]
        log = kernel_log.parse_kernel_log(out.stdout)
        ok = out.exit_code == 0
        why = out.stderr.strip() or f"exit {out.exit_code}"
        pairs = [(g.index, g.pci_bus_id) for g in gpus]
        checks.append(rule_xid(log.events, ok, why, pairs, log.covers_boot))
        checks.append(rule_sxid(log.events, ok, why, log.covers_boot))
    status = None
    if facts.given("nvidia_nvlink") and facts.raw["nvidia_nvlink"].exit_code == 0:
        status = nvlink.parse_nvlink_status(facts.raw["nvidia_nvlink"].stdout)
    models = [g.name for g in gpus]
    if not models and status is not None:
        models = [g.name for g in sorted(status.gpus, key=lambda g: g.index)]
    if facts.given("nvidia_nvlink"):
        checks.append(rule_nvlink(models, status if status is not None and status.gpus else None))
    if facts.given("nvidia_nvlink_errors"):
        out = facts.raw["nvidia_nvlink_errors"]
        errors = nvlink.parse_nvlink_errors(out.stdout) if out.exit_code == 0 else None
        checks.append(rule_nvlink_errors(models, errors if errors is not None and errors.gpus else None))
    if facts.given("fabric_manager"):
        out = facts.raw["fabric_manager"]
        fm = fabric_manager.parse_fabric_manager(out.stdout) if out.exit_code == 0 else None
        states = [(g.fabric_state, g.fabric_status) for g in gpus]
        checks.append(rule_fabric_manager(models, states, fm))
    return [c for c in checks if c is not None]


def rdma_check(facts: Facts, order: OrderSpec | None) -> Check | None:
    """The order's `rdma` against the RDMA ports the host shows (None: no RDMA ordered)."""
    from gpuonboard.facts import infiniband

    if order is None or order.rdma is None:
        return None
    ports = None
    complete = True
    if facts.given("rdma_ports") and facts.raw["rdma_ports"].exit_code == 0:
        report = infiniband.parse_rdma(facts.raw["rdma_ports"].stdout)
        ports, complete = report.ports, report.complete
    return rule_rdma(order.rdma, ports, complete)
