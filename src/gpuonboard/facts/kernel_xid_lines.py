"""One kernel log line's Xid or SXid event (facts/kernel_log.py reads a log line by line): the
NVIDIA driver's `NVRM: Xid (PCI:...): N, ...` in every address form, the NVSwitch driver's
`SXid` events with their continuation lines joined, and a joined NVRM message's fault."""

from __future__ import annotations

import re
from dataclasses import replace

from gpuonboard.facts.kernel_event import KernelEvent
from gpuonboard.facts.kernel_nvrm import NVRM as _NVRM
from gpuonboard.facts.kernel_nvrm import address as _address
from gpuonboard.facts.kernel_nvrm import load_nvrm_faults
from gpuonboard.facts.kernel_nvrm import prefix as _prefix
from gpuonboard.once import lazy_re

# the address inside the parentheses, any form, without the "PCI:" tag: "(PCI:0000:9b:00)" (Xid),
# "(PCI:0000:05:00.0)" (SXid), old drivers' "(0001:00)"; pci_key matches the modern forms
_ADDR = r"\(\s*(?:PCI:\s*)?([^()]*?)\s*\)"
# the driver always prints `, ` after the code: a code without it (a line cut inside the code,
# `79` cut to `7`) is not read as a code
_XID = re.compile(r"NVRM:\s*Xid\s*" + _ADDR + r"\s*:\s*(\d+)\s*,\s*(.*)$")
# an Xid whose address is not in parentheses but whose code reads ("NVRM: Xid PCI:...: 79, ...")
_XID_LOOSE = re.compile(r"NVRM:\s*Xid\b(.*?):\s*(\d+)\s*,\s*(.*)$")
_XID_ANY = re.compile(r"NVRM:\s*Xid\b")
_SXID = re.compile(r"(nvidia-nvswitch\d*):\s*SXid\s*" + _ADDR + r"\s*:\s*(\d+)\s*,\s*(.*)$")
_SXID_ANY = re.compile(r"(nvidia-nvswitch\d*):\s*SXid\b")
# a line of the NVSwitch driver (an SXid line cut before its `SXid` is one of these)
NVSWITCH = re.compile(r"(nvidia-nvswitch\d+):")
# the driver's word for an SXid event (NVSWITCH_REPORT_FATAL / _NONFATAL print "Fatal, " /
# "Non-fatal, "; the Fabric Manager guide writes "Non-Fatal")
_SXID_WORD = lazy_re(r"^(fatal|non-?\s?fatal)\b", re.IGNORECASE)
# an SXid event's continuation lines (_nvswitch_dump_error_entry)
_SXID_SEVERITY = lazy_re(r"^Severity\s+(\d+)\s+Engine instance\s+(\d+)", re.IGNORECASE)
_SXID_DATA = lazy_re(r"^Data\s*\{", re.IGNORECASE)
_SXID_LINK = lazy_re(r"\bLink\s+(\d+)\b", re.IGNORECASE)


def nvrm_event(head: str | None, text: str) -> KernelEvent | None:
    """The fault event of one joined NVRM message, or None when it is not a fault sentence."""
    fault = next((f for f in load_nvrm_faults() if not f.kernel_line and f.pattern.search(text)), None)
    if fault is None:
        return None
    return KernelEvent("nvrm", 0, _address(text), text, None, head, fault.id)


def line_event(line: str, cut: bool = False) -> KernelEvent | None:
    """The Xid / SXid event of one line (an unread kind where the line says Xid / SXid but its
    code cannot be read), or None. `cut`: the log ends inside this line (no newline after it):
    the event is marked so, and an SXid line cut before the driver's word for its event (nor a
    `Severity` / `Data` line) is unread, as is an NVSwitch driver line cut before `SXid`."""
    event = _read_line(line)
    if not cut:
        return event
    if event is None:
        if (m := NVSWITCH.search(line)) is None or _NVRM.search(line):
            return None
        text = line[m.start() :].strip()
        head = _prefix(line, m.start())
        return KernelEvent("sxid_unread", 0, _address(text), text, m.group(1), head, cut=text)
    start = min(i for i in (line.find("NVRM:"), line.find("nvidia-nvswitch")) if i >= 0)
    said = line[start:].strip()
    continuation = _SXID_SEVERITY.match(event.message) or _SXID_DATA.match(event.message)
    if event.kind == "sxid" and event.severity is None and not continuation:
        return KernelEvent("sxid_unread", 0, event.pci, said, event.device, event.timestamp, cut=said)
    if event.kind == "xid" and event.code in _SEVERED_XIDS and not _SEVERITY_WORD.search(event.message):
        # (an NVLink5 Xid cut before the driver's Fatal / Nonfatal word: its action is not known)
        return KernelEvent("xid_unread", 0, event.pci, said, None, event.timestamp, cut=said)
    return replace(event, cut=said)


