"""Fabric health rules: Fabric Manager, and the GPU health checks of the fabric gathered in one
place: NVLink links and errors (steps/checks/nvlink_rules.py), RDMA ports, and
(steps/checks/xid_rules.py) Xid / SXid in the kernel log.

Pure functions from parsed facts to one `Check` each (or None where a rule does not apply to
this box). Thresholds and actions live in data files with a source per row:
data/xid.yml (NVIDIA's Xid catalog and Fabric Manager guide, via leptonai/gpud, AWS and
Azure health checks) and data/nvlink_links.yml (links per GPU model, NVIDIA datasheets and
real captures). Absence of evidence is never a pass: an unreadable log or a missing output
is `unverified`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from gpuonboard.facts.fabric_manager import FabricManagerState
from gpuonboard.facts.kernel_oops import (
    KernelCrash,
    crash_sentence,
    dump_fragment,
    first_crash,
    nvidia_crashes,
)
from gpuonboard.facts.kernel_pstore import CRASH_RECORD_ADVICE, pstore_record
from gpuonboard.facts.kernel_text import log_text
from gpuonboard.facts.mcelog import mcelog_only
from gpuonboard.facts.nvidia_smi.faults import FABRIC_STATUS
from gpuonboard.facts.nvidia_smi.values import FABRIC_HEALTH
from gpuonboard.facts.nvlink import (
    NvlinkErrors,
    NvlinkStatus,
)
from gpuonboard.facts.probe import ProbeOutput
from gpuonboard.once import lazy_re
from gpuonboard.steps.base import Check
from gpuonboard.steps.checks.gpu_identity import model_name
from gpuonboard.steps.checks.nvlink_rules import (
    NVSWITCH_MIN_GPUS,
    ErrorThreshold,
    ModelLinks,
    load_nvlink_error_thresholds,
    load_nvlink_models,
    nvlink_model,
    rule_nvlink,
    rule_nvlink_errors,
)
from gpuonboard.steps.checks.rdma_ports import rdma_check, rule_rdma
from gpuonboard.steps.checks.slice_view import whole_listing_slice
from gpuonboard.steps.checks.sxid_rules import rule_sxid
from gpuonboard.steps.checks.xid_catalogue import repairs_done
from gpuonboard.steps.checks.xid_rules import (
    XidEntry,
    load_xid_catalogue,
    mcelog_only_check,
    reader_missing_check,
    rule_xid,
    sandbox_log_check,
    xid_action,
)

if TYPE_CHECKING:
    from gpuonboard.connection.gather import Facts
    from gpuonboard.facts.host_errors import HostError
    from gpuonboard.facts.kernel_log import KernelEvent, KernelLog
    from gpuonboard.facts.nvidia_smi import GpuInfo

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

_FM_ASK = (
    "ask the vendor to install and start nvidia-fabricmanager (same version as the driver) and to show"
    " `nvidia-smi -q | grep -A2 Fabric` reading Completed / Success on every GPU: an NVSwitch box"
    " without a running fabric manager cannot run multi-GPU CUDA work."
)
_FM_EXPECTED = "fabric manager active; every GPU's fabric state Completed / Success"


# the Fabric -> Health values that say a fault (lower case): the route or the summary unhealthy,
# a wrong configuration, fail; bandwidth degraded, a recovery under way, a limited capacity, warn
# (nvidia-smi's words; gpud judges them the same: leptonai/gpud#1108); any other value than
# the healthy ones below is said and warns (a spelling not known here)
_HEALTHY = {
    "summary": {"healthy"},
    "bandwidth": {"full"},
    "incorrect_configuration": {"none", "false", "no"},
}
_HEALTH_FAIL = {"summary": {"unhealthy"}, "route_unhealthy": {"true", "yes"}}


def _health_faults(health: Sequence[tuple[tuple[str, str], ...]]) -> tuple[list[str], list[str]]:
    """(failing, warning) Fabric Health fields per GPU: 'GPU 2: Summary Unhealthy'."""
    labels = dict(FABRIC_HEALTH)
    fails: list[str] = []
    warns: list[str] = []
    for index, fields in enumerate(health):
        for key, value in fields:
            low = value.strip().lower()
            if low in _HEALTHY.get(key, {"false", "no"}):
                continue
            said = f"GPU {index}: {labels.get(key, key)} {value}"
            (
                fails if low in _HEALTH_FAIL.get(key, set()) or key == "incorrect_configuration" else warns
            ).append(said)
    return fails, warns


def _fabric_state_faults(
    reported: Sequence[tuple[int, str | None, str | None]], unread: Mapping[int, str] | None = None
) -> list[str]:
    """GPUs whose fabric registration is not Completed, then Completed ones whose status is not
    Success. NVML reads State and Status in one call and fills the Status only for a Completed
    State: another State is a reading whatever its Status says (ERR! included); a Completed
    GPU whose Status nvidia-smi could not read (`unread`: its marker) is none here
    (_status_unread says it)."""
    unread = unread or {}
    bad = [
        f"GPU {i}: {s}" + (f" / {st}" if st and i not in unread else "")
        for i, s, st in reported
        if s != "Completed"
    ]
    bad += [
        f"GPU {i}: status {st}"
        for i, s, st in reported
        if s == "Completed" and st not in (None, "Success") and i not in unread
    ]
    return bad


def _status_unread(
    reported: Sequence[tuple[int, str | None, str | None]], unread: Mapping[int, str] | None = None
) -> str:
    """'status not reported on GPU 0, GPU 3': the GPUs whose fabric registration reads Completed
    with no Status read (N/A, or a format without it: a saved CSV of `fabric.state` alone), and
    'status could not be read (ERR!) on GPU 2' for Completed ones whose Status is a fault marker
    (`unread`; beside another State the Status is not read, _fabric_state_faults); '' where
    none. Every real capture pairs Completed with Success: Completed alone clears nothing."""
    unread = unread or {}
    parts = []
    if none := [f"GPU {i}" for i, s, st in reported if s == "Completed" and st is None and i not in unread]:
        parts.append(f"status not reported on {', '.join(none)}")
    for marker in dict.fromkeys(unread.values()):
        gpus = [f"GPU {i}" for i, s, _st in reported if s == "Completed" and unread.get(i) == marker]
        if gpus:
            parts.append(f"status could not be read ({marker}) on {', '.join(gpus)}")
    return "; ".join(parts)


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


# Grace-Blackwell superchips of NVL72 racks: a compute tray's 4 GPUs join the rack's NVSwitch trays
_RACK_SCALE = lazy_re(r"\bGB[23]00\b")


def rule_fabric_manager(
    gpu_models: Sequence[str],
    fabric_states: Sequence[tuple[str | None, str | None]],
    fm: FabricManagerState | None,
    health: Sequence[tuple[tuple[str, str], ...]] = (),
    attached: int | None = None,
    status_unread: Mapping[int, str] | None = None,
) -> Check | None:
    """NVSwitch boxes (8+ GPUs of an NVSwitch model in data/nvlink_links.yml, or any GPU that
    reports a `Fabric` state in nvidia-smi -q): the GPUs' fabric registration must be
    "Completed" / "Success" (Completed with no Status read is unverified), and on a whole
    8-GPU box nvidia-fabricmanager must be running.
    Source: NVIDIA Fabric Manager User Guide (without it, CUDA init fails on NVSwitch systems).
    `fabric_states`: (fabric_state, fabric_status) per GPU (None = not reported); `health`: the
    Fabric Health fields per GPU (an unhealthy route or summary fails, a degraded bandwidth
    warns); `attached`: the GPUs nvidia-smi says the box has (a listing cut short is still a
    whole box); `status_unread`: GPU -> the fault marker its Status read (ERR!): unverified
    where its state is Completed (another state is judged as read). None when the rule does not
    apply (PCIe cards, 4-GPU HGX boards without NVSwitch, no GPU)."""
    models = [nvlink_model(n) for n in gpu_models]
    nvswitch_gpus = sum(1 for m in models if m is not None and m.nvswitch)
    reported = [(i, s, st) for i, (s, st) in enumerate(fabric_states) if s not in (None, "N/A")]
    box = max(len(gpu_models), attached or 0) if nvswitch_gpus == len(gpu_models) else nvswitch_gpus
    whole_box = nvswitch_gpus > 0 and box >= NVSWITCH_MIN_GPUS
    sick, degraded = _health_faults(health)
    if not whole_box and not reported and not sick and not degraded:
        if fm is None or not any(_RACK_SCALE.search(n) for n in gpu_models):
            return None  # (a 4-GPU HGX board has no NVSwitch; a slice is judged by its GPUs)
        # a rack-scale tray (GB200/GB300 NVL72: 4 GPUs, the fabric manager on the switch trays):
        # the service state here does not decide, the GPUs' fabric state does, and the output
        # given has none (leptonai/gpud#1106)
        return Check(
            "fabric_manager",
            _FM_EXPECTED,
            f"fabric manager {_fm_text(fm)}; GPU fabric state not reported ({len(gpu_models)} GPU(s))",
            "unverified",
            "on a rack-scale tray (GB200/GB300 NVL72) the fabric manager runs on the NVSwitch trays"
            " and the GPUs' own fabric state decides, not this host's service: save `nvidia-smi -q`"
            " (its Fabric section: State Completed, Status Success, Health) on the box.",
        )
    bad = _fabric_state_faults(reported, status_unread) + sick
    complete = bool(reported) and not bad and len(reported) >= len(gpu_models)
    if bad:
        return Check(
            "fabric_manager",
            _FM_EXPECTED,
            f"fabric manager {_fm_text(fm)}; " + "; ".join(bad),
            "fail",
            _FM_ASK,
        )
    if degraded:
        return Check(
            "fabric_manager",
            _FM_EXPECTED,
            f"fabric manager {_fm_text(fm)}; " + "; ".join(degraded),
            "warn",
            "the GPUs' NVLink fabric reports reduced health (bandwidth degraded or a route being"
            " recovered): multi-GPU work runs slower or may stall; ask the vendor to check the"
            " NVSwitch fabric and show `nvidia-smi -q -d FABRIC`-style Health reading Healthy / Full.",
        )
    if unread := _status_unread(reported, status_unread):
        return Check(
            "fabric_manager",
            _FM_EXPECTED,
            f"fabric manager {_fm_text(fm)}; fabric state Completed, {unread}"
            if all(s == "Completed" for _i, s, _st in reported)
            else f"fabric manager {_fm_text(fm)}; fabric {unread}",
            "unverified",
            "nvidia-smi printed the GPUs' fabric registration as Completed but no Status beside it"
            " (N/A or no such field), or a Status it could not read (ERR!: the fabric query failed,"
            " the state beside it is no reading): a registration that completed with an error"
            " (`Insufficient Resources`) says Completed too, so only Status Success clears it; save"
            " `nvidia-smi -q` (its Fabric section: State and Status) on the box.",
        )
    if not whole_box:  # a slice of an NVSwitch host (VM): the host runs FM; the GPUs' state tells
        # (the service as it was read, "not probed" offline without its file: the row's expected
        # names the service, so its actual says what was known of it)
        return Check(
            "fabric_manager",
            _FM_EXPECTED,
            f"fabric manager {_fm_text(fm)}; fabric state Completed / Success on {len(reported)} GPU(s)",
            "pass",
            "the GPUs report their fabric registration Completed / Success, which needs the fabric"
            " manager (on a slice of an NVSwitch host, the host's)",
        )
    return _whole_box_check(fm, complete, box)


def _listed_models(status: NvlinkStatus | None, errors: NvlinkErrors | None) -> dict[int, str]:
    """Each GPU's model by the number nvidia-smi printed for it (not its place in a listing: a
    `nvlink -s -i 3`, or one elided with `...`, lists GPU 3 first), from the NVLink listings.
    A GPU whose block a listing ends inside, its header not closed by `(UUID: ...)`, gives only
    its number: its name may be cut mid-word (`NVIDIA H8`)."""
    listed: dict[int, str] = {}
    numbers: set[int] = set()
    for listing in (status, errors):
        if listing is None:
            continue
        for g in listing.gpus:
            numbers.add(g.index)
            if g.index != listing.cut_gpu or g.uuid is not None:
                listed.setdefault(g.index, g.name)
    if len(set(listed.values())) == 1:  # (a listing that skips GPU numbers, elided with `...`,
        # or cut short: the GPUs it skips are the box's too, of its one model, and not listed)
        listed = dict.fromkeys(range(max(numbers) + 1), next(iter(listed.values())))
    return listed


def _failure_said(check: Check | None, out: ProbeOutput, command: str) -> Check | None:
    """An NVLink rule whose `nvidia-smi {command}` failed: its exit code and message said in
    place of "no output" (`topo -m`'s failure is quoted so too)."""
    if check is None or out.exit_code == 0 or check.verdict != "unverified":
        return check
    # (its message in the detail: the row stays short, and a run's saved raw output, which keeps
    # no stderr, reads the same)
    return replace(check, actual=f"`nvidia-smi {command}` failed", detail=out.failure())


def _topo_unlisted(check: Check | None, facts: Facts, named: Mapping[int, str], command: str) -> Check | None:
    """An NVLink rule's pass over the GPUs its listing names (`nvidia-smi nvlink -s -i 0`: GPU 0
    alone) where `topo -m` shows more GPUs, none of them in the listing nor named by another
    nvidia-smi output: their links are not known, the pass is of those read: unverified."""
    topology = facts.topology
    if check is None or check.verdict != "pass" or topology is None:
        return check
    shown = {int(label[3:]) for label in topology.gpus if label[3:].isdecimal()}
    unlisted = sorted(shown - set(named))
    if not unlisted:
        return check
    gpus = ", ".join(f"GPU {i}" for i in unlisted)
    return replace(
        check,
        actual=f"{check.actual}; links not read for {gpus} (not in the `nvidia-smi {command}` output;"
        f" topo -m shows {len(shown)} GPUs)",
        verdict="unverified",
        detail=f"the `nvidia-smi {command}` output lists only some of the GPUs topo -m shows (run for one"
        f" GPU: `-i 0`?): save `nvidia-smi {command}` of every GPU to judge their links.",
    )


def _lone(check: Check | None, lone: bool, out: ProbeOutput, command: str) -> Check | None:
    """An NVLink rule of a one-GPU box whose `nvidia-smi {command}` answered (exit 0, or 14 read
    as answered) and printed nothing, or said NVLink is not available there (exit 3, nvidia-smi's
    "not supported": "The requested operation is not available on target device"): not
    applicable (no peer GPU to link to), in place of "no output" unverified. A call that failed
    otherwise (15 a GPU fallen off the bus, 9 no driver ...) says nothing of the links: it stays
    unverified, with its failure."""
    if check is None or not lone or out.exit_code not in (0, 3) or check.verdict != "unverified":
        return check
    said = "printed nothing" if out.exit_code == 0 else "says NVLink is not available there"
    return replace(
        check,
        actual=f"not applicable: one GPU in the box, no NVLink peer (`nvidia-smi {command}` {said})",
        verdict="pass",
        detail="",
    )


def _in_sandbox(check: Check, what: str, sandbox: str | None) -> Check:
    """`check` judged on a log a sandbox's kernel or a WSL2 / Hyper-V guest's wrote (`sandbox`, its
    line): what the log shows is judged (a PCIe fatal error the guest's kernel saw fails the box,
    a fault warns), but its "none found" (a pass, or an unverified one: a log cut short) is no
    evidence, the GPU's driver logging elsewhere: unverified, saying so."""
    if sandbox is None or check.verdict not in ("pass", "unverified"):
        return check
    return sandbox_log_check(check.name, what, sandbox)


def _new_fault(event: KernelEvent, known: set[tuple[str, int, str, str]]) -> bool:
    """Whether a fault of another answer of this boot's log is none of `known` (the base log's):
    one with no PCI address (a journal grep keeps `NVRM: ... probe routine failed` but drops the
    `nvidia: probe of <bdf> failed` line that names its GPU) is the base's same fault on a named
    GPU where the base holds that line."""
    from gpuonboard.facts.kernel_log import fault_key

    kind, code, pci, message = fault_key(event)
    if (kind, code, pci, message) in known:
        return False
    return bool(pci) or not any(k[:2] == (kind, code) and k[3] == message for k in known)


def _beside_host_errors(base: Sequence[HostError], beside: Sequence[ProbeOutput]) -> tuple[HostError, ...]:
    """The host hardware errors of this boot's other answers (`beside`: a bug report's grep of its
    journal beside a dmesg section cut short) that the base log does not hold: each (part, error)
    counted as often as the answer holding it most says it, never twice for one event."""
    from collections import Counter

    from gpuonboard.facts.host_errors import host_errors, log_lines

    def key(e: HostError) -> tuple[str, str, str, str, bool]:
        return (e.source, e.severity, e.where, e.what, e.earlier_boot)

    held = Counter(key(e) for e in base)
    extra: list[HostError] = []
    for other in beside:
        found = host_errors(*log_lines(other.stdout))
        found = tuple(replace(e, earlier_boot=True) for e in found) if other.earlier_boot else found
        for e in found:
            if held[key(e)] > 0:
                held[key(e)] -= 1
            else:
                extra.append(e)
        held = Counter(key(e) for e in (*base, *extra))
    return tuple(extra)


def _no_xid_lines(log: KernelLog) -> str:
    """Why a saved log says nothing of the GPU driver's Xids: each of its lines holds `nvidia`
    (a `dmesg | grep -i nvidia` saved without its command), which an Xid line need not; or each
    is the GPU driver's, its load banner and every NVRM-less line of the boot not among them (an
    author's excerpt, `nvidia: module verification failed ...` to `MDEV: Registered`: the lines
    before and after it, Xid lines among them, are not known); ""."""
    if log.picked is not None:  # (the NVSwitch driver's only: no_gpu_lines)
        return ""
    if log.nvidia_only is None and log.nvrm_only is None and log.driver_excerpt is not None:
        return _driver_excerpt(log, "Xid lines")
    if log.nvidia_only is None:
        return _bus_excerpt(log)
    count = log.said_lines or log.lines
    n = f"{count} line{'s' if count != 1 else ''}"
    return (
        f"it holds only lines with `nvidia` ({n}, first `{log.nvidia_only[:80]}`), picked from the"
        " log: an Xid line (`NVRM: Xid (PCI:...): 43, pid=..., name=...`) need not hold it"
    )


def _driver_excerpt(log: KernelLog, lost: str) -> str:
    """Why a log whose every kernel line holds NVRM or `nvidia`, the driver's load banner not
    among them (KernelLog.driver_excerpt), says nothing of the `lost` lines: its kernel lines
    counted and the first named, as the other reasons do (said_lines: a syslog's lines of another
    program, nvidia-persistenced's own, are no kernel line; upstart's `init: nvidia-persistenced
    main process ...` is one, but not the driver's: measure38c 19)."""
    count = log.said_lines or log.lines
    n = f"{count} line{'s' if count != 1 else ''}"
    return (
        f"it holds only lines with NVRM or `nvidia` ({n}, first `{(log.driver_excerpt or '')[:80]}`),"
        f" without the driver's load banner at boot: an excerpt picked from the log, whose other lines"
        f" ({lost} among them) are not known"
    )


def _no_nvswitch_lines(log: KernelLog) -> str:
    """Why a saved log says nothing of the NVSwitch driver's SXids: each of its lines holds
    `NVRM` (a `dmesg | grep NVRM` saved without its command), which no SXid line does, or is the
    GPU driver's, its load banner not among them (an excerpt around a fault); ""."""
    if log.nvrm_only is None and log.driver_excerpt is not None:
        return _driver_excerpt(log, "the NVSwitch driver's SXid lines")
    if log.nvrm_only is None:
        return _bus_excerpt(log)
    count = log.said_lines or log.lines  # (the NVRM lines, not a page's bare `> ` mark above them)
    n = f"{count} line{'s' if count != 1 else ''}"
    return (
        f"it holds only lines with NVRM ({n}, first `{log.nvrm_only[:80]}`), picked from the log:"
        " the NVSwitch driver's SXid lines (`nvidia-nvswitch...`) could not be among them"
    )


def _bus_excerpt(log: KernelLog) -> str:
    """Why a saved log says nothing of the Xids or SXids it does not hold: each of its lines holds
    a PCI address or `nvidia` (a `dmesg -t | grep -E '0000:17:00|0000:65:00'` saved without its
    command: kernel_quoted.bus_excerpt); ""."""
    if log.bus_excerpt is None:
        return ""
    count = log.said_lines or log.lines
    n = f"{count} line{'s' if count != 1 else ''}"
    return (
        f"it holds only lines with a PCI address or `nvidia` ({n}, first `{log.bus_excerpt[:80]}`),"
        " picked from the log (a grep by the GPUs' bus addresses): its other lines, another GPU's"
        " Xid lines and the NVSwitch driver's SXid lines among them, are not known"
    )


def _kernel_log_checks(facts: Facts, gpus: Sequence[GpuInfo]) -> list[Check | None]:
    """Xid, SXid and the host's hardware errors from the kernel log given (with the earlier
    boots' logs given beside it, and the faults of another answer of this boot's log that it
    does not hold: `beside`), or the reader's absence said for Xid and SXid."""
    from gpuonboard.facts import aer, kernel_log
    from gpuonboard.facts.host_errors import host_errors
    from gpuonboard.facts.kernel_log import fault_key
    from gpuonboard.steps.checks.host_errors import rule_host_hw_errors

    out = facts.raw["kernel_log"]
    log = kernel_log.parse_kernel_log(out.stdout)
    # (a reader that answered with nothing or its own notice read no log: kernel_log.no_log)
    ok = out.exit_code == 0 and not log.no_log
    why = log.no_log or out.stderr.strip() or f"exit {out.exit_code}"
    pairs = [(g.index, g.pci_bus_id) for g in gpus]
    events = log.events + aer.aer_events(out.stdout)
    if out.earlier_boot:  # (`journalctl -k -b -1`: every line is of a boot the box has left)
        events = tuple(replace(e, earlier_boot=True) for e in events)
        log = replace(log, events=events[: len(log.events)])
    for i, text in enumerate(out.history):  # (earlier boots' logs given beside it, each read apart)
        # (each log's driver loads its own: a refusal explains a failure of its own load only)
        own = -(i + 1) * 1_000_000
        past = tuple(
            replace(e, earlier_boot=True, load=own + e.load) for e in kernel_log.parse_kernel_log(text).events
        )
        events = past + tuple(replace(e, earlier_boot=True, load=own) for e in aer.aer_events(text)) + events
        log = replace(log, events=past + log.events)
    for other in out.beside:  # (this boot's log again, another answer: a bug report's grep of its journal)
        # (this boot's faults only: the same fault an earlier boot logged is another fault)
        known = {fault_key(e) for e in events if not e.earlier_boot}
        extra = [e for e in kernel_log.parse_kernel_log(other.stdout).events if _new_fault(e, known)]
        extra += [e for e in aer.aer_events(other.stdout) if _new_fault(e, known)]
        events += tuple(extra)
        log = replace(log, events=log.events + tuple(e for e in extra if e.kind != "aer"))
    events = repairs_done(events, gpus)  # (Xid 63's reset since: the GPU's -q, revP F5)
    slice_ = whole_listing_slice(facts)
    if out.absent:  # (`journalctl: command not found`: a missing tool, not a refusal)
        return [
            reader_missing_check("gpu_xid", "Xid", why),
            reader_missing_check("nvswitch_sxid", "SXid", why),
        ]
    # (a poster's `...` between its lines left some out, as a `| grep` does)
    narrowed = out.partial or log.left_out or log.no_gpu_lines or _no_xid_lines(log) or log.cut_by_cap
    narrowed = narrowed or log.early_end  # (a log that ends before the driver logged: facts/kernel_span)
    narrowed = narrowed or (log.kinds_picked.for_xid() if log.kinds_picked else "")  # (facts/kernel_kinds)
    narrowed = narrowed or log.headless  # (a paste begun inside a driver's record: facts/kernel_headless)
    covers = None if out.partial else log.covers_boot  # (`| grep`: its first line says nothing)
    xid = rule_xid(events, ok, why, pairs, covers, narrowed, slice_)
    xid = _with_crashes(xid, [] if out.earlier_boot else nvidia_crashes(out.stdout))
    xid = _in_dump(xid, dump_fragment(out.stdout))
    xid = _crash_record(xid, out)
    narrowed = (
        (out.partial or log.left_out or _no_nvswitch_lines(log) or log.driver_cut_by_cap or log.early_end)
        or (log.kinds_picked.for_sxid() if log.kinds_picked else "")
        or log.headless
    )
    sxid = rule_sxid(log.events, ok, why, covers, narrowed)
    # (the host's own hardware errors: a row only where the log shows one; read as the log's
    # readers read it, a paste's wrap joined: a DIMM's name the wrap cut is whole again)
    # (and whether it ends inside its last line, a newline after it or not: kernel_text.log_text)
    read = log_text(out.stdout)
    hosted = host_errors(read.lines, read.open_end)
    hosted = tuple(replace(e, earlier_boot=True) for e in hosted) if out.earlier_boot else hosted
    hosted += _beside_host_errors(hosted, out.beside)
    if mcelog_only(out.stdout):  # (mcelog's records alone: host_hw_errors' only, facts/mcelog)
        xid, sxid = mcelog_only_check("gpu_xid", "Xid"), mcelog_only_check("nvswitch_sxid", "SXid")
    return [
        _in_sandbox(xid, "Xid", log.sandbox),
        _in_sandbox(sxid, "SXid", log.sandbox),
        rule_host_hw_errors(hosted, out.partial or log.left_out or log.host_cut_by_cap)
        or _host_lines_left_out(log.dropped_host),
    ]


# a kernel crash (an Oops) naming the NVIDIA driver beside no Xid: what to ask
CRASH_ADVICE = (
    "the kernel crashed this boot in a report that names the NVIDIA driver or a kernel it tainted"
    " (no Xid is logged for such a crash): ask the vendor to check the full report in `dmesg`"
    " (its Call Trace and Modules linked in), to update or reinstall the NVIDIA driver for this"
    " kernel, and to reboot the box"
)


def _with_crashes(check: Check, crashes: Sequence[KernelCrash]) -> Check:
    """gpu_xid with the kernel crashes naming the NVIDIA driver said (facts/kernel_oops.py): a pass
    becomes a warning naming the first, with what to ask; any other verdict names it too."""
    if not crashes:
        return check
    # (a crash of an earlier boot than the box runs now is said, as an earlier boot's Xid is, never
    # a warning of this boot: the reboot since ended it)
    first = next((c for c in crashes if not c.earlier_boot), crashes[0])
    said = crash_sentence(first) + (f" and {len(crashes) - 1} more" if len(crashes) > 1 else "")
    if check.verdict == "pass" and not first.earlier_boot:
        return replace(check, actual=f"{check.actual}; {said}", verdict="warn", detail=CRASH_ADVICE)
    return replace(check, actual=f"{check.actual}; {said}")


def _crash_record(check: Check, out: ProbeOutput) -> Check:
    """gpu_xid where the log given is a pstore crash record of an earlier boot (facts/
    kernel_pstore.py), or holds one beside this boot's log (two files, a session, one file of
    both: its `history`), that shows the crash (`Kernel panic - not syncing: ...`, an Oops): the box
    crashed then, a warning naming the crash line; a failure stays one, naming it too."""
    records = [out.stdout] if out.earlier_boot and pstore_record(out.stdout) else []
    records += [text for text in out.history if pstore_record(text)]  # (one beside this boot's log)
    crash = next((said for said in map(first_crash, records) if said), "")
    if not crash:
        return check
    whose = (
        "the record" if out.earlier_boot else "a pstore crash record given beside it (an earlier boot's log)"
    )
    said = f"{check.actual}; {whose} shows the box crashed then: `{crash}`"
    if check.verdict not in ("pass", "unverified"):
        return replace(check, actual=said)
    return replace(check, actual=said, verdict="warn", detail=CRASH_RECORD_ADVICE)


def _in_dump(check: Check, dump: str) -> Check:
    """gpu_xid where the log read starts inside a fault's dump in the NVIDIA driver (`dump`: why,
    facts/kernel_oops.dump_fragment): the fault's own lines are before it, so a pass is
    unverified; any other verdict says it."""
    if not dump:
        return check
    if check.verdict != "pass":
        return replace(check, actual=f"{check.actual}; {dump}")
    return replace(
        check,
        actual=f"unknown: {dump}: the fault's own first lines (an Xid may be among them) are not in it",
        verdict="unverified",
        detail="a fragment of a driver fault's dump shows a fault whose first lines are left out:"
        " save the whole log (`sudo dmesg -T > dmesg.txt`, or `journalctl -k -b`) and judge it again",
    )


def _host_lines_left_out(dropped: int | None) -> Check | None:
    """host_hw_errors where the live probe left out host error lines (`# dropped: ... host 4`: a
    host without sort or cut keeps the drivers' and the others' lines only) and read none: the
    probe says such lines exist, so no row (no claim) would drop them unsaid: unverified."""
    if not dropped:
        return None
    return Check(
        "host_hw_errors",
        "no host hardware error (memory, CPU, PCIe) in the kernel log",
        f"the probe left out {dropped} host error lines and read none of them",
        "unverified",
        f"the probe left out {dropped} host error lines: rerun where sort and cut exist, or read"
        " `dmesg` by hand.",
    )


def health_checks(facts: Facts) -> list[Check]:
    """The order-free fabric rules for the outputs there are: Xid / SXid from the kernel log,
    NVLink links from `nvlink -s`, Fabric Manager from its state."""
    from gpuonboard.facts import nvlink

    checks: list[Check | None] = []
    gpus = sorted(facts.gpu.gpus, key=lambda g: g.index) if facts.gpu is not None else []
    if facts.given("kernel_log"):
        checks += _kernel_log_checks(facts, gpus)
    status = None
    if facts.given("nvidia_nvlink") and facts.raw["nvidia_nvlink"].exit_code == 0:
        status = nvlink.parse_nvlink_status(facts.raw["nvidia_nvlink"].stdout)
    errors = None
    if facts.given("nvidia_nvlink_errors") and facts.raw["nvidia_nvlink_errors"].exit_code == 0:
        errors = nvlink.parse_nvlink_errors(facts.raw["nvidia_nvlink_errors"].stdout)
    named = {**_listed_models(status, errors), **{g.index: model_name(g) for g in gpus if g.name}}
    # a box of one GPU (a whole listing of one) whose nvlink commands print nothing (a 1-GPU VM):
    # NVLink joins GPUs, and this box has no other to join
    lone = (
        facts.gpu is not None
        and facts.gpu.complete
        and len(gpus) == 1
        and facts.gpu.attached_gpus in (None, 1)
    )
    if facts.given("nvidia_nvlink"):
        listed = status if status is not None and status.gpus else None
        out = facts.raw["nvidia_nvlink"]
        check = _lone(rule_nvlink(named, listed), lone and listed is None, out, "nvlink -s")
        check = _topo_unlisted(check, facts, named, "nvlink -s")
        checks.append(_failure_said(check, out, "nvlink -s"))
    if facts.given("nvidia_nvlink_errors"):
        listed_errors = errors if errors is not None and errors.gpus else None
        out = facts.raw["nvidia_nvlink_errors"]
        check = _lone(
            rule_nvlink_errors(named, listed_errors), lone and listed_errors is None, out, "nvlink -e"
        )
        check = _topo_unlisted(check, facts, named, "nvlink -e")
        checks.append(_failure_said(check, out, "nvlink -e"))
    models = [g.name for g in gpus] or list(named.values())
    checks.append(_fabric_manager_check(facts, gpus, models))
    return [c for c in checks if c is not None]


def _fabric_manager_check(facts: Facts, gpus: Sequence[GpuInfo], models: list[str]) -> Check | None:
    """`fabric_manager` from the service's state (where probed) and the GPUs' own fabric state
    and health (offline, without the service: judged all the same, the service "not probed"); a
    pass over a listing cut short is of what was read: unverified."""
    from gpuonboard.facts import fabric_manager
    from gpuonboard.steps.checks.missing_facts import incomplete_said, of_those_read

    states = [(g.fabric_state, g.fabric_status) for g in gpus]
    health = [g.fabric_health for g in gpus]
    attached = facts.gpu.attached_gpus if facts.gpu is not None else None
    fm = None
    if facts.given("fabric_manager"):
        out = facts.raw["fabric_manager"]
        fm = fabric_manager.parse_fabric_manager(out.stdout) if out.exit_code == 0 else None
    elif not any(state not in (None, "N/A") for state, _status in states) and not any(health):
        return None
    marked = f"{FABRIC_STATUS} reads "
    unread = {
        i: fault.removeprefix(marked)
        for i, g in enumerate(gpus)
        for fault in g.cell_faults
        if fault.startswith(marked)
    }
    check = rule_fabric_manager(models, states, fm, health, attached, unread)
    gap = incomplete_said(facts)
    return of_those_read(check, gap) if check is not None and gap else check
