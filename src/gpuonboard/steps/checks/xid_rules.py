"""Kernel-log rules: Xid (GPU) and SXid (NVSwitch) events judged against data/xid.yml (NVIDIA's
Xid catalog and Fabric Manager guide, via leptonai/gpud, AWS and Azure health checks), with the
driver's own word for an SXid event (Fatal / Non-fatal). A line that says Xid / SXid but cannot
be read is never a pass; a log that does not reach back to boot is judged on what it holds (no
fault: a pass), its result saying it does not cover the whole boot. The catalogue and the action
each event asks for: steps/checks/xid_catalogue.py.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace

from gpuonboard.facts.extra_probes import SAVE_AGAIN
from gpuonboard.facts.kernel_instance import DEVICES
from gpuonboard.facts.kernel_log import KernelEvent, NvrmFault, load_nvrm_faults, pci_key
from gpuonboard.once import lazy_re
from gpuonboard.steps.base import Check
from gpuonboard.steps.checks.xid_catalogue import ACTIONS as ACTIONS
from gpuonboard.steps.checks.xid_catalogue import FAILING as FAILING
from gpuonboard.steps.checks.xid_catalogue import NOTED, noise_alone
from gpuonboard.steps.checks.xid_catalogue import XID_FILE as XID_FILE
from gpuonboard.steps.checks.xid_catalogue import XidEntry as XidEntry
from gpuonboard.steps.checks.xid_catalogue import load_xid_catalogue as load_xid_catalogue
from gpuonboard.steps.checks.xid_catalogue import xid_action as xid_action
from gpuonboard.steps.checks.xid_causes import CAUSE, with_causes

# what the renter asks the vendor to do, per action
_ASK = {
    "reset_gpu": "ask the vendor to reset the GPU (nvidia-smi -r, or a reboot) and to check it stays clean",
    "reboot": "ask the vendor to reboot the host and to check the GPU comes back",
    "replace": "ask the vendor to inspect and replace the GPU (or the box)",
    "update_driver": "ask the vendor to update the GPU driver / firmware",
    # (data/nvrm_faults.yml driver_refuses_gpu: no fault of the GPU; the kernel log's sentence
    # says which driver it needs)
    "install_driver": "ask the vendor to install an NVIDIA driver that supports this GPU, as the"
    " driver's message says (a newer branch; the open kernel modules, which Blackwell GPUs"
    " require; or the legacy branch of a GPU the installed one dropped); it is no fault of the GPU",
    # (data/nvrm_faults.yml probe_not_called: nouveau or a framebuffer driver holds the GPU)
    "unload_other_driver": "ask the vendor to stop the other driver that holds the GPU (blacklist"
    " nouveau / rivafb / nvidiafb / rivatv, rebuild the initramfs, reboot) or reinstall the NVIDIA"
    " driver, as the driver's message says; it is no fault of the GPU",
    # (data/nvrm_faults.yml api_mismatch: a driver updated without a reboot, or two installed)
    "match_driver_versions": "ask the vendor to reboot the box, or to reinstall one driver version: the"
    " NVIDIA kernel module and the driver's libraries are different versions, as the driver's message"
    " says (a driver updated without a reboot); it is no fault of the GPU",
    # (data/nvrm_faults.yml bar_invalid: the firmware, the VM or the enclosure gave the GPU no
    # valid BAR; a reboot or a new GPU does not fix it)
    "fix_bar_mapping": "ask the vendor to give the GPU its PCI memory regions (BARs), as the driver's"
    " message says: enable Above 4G decoding (and Resizable BAR) in the BIOS, or give the VM a large"
    " enough 64-bit MMIO window for a passed-through GPU; it is no fault of the GPU",
    # (data/nvrm_faults.yml cause_of: the log names the host's set-up as the reason a GPU failed to
    # initialise: its firmware, the kernel's limits, a VM's GPU set-up)
    "fix_host_setup": "ask the vendor to fix what the kernel log names as the reason the GPU failed"
    " (the system BIOS / ACPI, the kernel's settings, the VM's GPU set-up), then to check the GPU"
    " initialises; nothing the log shows is a fault of the GPU itself",
}


# a failure to replace for beside a driver message the log ends inside: that message may be the
# driver's reason (data/nvrm_faults.yml driver_refuses_gpu; Resizable BAR or Above 4G decoding
# off), which no new GPU fixes
_CUT_REASON = (
    "The kernel log ends inside a driver message that may be the driver's reason for this failure"
    " (a driver that does not support the GPU, or Resizable BAR / Above 4G decoding off in the BIOS):"
    " read the whole log (`dmesg | grep NVRM`) and check those BIOS settings before asking the vendor"
    " to replace the GPU."
)


# the failing actions, the one asking most of the vendor first (a rule's verdict names the worst)
FAILING_WORST_FIRST = (
    "replace",
    "fix_bar_mapping",
    "fix_host_setup",
    "install_driver",
    "unload_other_driver",
    "match_driver_versions",
    "reboot",
    "update_driver",
    "reset_gpu",
)


def _gpu_label(pci: str, gpus: Mapping[str, int], not_shown: bool = False) -> str:
    if not pci:
        return "a GPU (no PCI address in the message)"
    index = gpus.get(pci_key(pci))
    if not_shown:
        return f"GPU at PCI {pci} (a GPU this rental does not show)"
    return f"GPU {index} ({pci})" if index is not None else f"GPU at PCI {pci}"


def _occurrences(group: Sequence[KernelEvent]) -> int:
    """How many times one GPU's fault happened: its events, except that a driver fault printed
    as two sentences each time (osinit.c's `RmInitAdapter failed! (0x..)` and nv.c's
    `rm_init_adapter failed, device minor number N`, one failure) counts the sentences of one
    form, the most of any (two failures, not four)."""
    fault = _row(group[0])
    if group[0].kind != "nvrm" or fault is None:
        return len(group)
    forms = Counter(m.group(0).lower() if (m := fault.pattern.search(e.message)) else "" for e in group)
    return max(forms.values()) if len(forms) > 1 and all(forms) else len(group)


def _row(event: KernelEvent) -> NvrmFault | None:
    """The data/nvrm_faults.yml row of a driver fault sentence (its cause's mark left out)."""
    row = (event.fault or "").partition(CAUSE)[0]
    return next((f for f in load_nvrm_faults() if f.id == row), None)


def _forms_said(group: Sequence[KernelEvent]) -> str:
    """Where one GPU's driver fault was printed in forms the log holds a different number of
    (measure34e 05: 2 `NV_ERR_GPU_IS_LOST` assertions, 7 RPCs failed with its `status
    0x0000000f`), each form's count, as the count said (_occurrences) is the most of any; ""."""
    fault = _row(group[0])
    if group[0].kind != "nvrm" or fault is None:
        return ""
    said: dict[str, str] = {}
    forms: Counter[str] = Counter()
    for e in group:
        if (m := fault.pattern.search(e.message)) is not None:
            said.setdefault(m.group(0).lower(), " ".join(m.group(0).split()))
            forms[m.group(0).lower()] += 1
    if len(forms) < 2 or len(set(forms.values())) < 2:
        return ""
    return " (" + ", ".join(f"{n} with `{said[form]}`" for form, n in forms.most_common()) + ")"


# the action of a fault logged before the last boot boundary of a log that spans boots, where
# what it asked for was a GPU reset or a reboot: the reboot since did that (it warns: the fault
# happened on this box, and may come back)
REBOOTED_SINCE = "rebooted_since"


def _action_now(event: KernelEvent, action: str) -> str:
    """`action` of an event, or REBOOTED_SINCE where the log shows a reboot after it that did
    what it asked for (a GPU reset or a reboot); a replacement, a driver update stay asked for."""
    return REBOOTED_SINCE if event.earlier_boot and action in ("reset_gpu", "reboot") else action


def _rebooted_since_advice(what: str, reset: str) -> str:
    """The advice for faults of a log's earlier boot whose reset or reboot that reboot did."""
    return (
        f"the kernel log spans more than one boot: these {what}s were logged before the box's last"
        f" reboot, which did the {reset} or reboot they asked for; ask the vendor what caused them,"
        " and watch for them again under your own load."
    )


def _boot_said(event: KernelEvent) -> str:
    return " (logged before the log's last reboot)" if event.earlier_boot else ""


def _summarise(
    events: Sequence[KernelEvent], gpus: Mapping[str, int], what: str, not_shown: bool = False
) -> list[tuple[str, str]]:
    """(action, 'GPU 3 (0000:9b:00): Xid 119 GSP RPC Timeout x4') per (device, code, action), worst
    first. Each event is judged on its own line: one code's events on one GPU may need different
    actions (an NVLink5 Xid 145 the driver logged `Nonfatal`, then one it logged `Fatal`; Xid 154s
    changing to different recovery actions), so they are counted apart, never by the first one."""
    groups: dict[tuple[str, str | None, int, str | None, str, bool, str | None], list[KernelEvent]] = {}
    for e in events:
        action = _action_now(e, xid_action(e)[0])
        key = (pci_key(e.pci), e.instance, e.code, e.fault, action, e.earlier_boot, e.pci_from)
        groups.setdefault(key, []).append(e)
    rank = {
        a: i
        for i, a in enumerate(
            (
                *FAILING_WORST_FIRST,
                REBOOTED_SINCE,
                "watch",
                NOTED,
                "check_app",
                "ignore",
            )
        )
    }
    out = []
    for (_, instance, code, _fault, action, _earlier, _tie), group in groups.items():
        name = xid_action(group[0])[1]
        who = (
            f"NVSwitch {group[0].device} ({group[0].pci})"
            if group[0].kind == "sxid"
            else _gpu_label(group[0].pci, gpus, not_shown)
        )
        who += f" MIG {instance}" if instance else ""
        count = _occurrences(group)
        times = f" x{count}{_forms_said(group)}" if count > 1 else ""
        kind = group[0].kind
        # (an address the log only tied the sentence to, never printed in it, says so)
        tied = f"; its address {group[0].pci_from}" if group[0].pci_from else ""
        said_by = "kernel" if _kernel_line(group[0]) else "driver"
        event = (
            f"{said_by} message (no Xid{tied}): {name}"
            if kind == "nvrm"
            else name
            if kind == "aer"
            else f"{what} {code} {name}"
        )
        if action == NOTED:  # (the line itself named: a known message, its shape the reason)
            event += f" (first: '{' '.join(group[0].message.split())[:200]}')"
        if group[0].implied_by is not None:
            event += f" (its own line not in the log; named as the cause by Xid {group[0].implied_by})"
        out.append((action, f"{who}: {event}{_boot_said(group[0])}{times} -> {action}"))
    return sorted(out, key=lambda item: rank.get(item[0], 0))


def _kernel_line(event: KernelEvent) -> bool:
    """True for a kernel line's event (data/nvrm_faults.yml `kernel_line`), not the driver's."""
    return event.kind == "nvrm" and any(f.kernel_line and f.id == event.fault for f in load_nvrm_faults())


def _pci_index(gpus: Sequence[tuple[int, str | None]]) -> dict[str, int]:
    return {pci_key(pci): index for index, pci in gpus if pci}


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


def boot_span(covers_boot: bool | None) -> str:
    """What a result adds where the log read starts after boot (KernelLog.covers_boot False:
    dmesg's ring buffer wrapped, a journal's oldest entries dropped, a copied log's tail): a
    fault before its first line is not in it. The verdict stays what the log read shows (no
    fault: a pass, docs/reference/rules.md); the sentence says the part of the boot it covers."""
    return BOOT_SPAN if covers_boot is False else ""


# (said after a result whose log does not reach back to boot)
BOOT_SPAN = " (the log read starts after boot, so it does not cover the whole boot)"


def _after_boot_detail(holds: str) -> str:
    """A passing log's detail where the log read starts after boot: it `holds` nothing judged
    (`no Xid`), but an earlier line of this boot may be lost."""
    return (
        f"the log read holds {holds}, but an earlier one of this boot (before its first line: a"
        " wrapped dmesg ring buffer, a journal's dropped entries) is not in it; where the journal is"
        " kept on disk, `journalctl -k -b` reads the whole boot."
    )


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
            f"{what} errors are unknown until the kernel log is saved again as the command printed it."
            if SAVE_AGAIN in why_unread  # (a saved log this tool could not read: no access to give)
            else "give the login user read access to the kernel log (sudo; kernel.dmesg_restrict=0 for"
            f" dmesg; the `adm` or `systemd-journal` group for journalctl) so {what}"
            " errors can be checked; until then GPU faults since boot are unknown.",
        )
    span = boot_span(covers_boot)
    if not events and span:
        return Check(
            name,
            expected,
            f"no {what} in the kernel log{span}",
            "pass",
            _after_boot_detail(f"no {what}"),
        )
    if not events:
        return Check(name, expected, f"no {what} in the kernel log", "pass")
    lines = _summarise(events, _pci_index(gpus), what)
    actions = [a for a, _ in lines]
    actual = "; ".join(text for _, text in lines) + span
    worst = next((a for a in FAILING_WORST_FIRST if a in actions), None)
    if worst is not None:
        # (an AER error is the kernel's word, not the catalogue's; a driver sentence without an Xid,
        # data/nvrm_faults.yml, is the driver's: the catalogue is named where an Xid / SXid is read)
        per = f", per NVIDIA's {what} catalogue" if any(e.kind in ("xid", "sxid") for e in events) else ""
        ask = _ASK[worst]
        return Check(
            name, expected, actual, "fail", f"{ask[0].upper()}{ask[1:]}{per}, before accepting the box."
        )
    warning = _warn_detail(actions, what)
    if warning:
        return Check(name, expected, actual, "warn", warning)
    return Check(name, expected, actual, "pass", f"informational {what}s only (NVIDIA's catalogue: ignore).")


