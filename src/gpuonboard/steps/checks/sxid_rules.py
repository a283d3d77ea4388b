"""The nvswitch_sxid rule: NVSwitch SXid events of the kernel log judged by the driver's own
Fatal / Non-fatal word for each and data/xid.yml `sxid` (NVIDIA's Fabric Manager User Guide);
the Xid rule: steps/checks/xid_rules.py; the judgement both share: steps/checks/kernel_event_rule.py."""

from __future__ import annotations

from collections.abc import Sequence

from gpuonboard.facts.kernel_log import KernelEvent, pci_key
from gpuonboard.steps.base import Check
from gpuonboard.steps.checks.kernel_event_rule import (
    ASK,
    REBOOTED_SINCE,
    action_now,
    boot_said,
    boot_span,
    event_rule,
    rebooted_since_advice,
    with_narrowed,
    with_unread,
)
from gpuonboard.steps.checks.xid_catalogue import FAILING, load_xid_catalogue

# NVIDIA's Fabric Manager User Guide, "NVSwitch SXid Errors": "Non-fatal SXids are for
# informational purposes only": FM aborts no CUDA job and blocks no launch, though jobs may see a
# performance drop or briefly no progress; a fatal SXid aborts the jobs on the GPUs behind that
# port (Xid 74 / 45) and needs the GPUs and NVSwitches reset ("If the problem persists, reboot").
_SXID_ORDER = {"fail": 0, "warn": 1, "pass": 2}


def _sxid_judgement(event: KernelEvent) -> tuple[str, str, str]:
    """_sxid_verdict, where a failure that asked for a reset or a reboot was logged before the
    log's last reboot: a warning, REBOOTED_SINCE (the reboot did it)."""
    verdict, action, name = _sxid_verdict(event)
    if verdict == "fail" and action_now(event, action) == REBOOTED_SINCE:
        return "warn", REBOOTED_SINCE, name
    return verdict, action, name


def _sxid_verdict(event: KernelEvent) -> tuple[str, str, str]:
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
    groups: dict[tuple[str | None, str, int, str | None, bool], list[KernelEvent]] = {}
    for e in sxids:
        groups.setdefault((e.device, pci_key(e.pci), e.code, e.severity, e.earlier_boot), []).append(e)
    out = []
    for (device, _, code, severity, _earlier), group in groups.items():
        verdict, action, name = _sxid_judgement(group[0])
        said = f", {severity}" if severity else ""
        times = f" x{len(group)}" if len(group) > 1 else ""
        said += boot_said(group[0])
        text = f"NVSwitch {device} ({group[0].pci}): SXid {code} {name}{said}{times} -> {action}"
        out.append((verdict, action, text))
    return sorted(out, key=lambda item: _SXID_ORDER[item[0]])


def _sxid_check(sxids: Sequence[KernelEvent], covers_boot: bool | None) -> Check:
    """The nvswitch_sxid check of a readable log with SXid events."""
    expected = "no SXid since boot needing action"
    lines = _sxid_lines(sxids)
    span = boot_span(covers_boot)
    actual = "; ".join(text for _, _, text in lines) + span
    verdict = lines[0][0]
    if verdict == "fail":
        ask = ASK["replace" if any(a == "replace" for _, a, _ in lines) else "reboot"]
        return Check(
            "nvswitch_sxid",
            expected,
            actual,
            "fail",
            f"{ask[0].upper()}{ask[1:]}, per NVIDIA's SXid catalogue and Fabric Manager guide (a fatal SXid"
            " needs the GPUs and NVSwitches reset), before accepting the box.",
        )
    if verdict == "warn" and any(a == REBOOTED_SINCE for _, a, _ in lines):
        return Check(
            "nvswitch_sxid",
            expected,
            actual,
            "warn",
            rebooted_since_advice("SXid", "reset"),
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
    narrowed: str = "",
) -> Check:
    """NVSwitch SXid errors since boot, one per event (its `Severity` / `Data` lines are part of
    it), judged by the driver's own Fatal / Non-fatal word for each event with data/xid.yml
    `sxid` (Fabric Manager User Guide): a fatal SXid fails; a non-fatal one passes where the
    catalogue says ignore (single-bit ECC ...) and warns otherwise (12028 stalls NVLink traffic;
    a code not in the catalogue); a line that says neither is judged by the catalogue alone.
    An SXid line whose code cannot be read, or a log that ends inside any driver line (an SXid,
    an Xid, an NVRM message: cut short, the lines after it lost) or a line that says nothing yet,
    makes a passing or warning log unverified."""
    sxids = [e for e in events if e.kind == "sxid"]
    if probe_ok and sxids:
        check = _sxid_check(sxids, covers_boot)
    else:
        check = event_rule("nvswitch_sxid", "SXid", sxids, probe_ok, why_unread, (), covers_boot)
    unread = [e for e in events if e.kind == "sxid_unread" or e.cut]
    return with_narrowed(with_unread(check, unread, "SXid", bool(sxids)), narrowed, "SXid")
