"""Pure parser for kernel log text (`dmesg`, `dmesg -T`, `dmesg --decode --time-format=iso`,
`journalctl -k`): NVIDIA Xid events (GPU), SXid events (NVSwitch), and the driver's GPU fault
sentences that carry no Xid (data/nvrm_faults.yml: "has fallen off the bus", "RmInitAdapter
failed!", "probe routine failed", GSP start-up failures and timeouts).

Real shapes (tests/fixtures/real/dmesg*):

    [Sun Feb 23 16:24:18 2025] NVRM: Xid (PCI:0000:9b:00): 119, pid=2024380, name=nvidia-smi, Timeout ...
    kern  :warn  : 2025-01-21T04:41:44,283302+00:00 NVRM: Xid (PCI:0000:38:00): 13, pid='<unknown>', ...
    [6781753.400584] nvidia-nvswitch1: SXid (PCI:0000:06:00.0): 20034, Fatal, Link 48 LTSSM Fault Up
    [117.985304] nvidia-nvswitch3: SXid (PCI:0000:08:00.0): 22013, Severity 0 Engine instance 60 ...
    [117.986807] nvidia-nvswitch3: SXid (PCI:0000:08:00.0): 22013, Data {0x0000003c, ...}
    Apr 29 01:07:28 host kernel: [ 9438.840000] NVRM: Xid (0001:00): 6, PE0000 0374 ...  (old drivers)
    NVRM: Xid (PCI:0000:01:00 GPU-I:05): 94, pid=7194, Contained: CE User Channel (0x9). ...  (MIG)
    Oct 02 10:41:07 host kernel: NVRM: Xid (PCI:0000:3d:00): 79, pid=0, GPU has fallen off the bus.
    [ 1843.308145] NVRM: The NVIDIA GPU 0000:b3:00.0
                   NVRM: (PCI ID: 10de:26b5) installed in this system has
                   NVRM: fallen off the bus and is not responding to commands.

(dmesg prints a multi-line message's continuation lines indented, without a timestamp: they
are joined to the line they continue before the fault sentences are matched.)

One SXid event is several driver lines (NVIDIA's Fabric Manager User Guide, "NVSwitch SXid
Errors"; the nvswitch driver's `_nvswitch_dump_error_entry`): the line with the driver's own
`Fatal` / `Non-fatal` word for that event, then `Severity N Engine instance ...` (0 non-fatal,
1 fatal: NVSWITCH_ERROR_SEVERITY_*) and one or two `Data {...}` lines with the same switch,
address and code. They are one event. A line that says `NVRM: Xid` or `SXid` but cannot be
read is kept as an `xid_unread` / `sxid_unread` event: the rules cannot pass such a log.

A log cut short (a paste, a size limit) can end inside an event. The kernel ends every line with
a newline and always prints `, ` after an Xid / SXid code, so: a code without its comma is
unread (an SXid `22013` cut to `22` is no SXid 22); the text's last line without its newline is
marked `cut` (its event is judged on what was read; an NVRM or nvidia-nvswitchN line that says
no readable event, or an SXid first line cut before the driver's Fatal / Non-fatal word, is
unread); and a driver message the log ends inside (`The NVIDIA GPU 0000:b3:00.0` / `(PCI ID:
...) installed in this system has`, then nothing) is unread and `cut`, never dropped. A last line
without its newline that says nothing yet (only a stamp or part of one, a partial `NVRM:` /
`nvidia-nvswitchN:` tag) may be the start of an Xid or SXid line: it is kept as a `cut` event.
The driver prints a once-per-GPU preamble (`NVRM: GPU at PCI:0000:02:00: GPU-<uuid>`, `NVRM: GPU
Board Serial Number: ...`) immediately before that GPU's first Xid line: a preamble with no Xid
of that GPU after it is an Xid whose line is not in the log (unread; `cut` where the log ends
there).

A saved log may span several boots (`journalctl` without `-b`, or `-k -b -1`; a syslog or
kern.log kept across reboots): journalctl prints `-- Reboot --` (systemd before v247) or `-- Boot
<boot id> --` between two boots' lines, and the kernel's first line of each boot is its `Linux
version ...` banner. An event logged before the last such boundary is `earlier_boot`: a fault of
a boot the box has since left, not of the boot it runs now.

The probe (facts/extra_probes.py) prefixes its output with `# source: ...` and `# first: ...`
lines (which log answered, and its first line before filtering): they tell whether the log
reaches back to boot, i.e. whether "no Xid" means "none since boot".
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace

from gpuonboard.facts.elision import ELISION, elided_line, hand_break, may_be_elided
from gpuonboard.facts.extra_probes import KERNEL_LOG_BOOT, KERNEL_LOG_PATTERN
from gpuonboard.facts.gpu_ids import pci_domain
from gpuonboard.facts.kernel_cut import ends_unfinished, line_heads, whole_when_cut
from gpuonboard.facts.kernel_event import KernelEvent as KernelEvent
from gpuonboard.facts.kernel_forms import once_per_report
from gpuonboard.facts.kernel_headless import headless_start
from gpuonboard.facts.kernel_instance import OpenedLine, ProbeLine, device_line, probe_line, tie_instances
from gpuonboard.facts.kernel_kinds import PickedKinds, picked_kinds, unstamped_kernel_line
from gpuonboard.facts.kernel_nvrm import DRIVER_LOAD as _DRIVER_LOAD
from gpuonboard.facts.kernel_nvrm import NVRM as _NVRM
from gpuonboard.facts.kernel_nvrm import NVRM_FAULTS_FILE as NVRM_FAULTS_FILE
from gpuonboard.facts.kernel_nvrm import REPORT_INDENT as _REPORT_INDENT
from gpuonboard.facts.kernel_nvrm import Message as _Message
from gpuonboard.facts.kernel_nvrm import NvrmFault as NvrmFault
from gpuonboard.facts.kernel_nvrm import address as _address
from gpuonboard.facts.kernel_nvrm import continues as _continues
from gpuonboard.facts.kernel_nvrm import firmly as _firmly
from gpuonboard.facts.kernel_nvrm import kernel_cause
from gpuonboard.facts.kernel_nvrm import load_nvrm_faults as load_nvrm_faults
from gpuonboard.facts.kernel_nvrm import open_gpu_message as _open_gpu_message
from gpuonboard.facts.kernel_nvrm import prefix as _prefix
from gpuonboard.facts.kernel_nvrm import unfinished as _unfinished
from gpuonboard.facts.kernel_order import BootCounter as BootCounter
from gpuonboard.facts.kernel_order import out_of_order
from gpuonboard.facts.kernel_pager import pager_view
from gpuonboard.facts.kernel_pieces import pieced
from gpuonboard.facts.kernel_quoted import (
    MODULE_LOAD,
    bus_excerpt,
    driver_excerpt,
    gpu_driver_only,
    nvidia_only,
    nvswitch_only,
    quoting_report,
    said_count,
)
from gpuonboard.facts.kernel_shapes import OTHERS_ONLY, journal_shaped
from gpuonboard.facts.kernel_span import BOOT_LOAD_S, ends_before_driver, held_by_nouveau, seconds_since_boot
from gpuonboard.facts.kernel_text import by_text, log_text
from gpuonboard.facts.kernel_wrap import KERNEL_STAMP as KERNEL_STAMP
from gpuonboard.facts.kernel_wrap import PROBE_HEADER as _HEADER
from gpuonboard.facts.kernel_wrap import monotonic_journal, other_program
from gpuonboard.facts.kernel_xid_lines import NVSWITCH as _NVSWITCH
from gpuonboard.facts.kernel_xid_lines import SxidJoiner as _SxidJoiner
from gpuonboard.facts.kernel_xid_lines import line_event as _line_event
from gpuonboard.facts.kernel_xid_lines import nvrm_event as _nvrm_event
from gpuonboard.facts.probe import ProbeOutput
from gpuonboard.once import lazy_re

__all__ = [
    "BootCounter",
    "KernelEvent",
    "KernelLog",
    "NvrmFault",
    "fault_key",
    "is_probe_header",
    "load_nvrm_faults",
    "parse_kernel_log",
    "pci_key",
]


@dataclass(frozen=True)
class KernelLog:
    """The Xid/SXid events of a kernel log and what the log covered."""

    events: tuple[KernelEvent, ...]
    source: str | None = None  # "dmesg", "journalctl -k -b", ... (the probe's `# source:` line)
    first_line: str | None = None  # the log's first line before filtering (`# first:`)
    lines: int = 0  # non-empty log lines read (after the probe's filter)
    boots: int = 1  # the boots the log spans (BootCounter: journalctl's separators, kernel banners)
    # the matching lines the live probe left out (`# dropped: driver N other M`): of the GPU and
    # NVSwitch drivers (an older probe's `# dropped: N`, of every kind, is read as theirs), and of
    # the others (a device's uncorrectable PCIe errors); None: not said (a saved log, an older probe)
    dropped: int | None = None
    dropped_other: int | None = None
    # the host hardware errors' lines it left out (`host H`: EDAC, machine checks, APEI records),
    # capped apart from both: they narrow host_hw_errors only
    dropped_host: int | None = None
    # a sandbox's emulated kernel wrote this log, not the host's kernel (`_SANDBOX_BANNERS`): the
    # banner line as printed ("[    0.000000] Starting gVisor..."); or a guest's kernel whose GPU
    # is the Windows host's (`_PARAVIRTUAL_GPU`, no NVIDIA driver line): its dxgkrnl line; None
    # for a kernel's own log
    sandbox: str | None = None
    # a saved log's (no `# first:`): the first line of its last boot, where the log holds lines
    # no grep for the drivers' would keep, or is stamped too late in boot for a grep of a whole
    # boot's driver lines to start there (else its first line says nothing of where it starts)
    boot_first: str | None = None
    # a line that says lines were left out by hand (a paste's `...`, `[...]`, `[    ....    ]`),
    # as printed: what the log shows is not the whole of it; None where there is none
    elided: str | None = None
    # another tool's report that quotes the drivers' kernel lines (facts/kernel_quoted.py): its
    # first such line, as printed; its faults count, its silence proves nothing
    quoted: str | None = None
    # a saved log of the NVSwitch driver's lines only (facts/kernel_quoted.nvswitch_only): its
    # first line; picked or grepped, it says nothing of the GPU driver's Xids
    picked: str | None = None
    # a saved log of lines that each hold `NVRM` (facts/kernel_quoted.gpu_driver_only): its first
    # line; a `grep NVRM` of the log, it says nothing of the NVSwitch driver's SXids
    nvrm_only: str | None = None
    # a saved log whose every line holds `nvidia` (kernel_quoted.nvidia_only): its first line; a
    # `grep -i nvidia` of the log, it says nothing of the Xid lines (`NVRM: Xid ...`) it may drop
    nvidia_only: str | None = None
    # the lines those readings (picked, nvrm_only, nvidia_only) are of: the saved log's lines that
    # say something of the kernel's (kernel_quoted.said_count; not a page's bare `> ` mark)
    said_lines: int = 0
    # a saved log whose every line is the GPU driver's, its load banner not among them
    # (kernel_quoted.driver_excerpt): its first line; an excerpt around a fault, it says nothing
    # of the NVSwitch driver's SXids
    driver_excerpt: str | None = None
    # a saved log whose every line holds a PCI address or `nvidia`, some only the address
    # (kernel_quoted.bus_excerpt): its first line; a grep by the GPUs' bus addresses
    bus_excerpt: str | None = None
    # a saved log that ends before the GPU driver logged anything, or of a GPU nouveau holds with
    # no line of the NVIDIA driver (facts/kernel_span.py): why; ""
    early_end: str = ""
    # a journal's JSON / export / verbose output whose entries are all of other programs than the
    # kernel (facts/kernel_shapes): no kernel line was there to read
    others_only: bool = False
    # a saved log that is a pager's screen (facts/kernel_pager.py: `lines 101434-101480/101480
    # (END)` below it): why it is not the whole output; ""
    paged: str = ""
    # a saved log of excerpts pasted together (facts/kernel_pieces.py): why; ""
    pieced: str = ""
    # a saved log whose kernel lines are of a few kinds, picked from it (facts/kernel_kinds.py)
    kinds_picked: PickedKinds | None = None
    # a saved log that starts inside a driver's multi-line record (facts/kernel_headless.py: its
    # first SXid line a `Data {...}` line, its first NVRM line a report's row): why; ""
    headless: str = ""

    @property
    def left_out(self) -> str:
        """Why the log read is not the whole log of its boot by its own lines: a poster's
        elision marker between them, or it is another tool's report quoting kernel lines
        (facts/kernel_quoted.py); "" where neither."""
        if self.quoted is not None:
            return f"it is a tool's report quoting kernel lines (`{self.quoted[:80]}`), not the kernel log"
        if self.elided is None:
            return self.paged or self.pieced
        if self.elided == "--":
            return "lines were left out of it, marked `--` (grep's line between the groups of lines it kept)"
        return f"lines were left out of it by hand, marked `{self.elided}`"

    @property
    def no_gpu_lines(self) -> str:
        """left_out for gpu_xid: a saved log of the NVSwitch driver's lines only (`picked`) kept
        none of the GPU driver's, an Xid among them; "" where it is not one."""
        if self.picked is None:
            return ""
        count = self.said_lines or self.lines
        n = f"{count} line{'s' if count != 1 else ''}"
        first = self.picked[:80]
        return f"it holds only the NVSwitch driver's lines ({n}, first `{first}`), picked from the log"

    @property
    def cut_by_cap(self) -> str:
        """Why the log read is only part of the log the host has, for gpu_xid: the probe left
        some of its matching lines out (the oldest of a kind: a flood). Any kind: the GPU's AER
        lines (facts/aer.py: a root port's `AER: Uncorrected ... error received: <the GPU's
        address>`) are among the others, beside a NIC's; "" where it kept all or did not say."""
        left = (self.dropped or 0) + (self.dropped_other or 0)
        return f"the probe left out {left} older matching lines (a flood of kernel messages)" if left else ""

    @property
    def host_cut_by_cap(self) -> str:
        """cut_by_cap for host_hw_errors, which reads the host errors' lines (capped apart) and a
        device's uncorrectable PCIe errors (among the others): the drivers' lines left out say
        nothing of them."""
        left = (self.dropped_host or 0) + (self.dropped_other or 0)
        return f"the probe left out {left} older matching lines (a flood of kernel messages)" if left else ""

    @property
    def driver_cut_by_cap(self) -> str:
        """cut_by_cap for nvswitch_sxid, which reads the NVSwitch driver's lines only: another
        device's flood of PCIe errors left out says nothing of them."""
        return (
            f"the probe left out {self.dropped} older driver lines (a flood of kernel messages)"
            if self.dropped
            else ""
        )

    @property
    def covers_boot(self) -> bool | None:
        """True when the log reaches back to boot (its first line, dmesg's or the journal's, is
        at 0.000000 or is the kernel's first words: extra_probes.KERNEL_LOG_BOOT); False when it
        no longer does (dmesg's ring buffer wrapped, a journal whose oldest entries were dropped);
        A saved log without the probe's header is judged by the first line of its last boot, the
        same way (a `dmesg` copied from a box up for weeks starts hours after boot); None when
        neither is known. (A log its command narrowed, `dmesg | grep NVRM`, says nothing of it:
        the caller's.)"""
        first = self.first_line if self.first_line is not None else self.boot_first
        if first is None:
            return None
        return re.search(KERNEL_LOG_BOOT, first) is not None

    @property
    def no_log(self) -> str:
        """Why the log is no log at all, "" where it is one: a saved journal of other programs'
        entries only (OTHERS_ONLY); the live probe's reader that answered
        (exit 0) printed nothing (`# first:` blank, no line: a dmesg whose ring buffer was cleared)
        or only its own notice (`No journal files were found.`, a systemd before v246 printing it
        under `-q`): no fault seen there is no evidence (it passed "no Xid in the kernel log")."""
        if self.others_only:
            return OTHERS_ONLY
        if self.first_line is None or self.lines:
            return ""
        from gpuonboard.facts.kernel_refusal import refusal

        reader = self.source or "the kernel log reader"
        if not self.first_line.strip():
            return f"{reader} printed nothing"
        said = refusal(self.first_line) or ""
        # (util-linux's dmesg names itself: `dmesg: read kernel buffer failed ...`)
        return said if not said or said.startswith(reader.split()[0] + ":") else f"{reader}: {said}"

    def xids(self) -> tuple[KernelEvent, ...]:
        """The GPU (Xid) events."""
        return tuple(e for e in self.events if e.kind == "xid")

    def nvrm_faults(self) -> tuple[KernelEvent, ...]:
        """The GPU fault sentences without an Xid (data/nvrm_faults.yml)."""
        return tuple(e for e in self.events if e.kind == "nvrm")

    def sxids(self) -> tuple[KernelEvent, ...]:
        """The NVSwitch (SXid) events."""
        return tuple(e for e in self.events if e.kind == "sxid")

    def unread(self) -> tuple[KernelEvent, ...]:
        """The Xid / SXid lines whose code could not be read."""
        return tuple(e for e in self.events if e.kind in ("xid_unread", "sxid_unread"))