def _warn_detail(actions: Sequence[str], what: str) -> str:
    """The advice of a log whose worst event only warns (a reboot since, a non-fatal one, a known
    harmless driver message, an application's fault), in that order; '' where none warns."""
    if REBOOTED_SINCE in actions:
        return _rebooted_since_advice(what, "GPU reset")
    if "watch" in actions:
        return (
            f"{what}s the driver logged as non-fatal (recovered: no reset needed now); watch for them"
            " under your own load (an NCCL all-reduce test for NVLink ones) and ask the vendor if they"
            " come back."
        )
    if NOTED in actions:
        return (
            "driver messages known to be printed on working GPUs by some driver releases (a driver bug:"
            " NVIDIA/open-gpu-kernel-modules#688), with no other sign of a GPU not answering in the log"
            " (no Xid 79, GSP failure or GPU fallen off the bus, no 0xbadf41.. value or PRI timeout):"
            " no fault on their own; watch for them with other signs under your own load, and ask the"
            " vendor if they come with any."
        )
    if "check_app" in actions:
        return (
            f"application-level {what}s (a program faulted on this GPU since boot): ask the vendor what ran"
            " on the box, and watch for them again under your own load."
        )
    return ""


# the lines of an Xid: its own and the preamble the driver prints before a GPU's first one
_XID_LINE = lazy_re(r"\bS?Xid\b|GPU at PCI:|Board Serial Number")