# the NVLink5 Xids whose line says Fatal or Nonfatal after the code (`145, RLW_... Nonfatal XC0
# ...`): their action depends on that word (steps/checks/xid_catalogue._NONFATAL)
_SEVERED_XIDS = frozenset(range(144, 151))
_SEVERITY_WORD = lazy_re(r"\b(?:non-?\s?)?fatal\b", re.IGNORECASE)


def _read_line(line: str) -> KernelEvent | None:
    """_line_event of a line read whole."""
    if m := _SXID.search(line):
        message = m.group(4).strip()
        word = _SXID_WORD.match(message)
        severity = None if word is None else ("fatal" if word.group(1).lower() == "fatal" else "non-fatal")
        return KernelEvent(
            "sxid",
            int(m.group(3)),
            m.group(2),
            message,
            m.group(1),
            _prefix(line, m.start()),
            severity=severity,
        )
    if m := _SXID_ANY.search(line):
        text = line[m.start() :].strip()
        return KernelEvent("sxid_unread", 0, _address(text), text, m.group(1), _prefix(line, m.start()))
    if m := _XID.search(line):
        pci, instance = _mig_split(m.group(1))
        return KernelEvent(
            "xid",
            int(m.group(2)),
            pci,
            m.group(3).strip(),
            None,
            _prefix(line, m.start()),
            instance=instance,
        )
    if m := _XID_LOOSE.search(line):
        code, message = int(m.group(2)), m.group(3).strip()
        return KernelEvent("xid", code, _address(m.group(1)), message, None, _prefix(line, m.start()))
    if m := _XID_ANY.search(line):
        text = line[m.start() :].strip()
        return KernelEvent("xid_unread", 0, _address(text), text, None, _prefix(line, m.start()))
    return None


# a MIG GPU's Xid names the GPU instance (and compute instance) the error is attributable to
# after its address: "(PCI:0000:01:00 GPU-I:05)", "(PCI:0000:3b:00 GPU-I:01 GPU-CI:02)"
# (NVIDIA/open-gpu-kernel-modules kernel_rc.c krcReportXid; kern_gpu_ga100.c's examples)
_MIG_ATTRIBUTION = lazy_re(r"^(\S+)\s+(GPU-I:\s*\d+(?:\s+GPU-CI:\s*\d+)?)$", re.IGNORECASE)


def _mig_split(address: str) -> tuple[str, str | None]:
    """(the GPU's address, its MIG attribution or None) of an Xid line's parenthesised address."""
    m = _MIG_ATTRIBUTION.match(address.strip())
    return (m.group(1), m.group(2)) if m else (address, None)


_SEVERITY_NUMBER = {"0": "non-fatal", "1": "fatal"}  # NVSWITCH_ERROR_SEVERITY_NONFATAL = 0, FATAL


def sxid_continuation(message: str) -> str:
    """`Severity` or `Data` where an SXid line's message (after its code) is that continuation
    line of a record (_nvswitch_dump_error_entry), never its first; "" otherwise."""
    if _SXID_WORD.match(message):
        return ""
    return "Data" if _SXID_DATA.match(message) else "Severity" if _SXID_SEVERITY.match(message) else ""


def _sxid_continues(first: KernelEvent, line: KernelEvent, severity_seen: bool) -> bool:
    """True when an SXid line continues the open event `first` of the same switch, address and
    code: a line without the driver's Fatal / Non-fatal word that is its `Data {...}` line, or
    its one `Severity N Engine instance M` line where M is the event's link (the driver numbers
    both alike)."""
    if line.severity is not None:
        return False
    if _SXID_DATA.match(line.message):
        return True
    sev = _SXID_SEVERITY.match(line.message)
    if sev is None or severity_seen:
        return False
    link = _SXID_LINK.search(first.message)
    return link is None or int(link.group(1)) == int(sev.group(2))


class SxidJoiner:
    """Joins an SXid event's continuation lines to it: one event per event, not per line. A
    line with no open event to continue (its first line is not in the log) starts one."""

    def __init__(self, events: list[KernelEvent]) -> None:
        self.events = events
        # (switch, address, code) -> (index in events, whether its Severity line was read)
        self.open: dict[tuple[str | None, str, int], tuple[int, bool]] = {}

    def add(self, line: KernelEvent) -> None:
        key = (line.device, line.pci, line.code)
        sev = _SXID_SEVERITY.match(line.message)
        said = _SEVERITY_NUMBER.get(sev.group(1)) if sev else None
        at, severity_seen = self.open.get(key, (-1, False))
        if at >= 0 and _sxid_continues(self.events[at], line, severity_seen):
            first = self.events[at]
            self.events[at] = replace(
                first,
                message=f"{first.message} | {line.message}",
                lines=first.lines + 1,
                severity="fatal" if "fatal" in (first.severity, said) else first.severity or said,
                cut=line.cut or first.cut,
            )
            self.open[key] = (at, severity_seen or sev is not None)
            return
        self.open[key] = (len(self.events), sev is not None)
        self.events.append(replace(line, severity=line.severity or said))
