"""Kernel crashes (an Oops) in a kernel log that name the NVIDIA driver: a `general protection
fault`, `BUG: unable to handle ...`, `Oops: ...` or `kernel BUG at ...` line whose report (the
lines after it, up to the next crash or its `---[ end trace`) names an nvidia module (`[nvidia]`,
`nvidia_uvm` in its trace or its `Modules linked in:`) or a kernel tainted by a proprietary
module (`Tainted: P`, which on a GPU box is the NVIDIA driver's mark). No Xid is logged for such a
crash, yet the box faulted (NVIDIA/k8s-device-plugin#941: a general protection fault in
__kmalloc, `Tainted: P OE`, on an RTX 4090 box). Pure: no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpuonboard.facts.kernel_log import kernel_lines
from gpuonboard.facts.kernel_wrap import KERNEL_STAMP

# the first line of a kernel crash report (arch/x86/kernel/traps.c, mm/fault.c's page fault
# report, lib/bug.c), after the log's stamp
_CRASH = re.compile(
    r"(?:general protection fault\b|BUG: unable to handle\b|BUG: kernel NULL pointer dereference\b"
    r"|kernel BUG at \S|Oops: [0-9a-fx]+ \[#\d+\]|Oops: \d{4}\b)"
)
_END = re.compile(r"---\[ end trace\b")
# the Oops line a page fault's or a BUG's report goes on with (`Oops: 0000 [#1] SMP NOPTI`)
_OOPS = re.compile(r"\bOops: ")
# the nvidia modules named in the report: a symbol's module in the trace or RIP (`[nvidia]`,
# `[nvidia_uvm]`), or `Modules linked in:` listing them
_NVIDIA_NAMED = re.compile(r"\[nvidia(?:_uvm|_drm|_modeset|_peermem)?\]|Modules linked in:.*\bnvidia")
# `Tainted: P           OE     5.15.0-83-generic`: the taint flags before the kernel version
# (or at the line's end: a paste's wrap, trimmed, cut the line there)
_TAINT = re.compile(r"\bTainted: ([A-Z ]*?[A-Z])(?:\s+\d|\s*$)", re.MULTILINE)
_COMM = re.compile(r"\bComm: (\S+)")
_REPORT_LINES = 80


@dataclass(frozen=True)
class KernelCrash:
    """One kernel crash report that names the NVIDIA driver: its first line, the process it hit,
    the taint flags, and why it is the driver's (a module named, or the proprietary taint)."""

    line: str
    process: str
    taint: str
    nvidia_named: bool


def nvidia_crashes(text: str) -> list[KernelCrash]:
    """The kernel crash reports of `text` that name an nvidia module or a kernel tainted by a
    proprietary one (`P`), in order; the log's lines read as the kernel log reader reads them
    (a wrap's pieces joined: facts/kernel_log.kernel_lines)."""
    lines = kernel_lines(text)
    out = []
    until = 0  # (the lines of the report read last: its `Oops: ... [#1]` line is its own, no new one)
    for at, line in enumerate(lines):
        found = _CRASH.search(line) if at >= until else None
        if found is None:
            continue
        report = [line]
        for after in lines[at + 1 : at + _REPORT_LINES]:
            if (_CRASH.search(after) and not _OOPS.search(after)) or _END.search(after):
                break
            report.append(after)
        until = at + len(report)
        said = "\n".join(report)
        taint = _TAINT.search(said)
        flags = taint.group(1) if taint else ""
        named = _NVIDIA_NAMED.search(said) is not None
        if named or "P" in flags:
            comm = _COMM.search(said)
            message = KERNEL_STAMP.sub("", line[: found.start()], count=1).strip() + line[found.start() :]
            process = comm.group(1) if comm else ""
            out.append(KernelCrash(" ".join(message.split())[:200], process, flags, named))
    return out


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
    return f"a kernel crash (Oops) in the log: `{crash.line}`" + (f" ({said})" if said else "")