def cut_driver_message(event: KernelEvent) -> bool:
    """Whether `event` is a driver message (no Xid line, nor its preamble) the log ends inside."""
    return event.cut is not None and event.kind == "xid_unread" and not _XID_LINE.search(event.message)


# the driver's core dump of a GPU microcontroller (falcon: the GSP, PMU ...), one `NVRM:
# kflcnCoreDumpNondestructive_IMPL: TRACE: NN = 0x...` line per word (open-gpu-kernel-modules#446)
_DUMP = lazy_re(r"\bkflcnCoreDump")


def _unread_said(unread: Sequence[KernelEvent], what: str) -> str:
    """'2 Xid lines this tool cannot read (first: ...)' and / or where the log ends inside a
    line (KernelEvent.cut): 'the log ends inside a line, cut short: ...'."""
    unreadable = [e for e in unread if e.kind == f"{what.lower()}_unread"]
    cut = next((e for e in unread if e.cut is not None), None)
    said = []
    if cut is not None and unreadable and cut is unreadable[0] and cut_driver_message(cut):
        # (a driver sentence the log ends inside, `The NVIDIA GPU 0000:01:00.0 (PCI ID: ...)`:
        # no Xid line, and it may be the driver's reason for a failure beside it)
        unreadable = unreadable[1:]
        dump = (
            " (a core dump of a GPU microcontroller, GSP or another falcon)"
            if _DUMP.search(cut.message)
            else ""
        )
        said.append(f"a driver message the log ends inside, cut short{dump}: {cut.message!r}")
        cut = None
    if unreadable:
        n = len(unreadable)
        lines = f"{n} {what} line{'s' if n > 1 else ''}"
        said.append(f"{lines} this tool cannot read (first: {unreadable[0].message!r})")
    if cut is not None and unreadable and cut is unreadable[0]:
        said.append("the log ends inside it, cut short")
    elif cut is not None:
        said.append(f"the log ends inside a line, cut short: {cut.cut!r}")
    return "; ".join(said)