_PROBE_KEEPS = re.compile(KERNEL_LOG_PATTERN)
# the words a user greps a kernel log for the GPU by (`dmesg | grep -i nvidia`, `grep -iE
# 'xid|nvrm'`): a log whose every line has one (`nvidia-modeset: Loading ...`) may be such a
# grep's, so is not known to hold its boot's first line. (Not `aer`, `pcie`: a log of PCIe lines
# alone, `kernel: [68183.615790] pcieport ...`, is either a whole log that starts where its first
# line does or a grep for them that keeps no Xid line; either way no pass of it covers the boot)
_USER_KEEPS = lazy_re(r"nvidia|nvrm|xid|gpu|nvswitch", re.IGNORECASE)
# the first line of a log that no kernel wrote: a sandbox's emulated kernel (gVisor's Sentry,
# the runtime of GKE Sandbox and other GPU containers, answers `dmesg` with its own lines,
# `[    0.000000] Starting gVisor...` then jokes, `Ready!`): the host kernel, whose NVIDIA driver
# logs the Xids, is out of sight, so a log without an Xid there says nothing of the GPUs
_SANDBOX_BANNERS = (re.compile(r"^\s*(?:\[[^\]]*\]\s*)?Starting gVisor\.\.\.\s*$"),)
# a line of the paravirtual GPU driver of a WSL2 guest or a Hyper-V VM (dxgkrnl: `hv_vmbus:
# registering driver dxgkrnl`, `misc dxg: dxgk: dxgkio_query_adapter_info: Ioctl failed: -22`): the
# GPU is the Windows host's, whose NVIDIA driver logs its errors in Windows, never in this kernel;
# or a WSL2 kernel's banner (`Linux version 5.10.60.1-microsoft-standard-WSL2 ...`, the one line of
# a WSL2 guest the live probe's grep may keep: a WSL2 guest's GPU is always the host's, paravirtual).
# A log with it and no line of the NVIDIA driver's is no log of the GPU's driver either
_PARAVIRTUAL_GPU = re.compile(
    r"\bregistering driver dxgkrnl\b|\bmisc dxg: dxgk:|\bLinux version \S+-microsoft-standard\b"
)


