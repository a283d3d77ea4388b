"""Kernel crashes (an Oops) in a kernel log that name the NVIDIA driver: a `general protection
fault`, `BUG: unable to handle ...`, `Oops: ...` or `kernel BUG at ...` line whose report (the
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
    r"|kernel BUG at \S|Oops: [0-9a-fx]+ \[#\d+\]|Oops: \d{4}\b)"
)
_USER = re.compile(r"\btraps: \S+\[\d+\]")
# where a crash's report ends: its `---[ end trace`, or another report's start (a hung task's
# `INFO: task`, a `WARNING:`, a `cut here` line)
_END = lazy_re(r"---\[ end trace\b|\bINFO: task\b|\bWARNING: |\bcut here\b")
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
            if (_CRASH.search(after) and not _OOPS.search(after)) or _END.search(after):
                break
            report.append(after)
        until = at + len(report)
        crash = _crash(line, found.start(), report)
        if crash is not None:
            found_at.append((crash, boots.boot))
    return [replace(c, earlier_boot=boot < boots.boot) for c, boot in found_at]


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
    return f"a kernel crash (Oops) in the log: `{crash.line}`{before}" + (f" ({said})" if said else "")


# a line of a fault's dump, after the log's stamp and head: a stack frame (`? _nv013207rm+0x2c5/
# 0x5b0 [nvidia]`, ` [<ffffffffc0b44945>] ...`), a raw stack word (`000000000ee779df:
# ffffffffc0b44945 (_nv013207rm+0x2c5/0x5b0 [nvidia])`, `00000000d2f014e1: 0000000000000002
# (0x2)`), the trace's own head, or a register line (`RSP: 0018:...`, `RAX: ...`)
_DUMP_LINE = re.compile(
    r"^(?:\? )?(?:\[<[0-9a-f]+>\] )?[\w.]+\+0x[0-9a-f]+/0x[0-9a-f]+\b|^[0-9a-f]{8,16}: [0-9a-f]{1,16}\b"
    r"|^(?:Call Trace|<TASK>|</TASK>|<IRQ>|</IRQ>)|^R[A-Z0-9]{1,2}: [0-9a-f]{4}\b|^(?:RIP|Code|Stack):"
)
# a frame of an nvidia module's code
_NVIDIA_FRAME = re.compile(r"[\w.]+\+0x[0-9a-f]+/0x[0-9a-f]+ \[nvidia(?:_uvm|_drm|_modeset|_peermem)?\]")
# a raw stack word cut short: fewer hex digits than a word has, nothing after it
_CUT_WORD = re.compile(r"^[0-9a-f]{16}: [0-9a-f]{1,15}$")


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
    dump naming an nvidia module (its frames or stack words, `_nv013207rm+0x2c5/0x5b0 [nvidia]`):
    the fault's own first lines, an Xid or `GPU has fallen off the bus` among them, are before
    its first line (a paste's excerpt, pop-os/pop#3363's journal); "" otherwise. Its last line
    cut inside a stack word is said too."""
    messages = [m for line in kernel_lines(text) if (m := _message(line))]
    dump: list[str] = []
    for message in messages:
        if not _DUMP_LINE.search(message):
            break
        dump.append(message)
    if not dump or not any(_NVIDIA_FRAME.search(m) for m in dump):
        return ""
    frame = next(m for m in dump if _NVIDIA_FRAME.search(m))
    said = f"the log read starts inside a fault's dump in the NVIDIA driver (`{frame[:100]}`)"
    if len(dump) == len(messages) and _CUT_WORD.match(messages[-1]):
        said += f" and ends cut inside it (`{messages[-1]}`)"
    return said
