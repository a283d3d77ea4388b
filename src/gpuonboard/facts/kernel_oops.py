"""Kernel crashes (an Oops) in a kernel log that name the NVIDIA driver: a `general protection
fault`, `BUG: unable to handle ...`, `Oops: ...`, `kernel BUG at ...` or `Kernel panic - not
syncing: ...` line whose report (the
lines after it, up to the next crash, its `---[ end trace`, or another report's start) names an
nvidia module (`[nvidia]`, `[nvidia_uvm]` in its RIP or trace) or its CPU line says a kernel
tainted by a proprietary module (`Tainted: P`, which on a GPU box is the NVIDIA driver's mark).
No Xid is logged for such a crash, yet the box faulted (NVIDIA/k8s-device-plugin#941: a general
protection fault in __kmalloc, `Tainted: P OE`, on an RTX 4090 box). Pure: no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from gpuonboard.facts.kernel_log import BootCounter
from gpuonboard.facts.kernel_shapes import talos_head_end
from gpuonboard.facts.kernel_text import kernel_lines
from gpuonboard.facts.kernel_wrap import KERNEL_STAMP
from gpuonboard.once import lazy_re

# the first line of a kernel crash report (arch/x86/kernel/traps.c, mm/fault.c's page fault
# report, lib/bug.c), after the log's stamp; never a user-space process's fault the kernel only
# reports (`traps: python[12345] general protection fault ip:... in libc.so.6[...]`: _USER)
_CRASH = re.compile(
    r"(?:general protection fault\b(?! ip:)|BUG: unable to handle\b|BUG: kernel NULL pointer dereference\b"
    r"|kernel BUG at \S|Oops: [0-9a-fx]+ \[#\d+\]|Oops: \d{4}\b|(?<!end )Kernel panic - not syncing: )"
)
# a panic: its own crash where it starts a report (panic() dumps its CPU line and trace), the end
# of the crash before it where an Oops led to it (`Kernel panic - not syncing: Fatal exception`)
_PANIC = lazy_re(r"(?<!end )Kernel panic - not syncing: ")
_USER = re.compile(r"\btraps: \S+\[\d+\]")
# where a crash's report ends: its `---[ end trace`, or another report's start (a hung task's
# `INFO: task`, a `WARNING:`, a `cut here` line)
_END = lazy_re(r"---\[ end (?:trace\b|Kernel panic)|\bINFO: task\b|\bWARNING: |\bcut here\b")
# the Oops line a page fault's or a BUG's report goes on with (`Oops: 0000 [#1] SMP NOPTI`)
_OOPS = lazy_re(r"\bOops: ")
# the nvidia modules named by the report's own code: a symbol's module in its RIP or trace
# (`[nvidia]`, `[nvidia_uvm]`); never `Modules linked in:`, which lists every module loaded
_NVIDIA_NAMED = lazy_re(r"\[nvidia(?:_uvm|_drm|_modeset|_peermem)?\]")
_MODULES = lazy_re(r"\bModules linked in:")
# the crash's own CPU line (`CPU: 5 PID: 2812 Comm: python3 Tainted: P           OE     5.4.0-42`)
# (a kernel before 3.10, RHEL 6's 2.6.32: `Pid: 389232, comm: ufep Tainted: P  ---- 2.6.32-431...`)
_CPU_LINE = lazy_re(r"\bCPU: \d+ (?:UID: \d+ )?PID: \d+ Comm: |\bPid: \d+, comm: ")
# `Tainted: P           OE     5.15.0-83-generic`: the taint flags before the kernel version
# (or at the line's end: a paste's wrap, trimmed, cut the line there; or RHEL 6's `----` after it)
_TAINT = lazy_re(r"\bTainted: ([A-Z ]*?[A-Z])(?:\s+[-\d]|\s*$)", re.MULTILINE)
_COMM = lazy_re(r"\b[Cc]omm: (\S+)")
_REPORT_LINES = 80


@dataclass(frozen=True)
class KernelCrash:
    """One kernel crash report that names the NVIDIA driver: its first line, the process it hit,
    the taint flags, why it is the driver's (a module named, or the proprietary taint), and
    whether it was logged before the log's last reboot (a boot the box has since left)."""

    line: str
    process: str
    taint: str
    nvidia_named: bool
    earlier_boot: bool = False


