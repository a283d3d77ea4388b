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
machine check, a corrected APEI record other than memory's, a non-fatal PCIe error),
"corrected" (a corrected memory error, EDAC's CE or a firmware's APEI record of one: a few are
normal, judged by their count), "notice" (the kernel's `Machine check events logged`, which says
records went to mcelog / rasdaemon, not what they were) or "record" (a machine check bank whose
status holds no valid error). One event the firmware reports (an APEI memory record) and the
kernel's EDAC line for it (ghes_edac's, or the EDAC decode of the machine check APEI made of it)
count once. A GPU's own AER lines, and its root port's, are gpu_xid's (facts/aer.py)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import date

from gpuonboard.facts.aer_lines import AER_RECEIVED, AER_UNRECOVERED, BDF, NVIDIA_CUT, NVIDIA_LINE
from gpuonboard.facts.kernel_cut import host_cut, locale_words
from gpuonboard.facts.kernel_log import BootCounter, is_probe_header
from gpuonboard.facts.kernel_shapes import plain_kernel_text
from gpuonboard.once import lazy_re

__all__ = ["HostError", "host_errors", "log_lines"]

# `EDAC MC3: 1 UE memory read error on DIMM (...)`; older drivers: `EDAC MC0: 4 CE error on ...`,
# `EDAC MC0: UE page 0x0, offset 0x0, grain 0, row 3, labels ":": i3200 UE`
_EDAC = re.compile(r"\bEDAC (MC\d+): (?:(\d+) )?(UE|CE)\b(.*)")
_EDAC_ON = lazy_re(r"\bon (\S+)")
_EDAC_ROW = lazy_re(r"\brow:? ?([0-9a-fA-Fx]+)")
# the kernel's record of one machine check bank (`mce:` or the EDAC driver's decode of it)
_MCE_BANK = re.compile(r"\bCPU (\d+): Machine Check(?: Event)?: \d+ Bank (\d+): ([0-9a-fA-F]{1,16})\b")
_MCE_LOGGED = re.compile(r"\bmce: \[Hardware Error\]: Machine check events logged")
# the kernel's panic / message on an uncorrected machine check (`Machine check: Processor context
# corrupt`, `Kernel panic - not syncing: Fatal machine check`)
_MCE_FATAL = re.compile(
    r"\[Hardware Error\]: Machine check: |Fatal [Mm]achine check|Uncorrected hardware memory error"
)
_GHES_HEAD = re.compile(r"\{(\d+)\}\[Hardware Error\]: (.*)")
_GHES_SEVERITY = lazy_re(r"^event severity: (\w+)")
_GHES_SECTION = lazy_re(r"^\s*section_type: (.+?)\s*$")
_GHES_DEVICE = lazy_re(r"^\s*device_id: " + BDF)
_AER = re.compile(
    r"(?:\b(\S+) )?" + BDF + r": PCIe Bus Error: severity=Uncorrect(?:ed|able) \((Fatal|Non-Fatal)\)"
)

# the kernel's AER recovery that failed on a device (drivers/pci/pcie/err.c: `thunderbolt
# 0000:84:00.0: AER: can't recover (no error_detected callback)`, `pcieport 0000:80:1b.4: AER:
# device recovery failed`): its uncorrectable error stays, not corrected (measure34d 14)
_AER_NOT_RECOVERED = re.compile(
    r"(?:\b(\S+) )?" + BDF + r": AER: (can't recover|device recovery failed)", re.IGNORECASE
)

_UC = 1 << 61  # MCi_STATUS.UC: the error was not corrected
_VAL = 1 << 63  # MCi_STATUS.VAL: the bank holds an error


