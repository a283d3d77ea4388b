"""Kernel-log rules: Xid (GPU) and SXid (NVSwitch) events judged against data/xid.yml (NVIDIA's
Xid catalog and Fabric Manager guide, via leptonai/gpud, AWS and Azure health checks), with the
driver's own word for an SXid event (Fatal / Non-fatal). A line that says Xid / SXid but cannot
be read is never a pass; a log that does not reach back to boot is judged on what it holds (no
fault: a pass), its result saying it does not cover the whole boot. The catalogue and the action
each event asks for: steps/checks/xid_catalogue.py; the judgement the Xid and SXid rules share
(a log's events summarised, its verdict, a log unread / cut / narrowed / not reaching boot):
steps/checks/kernel_event_rule.py.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from gpuonboard.facts.kernel_instance import DEVICES
from gpuonboard.facts.kernel_log import KernelEvent, load_nvrm_faults, pci_key
from gpuonboard.once import lazy_re
from gpuonboard.steps.base import Check
from gpuonboard.steps.checks.kernel_event_rule import (
    after_boot_detail,
    boot_span,
    event_rule,
    summarise,
    with_narrowed,
    with_unread,
)
from gpuonboard.steps.checks.xid_catalogue import ACTIONS as ACTIONS
from gpuonboard.steps.checks.xid_catalogue import FAILING as FAILING
from gpuonboard.steps.checks.xid_catalogue import XID_FILE as XID_FILE
from gpuonboard.steps.checks.xid_catalogue import XidEntry as XidEntry
from gpuonboard.steps.checks.xid_catalogue import load_xid_catalogue as load_xid_catalogue
from gpuonboard.steps.checks.xid_catalogue import noise_alone
from gpuonboard.steps.checks.xid_catalogue import xid_action as xid_action
from gpuonboard.steps.checks.xid_causes import with_causes

# R590+ prints what a channel teardown was caused by: "NVRM: Xid (PCI:0000:dc:00): 45, pid=...,
# name=python3, Ch 00000001 caused by previous Xid 149" (NVIDIA/open-gpu-kernel-modules #1150);
# with any of its blanks lost too: a paste word-wrapped at `Ch 00000001` / `caused` or `previous`
# / `Xid`, every line's break as long, cannot be told from a terminal's wrap inside a word, and
# is glued back so (facts/wrapped.py)
_CAUSED_BY = lazy_re(r"(?<![A-Za-z])caused\s*by\s*previous\s*Xid\s*(\d+)", re.IGNORECASE)


def implied_xids(events: tuple[KernelEvent, ...] | list[KernelEvent]) -> tuple[KernelEvent, ...]:
    """The Xids that logged Xid lines name as their cause ("... caused by previous Xid 149")
    where the log has no line of that Xid for that GPU (the ring buffer wrapped, the probe kept
    the newest lines, a paste holds the tail): the fault happened all the same. One event per
    (GPU, code), `implied_by` the code of the line that names it."""
    # (per boot of a log of several: a line of an earlier boot is not this boot's fault)
    logged = {(pci_key(e.pci), e.code, e.earlier_boot) for e in events if e.kind == "xid"}
    out: dict[tuple[str, int, bool], KernelEvent] = {}
    for e in events:
        if e.kind != "xid":
            continue
        for m in _CAUSED_BY.finditer(e.message):
            if e.cut is not None and m.end() == len(e.message.rstrip()):
                continue  # the log ends inside this number (149 cut to 14): not read
            key = (pci_key(e.pci), int(m.group(1)), e.earlier_boot)
            if key not in logged and key not in out:
                out[key] = KernelEvent(
                    "xid", key[1], e.pci, e.message, None, e.timestamp, implied_by=e.code, earlier_boot=key[2]
                )
    return tuple(out.values())


def sandbox_log_check(name: str, what: str, banner: str) -> Check:
    """gpu_xid / nvswitch_sxid where the kernel log read was written by a sandbox's emulated kernel
    (facts/kernel_log.py _SANDBOX_BANNERS: gVisor's `Starting gVisor...`), not by the host's
    kernel, where the NVIDIA drivers log, or by a WSL2 / Hyper-V guest's kernel whose GPU is the
    Windows host's (its dxgkrnl line, or its WSL2 kernel's banner): none seen there is no
    evidence, never a pass."""
    if "dxg" in banner or "-microsoft-standard" in banner:
        return Check(
            name,
            f"no {what} since boot needing action",
            f"kernel log not readable: a WSL2 or Hyper-V guest's, whose GPU is the Windows host's"
            f" ({banner!r})",
            "unverified",
            f"this kernel reaches the GPU through the paravirtual dxgkrnl driver: the GPU's NVIDIA"
            f" driver runs on the Windows host and logs its errors there, never in this log, so"
            f" {what} errors are unknown: ask the vendor for the host's GPU error log (Windows"
            " Event Viewer, System log, nvlddmkm events).",
        )
    return Check(
        name,
        f"no {what} since boot needing action",
        f"kernel log not readable: the sandbox's own (its first line {banner!r})",
        "unverified",
        f"`dmesg` here is answered by a sandbox's emulated kernel (gVisor), not by the host's kernel,"
        f" whose NVIDIA driver logs {what}s, so {what} errors since boot are unknown: ask the vendor"
        " for the host's kernel log (`sudo dmesg -T` or `journalctl -k -b` on the host).",
    )


def reader_missing_check(name: str, what: str, said: str) -> Check:
    """gpu_xid / nvswitch_sxid where the kernel log's reader is not installed for the login
    (`-bash: journalctl: command not found`, exit 127): no read access would help, the tool is
    missing; GPU faults since boot are unknown, never a pass."""
    return Check(
        name,
        f"no {what} since boot needing action",
        f"kernel log not read: its reader is not installed ({said})",
        "unverified",
        f"the command that reads the kernel log is not installed for the login user, so {what} errors"
        " since boot are unknown: read the log with the one the box has (`sudo dmesg -T`, util-linux;"
        " `journalctl -k -b`, systemd), or ask the vendor for it.",
    )


def mcelog_only_check(name: str, what: str) -> Check:
    """gpu_xid / nvswitch_sxid where the "kernel log" given is mcelog's output alone
    (facts/mcelog.mcelog_only): its records are the CPUs' machine checks, host_hw_errors'
    evidence; no Xid / SXid can be among them, so their absence there says nothing."""
    return Check(
        name,
        f"no {what} since boot needing action",
        f"no kernel log given: mcelog's records of machine checks hold no {what} line",
        "unverified",
        f"mcelog's output reads the CPUs' machine checks only, never the GPU drivers' {what} lines:"
        " give the kernel log beside it (`sudo dmesg -T` or `journalctl -k -b`).",
    )


def _split_not_shown(
    events: Sequence[KernelEvent], gpus: Sequence[tuple[int, str | None]], slice_: str
) -> tuple[list[KernelEvent], list[KernelEvent]]:
    """(events on the rental's GPUs or not known to be elsewhere, events on a GPU it does not
    show). Only in a slice (`slice_` says why) whose every listed GPU has its PCI address: an
    event with a whole address (`0000:9b:00`; not an old driver's `0001:00`, not none) that is
    no listed GPU's is on another of the host's GPUs. On a whole box the same event may be a GPU
    that fell off the bus, and stays judged as the box's own."""
    shown = {pci_key(pci) for _, pci in gpus if pci}
    if not slice_ or not gpus or len(shown) < len(gpus):
        return list(events), []
    elsewhere = [e for e in events if e.pci.count(":") == 2 and pci_key(e.pci) not in shown]
    return [e for e in events if e not in elsewhere], elsewhere


def _with_not_shown(
    check: Check, elsewhere: Sequence[KernelEvent], own: bool, slice_: str, span: str
) -> Check:
    """`check` of the rental's own Xids, with those on GPUs it does not show (`elsewhere`, in a
    slice of a bigger machine: `slice_` says why) named apart: they never fail the rental; one
    that asks for more than NVIDIA's "ignore" warns. `own`: the check judged events of its own."""
    if not elsewhere or check.verdict == "unverified":
        return check
    lines = summarise(elsewhere, {}, "Xid", not_shown=True)
    said = "; ".join(text for _, text in lines)
    if check.verdict == "fail":
        return replace(check, actual=f"{check.actual}; also {said}")
    actual = f"{check.actual}; {said}" if own else said + span
    if all(action == "ignore" for action, _ in lines):
        # (a pass of no Xid of its own says so of the rental's GPUs: the actual names the others')
        on_own = "no Xid on a GPU this rental shows"
        return replace(
            check, actual=actual, detail=check.detail if own or not span else after_boot_detail(on_own)
        )
    why = (
        f"The box is a slice of a bigger machine ({slice_}) and its kernel log is the host's: these"
        " Xids are on GPUs nvidia-smi does not list here: another tenant's or the host's, or one of"
        " this rental's that fell off the bus (then gpu_count finds fewer GPUs than ordered). Which"
        " of these they are cannot be told from inside the slice, so they warn: ask the vendor about"
        " them (they may share your GPUs' board or host), and check gpu_count."
    )
    detail = f"{check.detail} {why}" if check.verdict == "warn" else why
    return Check(check.name, check.expected, actual, "warn", detail)


def rule_xid(
    events: Sequence[KernelEvent],
    probe_ok: bool,
    why_unread: str = "",
    gpus: Sequence[tuple[int, str | None]] = (),
    covers_boot: bool | None = None,
    narrowed: str = "",
    slice_: str = "",
) -> Check:
    """GPU Xid errors since boot, classified by data/xid.yml: none = pass; reset/reboot/replace =
    fail naming GPU, PCI address, code, name and action; application-level (13, 31 ...) = warn;
    informational (43, 45, 63 ...) = pass; log unreadable = unverified with why. An Xid a logged
    line names as its cause ("... caused by previous Xid 149") is judged as if logged. The driver's
    GPU fault sentences without an Xid (data/nvrm_faults.yml: fallen off the bus, RmInitAdapter
    failed, probe failed, GSP start-up / timeout) are judged alike: fail, naming the PCI address.
    An `NVRM: Xid` line whose code cannot be read (or announced by the driver's preamble but not
    in the log), or a log that ends inside any driver line (an Xid, an NVRM message, an SXid: cut
    short, the lines after it lost) or a line that says nothing yet, makes a passing or warning
    log unverified.
    `gpus`: (index, PCI bus id) pairs from nvidia-smi so each Xid names its GPU index (an address
    that matches none, an old driver's `0001:00`, is named as printed). A GPU's uncorrectable
    PCIe (AER) errors (facts/aer.py) fail (fatal, not recovered) or warn (non-fatal) alike.
    `narrowed`: why the log given is only part of it (ProbeOutput.partial, lines left out by hand):
    no fault, or only warnings, are then unverified (the warnings shown named: the lines left out
    may hold worse); a fault shown still fails. In a log of several boots, a
    fault logged before its last reboot that asked for a GPU reset or a reboot warns
    (REBOOTED_SINCE: that reboot did it); others are judged as usual, each said to be of the
    earlier boot.
    `slice_`: why the box is a slice of a bigger machine (a container, a Slurm job; "" where not
    known to be one), given only where `gpus` is its whole GPU listing: there a fault on a whole
    PCI address that none of `gpus` has is another tenant's GPU (the host's kernel log): said as
    on a GPU this rental does not show, and warned of, never failed (_split_not_shown)."""
    xids = [e for e in events if e.kind == "xid"]
    logged = {(pci_key(e.pci), e.code, e.earlier_boot) for e in xids}
    # an Xid a later line names as its cause ("caused by previous Xid 149") happened, whether or
    # not its own line is still in the log
    xids += implied_xids(xids)
    # a fault sentence whose Xid the log also has for that GPU (fallen off the bus + Xid 79) is
    # that Xid's text: listed once
    # (whose GPU each saying is on is decided first: a sentence naming no GPU is said by an Xid on
    # another tenant's GPU only where that GPU may be the rental's, never on a slice)
    _, not_shown = _split_not_shown(events, gpus, slice_)
    sayers = [e for e in events if e not in not_shown]
    # (a failure beside the line naming its cause asks for that cause's action: xid_causes)
    nvrm = with_causes(_unexplained(events))
    xids += [e for e in nvrm if e.kind == "nvrm" and not _said_by_xid(e, sayers, logged)]
    xids += [e for e in events if e.kind == "aer"]  # (facts/aer.py: the GPU's uncorrectable PCIe errors)
    # (a known driver message with no sign of a GPU not answering in its boot's log warns: ogkm#688)
    xids = noise_alone(xids, [*events, *xids])
    xids, elsewhere = _split_not_shown(xids, gpus, slice_)
    check = event_rule("gpu_xid", "Xid", xids, probe_ok, why_unread, gpus, covers_boot)
    span = boot_span(covers_boot)
    check = _with_not_shown(check, elsewhere, bool(xids), slice_, span)
    # an unreadable line, or an event the log ends inside (judged on what was read, but what its
    # line went on to say, such as "caused by previous Xid 149", is not known)
    # (a log cut short inside any line, an SXid's too, may have lost the lines after it)
    unread = [e for e in events if e.kind == "xid_unread" or e.cut]
    # (a warning shown in a log whose lines were left out, by hand, `...`, or by its command:
    # unverified, the warning named; a fault in the lines left out would fail: revO F4)
    return with_narrowed(with_unread(check, unread, "Xid", bool(xids or elsewhere)), narrowed, "Xid", False)


def _said_by_xid(
    event: KernelEvent, events: Sequence[KernelEvent], logged: set[tuple[str, int, bool]]
) -> bool:
    """True when a driver fault sentence is the text of a fault the log also says otherwise
    (data/nvrm_faults.yml `same_as_xid`): that Xid on its GPU; where the sentence names no GPU
    (`... GPU lost from the bus [NV_ERR_GPU_IS_LOST]`), that Xid on any GPU of `events`, or a
    sentence of the same Xid naming its GPU (`The NVIDIA GPU ... has fallen off the bus`), of its
    boot and driver load: one fault, listed once. (rule_xid gives as `events` only those on GPUs
    the rental may have: on a slice, an Xid on a GPU it does not show says no fault of its own.)"""
    code = {f.id: f.same_as_xid for f in load_nvrm_faults()}.get(event.fault or "")
    if code is None:
        return False
    if event.pci:
        return (pci_key(event.pci), code, event.earlier_boot) in logged
    same = {f.id for f in load_nvrm_faults() if f.same_as_xid == code}
    return any(
        (e.kind == "xid" and e.code == code) or (e.kind == "nvrm" and e.fault in same and bool(e.pci))
        for e in events
        if (e.load, e.earlier_boot) == (event.load, event.earlier_boot)
    )


# a GPU named by its device minor number, not its address (old drivers: "rm_init_adapter failed
# for device bearing minor number 1", "rm_init_adapter(0) failed")
_MINOR_NUMBER = lazy_re(r"\bminor number\s*\d|\brm_init_adapter\s*\(\s*\d+\s*\)", re.IGNORECASE)


def _unexplained(events: Sequence[KernelEvent]) -> list[KernelEvent]:
    """The events less the driver fault sentences another one in the log explains
    (data/nvrm_faults.yml `explains`): a driver that refuses a GPU ("... requires use of the NVIDIA
    open kernel modules") then fails to initialise it (RmInitAdapter failed) and to probe it, which
    is its refusal, not a GPU to replace. Only within one driver load of one boot (a reloaded
    driver, a reboot, may fail the GPU on its own), and only the same GPU: an effect that names a
    GPU (its address; an old driver's minor number) only by a cause naming that address (a cause
    without one cannot say which GPU it was about); one naming none by a cause of its load that
    explains no other effect of its kind (one to one: a second `Cannot initialize GSP firmware RM`
    may be another GPU's); a probe summary naming none (`probe routine failed for 1 device(s)`, no
    `probe of ADDR failed` line before it: facts/kernel_instance.py) only by causes of its own probe
    pass (after the previous summary, before it: the driver's load banner follows its probe pass)
    on as many GPUs as it counts. (A GPU the driver refuses is refused at each probe of that load.)"""
    explains = {f.id: set(f.explains) for f in load_nvrm_faults()}
    causes = [(at, c, explains.get(c.fault or "", set())) for at, c in enumerate(events) if c.kind == "nvrm"]
    used: set[tuple[int, str]] = set()  # (cause, effect fault) pairs an effect naming none took

    def found(at: int, e: KernelEvent, names_gpu: bool) -> list[tuple[int, KernelEvent]]:
        summary = DEVICES.search(e.message) is not None and not names_gpu
        start = _pass_start(events, at) if summary else 0
        return [
            (i, c)
            for i, c, effects in causes
            if e.kind == "nvrm"
            and e.fault in effects
            and (c.load, c.earlier_boot) == (e.load, e.earlier_boot)
            and (not summary or start <= i < at)
            and (not names_gpu or (bool(c.pci) and pci_key(c.pci) == pci_key(e.pci)))
        ]

    def explained(at: int, e: KernelEvent) -> bool:
        names_gpu = bool(e.pci) or _MINOR_NUMBER.search(e.message) is not None
        by = found(at, e, names_gpu)
        count = DEVICES.search(e.message)
        if names_gpu:
            return bool(by)
        if count is not None:
            # (a count, "probe routine failed for 2 device(s)": as many GPUs of its pass; a GPU
            # more than the log names failed on its own)
            return len({pci_key(c.pci) for _, c in by}) >= int(count.group(1))
        free = [i for i, _ in by if (i, e.fault or "") not in used and not _names_taken(i, e, events)]
        if free:
            used.add((free[0], e.fault or ""))
        return bool(free)

    return [e for at, e in enumerate(events) if not explained(at, e)]


def _pass_start(events: Sequence[KernelEvent], at: int) -> int:
    """The index of the first event of the probe pass of the probe summary at `at`: after the
    previous summary of its driver load, else the load's first event."""
    start = at
    while start > 0:
        prev = events[start - 1]
        if prev.load != events[at].load or (prev.fault == "probe_failed" and DEVICES.search(prev.message)):
            break
        start -= 1
    return start


def _names_taken(cause_at: int, effect: KernelEvent, events: Sequence[KernelEvent]) -> bool:
    """True when an effect of the same kind naming the cause's GPU, one the log ties to it
    (facts/kernel_instance.py), is explained by the cause at `cause_at`: it takes no other."""
    cause = events[cause_at]
    return bool(cause.pci) and any(
        o.kind == "nvrm"
        and o.fault == effect.fault
        and bool(o.pci)
        and pci_key(o.pci) == pci_key(cause.pci)
        and (o.load, o.earlier_boot) == (cause.load, cause.earlier_boot)
        for o in events
    )