def nvidia_crashes(text: str) -> list[KernelCrash]:
    """The kernel crash reports of `text` that name an nvidia module or a kernel tainted by a
    proprietary one (`P`), in order, each marked where it was logged before the last reboot; the
    log's lines read as the kernel log reader reads them (a wrap's pieces joined:
    facts/kernel_text.kernel_lines)."""
    lines = kernel_lines(text)
    found_at: list[tuple[KernelCrash, int]] = []
    boots = BootCounter()
    until = 0  # (the lines of the report read last: its `Oops: ... [#1]` line is its own, no new one)
    for at, line in enumerate(lines):
        boots.read(line)
        found = _CRASH.search(line) if at >= until and not _USER.search(line) else None
        if found is None:
            continue
        report = [line]
        for after in lines[at + 1 : at + _REPORT_LINES]:
            ends = _CRASH.search(after) and not (_OOPS.search(after) or _PANIC.search(after))
            if ends or _END.search(after):
                break
            report.append(after)
        until = at + len(report)
        crash = _crash(line, found.start(), report)
        if crash is not None:
            found_at.append((crash, boots.boot))
    last = boots.boot if boots.disorder is None else 0  # (pieces out of order: not known)
    return [replace(c, earlier_boot=boot < last) for c, boot in found_at]


def _crash(line: str, start: int, report: list[str]) -> KernelCrash | None:
    """The crash whose first line is `line` (its words from `start`) and whose report is `report`,
    where it names an nvidia module (its RIP or trace) or its CPU line says the proprietary
    taint; None otherwise. Taint and process are read from the crash's own CPU line only."""
    cpu = next((r for r in report if _CPU_LINE.search(r)), "")
    taint, comm = _TAINT.search(cpu), _COMM.search(cpu)
    flags = taint.group(1) if taint else ""
    named = any(_NVIDIA_NAMED.search(r) for r in report if not _MODULES.search(r))
    if not named and "P" not in flags:
        return None
    message = " ".join([KERNEL_STAMP.sub("", line[:start], count=1).strip(), line[start:]]).strip()
    return KernelCrash(" ".join(message.split())[:200], comm.group(1) if comm else "", flags, named)


def crash_sentence(crash: KernelCrash) -> str:
    """'a kernel crash (Oops) in the log: `general protection fault, ...` (process ufep; kernel
    tainted P OE: a proprietary module loaded, on a GPU box most often NVIDIA's)'."""
    why = "its report names an nvidia module" if crash.nvidia_named else ""
    if crash.taint:
        flags = " ".join(crash.taint.split())
        taint = f"kernel tainted {flags}: a proprietary module loaded, on a GPU box most often NVIDIA's"
        why = f"{why}; {taint}" if why else taint
    process = f"process {crash.process}" if crash.process else ""
    said = "; ".join(filter(None, [process, why]))
    before = " (logged before the log's last reboot)" if crash.earlier_boot else ""
    what = "a kernel panic" if _PANIC.match(crash.line) else "a kernel crash (Oops)"
    return f"{what} in the log: `{crash.line}`{before}" + (f" ({said})" if said else "")


def first_crash(text: str) -> str:
    """The first kernel crash line of `text` (an Oops, a BUG, a panic), whatever module it names,
    its words from the crash's own (`Kernel panic - not syncing: ...`); "" where none."""
    for line in kernel_lines(text):
        if (found := _CRASH.search(line)) is not None and not _USER.search(line):
            return " ".join(line[found.start() :].split())[:200]
    return ""