def _with_unread(check: Check, unread: Sequence[KernelEvent], what: str, judged: bool) -> Check:
    """`check` with the kernel log's unreadable `what` lines counted, and the event the log ends
    inside (cut short: what it went on to say is not known): a log with one cannot pass or warn
    (unverified, the line quoted); a failure stays a failure and names them too. `judged`: some
    readable events were judged (else the check's "no ..." text is dropped)."""
    if not unread or check.verdict == "unverified":
        return check
    said = _unread_said(unread, what)
    if check.verdict == "fail":
        detail = check.detail  # (its ask, capitalised: "Ask the vendor to inspect and replace ...")
        if detail[1:].startswith(_ASK["replace"][1:]) and any(cut_driver_message(e) for e in unread):
            detail = _CUT_REASON
        return replace(check, actual=f"{check.actual}; also {said}", detail=detail)
    if all(e.cut is not None for e in unread):
        # (a line of the drivers' own, NVRM or nvidia-nvswitch, or any other kernel line: "cut")
        inside = "a driver message" if any(e.kind != "cut" for e in unread) else "a line"
        why = (
            f"the kernel log given ends inside {inside} (cut short, or saved without its last"
            " newline), so what it went on to say, and any line after it, is not known: read the end of"
            " the log by hand"
            f" (`dmesg | grep -E 'NVRM|{what}'`), or give the whole log, before accepting the box."
        )
    else:
        why = (
            f"the kernel log has {what} lines whose code could not be read, so {what} errors since boot are"
            f" not known: read them by hand (`dmesg | grep {what}`) and look each code up in NVIDIA's"
            " catalogue before accepting the box."
        )
    return Check(check.name, check.expected, f"{check.actual}; {said}" if judged else said, "unverified", why)


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