@dataclass(frozen=True)
class HostError:
    """One host hardware error a kernel log reports (see the module): `where` names the part
    (a DIMM, a CPU's bank, a PCI device), `what` the error, `count` the errors the line says."""

    source: str  # "edac", "mce", "ghes", "aer"
    # "fail", "warn", "corrected", "notice" ("logged": one a record beside it explains), "record";
    # "cut": the log ends inside its line
    severity: str
    where: str
    what: str
    count: int = 1
    earlier_boot: bool = False
    line: int = 0  # its line's index in the log read (a notice is explained by a record beside it)


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
        # (MCi_STATUS.VAL clear: the bank holds no error; the record says nothing of the part)
        return HostError("mce", "record", where, f"machine check record without an error ({m.group(3)})")
    if status & _UC:
        return HostError("mce", "fail", where, f"uncorrected machine check (status {m.group(3)})")
    # an Intel memory controller error (MCACOD 0000 0000 1MMM CCCC) corrected: a corrected memory
    # error, as EDAC counts them
    if status & 0xEF80 == 0x0080:
        return HostError("mce", "corrected", where, f"corrected memory error (machine check {m.group(3)})")
    return HostError("mce", "warn", where, f"corrected machine check (status {m.group(3)})")


@dataclass
class _Record:
    """One APEI record: its severity, section, device and memory part (a DIMM's location, or the
    FRU text), and whether an EDAC line the kernel printed for the same event claimed it."""

    severity: str
    boot: int
    line: int = 0
    section: str = ""
    device: str = ""
    part: str = ""
    claimed: bool = False


_GHES_PART = lazy_re(r"^\s*(?:DIMM location|fru_text): (.+?)\s*$")
# the EDAC line's kind the kernel prints for one APEI memory record (ghes_edac, or the EDAC driver
# that decodes the machine check apei_mce_report_mem_error makes of it)
_EDAC_OF = {"corrected": "CE", "recoverable": "UE", "fatal": "UE"}


class _Ghes:
    """The APEI records of a log, by their `{N}` number: each record's severity, section and
    device, read from its lines."""

    def __init__(self) -> None:
        self.open: dict[str, _Record] = {}
        self.done: list[_Record] = []

    def read(self, number: str, said: str, boot: int, line: int) -> None:
        severity = _GHES_SEVERITY.match(said)
        if severity:
            self.open[number] = _Record(severity.group(1).lower(), boot, line)
            self.done.append(self.open[number])
            return
        record = self.open.get(number)
        if record is None:
            return
        section = _GHES_SECTION.match(said)
        device = _GHES_DEVICE.match(said)
        part = _GHES_PART.match(said)
        if section and not record.section:
            record.section = section.group(1)
        elif device and not record.device:
            record.device = device.group(1).lower()
        elif part and (not record.part or said.lstrip().startswith("DIMM")):
            record.part = part.group(1)

    def claim(self, kind: str, boot: int, lines: Sequence[str], at: int) -> None:
        """An EDAC line of `kind` (UE, CE), `lines[at]`: the newest memory record of that
        kind not yet claimed, of this boot, printed with it (the same stamp) and still the newest
        record, is the same event (one event counted once); a later EDAC line is another error."""
        record = self.done[-1] if self.done else None
        if (
            record is not None
            and not record.claimed
            and record.boot == boot
            and _together(lines, record.line, at)
            and record.section == "memory error"
            and _EDAC_OF.get(record.severity) == kind
        ):
            record.claimed = True

    def errors(self, last: int) -> list[HostError]:
        found = []
        for r in self.done:
            if r.severity not in ("fatal", "recoverable", "corrected") or r.claimed:
                continue  # (`info`: no error; a claimed one: its EDAC line counts it)
            if r.section == "memory error" and r.severity == "corrected":
                # a corrected memory error, as EDAC's CE (a firmware-first box reports it so)
                where = r.part or "a DIMM (no location in the record)"
                what = "corrected memory error (APEI)"
                found.append(HostError("ghes", "corrected", where, what, 1, r.boot < last, r.line))
                continue
            verdict = "warn" if r.severity == "corrected" else "fail"
            what = f"{r.section or 'hardware error'} reported by the firmware (APEI, severity {r.severity})"
            where = f"PCI {r.device}" if r.device else (r.part or "the host")
            found.append(HostError("ghes", verdict, where, what, 1, r.boot < last, r.line))
        return found