def is_probe_header(line: str) -> bool:
    """Pure: whether `line` is one of the live probe's header lines (`# source:`, `# first:`,
    `# dropped:`),
    no line of the log."""
    return _HEADER.match(line) is not None


# journalctl's other lines of its own (`-- Logs begin at ... --`, `-- Journal begins at ... --`):
# no line of the log
_JOURNAL_NOTE = re.compile(r"-- .+ --")


# the driver's once-per-GPU preamble to that GPU's first Xid (kernel_rc.c: krcReportXid calls
# _krcLogUuidOnce, which prints "GPU at PCI:%04x:%02x:%02x: GPU-<uuid>" then "GPU Board Serial
# Number: %s", and prints the "Xid (PCI:...): N, ..." line right after): group 1 its address
_PREAMBLE = lazy_re(
    r"^(?:GPU at PCI:\s*([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2})\s*:\s*GPU-|GPU Board Serial Number:)"
)


@dataclass
class _Preamble:
    """An Xid preamble whose Xid line has not been read (yet): its first line, where it ends
    among the driver's lines."""

    key: str  # pci_key of its address; "" for a serial-number line alone
    event: KernelEvent  # the xid_unread it stands for, where no Xid line of its GPU follows
    at: int  # the driver lines read when it ended


class _Reader:
    """parse_kernel_log's state, line by line: the events, the NVRM message being joined, the
    Xid preambles whose Xid line is still to come, the last line where it says nothing yet, the
    probe's header."""

    def __init__(self) -> None:
        self.events: list[KernelEvent] = []
        self.sxids = _SxidJoiner(self.events)
        self.message: _Message | None = None
        self.preambles: list[_Preamble] = []
        self.tail: KernelEvent | None = None  # the last line, cut before it says anything
        self.driver_lines = 0  # NVRM and NVSwitch lines read
        self.driver_at = -1  # the count of lines read (`lines`) at the last of them
        self.monotonic = False  # a journal stamped in seconds since boot (kernel_wrap.monotonic_journal)
        self.source: str | None = None
        self.first: str | None = None
        self.boot_first: str | None = None  # the first line of the log's last boot
        self.unfiltered = False  # a line the probe's filter drops: the log is not a grep's
        self.dropped: int | None = None
        self.dropped_other: int | None = None
        self.dropped_host: int | None = None
        self.lines = 0
        self.boots = BootCounter()
        self.boot_start = 0  # the index in `events` of the log's last boot's first event
        # the index in `events` of each driver load's first event but the log's first (a boot
        # boundary, the driver's load banner): KernelEvent.load
        self.load_starts: list[int] = []
        self.words: dict[str, str] = {}  # the log's locale month / weekday names (locale_words)
        self.heads: frozenset[str] = frozenset()  # the message heads its lines print (line_heads)
        self.probes: list[ProbeLine] = []  # the kernel's `nvidia: probe of ADDR failed` lines
        self.opened: list[tuple[OpenedLine, bool]] = []  # its `nvidia ADDR: ...` lines (device_line)

    def read(self, line: str, cut: bool) -> None:
        """One line; `cut`: it is the log's last and has no newline after it."""
        if m := _HEADER.match(line):
            if m.group(1) == "source":
                self.source = m.group(2).strip() or None
            elif m.group(1) == "first":
                self.first = m.group(2)
            else:
                said = m.group(2).split()  # (`driver N other M host H`; older probes' without host, `N`)
                counts = [int(w) for w in said if w.isdecimal()]
                if said[:1] == ["driver"] and said[2:3] == ["other"] and len(counts) == 2 == len(said) // 2:
                    self.dropped, self.dropped_other = counts
                elif said[:1] == ["driver"] and said[2:3] == ["other"] and said[4:5] == ["host"]:
                    self.dropped, self.dropped_other, self.dropped_host = [*counts, None, None][:3]
                else:
                    self.dropped = counts[0] if said and len(counts) == len(said) == 1 else None
            return
        if not line.strip() or self.new_boot(line):
            return
        if self.boot_first is None and not _JOURNAL_NOTE.fullmatch(line.strip()):
            self.boot_first = line
        self.unfiltered = self.unfiltered or not (_PROBE_KEEPS.search(line) or _USER_KEEPS.search(line))
        self.lines += 1
        if other_program(line, self.monotonic):  # (another program's line quoting `NVRM: Xid` is no Xid)
            if not _open_gpu_message(self.message):
                self.flush()
            return
        if event := _line_event(line, cut):
            if not _open_gpu_message(self.message):
                self.flush()  # (an Xid / SXid line of its own may come between the records about a GPU)
            if event.kind == "sxid":
                self.sxids.add(event)
            else:
                self.events.append(event)
                if event.kind != "sxid_unread":
                    self.xid_read(event)
        elif m := _NVRM.search(line):
            part = m.group(1).strip()
            if _continues(line, m.start(), part, self.message):
                assert self.message is not None
                self.message.text = f"{self.message.text} {part}"
                self.message.firm = self.message.firm or _firmly(line, m.start())
            else:
                self.flush()
                if _DRIVER_LOAD.match(part):
                    self.load_starts.append(len(self.events))
                tag = "NVRM: " if line.startswith("NVRM:", m.start()) else "NVRM "
                if _REPORT_INDENT.match(m.group(1)) and self.driver_at == self.lines - 1:
                    # (a line of a report the driver printed over several records, indented under
                    # its tag, right below the report's heading or another of its lines: the Xid 120
                    # report's `NVRM:         s8:0x0000` register dump, the GSP RPC history's rows;
                    # the tag kept as printed, so the line reads as one of them. An indented line
                    # below another driver's is no report's: revR L1)
                    tag = f"{tag.rstrip()} {m.group(1)[: len(m.group(1)) - len(m.group(1).lstrip())]}"
                self.message = _Message(_prefix(line, m.start()), part, tag=tag)
            if cut and not whole_when_cut(self.message.text):
                # (the driver's load banner is whole however it ended: kernel_cut.whole_when_cut)
                self.message.cut = f"{self.message.tag}{self.message.text}"
        elif not cut:
            if not _open_gpu_message(self.message):
                self.flush()  # (another driver's line may come between the records of one about a GPU)
            self.probe_read(line)
        elif not ends_unfinished(line, self.words, self.heads):
            self.probe_read(line)  # (the last line, whole without its newline)
        else:
            # the last line, cut before it says whose it is (a bare stamp, `nvidia-nvswitc`) or
            # inside any other line (`[597411.196475]  do_`): it may be the start of an Xid or
            # SXid line, or the lines after it are lost (kernel_cut.ends_unfinished). (A message
            # before it is the one the log ends inside where it is unfinished.)
            said = line.strip()
            self.tail = KernelEvent("cut", 0, "", said, cut=said)
        if _NVRM.search(line) or _NVSWITCH.search(line):
            self.driver_lines += 1
            self.driver_at = self.lines

    def probe_read(self, line: str) -> None:
        """The kernel's `nvidia: probe of ADDR failed` line, if `line` is one, with its place among
        the events and its driver load (kernel_instance.probe_line); a kernel line that says why
        the driver failed a GPU (data/nvrm_faults.yml `kernel_line`), an event of its row."""
        if (cause := kernel_cause(line)) is not None:
            fault, text = cause
            head = _prefix(line, max(line.find(text), 0))
            self.events.append(KernelEvent("nvrm", 0, _address(text), text, None, head, fault.id))
        if (probe := probe_line(line, len(self.events), len(self.load_starts))) is not None:
            self.probes.append(probe)
        if (device := device_line(line, len(self.events), len(self.load_starts))) is not None:
            self.opened.append(device)

    def new_boot(self, line: str) -> bool:
        """Counts the line's boot (BootCounter); where a new boot starts, the message being joined
        and the open SXid events end with the boot before. True: the line is journalctl's
        separator (nothing more to read in it)."""
        boot = self.boots.boot
        separator = self.boots.read(line)
        if self.boots.boot != boot:
            self.boot_first = None
            self.flush()
            self.sxids.open.clear()
            self.boot_start = len(self.events)
            self.load_starts.append(self.boot_start)
        return separator

    def xid_read(self, event: KernelEvent) -> None:
        """An Xid line (read or not) ends the preambles it follows: those of its GPU, a serial
        number line alone, all where its address cannot be compared."""
        key = pci_key(event.pci)
        if key.count(":") != 2:
            self.preambles.clear()
            return
        self.preambles = [p for p in self.preambles if p.key not in ("", key)]

    def flush(self, end: bool = False) -> None:
        """Closes the NVRM message being joined: its fault event, if it says one (marked `cut`
        where the log ends inside it); a message the log ends inside that says none (yet) is an
        unread line, never nothing; an Xid preamble waits for its Xid line."""
        message, self.message = self.message, None
        if message is None:
            return
        said = f"{message.tag}{message.text}"
        if event := _nvrm_event(message.head, message.text):
            self.events.append(replace(event, cut=message.cut))
        elif message.cut is not None or (end and _unfinished(message)):
            self.events.append(
                KernelEvent("xid_unread", 0, _address(said), said, None, message.head, cut=said)
            )
        elif m := _PREAMBLE.match(message.text):
            last = self.preambles[-1] if self.preambles else None
            if m.group(1) is None and last is not None and last.at == self.driver_lines - 1:
                last.at = self.driver_lines  # its serial number line
                return
            event = KernelEvent("xid_unread", 0, m.group(1) or "", said, None, message.head)
            self.preambles.append(_Preamble(pci_key(m.group(1) or ""), event, self.driver_lines))

    def end(self) -> list[KernelEvent]:
        """The events, once the log is read: an Xid preamble no Xid line of its GPU followed is
        an unread Xid (`cut` where the log ends with it: nothing of the driver's came after), and
        the last line cut before it says anything is kept."""
        self.flush(end=True)
        for p in self.preambles:
            ends = p.at == self.driver_lines
            self.events.append(replace(p.event, cut=p.event.message) if ends else p.event)
        if self.tail is not None:
            self.events.append(self.tail)
        # (pieces out of order: which boot a line is of is not known, BootCounter.disorder)
        start = 0 if self.boots.disorder else self.boot_start
        return tie_instances(
            [
                replace(e, earlier_boot=i < start, load=bisect.bisect_right(self.load_starts, i))
                for i, e in enumerate(self.events)
            ],
            [(at, pci, replace(e, earlier_boot=at < start)) for at, pci, e in self.probes],
            self.opened,
        )


