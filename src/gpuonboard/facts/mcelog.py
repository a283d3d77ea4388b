"""mcelog's records of machine checks (`mcelog --client`, `mcelog --ascii`, `/var/log/mcelog`, the
mcelog daemon's syslog lines), read as the kernel's own lines of them (facts/kernel_shapes.py):

    Hardware event. This is not a software error.
    MCE 0
    CPU 3 BANK 1
    MISC 86 ADDR 1424bd400
    TIME 1415556598 Sun Nov  9 19:09:58 2014
    MCi status:
    Uncorrected error
    ...
    STATUS bf80000000000124 MCGSTATUS 0

The kernel logs only `mce: [Hardware Error]: Machine check events logged` where it handed records
to mcelog: what they were is in mcelog's output, which host_hw_errors asks for (measure35d 26: the
mcelog output beside such a syslog was refused, and the folder with it). Each record's CPU, bank
and STATUS are the kernel's `mce: [Hardware Error]: CPU 3: Machine Check: 0 Bank 1:
bf80000000000124` line (mce_dump_record), stamped with the record's TIME in dmesg -T's shape: the
readers judge its status as they judge the kernel's (its UC bit, bit 61, fails; a memory
controller's corrected error counts as EDAC's). A record of no bank (`CPU 0 THERMAL EVENT`) is no
machine check of a bank: left out."""

from __future__ import annotations

import re
from dataclasses import replace

from gpuonboard.facts.probe import ProbeOutput
from gpuonboard.once import lazy_re

__all__ = ["joined_mcelog", "mcelog_as_kernel", "mcelog_only"]

# the disclaimer mcelog prints above each record (mcelog.c, disclaimer())
_DISCLAIMER = "Hardware event. This is not a software error."
# a record's line, after a syslog's or journal's head of the mcelog daemon where it logged there
_HEAD = r"^\s*(?:[^\n]{0,80}?\bmcelog(?:\[\d+\])?:\s*)?"
_CPU_BANK = lazy_re(_HEAD + r"CPU (\d+) BANK (\d+)\b")
_TIME = lazy_re(_HEAD + r"TIME \d+ (\w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4})\b")
_STATUS = lazy_re(_HEAD + r"STATUS ([0-9a-fA-F]{1,16})\b")
# a line of the kernel's own log (a stamp at its head, or a syslog's `kernel:`)
_KERNEL = re.compile(r"^\s*\[\s*\+?\d+\.\d+\]|\bkernel: ")


def mcelog_as_kernel(text: str) -> str | None:
    """`text` with each mcelog record's STATUS line as the kernel's line of that machine check
    (module doc); of a text of mcelog's output alone, those lines alone. None where the text
    holds no whole mcelog record (its disclaimer, a `CPU N BANK M` line, then its STATUS)."""
    if _DISCLAIMER not in text:
        return None
    lines = text.split("\n")
    out: list[str] = []
    cpu_bank: tuple[str, str] | None = None
    when = ""
    found = 0
    mixed = any(_KERNEL.search(line) for line in lines)  # (a syslog the daemon logged to: kept)
    for line in lines:
        if m := _CPU_BANK.match(line):
            cpu_bank, when = (m.group(1), m.group(2)), ""
        elif (m := _TIME.match(line)) and cpu_bank is not None:
            when = f"[{m.group(1)}] "
        elif (m := _STATUS.match(line)) and cpu_bank is not None:
            cpu, bank = cpu_bank
            status = m.group(1).lower().zfill(16)
            out.append(f"{when}mce: [Hardware Error]: CPU {cpu}: Machine Check: 0 Bank {bank}: {status}")
            cpu_bank, found = None, found + 1
            continue
        if mixed:
            out.append(line)
    if not found:
        return None
    return "\n".join(out) + "\n"


def mcelog_only(text: str) -> bool:
    """Whether `text` is mcelog's output alone (its records, no kernel line beside them)."""
    return mcelog_as_kernel(text) is not None and not any(_KERNEL.search(line) for line in text.split("\n"))


def joined_mcelog(kind: str, first: ProbeOutput, then: ProbeOutput) -> ProbeOutput | None:
    """A kernel log and mcelog's output given beside it (either order): the kernel log, with the
    mcelog records beside it (ProbeOutput.beside: their machine checks read as this boot's host
    errors, facts/host_errors via steps/checks/fabric_health). None for any other two."""
    if kind != "kernel_log":
        return None
    if mcelog_only(then.stdout) and not mcelog_only(first.stdout):
        return replace(first, beside=(*first.beside, then))
    if mcelog_only(first.stdout) and not mcelog_only(then.stdout):
        return replace(then, beside=(*then.beside, first))
    return None