def log_lines(text: str) -> tuple[list[str], bool]:
    """A kernel log text's lines as host_errors takes them: made plain (a journal's JSON or
    export, `dmesg -r`: facts/kernel_shapes.plain_kernel_text), and whether its last line is cut
    (no line end after it)."""
    plain = plain_kernel_text(text)
    body = plain.rstrip(" \t")
    return plain.splitlines(), bool(body.strip()) and not body.endswith(("\n", "\r"))


def host_errors(lines: Sequence[str], open_end: bool = False) -> tuple[HostError, ...]:
    """The host hardware errors of a kernel log's lines, as its readers read them (log_lines, or
    facts/kernel_text.kernel_lines: a wrap's pieces joined), in the log's order; the APEI records
    after the others. `open_end`: the last line has no line end after it, so it may be cut."""
    gpus = {m.group(1).lower() for line in lines for m in NVIDIA_LINE.finditer(line)}
    gpu_lines = _gpu_lines(lines, gpus)
    boots = BootCounter()
    ghes = _Ghes()
    read: list[tuple[int, HostError]] = []
    for i, line in enumerate(lines):
        if is_probe_header(line):
            continue
        boots.read(line)
        event = None if i in gpu_lines else _line_error(line, gpus)
        if event is not None and event.severity == "notice" and _beside_a_record(lines, i):
            event = replace(event, severity="logged")  # (the record printed with it says what it was)
        if event is not None:
            if event.source == "edac" and event.severity != "record":
                ghes.claim("UE" if event.severity == "fail" else "CE", boots.boot, lines, i)
            if read and read[-1][0] == boots.boot and _decodes(read[-1][1], event, lines, i):
                read[-1] = (boots.boot, replace(event, line=read[-1][1].line))  # (one event, counted once)
                continue
            read.append((boots.boot, replace(event, line=i)))
            continue
        if (amd := _amd_status(lines, i)) is not None:
            if read and _same_bank_record(read[-1][1], amd, i):
                read[-1] = (read[-1][0], replace(amd, line=read[-1][1].line))  # (one event, counted once)
            else:
                read.append((boots.boot, amd))
            continue
        if read and (umc := _umc_memory(read[-1][1], line, i)) is not None:
            read[-1] = (read[-1][0], umc)
        head = _GHES_HEAD.search(line)
        if head:
            ghes.read(head.group(1), head.group(2).strip(), boots.boot, i)
    last = boots.boot if boots.disorder is None else 0  # (pieces out of order: not known)
    events = [replace(e, earlier_boot=b < last) for b, e in read]
    return (*events, *ghes.errors(last), *(_cut_end(lines, gpus) if open_end else ()))


# a line's dmesg stamp (`[ 1366.830245]`, within a syslog line's prefix too), and `dmesg -H`'s
# (`[  +0.000013]`: the time since the line before)
_DMESG_STAMP = lazy_re(r"\[\s*(\d+\.\d+)\]")
_DMESG_DELTA = lazy_re(r"\[\s*\+(\d+\.\d+)\]")


def _prefix(line: str) -> str:
    """The text before a line's host error tag (its stamp, a syslog's host and `kernel:`)."""
    tag = _HOST_TAG.search(line)
    return line[: tag.start()] if tag else ""


