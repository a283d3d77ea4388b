"""Host hardware errors a kernel log reports, outside the GPU: the memory controllers' EDAC
lines, the CPU's machine checks, the firmware's APEI / GHES records and PCIe AER errors of a
device that is no GPU (an NVMe drive, a NIC). They make a box unfit for training however
healthy its GPUs: an uncorrectable memory error kills the process that read the word (or
the kernel), a machine check or a fatal PCIe error takes the node down.

    EDAC MC3: 1 UE memory read error on CPU_SrcID#1_MC#1_Chan#2_DIMM#0 (channel:2 slot:0 ...)
    EDAC MC0: 4 CE error on CPU#0Channel#2_DIMM#0 (channel:2 slot:0 page:0x0 ...)
    mce: [Hardware Error]: Machine check events logged
    mce: [Hardware Error]: CPU 0: Machine Check: 0 Bank 4: a600000000020408
    EDAC sbridge MC0: CPU 0: Machine Check Event: 0 Bank 5: 8c00004000010092
    {1}[Hardware Error]: event severity: recoverable
    {1}[Hardware Error]:   section_type: PCIe error
    {1}[Hardware Error]:   device_id: 0000:5e:00.0
    nvme 0000:5e:00.0: PCIe Bus Error: severity=Uncorrected (Fatal), type=Transaction Layer, ...

Each becomes a HostError: `severity` "fail" (an uncorrectable memory error, an uncorrected
machine check, a fatal or recoverable APEI record, a fatal PCIe error), "warn" (a corrected
machine check, a corrected APEI record, a non-fatal PCIe error, a machine check the kernel
logged without its record), or "corrected" (an EDAC corrected memory error: a few are normal,
judged by their count). A GPU's own AER lines are gpu_xid's (facts/aer.py)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpuonboard.facts.kernel_log import BootCounter, is_probe_header
from gpuonboard.facts.kernel_shapes import plain_kernel_text

__all__ = ["HostError", "host_errors"]

_BDF = r"([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])"
# `EDAC MC3: 1 UE memory read error on DIMM (...)`; older drivers: `EDAC MC0: 4 CE error on ...`,
# `EDAC MC0: UE page 0x0, offset 0x0, grain 0, row 3, labels ":": i3200 UE`
_EDAC = re.compile(r"\bEDAC (MC\d+): (?:(\d+) )?(UE|CE)\b(.*)")
_EDAC_ON = re.compile(r"\bon (\S+)")
_EDAC_ROW = re.compile(r"\brow:? ?([0-9a-fA-Fx]+)")
# the kernel's record of one machine check bank (`mce:` or the EDAC driver's decode of it)
_MCE_BANK = re.compile(r"\bCPU (\d+): Machine Check(?: Event)?: \d+ Bank (\d+): ([0-9a-fA-F]{1,16})\b")
_MCE_LOGGED = re.compile(r"\bmce: \[Hardware Error\]: Machine check events logged")
# the kernel's panic / message on an uncorrected machine check (`Machine check: Processor context
# corrupt`, `Kernel panic - not syncing: Fatal machine check`)
_MCE_FATAL = re.compile(
    r"\[Hardware Error\]: Machine check: |Fatal [Mm]achine check|Uncorrected hardware memory error"
)
_GHES_HEAD = re.compile(r"\{(\d+)\}\[Hardware Error\]: (.*)")
_GHES_SEVERITY = re.compile(r"^event severity: (\w+)")
_GHES_SECTION = re.compile(r"^\s*section_type: (.+?)\s*$")
_GHES_DEVICE = re.compile(r"^\s*device_id: " + _BDF)
_AER = re.compile(
    r"(?:\b(\S+) )?" + _BDF + r": PCIe Bus Error: severity=Uncorrect(?:ed|able) \((Fatal|Non-Fatal)\)"
)
_NVIDIA = re.compile(r"\bnvidia " + _BDF + r":")

_UC = 1 << 61  # MCi_STATUS.UC: the error was not corrected
_VAL = 1 << 63  # MCi_STATUS.VAL: the bank holds an error


@dataclass(frozen=True)
class HostError:
    """One host hardware error a kernel log reports (see the module): `where` names the part
    (a DIMM, a CPU's bank, a PCI device), `what` the error, `count` the errors the line says."""

    source: str  # "edac", "mce", "ghes", "aer"
    severity: str  # "fail", "warn", "corrected", "notice"; "cut": the log ends inside its line
    where: str
    what: str
    count: int = 1
    earlier_boot: bool = False


def _edac(m: re.Match[str]) -> HostError:
    rest = m.group(4)
    on = _EDAC_ON.search(rest)
    row = _EDAC_ROW.search(rest)
    where = f"{m.group(1)} {on.group(1)}" if on else m.group(1)
    where += f" (row {row.group(1)})" if row and m.group(3) == "UE" else ""
    if m.group(3) == "UE":
        return HostError("edac", "fail", where, "uncorrectable memory error (EDAC UE)", int(m.group(2) or 1))
    return HostError("edac", "corrected", where, "corrected memory error (EDAC CE)", int(m.group(2) or 1))


def _mce_bank(m: re.Match[str]) -> HostError:
    status = int(m.group(3), 16)
    where = f"CPU {m.group(1)} bank {m.group(2)}"
    if not status & _VAL:
        return HostError("mce", "warn", where, f"machine check, its status unreadable ({m.group(3)})")
    if status & _UC:
        return HostError("mce", "fail", where, f"uncorrected machine check (status {m.group(3)})")
    # an Intel memory controller error (MCACOD 0000 0000 1MMM CCCC) corrected: a corrected memory
    # error, as EDAC counts them
    if status & 0xEF80 == 0x0080:
        return HostError("mce", "corrected", where, f"corrected memory error (machine check {m.group(3)})")
    return HostError("mce", "warn", where, f"corrected machine check (status {m.group(3)})")


class _Ghes:
    """The APEI records of a log, by their `{N}` number: each record's severity, section and
    device, read from its lines."""

    def __init__(self) -> None:
        self.open: dict[str, list[str]] = {}  # number -> [severity, section, device]
        self.done: list[tuple[list[str], int]] = []  # (record, boot)

    def read(self, number: str, said: str, boot: int) -> None:
        severity = _GHES_SEVERITY.match(said)
        if severity:
            self.open[number] = [severity.group(1).lower(), "", ""]
            self.done.append((self.open[number], boot))
            return
        record = self.open.get(number)
        section = _GHES_SECTION.match(said)
        device = _GHES_DEVICE.match(said)
        if record is not None and section and not record[1]:
            record[1] = section.group(1)
        elif record is not None and device and not record[2]:
            record[2] = device.group(1).lower()

    def errors(self, last: int) -> list[HostError]:
        found = []
        for (severity, section, device), boot in self.done:
            if severity not in ("fatal", "recoverable", "corrected"):
                continue  # (`info`: no error)
            verdict = "warn" if severity == "corrected" else "fail"
            what = f"{section or 'hardware error'} reported by the firmware (APEI, severity {severity})"
            where = f"PCI {device}" if device else "the host"
            found.append(HostError("ghes", verdict, where, what, 1, boot < last))
        return found


def host_errors(text: str) -> tuple[HostError, ...]:
    """The host hardware errors of a kernel log text (see the module), in the log's order; the
    APEI records after the others."""
    raw, text = text, plain_kernel_text(text)
    gpus = {m.group(1).lower() for m in _NVIDIA.finditer(text)}
    boots = BootCounter()
    ghes = _Ghes()
    read: list[tuple[int, HostError]] = []
    for line in text.splitlines():
        if is_probe_header(line):
            continue
        boots.read(line)
        event = _line_error(line, gpus)
        if event is not None:
            read.append((boots.boot, event))
            continue
        head = _GHES_HEAD.search(line)
        if head:
            ghes.read(head.group(1), head.group(2).strip(), boots.boot)
    last = boots.boot
    events = [HostError(e.source, e.severity, e.where, e.what, e.count, b < last) for b, e in read]
    return (*events, *ghes.errors(last), *_cut_end(raw))


# the start of a host error's line, cut anywhere after its tag (`EDAC MC0: 1`, `mce: [Hardware`)
_HOST_TAG = re.compile(r"\bEDAC\b|\bmce: |\[Hardware|\{\d+\}\[")


def _cut_end(text: str) -> tuple[HostError, ...]:
    """A "cut" HostError where the log ends inside a host error's line (no newline after it):
    what the line went on to say (`UE` or `CE`, the bank's status) is not known."""
    body = text.rstrip(" \t")
    if not body.strip() or body.endswith(("\n", "\r")):
        return ()
    last = body.rsplit("\n", 1)[-1]
    m = _HOST_TAG.search(last)
    return (HostError("cut", "cut", "", last[m.start() :].strip()),) if m else ()


def _line_error(line: str, gpus: set[str]) -> HostError | None:
    """The host error one line says (not an APEI record's line), or None."""
    edac = _EDAC.search(line)
    if edac:
        return _edac(edac)
    bank = _MCE_BANK.search(line)
    if bank:
        return _mce_bank(bank)
    if _MCE_FATAL.search(line):
        said = line[line.index("[Hardware Error]") :] if "[Hardware Error]" in line else line.strip()
        return HostError("mce", "fail", "a CPU", f"uncorrected machine check ({said})")
    if _MCE_LOGGED.search(line):
        return HostError(
            "mce", "notice", "a CPU", "machine check events logged (their records not in the log)"
        )
    aer = _AER.search(line)
    if aer and aer.group(2).lower() not in gpus and aer.group(1) != "nvidia":
        driver = f"{aer.group(1)} " if aer.group(1) else ""
        severity = "fail" if aer.group(3) == "Fatal" else "warn"
        return HostError(
            "aer",
            severity,
            f"PCI {driver}{aer.group(2)}",
            f"PCIe uncorrectable {aer.group(3).lower()} error (AER)",
        )
    return None
