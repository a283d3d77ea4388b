"""Pure parser for kernel log text (`dmesg`, `dmesg -T`, `dmesg --decode --time-format=iso`,
`journalctl -k`): NVIDIA Xid events (GPU) and SXid events (NVSwitch).

Real shapes (tests/fixtures/real/dmesg*):

    [Sun Feb 23 16:24:18 2025] NVRM: Xid (PCI:0000:9b:00): 119, pid=2024380, name=nvidia-smi, Timeout ...
    kern  :warn  : 2025-01-21T04:41:44,283302+00:00 NVRM: Xid (PCI:0000:38:00): 13, pid='<unknown>', ...
    [6781753.400584] nvidia-nvswitch1: SXid (PCI:0000:06:00.0): 20034, Fatal, Link 48 LTSSM Fault Up
    Oct 02 10:41:07 host kernel: NVRM: Xid (PCI:0000:3d:00): 79, pid=0, GPU has fallen off the bus.

The probe (facts/extra_probes.py) prefixes its output with `# source: ...` and `# first: ...`
lines (which log answered, and its first line before filtering): they tell whether the log
reaches back to boot, i.e. whether "no Xid" means "none since boot".
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["KernelEvent", "KernelLog", "parse_kernel_log", "pci_key"]


@dataclass(frozen=True)
class KernelEvent:
    """One Xid (GPU) or SXid (NVSwitch) line."""

    kind: str  # "xid" | "sxid"
    code: int
    pci: str  # as printed: "0000:9b:00" (Xid) / "0000:05:00.0" (SXid)
    message: str  # the text after the code: "pid=..., name=..., GPU has fallen off the bus."
    device: str | None = None  # "nvidia-nvswitch0" for SXid lines
    timestamp: str | None = None  # the prefix as printed ("[6781741.548779]", ISO, syslog)


@dataclass(frozen=True)
class KernelLog:
    """The Xid/SXid events of a kernel log and what the log covered."""

    events: tuple[KernelEvent, ...]
    source: str | None = None  # "dmesg", "journalctl -k -b", ... (the probe's `# source:` line)
    first_line: str | None = None  # the log's first line before filtering (`# first:`)
    lines: int = 0  # non-empty log lines read (after the probe's filter)

    @property
    def covers_boot(self) -> bool | None:
        """True when the log reaches back to boot (dmesg's first line is at 0.000000 or is the
        `Linux version` banner; journalctl -b always starts at boot); False when the ring
        buffer wrapped; None when not known (a saved log without the probe's header)."""
        if self.source and self.source.startswith("journalctl"):
            return True
        if self.first_line is None:
            return None
        return bool(re.match(r"^\[\s*0\.0+\]", self.first_line)) or "Linux version" in self.first_line

    def xids(self) -> tuple[KernelEvent, ...]:
        """The GPU (Xid) events."""
        return tuple(e for e in self.events if e.kind == "xid")

    def sxids(self) -> tuple[KernelEvent, ...]:
        """The NVSwitch (SXid) events."""
        return tuple(e for e in self.events if e.kind == "sxid")


# "(PCI:0000:9b:00)" (Xid) / "(PCI:0000:05:00.0)" (SXid): the address without the "PCI:" tag
_PCI = r"\((?:PCI:)?([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.\d)?)\)"
_XID = re.compile(r"NVRM: Xid " + _PCI + r":\s*(\d+),\s*(.*)$")
_SXID = re.compile(r"(nvidia-nvswitch\d+): SXid " + _PCI + r":\s*(\d+),\s*(.*)$")
_HEADER = re.compile(r"^# (source|first): ?(.*)$")


def _prefix(line: str, start: int) -> str | None:
    head = line[:start].strip()
    # journalctl / syslog: "Oct 02 10:41:07 host kernel:"; dmesg: "[  12.3]"; decode: "kern  :warn  : ..."
    head = re.sub(r"\s*kernel:\s*$", "", head)
    return head or None


def parse_kernel_log(text: str) -> KernelLog:
    """Parse kernel log text into Xid/SXid events (any timestamp style; other lines ignored)."""
    events: list[KernelEvent] = []
    source = first = None
    lines = 0
    for line in text.splitlines():
        if m := _HEADER.match(line):
            if m.group(1) == "source":
                source = m.group(2).strip() or None
            else:
                first = m.group(2)
            continue
        if not line.strip():
            continue
        lines += 1
        if m := _SXID.search(line):
            events.append(
                KernelEvent(
                    "sxid",
                    int(m.group(3)),
                    m.group(2),
                    m.group(4).strip(),
                    m.group(1),
                    _prefix(line, m.start()),
                )
            )
        elif m := _XID.search(line):
            events.append(
                KernelEvent(
                    "xid", int(m.group(2)), m.group(1), m.group(3).strip(), None, _prefix(line, m.start())
                )
            )
    return KernelLog(tuple(events), source, first, lines)


def pci_key(address: str) -> str:
    """A PCI address in one comparable form, `dddd:bb:dd` lower case: the kernel's Xid form
    `0000:9b:00`, the SXid form `0000:05:00.0` and nvidia-smi's `00000000:9B:00.0` agree."""
    parts = address.strip().lower().split(":")
    if len(parts) != 3:
        return address.strip().lower()
    domain, bus, dev = parts
    return f"{domain[-4:].rjust(4, '0')}:{bus}:{dev.split('.')[0]}"