# a wall-clock time in a line's prefix, in the kernel log readers' shapes: ISO (`dmesg
# --time-format iso`'s `2025-10-02T10:15:40,123456+00:00`, journalctl's `-o short-iso`, `-o
# short-full`'s `Tue 2020-09-23 18:37:03 UTC`), and a month's name then the day and time
# (syslog's and journalctl's `Feb 23 03:28:16`, `-o short-precise`'s `.100007`, `dmesg -T`'s
# `[Tue Nov 11 23:25:43 2025]` and ctime's, the year after the time)
_ISO_TIME = lazy_re(r"\b(\d{4})-(\d\d)-(\d\d)[T ](\d\d):(\d\d):(\d\d)(?:[.,](\d+))?")
_NAMED_TIME = lazy_re(
    r"\b(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) +(\d{1,2}) (\d\d):(\d\d):(\d\d)"
    r"(?:[.,](\d+))?(?: (\d{4})\b)?"
)
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
# journalctl's `-o short-unix` (`1600886223.123456`), at the line's start
_UNIX_TIME = lazy_re(r"^\s*(\d{9,11}\.\d{1,9})\b")


def _wall_seconds(prefix: str) -> float | None:
    """The seconds of the wall-clock time in a line's prefix (see above; a time without a year
    counted in one leap year: two lines of one log are compared), None where it shows none."""
    if unix := _UNIX_TIME.match(prefix):
        return float(unix.group(1))
    if iso := _ISO_TIME.search(prefix):
        year, month, day, hour, minute, second, fraction = iso.groups()
    elif named := _NAMED_TIME.search(prefix):
        name, day, hour, minute, second, fraction, year = named.groups()
        month = str(_MONTHS.index(name) + 1)
    else:
        return None
    try:
        days = date(int(year or 2000), int(month), int(day)).toordinal()
    except ValueError:
        return None
    clock = int(hour) * 3600 + int(minute) * 60 + int(second)
    return days * 86400.0 + clock + (float(f"0.{fraction}") if fraction else 0.0)


def _stamp(line: str) -> tuple[str, float] | str:
    """When the kernel printed `line`: ("boot", its dmesg stamp's seconds since boot), else
    ("wall", the seconds of the wall-clock time before its host error's tag, in any of the
    readers' shapes: a syslog's `Feb 23 03:28:16 host kernel:`, `-o short-precise`, `dmesg -T`,
    `--time-format iso`), else the text before the tag (no time read in it), "" where none."""
    prefix = _prefix(line)
    if seconds := _DMESG_STAMP.search(prefix):
        return ("boot", float(seconds.group(1)))
    if (wall := _wall_seconds(prefix)) is not None:
        return ("wall", wall)
    return " ".join(prefix.split())


def _together(lines: Sequence[str], a: int, b: int) -> bool:
    """Whether `lines[a]` and `lines[b]` are of one printing of the kernel's: their times (dmesg
    seconds, or a wall clock's in any of the readers' shapes) within one second of each other
    (the lines of one event are printed microseconds apart, a syslog's whole second may tick
    between them), the same text where no time is read, or, in `dmesg -H`, the lines from one to
    the other each within a second of the line before, together within one."""
    if _DMESG_DELTA.match(lines[max(a, b)].lstrip()):
        deltas = [_DMESG_DELTA.match(line.lstrip()) for line in lines[min(a, b) + 1 : max(a, b) + 1]]
        return all(deltas) and sum(float(d.group(1)) for d in deltas if d) <= 1.0
    first, second = _stamp(lines[a]), _stamp(lines[b])
    if isinstance(first, tuple) and isinstance(second, tuple):
        return first[0] == second[0] and abs(first[1] - second[1]) <= 1.0
    return first == second


# a memory controller's error code in a machine check status (MCACOD 0000 0000 1MMM CCCC)
_MEMORY_CODE = (0xEF80, 0x0080)
_STATUS_SAID = lazy_re(r"\b([0-9a-fA-F]{1,16})\)$")