# a line of a fault's dump, after the log's stamp and head: a stack frame (`? _nv013207rm+0x2c5/
# 0x5b0 [nvidia]`, ` [<ffffffffc0b44945>] ...`), a raw stack word (`000000000ee779df:
# ffffffffc0b44945 (_nv013207rm+0x2c5/0x5b0 [nvidia])`, `00000000d2f014e1: 0000000000000002
# (0x2)`), the trace's own head, a register line (`RSP: 0018:...`, `RAX: ...`), or dump_stack()'s
# head before its trace (`CPU: 8 UID: 0 PID: 1185 Comm: nv_queue Tainted: G W OE 6.16.3`,
# `Tainted: [W]=WARN, ...`, `Hardware name: ...`, `Workqueue: ...`)
_DUMP_LINE = re.compile(
    r"^(?:\? )?(?:\[<[0-9a-f]+>\] )?[\w.]+\+0x[0-9a-f]+/0x[0-9a-f]+\b|^[0-9a-f]{8,16}: [0-9a-f]{1,16}\b"
    r"|^(?:Call Trace|<TASK>|</TASK>|<IRQ>|</IRQ>)|^R[A-Z0-9]{1,2}: [0-9a-f]{4}\b|^(?:RIP|Code|Stack):"
    r"|^CPU: \d+ (?:UID: \d+ )?PID: \d+ Comm: |^Tainted: \[|^Hardware name: |^Workqueue: "
)
# a line of the NVIDIA driver's own multi-line report after its head (an Xid 119's GSP RPC timeout
# report, a GSP crash's): its indented body (`NVRM:     -7    4102 OS_ERROR_LOG ...`, the RPC
# history's rows and header, `NVRM:         0x0000000001b4acb0` stack words, `NVRM:     PC
# Trace:`, register states), also where a paste collapsed its spaces (a row `NVRM: -7 4102
# OS_ERROR_LOG`, a word `NVRM: 0x0000000001b4acb0`), and the report's own section heads
# (`NVRM: GPU4 GSP RPC buffer contains ...`, `NVRM: GPU4 RPC history (CPU -> GSP):`)
_DRIVER_REPORT = re.compile(
    r"^NVRM:(?:\s{4,}\S|\s+-?\d+\s+\d+\s+[A-Z][A-Z0-9_]+\b|\s+0x[0-9a-f]{8,}\b|\s+entry\s+function\b"
    r"| (?:GPU\d+ )?(?:GSP RPC buffer contains|RPC (?:event )?history\b))"
)
# a frame of an nvidia module's code
_NVIDIA_FRAME = re.compile(r"[\w.]+\+0x[0-9a-f]+/0x[0-9a-f]+ \[nvidia(?:_uvm|_drm|_modeset|_peermem)?\]")
# a raw stack word cut short: fewer hex digits than a word has, nothing after it; a stack frame
# cut short (`? os_mem_set+0x14/0`, `_issueRpcAndWait+0xdd/`, `rm_ioctl+0x52/0x4f0 [nvi`)
_CUT_WORD = re.compile(
    r"^[0-9a-f]{16}: [0-9a-f]{1,15}$|^(?:\? )?[\w.]+\+0x[0-9a-f]*(?:/(?:0x?)?)?$"
    r"|^(?:\? )?[\w.]+\+0x[0-9a-f]+/0x[0-9a-f]+ \[\w*$"
)


def _message(line: str) -> str:
    """The line's message: after a syslog's or journal's `kernel: `, a `talosctl dmesg` line's
    head (facts/kernel_shapes.talos_head_end), or a dmesg stamp."""
    head = re.search(r"\bkernel: ", line[:100])
    at = head.end() if head is not None else talos_head_end(line)
    if at is not None:
        return line[at:].strip()
    return KERNEL_STAMP.sub("", line, count=1).strip() if KERNEL_STAMP.match(line) else line.strip()


def dump_fragment(text: str) -> str:
    """Why the log read is no evidence of the driver's health where it starts inside a fault's
    dump naming an nvidia module (its frames or stack words, `_nv013207rm+0x2c5/0x5b0 [nvidia]`) or
    inside the driver's own multi-line report (an Xid 119's GSP RPC history rows, a GSP crash's
    stack words): the report's own first lines, an Xid or `GPU has fallen off the bus` among them,
    are before its first line (a paste's excerpt, pop-os/pop#3363's journal, the tail of
    open-gpu-kernel-modules#942's GSP timeout report); "" otherwise. Its last line cut inside a
    stack word or frame is said too."""
    messages = [m for line in kernel_lines(text) if (m := _message(line))]
    dump: list[str] = []
    for message in messages:
        if not (_DUMP_LINE.search(message) or _DRIVER_REPORT.search(message)):
            break
        dump.append(message)
    frame = next((m for m in dump if _NVIDIA_FRAME.search(m) or _DRIVER_REPORT.search(m)), None)
    if frame is None:
        return ""
    shown = " ".join(frame.split())[:100]
    said = f"the log read starts inside a fault's dump in the NVIDIA driver (`{shown}`)"
    # (the text's last line: inside the dump, or the one line after it, cut where a frame is)
    if len(dump) + 1 >= len(messages) and _CUT_WORD.match(messages[-1]):
        said += f" and ends cut inside it (`{messages[-1]}`)"
    return said