def _with_narrowed(check: Check, narrowed: str, what: str, own_warn: bool = True) -> Check:
    """`check` of a kernel log whose copied command kept only part of it (`dmesg | grep NVRM`,
    `| tail -50`, another boot's `journalctl -k -b -1`: `narrowed` says how): a fault it shows
    still fails, and a warning it shows stays a warning (what is shown is shown; what was left
    out may be worse, and the sentence says so) where it is of the rental's own GPUs (`own_warn`:
    a warning only of another tenant's GPU says nothing of them); no fault seen is not known to be
    none (unverified), as the lines it left out may hold one."""
    if not narrowed or check.verdict in ("fail", "unverified"):
        return check
    if check.verdict == "warn" and own_warn:
        return Check(
            check.name,
            check.expected,
            f"{check.actual}; {narrowed}",
            "warn",
            (f"{check.detail.rstrip('.')}; " if check.detail else "")
            + f"the kernel log given is not the whole log of this boot ({narrowed}): what it leaves"
            f" out may hold worse {what} errors; give the whole log of this boot (`sudo dmesg -T`, or"
            " `journalctl -k -b`)",
        )
    # (a warning shown: named, and unverified, as the lines left out may hold a fault: revO F4)
    warned = check.verdict == "warn"
    shown = f"; what it shows warns ({check.detail.rstrip('.')}), and" if warned else ", so"
    return Check(
        check.name,
        check.expected,
        f"{check.actual}; {narrowed}" + ("; the lines left out may hold worse" if warned else ""),
        "unverified",
        f"the kernel log given is not the whole log of the boot the box runs now ({narrowed}){shown}"
        f" {what} errors in what it leaves out are not known: give the whole log of this boot (`sudo"
        " dmesg -T`, or `journalctl -k -b`).",
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
    lines = _summarise(elsewhere, {}, "Xid", not_shown=True)
    said = "; ".join(text for _, text in lines)
    if check.verdict == "fail":
        return replace(check, actual=f"{check.actual}; also {said}")
    actual = f"{check.actual}; {said}" if own else said + span
    if all(action == "ignore" for action, _ in lines):
        # (a pass of no Xid of its own says so of the rental's GPUs: the actual names the others')
        on_own = "no Xid on a GPU this rental shows"
        return replace(
            check, actual=actual, detail=check.detail if own or not span else _after_boot_detail(on_own)
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
    check = _event_rule("gpu_xid", "Xid", xids, probe_ok, why_unread, gpus, covers_boot)
    span = boot_span(covers_boot)
    check = _with_not_shown(check, elsewhere, bool(xids), slice_, span)
    # an unreadable line, or an event the log ends inside (judged on what was read, but what its
    # line went on to say, such as "caused by previous Xid 149", is not known)
    # (a log cut short inside any line, an SXid's too, may have lost the lines after it)
    unread = [e for e in events if e.kind == "xid_unread" or e.cut]
    # (a warning shown in a log whose lines were left out, by hand, `...`, or by its command:
    # unverified, the warning named; a fault in the lines left out would fail: revO F4)
    return _with_narrowed(_with_unread(check, unread, "Xid", bool(xids or elsewhere)), narrowed, "Xid", False)


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