def _decodes(bank: HostError, edac: HostError, lines: Sequence[str], at: int) -> bool:
    """Whether the EDAC memory controller's line `edac` (`EDAC MC0: 1 CE memory read error on
    ..._DIMM#0`, `lines[at]`) is the decode of the machine check `bank` read just before it (the
    EDAC driver's `EDAC sbridge MC0: CPU 0: Machine Check Event: 0 Bank 5: 8c00004000010092`, or
    the kernel's `mce:` line): a memory controller's error, corrected or not as the EDAC line
    says, printed with it (the same second). sb_edac and skx_edac print both for one error, which
    counts once (grondo/edac-utils#10)."""
    said = _STATUS_SAID.search(bank.what)
    if bank.source != "mce" or edac.source != "edac" or said is None:
        return False
    status = int(said.group(1), 16)
    if status & _MEMORY_CODE[0] != _MEMORY_CODE[1] or bank.severity not in ("corrected", "fail"):
        return False
    return bank.severity == edac.severity and _together(lines, bank.line, at)


def _is_record(line: str) -> bool:
    """Whether `line` is a record of one event a machine check notice is printed with: a machine
    check bank's status, an EDAC memory controller's CE / UE count, an APEI record's severity."""
    event = _line_error(line, set())
    if event is not None:
        return event.source in ("mce", "edac") and event.severity != "notice"
    head = _GHES_HEAD.search(line)
    return head is not None and _GHES_SEVERITY.match(head.group(2).strip()) is not None


def _beside_a_record(lines: Sequence[str], at: int) -> bool:
    """Whether the notice at `lines[at]` was printed with a record (a bank's status, an EDAC line's
    count, an APEI record's severity) among the lines printed with it (those next to it with its
    stamp, up to 40 each side; a log without stamps: within 4 lines), so the record says what was
    logged; a notice with none (a later poll's, `dmesg | grep -i machine`, beside a line that is no
    event's: `EDAC sbridge MC1: HANDLING MCE MEMORY ERROR`, or a record's detail line printed long
    before) says only that records went to mcelog / rasdaemon."""
    reach = 40 if _stamp(lines[at]) != "" else 4
    for step in (-1, 1):
        i = at + step
        while 0 <= i < len(lines) and abs(i - at) <= reach and _together(lines, at, i):
            if _is_record(lines[i]):
                return True
            i += step
    return False


# a machine check record's detail line with the bank's IPID (AMD's Scalable MCA): its hardware id
# (bits 43:32) 0x096 is a Unified Memory Controller (the kernel's `amd_hwids`: "UMC")
_IPID = lazy_re(r"\[Hardware Error\]:.*\bIPID ([0-9a-fA-F]{1,16})\b")
_UMC = 0x096


def _umc_memory(event: HostError, line: str, at: int) -> HostError | None:
    """The corrected machine check `event` as a corrected memory error where `line`, its record's
    next lines, names its bank an AMD memory controller by its IPID (rasdaemon#95: `Bank 17:
    dc2040000000011b`, `IPID 9600050f00`): a DRAM ECC error the controller corrected, counted as
    an EDAC CE is (one is normal), never a warning of a CPU fault."""
    ipid = _IPID.search(line)
    if ipid is None or event.source != "mce" or event.severity != "warn" or at - event.line > 3:
        return None
    if (int(ipid.group(1), 16) >> 32) & 0xFFF != _UMC:
        return None
    status = event.what.rsplit(" ", 1)[-1].rstrip(")")
    return replace(event, severity="corrected", what=f"corrected memory error (machine check {status})")