def sandbox_of(raw: Mapping[str, ProbeOutput]) -> str | None:
    """The first line of the kernel log read (`raw`'s `kernel_log` probe) where a sandbox's kernel
    or a WSL2 / Hyper-V guest's wrote it (KernelLog.sandbox): the login sees the GPUs from inside
    it, so what its nvidia-smi cannot read may be the sandbox's doing. None otherwise."""
    out = raw.get("kernel_log")
    if out is None or out.exit_code != 0:
        return None
    return parse_kernel_log(out.stdout).sandbox


@by_text  # (one host's log is read by several checks: read once, facts/kernel_text.by_text)
def parse_kernel_log(text: str) -> KernelLog:
    """Parse kernel log text into Xid/SXid events and NVRM fault sentences (data/nvrm_faults.yml,
    continuation lines joined); any timestamp style; other lines ignored. A log that ends inside
    an event (no newline after its last line, a driver message left unfinished, an Xid preamble
    without its Xid line, a last line cut before it says anything) marks that event `cut`, or
    keeps it as unread: never as another event, never dropped."""
    given = text
    read_as = log_text(text)  # (a journal's JSON / export, `dmesg -r`: facts/kernel_shapes)
    text = read_as.plain
    reader = _Reader()
    lines, open_end, reader.words = list(read_as.lines), read_as.open_end, dict(read_as.words)
    reader.monotonic = monotonic_journal(lines)
    read = [i for i, line in enumerate(lines) if line.strip() and not _HEADER.match(line)]
    last = read[-1] if read and open_end else -1
    reader.heads = line_heads(lines[:last]) if last > 0 else frozenset()
    for i, line in enumerate(lines):
        reader.read(line, i == last)
    events = once_per_report(reader.end())  # (a bug report's journal and dmesg: facts/kernel_forms)
    firsts = _first_lines(lines, reader.first)
    # (a saved log's first stamped line too: a caption pasted above it, `sandbox log:`, hid the
    # banner, and gpu_xid passed "no Xid in the kernel log" of a log no host kernel wrote)
    stamped = next((line for line in lines if KERNEL_STAMP.match(line.strip())), None)
    candidates = [*firsts, stamped] if stamped is not None else firsts
    sandbox = next((line.strip() for line in candidates if _sandbox_banner(line)), None)
    if sandbox is None and reader.driver_lines == 0:
        # (the log's lines as printed, then the live probe's `# first:` line, its header left out)
        said = [line for line in lines if not _HEADER.match(line)] + firsts
        sandbox = next((line.strip() for line in said if _PARAVIRTUAL_GPU.search(line)), None)
    saved = [ln for ln in lines if not _HEADER.match(ln)] if reader.first is None else []  # (no probe's)
    return KernelLog(
        tuple(events),
        reader.source,
        reader.first,
        reader.lines,
        reader.boots.boot + 1,
        boot_first=_boot_first(reader, gpu_driver_only(saved) is not None),
        dropped=reader.dropped,
        dropped_other=reader.dropped_other,
        dropped_host=reader.dropped_host,
        sandbox=sandbox,
        # (in the text as given: a wrapped line's join may take the marker in)
        elided=_elided(text),
        others_only=not text.strip() and journal_shaped(given),
        # (another program's syslog line quoting one, sudo's `COMMAND=... grep 'NVRM: Xid'`, is no report)
        quoted=quoting_report([line for line in lines if not other_program(line, reader.monotonic)]),
        picked=nvswitch_only(saved),
        nvrm_only=gpu_driver_only(saved),
        nvidia_only=nvidia_only(saved),
        said_lines=said_count(saved),
        driver_excerpt=driver_excerpt(saved),
        bus_excerpt=bus_excerpt(saved),
        kinds_picked=picked_kinds(saved),
        headless=headless_start(saved) if reader.first is None else "",
        early_end=ends_before_driver(saved) or held_by_nouveau(saved),
        pieced=pieced(given.splitlines()) or out_of_order(reader.boots.disorder),
        paged=pager_view(given.splitlines(), any(re.search(KERNEL_LOG_BOOT, line) for line in firsts)),
    )


