"""The judgement the Xid and SXid rules share (steps/checks/xid_rules.py, sxid_rules.py): a
kernel log's events summarised per device and fault with the action each asks for (worst first),
the verdict and what to ask the vendor, and a log that cannot be read, ends inside a line, does
not reach back to boot, was narrowed by its command, or spans a reboot that did what a fault
asked for.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace

from gpuonboard.facts.extra_probes import SAVE_AGAIN
from gpuonboard.facts.kernel_log import KernelEvent, NvrmFault, load_nvrm_faults, pci_key
from gpuonboard.facts.kernel_nvrm import REPORT_LINE, REPORT_WORDS
from gpuonboard.once import lazy_re
from gpuonboard.steps.base import Check
from gpuonboard.steps.checks.xid_catalogue import IGPU_ERROR, NOTED, cleared_by_reset, xid_action
from gpuonboard.steps.checks.xid_causes import CAUSE

# what the renter asks the vendor to do, per action
ASK = {
    "reset_gpu": "ask the vendor to reset the GPU (nvidia-smi -r, or a reboot) and to check it stays clean",
    "reboot": "ask the vendor to reboot the host and to check the GPU comes back",
    "replace": "ask the vendor to inspect and replace the GPU (or the box)",
    "update_driver": "ask the vendor to update the GPU driver / firmware",
    # (data/nvrm_faults.yml driver_refuses_gpu: no fault of the GPU; the kernel log's sentence
    # says which driver it needs)
    "install_driver": "ask the vendor to install an NVIDIA driver that supports this GPU, as the"
    " driver's message says (a newer branch; the open kernel modules, which Blackwell GPUs"
    " require; the proprietary kernel module for a GPU the open one refuses, `not supported by open"
    " nvidia.ko`: one without the GSP; or the legacy branch of a GPU the installed one dropped); it is"
    " no fault of the GPU",
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
    "fix_bar_mapping": "ask the vendor to give the GPU its PCI memory regions (BARs), as the kernel"
    " log says: enable Above 4G decoding (and Resizable BAR) in the BIOS, or give the VM a large"
    " enough 64-bit MMIO window for a passed-through GPU; it is no fault of the GPU",
    # (an earlier boot's fault no reset or reboot undoes, data/xid.yml cleared_by_reset: false: the
    # reboot since did the reset its catalogue row asks for, so only its repair is left to show)
    "show_repaired": "ask the vendor to show the GPU repaired, or to replace it: this fault was logged"
    " before the box's last reboot, which did the GPU reset it asked for, but a reset does not undo it"
    " (a row-remap failure: the GPU's `nvidia-smi -q -d ROW_REMAPPER` must say `Remapping Failure"
    " Occurred: No`)",
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
    "show_repaired",
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
# an earlier boot's fault that asked for a GPU reset or a reboot, which that reboot did, but which
# no reset undoes (cleared_by_reset: false, Xid 64's row-remap failure): its repair is to be shown
NOT_CLEARED = "show_repaired"


def action_now(event: KernelEvent, action: str) -> str:
    """`action` of an event, or REBOOTED_SINCE where the log shows a reboot after it that did
    what it asked for (a GPU reset or a reboot) and that undoes what it says; NOT_CLEARED where
    the reboot did the reset but no reset undoes it (cleared_by_reset: false, Xid 64's row-remap
    failure: asking for the reset again fits no box rebooted since); a replacement, a driver update
    stay asked for."""
    if event.earlier_boot and action in ("reset_gpu", "reboot"):
        return REBOOTED_SINCE if cleared_by_reset(event) else NOT_CLEARED
    return action


def rebooted_since_advice(what: str, reset: str, kinds: Sequence[str] = ()) -> str:
    """The advice for faults of an earlier boot whose reset or reboot that reboot did: the earlier
    boot of a log that spans boots, or the one boot a `journalctl -b -1` reads (measure40c 02: it
    was said to "span more than one boot"). `kinds`: the kinds of those events (`nvrm`, a driver's
    fault sentence, is no {what}: named so, never "these Xids")."""
    said = {"nvrm": "driver faults"}
    names = list(dict.fromkeys(said.get(k, f"{what}s") for k in kinds)) or [f"{what}s"]
    these = " and ".join(names) + (f", no {what} among them," if names == ["driver faults"] else "")
    return (
        f"these {these} were logged in a boot before the one the box runs now, whose end, the box's"
        f" last reboot, did the {reset} or reboot they asked for; ask the vendor what caused them,"
        " and watch for them again under your own load."
    )


def boot_said(event: KernelEvent) -> str:
    return " (logged before the log's last reboot)" if event.earlier_boot else ""


def summarise(
    events: Sequence[KernelEvent], gpus: Mapping[str, int], what: str, not_shown: bool = False
) -> list[tuple[str, str]]:
    """(action, 'GPU 3 (0000:9b:00): Xid 119 GSP RPC Timeout x4') per (device, code, action), worst
    first. Each event is judged on its own line: one code's events on one GPU may need different
    actions (an NVLink5 Xid 145 the driver logged `Nonfatal`, then one it logged `Fatal`; Xid 154s
    changing to different recovery actions), so they are counted apart, never by the first one."""
    groups: dict[tuple[str, str | None, int, str | None, str, bool, str | None], list[KernelEvent]] = {}
    for e in events:
        action = action_now(e, xid_action(e)[0])
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
                IGPU_ERROR,
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
        out.append((action, f"{who}: {event}{boot_said(group[0])}{times} -> {action}"))
    return sorted(out, key=lambda item: rank.get(item[0], 0))


def _kernel_line(event: KernelEvent) -> bool:
    """True for a kernel line's event (data/nvrm_faults.yml `kernel_line`), not the driver's."""
    return event.kind == "nvrm" and any(f.kernel_line and f.id == event.fault for f in load_nvrm_faults())


def _pci_index(gpus: Sequence[tuple[int, str | None]]) -> dict[str, int]:
    return {pci_key(pci): index for index, pci in gpus if pci}


def boot_span(covers_boot: bool | None) -> str:
    """What a result adds where the log read starts after boot (KernelLog.covers_boot False:
    dmesg's ring buffer wrapped, a journal's oldest entries dropped, a copied log's tail): a
    fault before its first line is not in it. The verdict stays what the log read shows (no
    fault: a pass, docs/reference/rules.md); the sentence says the part of the boot it covers."""
    return BOOT_SPAN if covers_boot is False else ""


# (said after a result whose log does not reach back to boot)
BOOT_SPAN = " (the log read starts after boot, so it does not cover the whole boot)"


def after_boot_detail(holds: str) -> str:
    """A passing log's detail where the log read starts after boot: it `holds` nothing judged
    (`no Xid`), but an earlier line of this boot may be lost."""
    return (
        f"the log read holds {holds}, but an earlier one of this boot (before its first line: a"
        " wrapped dmesg ring buffer, a journal's dropped entries) is not in it; where the journal is"
        " kept on disk, `journalctl -k -b` reads the whole boot."
    )


def event_rule(
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
            after_boot_detail(f"no {what}"),
        )
    if not events:
        return Check(name, expected, f"no {what} in the kernel log", "pass")
    lines = summarise(events, _pci_index(gpus), what)
    actions = [a for a, _ in lines]
    actual = "; ".join(text for _, text in lines) + span
    worst = next((a for a in FAILING_WORST_FIRST if a in actions), None)
    if worst is not None:
        # (an AER error is the kernel's word, not the catalogue's; a driver sentence without an Xid,
        # data/nvrm_faults.yml, is the driver's: the catalogue is named where an Xid / SXid asks
        # for the action advised, never for a failure no Xid says, `RmInitAdapter failed!`)
        per = (
            f", per NVIDIA's {what} catalogue"
            if worst != NOT_CLEARED
            and any(e.kind in ("xid", "sxid") and action_now(e, xid_action(e)[0]) == worst for e in events)
            else ""
        )
        ask = ASK[worst]
        return Check(
            name, expected, actual, "fail", f"{ask[0].upper()}{ask[1:]}{per}, before accepting the box."
        )
    since = [e.kind for e in events if action_now(e, xid_action(e)[0]) == REBOOTED_SINCE]
    warning = _warn_detail(actions, what, since)
    if warning:
        return Check(name, expected, actual, "warn", warning)
    return Check(name, expected, actual, "pass", f"informational {what}s only (NVIDIA's catalogue: ignore).")


def _warn_detail(actions: Sequence[str], what: str, since: Sequence[str] = ()) -> str:
    """The advice of a log whose worst event only warns (a reboot since, a non-fatal one, a known
    harmless driver message, an application's fault), in that order; '' where none warns."""
    if REBOOTED_SINCE in actions:
        return rebooted_since_advice(what, "GPU reset", since)
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
    if IGPU_ERROR in actions:
        return (
            "errors of the Jetson GPU driver (nvgpu `[ERR]` lines), which no Xid catalogue covers: read"
            " them (`dmesg | grep nvgpu`), as some are printed on working boards at boot and others are a"
            " fault's lines; ask the vendor whether they come back after a clean boot and under your own"
            " load before accepting the box."
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


def report_line(event: KernelEvent) -> bool:
    """Whether `event` is a line of a report the driver printed over several lines, indented under
    its tag (facts/kernel_nvrm.REPORT_LINE: the Xid 120 report's register dump), or one of its lines
    by its words where a paste collapsed the blanks (REPORT_WORDS), not a sentence."""
    return bool(REPORT_LINE.match(event.message) or REPORT_WORDS.match(event.message))


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
        if report_line(cut):
            # (a line of the report the driver printed above it, not a sentence of its own: the
            # Xid 120 report's register dump; before, it was taken for the driver's reason for
            # the failure, "Resizable BAR / Above 4G decoding off", m36d 03)
            said.append(
                "a line of the driver's report above it the log ends inside, cut short (indented under"
                f" its tag: a dump of the GPU's registers or state, no reason of its own):"
                f" {' '.join(cut.message.split())!r}"
            )
        else:
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


def with_unread(check: Check, unread: Sequence[KernelEvent], what: str, judged: bool) -> Check:
    """`check` with the kernel log's unreadable `what` lines counted, and the event the log ends
    inside (cut short: what it went on to say is not known): a log with one cannot pass or warn
    (unverified, the line quoted); a failure stays a failure and names them too. `judged`: some
    readable events were judged (else the check's "no ..." text is dropped)."""
    if not unread or check.verdict == "unverified":
        return check
    said = _unread_said(unread, what)
    if check.verdict == "fail":
        detail = check.detail  # (its ask, capitalised: "Ask the vendor to inspect and replace ...")
        if detail[1:].startswith(ASK["replace"][1:]) and any(
            cut_driver_message(e) and not report_line(e) for e in unread
        ):
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


def with_narrowed(check: Check, narrowed: str, what: str, own_warn: bool = True) -> Check:
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