# AMD's decode of a machine check (drivers/edac/mce_amd.c), older families' (before Scalable MCA)
# and newer: `[Hardware Error]: MC4 Error (node 3): DRAM ECC error detected on the NB.`, then
# `[Hardware Error]: CPU:18 (10:9:1) MC4_STATUS[Over|CE|MiscV|-|AddrV|CECC]: 0xdc5c410004080a13`,
# whose flags say the error's kind (`UE` uncorrected, `CE` corrected; `Over`: the bank overflowed,
# errors were lost; `CECC` / `UECC`: the northbridge's DRAM ECC) and whose value is the bank's
# status (MCi_STATUS); mikeizbicki/ucr-cs100#404's log holds only this decode
_AMD_STATUS = re.compile(
    r"\[Hardware Error\]:\s*CPU:?\s*(\d+)\b.*?\bMC(\d+)_STATUS\[([^\]]*)\]:?\s*(?:0x)?([0-9a-fA-F]{1,16})\b"
)
_AMD_HEAD = lazy_re(r"\[Hardware Error\]:\s*MC(\d+)(?:_|\s)?Error(?: \(node (\d+)\))?:")
_DRAM_ECC = lazy_re(r"\bDRAM ECC error\b", re.IGNORECASE)
# the kernel's own decode of a Scalable MCA bank, the line after its status (mce_amd.c: "%s Ext.
# Error Code: %d", the bank's unit: `Unified Memory Controller Ext. Error Code: 0, DRAM ECC
# error.`, `Platform Security Processor Ext. Error Code: 62`): its `CECC` / `UECC` flags say an
# ECC-protected structure of that unit, DRAM only where the unit is a memory controller
_SMCA_UNIT = lazy_re(r"\[Hardware Error\]:\s*(.+?) Ext\. Error Code: (\d+)")
_OVER = 1 << 62  # MCi_STATUS.OVER: an error came while the bank held one: errors were lost
_PCC = 1 << 57  # MCi_STATUS.PCC: the processor's context is corrupt


def _amd_status(lines: Sequence[str], at: int) -> HostError | None:
    """The machine check AMD's decode reports at `lines[at]` (its `MCn_STATUS[...]` line, see
    _AMD_STATUS), judged by its flags and status: uncorrected (`UE`, the status's UC or PCC bit)
    fails; a corrected DRAM ECC error (the record's `DRAM ECC error` line or `CECC` flag) is a
    corrected memory error, counted as EDAC's CE (CE_WARN_AT), unless its bank overflowed (`Over`:
    errors were lost, so their count is not known), which warns; another corrected one warns."""
    m = _AMD_STATUS.search(lines[at])
    if m is None:
        return None
    cpu, bank, hexed = m.group(1), m.group(2), m.group(4)
    flags = {f.strip() for f in m.group(3).split("|")}
    status = int(hexed, 16)
    # (its record's lines before it, back to the record before; a syslogd broadcast puts two
    # lines of its own between each)
    before: list[str] = []
    for line in reversed(lines[max(0, at - 9) : at]):
        if _AMD_STATUS.search(line):
            break
        before.insert(0, line)
    near = [*before, *lines[at : at + 4]]
    head = next((h for line in reversed(before) if (h := _AMD_HEAD.search(line))), None)
    memory = bool(flags & {"CECC", "UECC"}) or any(_DRAM_ECC.search(line) for line in near)
    unit = next((u for line in lines[at + 1 : at + 4] if (u := _SMCA_UNIT.search(line))), None)
    if unit is not None and "memory controller" not in unit.group(1).lower():
        memory = any(_DRAM_ECC.search(line) for line in near)  # (the kernel's decode names another unit)
    node = f"node {head.group(2)} " if head and head.group(2) and head.group(1) == bank else ""
    where = f"{node}DRAM (MC{bank})" if memory and node else f"CPU {cpu} bank {bank}"
    said = f"MC{bank}_STATUS[{m.group(3)}] 0x{hexed}"
    if unit is not None and not memory:
        said = f"{unit.group(1)}, ext. error code {unit.group(2)}: {said}"
    if "UE" in flags or "UECC" in flags or status & (_UC | _PCC):
        what = "uncorrectable memory error" if memory else "uncorrected machine check"
        return HostError("mce", "fail", where, f"{what} ({said})", line=at)
    if "CE" not in flags and not status & _VAL:
        return HostError("mce", "record", where, f"machine check record without an error ({said})", line=at)
    lost = "Over" in flags or bool(status & _OVER)
    if memory and not lost:
        return HostError("mce", "corrected", where, f"corrected memory error ({said})", line=at)
    what = "corrected memory error" if memory else "corrected machine check"
    what += "; the bank overflowed: more errors were not logged, their count is not known" if lost else ""
    return HostError("mce", "warn", where, f"{what} ({said})", line=at)