def _boot_first(reader: _Reader, nvrm_only: bool) -> str | None:
    """KernelLog.boot_first: the first line of the log's last boot where the log holds a line no
    grep for the drivers' would keep; or, where every line may be such a grep's, where that first
    line is stamped BOOT_LOAD_S or more into boot: a grep of a whole boot's driver lines starts
    with the driver's load at boot, so the log starts after it (an author's excerpt around a
    reload, `[17256.647980] nvidia-nvswitch: Probing device ...`: measure38c 16's family). A first
    line that is the driver's load banner starts where the driver did, however late."""
    first = reader.boot_first
    if reader.unfiltered or first is None or nvrm_only:
        return first if reader.unfiltered else None
    if MODULE_LOAD.search(first):  # (a grep from the driver's load on: all it logged, however late)
        return None
    seconds = seconds_since_boot(first)
    return first if seconds is not None and seconds >= BOOT_LOAD_S else None


def _elided(text: str) -> str | None:
    """The log's first line that says lines were left out, as printed: a paste's marker
    (elision.ELISION: `[...]`, `<snip>`) anywhere, or a break line (elision.hand_break: grep's `--`
    between the groups of lines it kept, a poster's `-bk-`, `----`, `* * *`, `(break)`) between
    two kernel lines, blank lines aside: above the first or below the last (a Markdown rule, a
    mail's `-- ` signature) or beside prose, it says nothing (revK F2, F3). A blank line is none."""
    lines = text.splitlines()
    kept = [i for i, line in enumerate(lines) if line.strip()]
    pasted = may_be_elided(
        text
    )  # (no ELISION line where none of its words is: a long log's lines unsearched)
    for at, i in enumerate(kept):
        line = lines[i]
        if pasted and ELISION.match(line):
            return line.strip()
        if not hand_break(line):
            continue
        before = next((lines[j] for j in reversed(kept[:at]) if not elided_line(lines[j])), None)
        after = next((lines[j] for j in kept[at + 1 :] if not elided_line(lines[j])), None)
        if before is not None and after is not None and _kernel_line(before) and _kernel_line(after):
            return line.strip()
    return None