def _same_bank_record(event: HostError, amd: HostError, at: int) -> bool:
    """Whether `event`, the error read before AMD's decode at line `at`, is the kernel's own line
    for the same machine check (`mce: [Hardware Error]: CPU 18: Machine Check: 0 Bank 4:
    dc5c410004080a13`, the same status a few lines before): one error, counted once."""
    status = amd.what.rsplit("0x", 1)[-1].rstrip(")").lower()
    return event.source == "mce" and at - event.line <= 6 and event.what.lower().endswith(f" {status})")


# a line of the kernel's PCIe error handling (AER) about one device: a report, its detail lines,
# the recovery's broadcast and each driver's answer to it
_AER_PART = re.compile(
    r"\b(\S+) " + BDF + r": (?:AER: |PCIe Bus Error|\s*device \[|\s*\[ ?\d+\] |broadcast "
    r"|device has no AER-aware driver)"
)
_FATAL = lazy_re(r"Uncorrect(?:ed|able) \(Fatal\)", re.IGNORECASE)


@dataclass
class _AerRun:
    """One run of AER lines (no other line between them): the lines of ports and of a GPU's other
    functions, the GPUs each is tied to, the GPUs gpu_xid fails in it, the last port reporting."""

    lines: list[tuple[int, str]]
    ties: dict[str, set[str]]
    failed: set[str]
    port: str = ""

    def tied(self) -> set[int]:
        """The lines of a port or function tied to a GPU that gpu_xid fails in this run."""
        return {i for i, bdf in self.lines if self.ties.get(bdf, set()) & self.failed}


def _gpu_lines(lines: Sequence[str], gpus: set[str]) -> set[int]:
    """The indexes of the AER lines of PCIe ports (and of a GPU's other functions, its audio) whose
    uncorrectable errors gpu_xid fails as a GPU's: in one run of AER lines (no other line between
    them), a port tied to a GPU, that received the error from it (`AER: Uncorrected (Fatal) error
    received: 0000:03:00.0`) or whose report the GPU's `AER: can't recover` / `device has no
    AER-aware driver` follows (the recovery of that port's link), where the run holds an error
    gpu_xid fails for that GPU (a fatal one, a recovery that failed: facts/aer.py). The root port's
    own error (the link to the GPU down) is then the GPU's fault, which gpu_xid names;
    host_hw_errors does not count it again (sf29: returnn#1500 failed both rules for one fault).
    A port's fatal error beside a GPU's non-fatal one stays host_hw_errors' (no rule else fails it)."""
    found: set[int] = set()
    run = _AerRun([], {}, set())
    for i, line in enumerate(lines):
        part = _AER_PART.search(line)
        if part is None:
            if line.strip() and not is_probe_header(line):
                found |= run.tied()
                run = _AerRun([], {}, set())
            continue
        driver, bdf = part.group(1), part.group(2).lower()
        if driver == "pcieport" or bdf not in gpus and any(g[:-2] == bdf[:-2] for g in gpus):
            run.lines.append((i, bdf))
            run.ties.setdefault(bdf, set()).update(g for g in gpus if g[:-2] == bdf[:-2])
        received = AER_RECEIVED.search(line)
        if received and received.group(1).lower() in gpus:
            run.ties.setdefault(bdf, set()).add(received.group(1).lower())
            if _FATAL.search(line):
                run.failed.add(received.group(1).lower())
        if driver == "pcieport":
            run.port = bdf
        elif driver == "nvidia" and bdf in gpus:
            if AER_UNRECOVERED.search(line):
                run.failed.add(bdf)
                if run.port:
                    run.ties.setdefault(run.port, set()).add(bdf)
            elif "PCIe Bus Error" in line and _FATAL.search(line):
                run.failed.add(bdf)
    return found | run.tied()


# any PCI address in a line (a line of the nvidia driver about a GPU, cut anywhere after the
# driver's name: facts/aer_lines.NVIDIA_CUT, as facts/aer.py reads it)
_ANY_BDF = lazy_re(BDF)


def _cut_end(lines: Sequence[str], gpus: set[str]) -> tuple[HostError, ...]:
    """A "cut" HostError where the log ends inside its last line (no newline after it) that may
    be a host error's (facts/kernel_cut.host_cut, the reading gpu_xid's cut lines get): what it went on to
    say (`UE` or `CE`, the bank's status) is not known. Source "cut" where the line shows a host
    error's tag or reads as one; "stamp" where it says nothing yet (a stamp, a word's start), which
    only narrows the errors the log shows. A line that has left every error line's head (`EDAC
    amd64: Node 0: DRAM ECC enabled.`) is whole: nothing."""
    if not lines:
        return ()
    last = lines[-1].rstrip(" \t")
    if NVIDIA_CUT.search(last) or any(m.group(1).lower() in gpus for m in _ANY_BDF.finditer(last)):
        return ()  # (a GPU's line, cut: gpu_xid's to judge, facts/aer.py)
    if _line_error(last, gpus) is not None or _GHES_HEAD.search(last) is not None:
        kind = "" if _read_whole(last) else "tag"
    else:
        kind = host_cut(last, locale_words([*lines[-50:-1], last]))
    if not kind:
        return ()
    m = _HOST_TAG.search(last)
    said = last[m.start() :].strip() if m and kind == "tag" else last.strip()
    return (HostError("cut" if kind == "tag" else "stamp", "cut", "", said),)


# what an error line must show to be judged whole where the log ends inside it: a corrected
# error's DIMM label closed by the ` (` of its details (a label cut short would count its errors
# on another part), a bank's status in the 16 hex digits the kernel prints, an APEI record's
# severity word and section whole (its first line alone says neither)
_LABEL_CLOSED = lazy_re(r"\bon \S+ \(")
_SEVERITIES = lazy_re(r"^event severity: (?:fatal|recoverable|corrected|info)$")


def _read_whole(line: str) -> bool:
    """True when a host error line the log ends inside (no newline) is read whole for judging: an
    uncorrectable error fails whatever followed, a corrected one whose part and count are read
    is counted; what the rest would say (its details) changes no verdict."""
    edac = _EDAC.search(line)
    if edac:
        return edac.group(3) == "UE" or _LABEL_CLOSED.search(edac.group(4)) is not None
    bank = _MCE_BANK.search(line)
    if bank:
        return len(bank.group(3)) == 16
    head = _GHES_HEAD.search(line)
    if head:
        said = head.group(2).strip()
        if said.startswith("event severity"):
            return _SEVERITIES.match(said) is not None
        # (a line cut inside one of these words, `event sev`, is the start of one of them)
        words = ("Hardware error from APEI", "section_type", "event severity")
        return not said.startswith(words[:2]) and not any(word.startswith(said) for word in words)
    return True  # (a fatal machine check, the notice, a fatal PCIe error: read whole)


# where a host error's line starts, to quote it from there (`EDAC MC0: 1`, `mce: [Hardware`)
_HOST_TAG = lazy_re(r"\bEDAC\b|\bmce: |\[Hardware|\{\d+\}\[")


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
    failed = _AER_NOT_RECOVERED.search(line)
    if failed and failed.group(2).lower() not in gpus and failed.group(1) != "nvidia":
        driver = f"{failed.group(1)} " if failed.group(1) else ""
        return HostError(
            "aer",
            "warn",
            f"PCI {driver}{failed.group(2)}",
            f"the kernel could not recover it from a PCIe error (AER: {failed.group(3)})",
        )
    return None