# a kernel line without a stamp or a head as `dmesg -t` prints it: a subsystem's or a device's
# tag and a colon (`NVRM: ...`, `pci 0000:00:01.0: ...`, `EXT4-fs (sda1): ...`)
_TAGGED = lazy_re(r"^\s*(?:>\s?)*[\w.\-\[\]]+(?:\s+[\w.:\-()]+)?:\s+\S")


def _kernel_line(line: str) -> bool:
    """Whether `line` is a kernel line by its stamp, its journal's or syslog's head, its shape,
    or a tag before a colon (a continuation line indented under one is one too)."""
    return bool(KERNEL_STAMP.match(line.strip()) or unstamped_kernel_line(line) or _TAGGED.match(line))


def _first_lines(lines: list[str], first: str | None) -> list[str]:
    """The log's first line: the live probe's `# first:` header (its log before filtering), and
    the text's first line that is no header (a saved log)."""
    text = next((line for line in lines if line.strip() and not _HEADER.match(line)), None)
    return [line for line in (first, text) if line is not None]


def _sandbox_banner(line: str) -> bool:
    """Whether `line` is a sandbox kernel's first line (_SANDBOX_BANNERS)."""
    return any(p.match(line) for p in _SANDBOX_BANNERS)


def fault_key(event: KernelEvent) -> tuple[str, int, str, str]:
    """One fault however a log printed it (dmesg's stamp, the journal's date and host): its kind,
    code, PCI address and words, so that two answers of one boot's log are compared fault by fault."""
    return (event.kind, event.code, event.pci.lower(), " ".join(event.message.split()))


def pci_key(address: str) -> str:
    """A PCI address in one comparable form, `dddd:bb:dd` lower case: the kernel's Xid form
    `0000:9b:00`, the SXid form `0000:05:00.0` and nvidia-smi's `00000000:9B:00.0` agree."""
    parts = address.strip().lower().split(":")
    if len(parts) != 3:
        return address.strip().lower()
    domain, bus, dev = parts
    # (gpu_ids.pci_domain: every digit of a VMD domain, `10000`, counts; 4 digits at least)
    return f"{pci_domain(domain).rjust(4, '0')}:{bus}:{dev.split('.')[0]}"
