"""A saved kernel log whose lines a page, a chat or a mail wrapped at its width, read with each
line whole again (facts/wrapped.py's mechanism, for a log's own marks of a line: its stamp, its
continuation indent). Before, a log with fewer stamped lines than pieces (a line wrapped twice,
journalctl's indented continuation lines wrapped too) was read unjoined, and the driver's
messages it held were not recognised: gpu_xid passed "no Xid in the kernel log"."""

from __future__ import annotations

import re

from gpuonboard.facts.elision import elided_line
from gpuonboard.facts.kernel_cut import says_nothing
from gpuonboard.facts.wrapped import all_wraps, join_wrap, wrap_width
from gpuonboard.once import lazy_re

# the live probe's header lines (`# source:`, `# first:`, `# dropped:`): no line of the log
PROBE_HEADER = re.compile(r"^# (source|first|dropped): ?(.*)$")
# journalctl's line between two boots' entries: `-- Reboot --` (systemd up to v246), `-- Boot
# <boot id> --` (v247+, systemd pull request #17475)
BOOT_SEPARATOR = re.compile(r"-- (?:Reboot|Boot [0-9a-f]{32}) --", re.IGNORECASE)


# the prefix a kernel log line starts with (api/offline.py recognises a saved log by it):
# dmesg's stamps (`[  12.3]`, `[+0.000040]`, -d's `[  12.3 <    0.000040>]`, --time-format=delta's
# `[<    0.000040>]`, -T's `[Tue Nov 11 23:25:43 2025]`, -H's
# `[Nov18 10:51]`), --decode's `kern  :warn  : `, ISO times, and a syslog / journalctl line's
# `... host kernel: ` (or `kernel: ` alone)
KERNEL_STAMP = re.compile(
    r"\[\s*\+?\d+\.\d+(?:\s*<\s*\d+\.\d+>)?\]|\[<\s*\d+\.\d+>\]"
    r"|\[\w{3} \w{3} [ \d]\d [\d:]{8} \d{4}\]|\[\w{3} ?[ \d]?\d \d\d:\d\d\]"
    r"|kern\s*:\w+\s*:|\d{4}-\d\d-\d\dT\d\d:\d\d|[^\n]{0,60}?\bkernel: "
)
# a syslog's or journal's time before the host: syslog's and journalctl's `Sep 23 18:37:03`
# (`-o short-precise` `.123456`), `-o short-iso`'s, `-o short-full`'s `Tue 2020-09-23 18:37:03 UTC`,
# `-o short-unix`'s `1600886223.123456`
_JOURNAL_STAMP = (
    r"(?:\w{3} [ \d]\d \d\d:\d\d:\d\d(?:\.\d+)?|\d{4}-\d\d-\d\dT[\d:.,+\-Z]+"
    r"|\w{3} \d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? [\w+\-]+|\d{9,11}\.\d{6})"
)
# `journalctl -o short-monotonic`'s `[   34.193735] host kernel: ` and, with its process id (a
# kernel line never has one there; `[ 1.2] NVRM kgspInitRm_IMPL: ...` is the kernel's), another
# program's `[   35.000000] host sudo[40301]: `
# (`-o short-delta` adds ` <    0.806265>` inside the brackets)
_MONOTONIC = r"\[\s*\d+\.\d{6}(?:\s*<\s*\d+\.\d{6}>)?\] "
_PROGRAM = r"(kernel|[^\s:\[]+(?=\[\d+\]: ))(?:\[\d+\])?: "
_MONOTONIC_PROGRAM = rf"{_MONOTONIC}[^\s:\[\]]+ {_PROGRAM}"
# the same journal's line with `--no-hostname` (`[   35.000000] sudo[40301]: `): a dmesg line
# of that shape (`[ 1843.5] python3[1234]: segfault at 0 ...`) is the kernel's, so it is read so
# only in a log known to be such a journal (monotonic_journal)
_MONOTONIC_BARE = re.compile(rf"{_MONOTONIC}{_PROGRAM}")
# a log's line that says it is such a journal: the kernel's lines name their program, `kernel:`
_MONOTONIC_KERNEL = re.compile(rf"{_MONOTONIC}(?:[^\s:\[\]]+ )?kernel: ")
_MONOTONIC_HOSTED = re.compile(_MONOTONIC_PROGRAM)
# a syslog's or a whole journal's line of any program (`Sep 23 18:37:03 host gdm-x-session[3434]: `,
# `... systemd[1]: `): beside the kernel's in /var/log/syslog or `journalctl` without `-k`, a
# line of its own, never the rest of the kernel line above it
SYSLOG_LINE = re.compile(rf"{_JOURNAL_STAMP} \S+ [^\s:\[]+(?:\[\d+\])?: |{_MONOTONIC_PROGRAM}")
# a syslog's or a journal's (short, short-precise, short-iso, short-full, short-unix,
# short-monotonic) line and its program: a line of
# another program than `kernel` is that program's, whatever its message quotes (a sudo line whose
# COMMAND is `grep NVRM: /var/log/kern.log`, a health checker's `NVRM: no errors reported`):
# never a kernel line, never an Xid. (The host holds no colon: `dmesg --time-format iso`'s
# `2025-10-02T10:15:40,123456+00:00 NVRM: nvAssertFailed: ...` is the kernel's, no program's)
_SYSLOG_PROGRAM = re.compile(rf"{_JOURNAL_STAMP} [^\s:]+ ([^\s:\[]+)(?:\[\d+\])?: ")
# (short-monotonic's and short-delta's: program_of)
# a syslog or journal line's host, before its program (`Dec  7 10:48:02 gpu-b kernel: `)
_SYSLOG_HOST = lazy_re(rf"{_JOURNAL_STAMP} ([^\s:]+) [^\s:\[]+(?:\[\d+\])?: ")


def host_of(line: str) -> str | None:
    """The host a syslog or journal line names (`gpu-b` of `Dec  7 10:48:02 gpu-b kernel: ...`);
    None for a line that names none (dmesg's)."""
    m = _SYSLOG_HOST.match(line.strip())
    return None if m is None else m.group(1)


def program_of(line: str, monotonic: bool | None = None) -> str | None:
    """The program of a syslog or journal line (`kernel`, `sudo`); None for a line of no program.
    `monotonic`: whether the log is a `journalctl -o short-monotonic` / `short-delta`
    (monotonic_journal): True, its lines without a host are read too; False, a dmesg, whose
    `[stamp] word prog[pid]: ` line is the kernel's (no program); None, not known: with a host."""
    line = line.strip()
    if m := _SYSLOG_PROGRAM.match(line):
        return m.group(1)
    if monotonic is False:
        return None
    m = _MONOTONIC_HOSTED.match(line) or (_MONOTONIC_BARE.match(line) if monotonic else None)
    return None if m is None else m.group(1)


def other_program(line: str, monotonic: bool | None = None) -> bool:
    """The line is a syslog or journal line of another program than the kernel (program_of)."""
    return program_of(line, monotonic) not in (None, "kernel")


def monotonic_journal(lines: list[str]) -> bool:
    """Whether a log stamped in seconds since boot is `journalctl -o short-monotonic` (or
    `short-delta`), whose lines name their program, rather than dmesg: some line of the kernel's
    says `kernel:` after its stamp, or no such stamped line is a dmesg line (each names a program
    with its process id: a journal of other programs only)."""
    stamped = [line.strip() for line in lines if re.match(_MONOTONIC, line.strip())]
    return (
        any(_MONOTONIC_KERNEL.match(line) for line in stamped)
        or bool(stamped)
        and all(_MONOTONIC_HOSTED.match(line) or _MONOTONIC_BARE.match(line) for line in stamped)
    )


def unwrapped(lines: list[str], open_end: bool = False, words: dict[str, str] | None = None) -> list[str]:
    """The log's lines with a paste's wrap undone: in a log whose lines mostly start with a
    stamp, or whose every other line is where a wrap put it (facts/wrapped.py all_wraps: lines
    wrapped twice, journalctl's indented lines wrapped too), a line with neither a stamp nor
    dmesg's indent is the rest of the line before it (a mail or chat wrapped it at its width; a
    wrap at a column split a word, a word wrap broke at a space: wrap_width). Unchanged when the
    log is not stamped (`dmesg -t`). An indented line after one that ends in a blank (the wrap
    cut inside a run of blanks; no kernel line ends so) is a piece too. `open_end`:
    the last line has no newline: where it says nothing yet (a stamp cut short), it is a line of
    its own."""
    filled = [line for line in lines if line.strip()]
    # (a line after a blank one starts a paste's next excerpt, no wrap's piece: measure35d 14's
    # ` 4428.423595] bond0: ...` after three blank lines, its `[` lost, was read into the SXid above)
    after_blank = [i > 0 and not lines[i - 1].strip() for i, line in enumerate(lines) if line.strip()]
    # (journalctl's line between two boots is a line of its own too)
    starts = [
        bool(KERNEL_STAMP.match(line) or SYSLOG_LINE.match(line) or BOOT_SEPARATOR.fullmatch(line.strip()))
        for line in filled
    ]
    if not any(starts) or (
        sum(starts) * 2 < len(filled) and not all_wraps(filled, own_lines(filled, starts))
    ):
        return lines
    if open_end and filled and says_nothing(filled[-1], words):
        starts[-1] = True
    out: list[str] = []
    can_join = False
    wrapped: list[int] = []
    for line, stamped, fresh in zip(filled, starts, after_blank, strict=True):
        # (a line the wrap cut inside a run of blanks ends in one: the indented line after it is
        # its rest, not dmesg's indent: `Tainted: P       ` / `    OE     5.15.0-83-generic`)
        cut_in_blanks = can_join and out[-1][-1:].isspace()
        # (a poster's `...` for lines left out is a line of its own, never a wrap's piece)
        elided = elided_line(line)
        if (
            stamped
            or (indented(line) and not cut_in_blanks)
            or not can_join
            or PROBE_HEADER.match(line)
            or elided
            or fresh
        ):
            out.append(line)
            can_join = (stamped or (can_join and indented(line))) and not elided
            continue
        wrapped.append(len(out[-1].rpartition("\0")[2]))  # (the piece the wrap ended)
        out[-1] += "\0" + line
    if not wrapped:
        return out
    return [join_wrap(line, wrap_width(wrapped)) for line in out]


def indented(line: str) -> bool:
    """dmesg's or journalctl's indent of a continuation line (the stamp's or prefix's width), not
    the blank a wrap left at a piece's start (`580.xx` / ` Legacy drivers`)."""
    return len(line) - len(line.lstrip()) >= 4


def own_lines(filled: list[str], starts: list[bool]) -> list[bool]:
    """Lines of their own: stamped, indented (dmesg's, journalctl's continuation) or a header."""
    return [
        s or indented(line) or bool(PROBE_HEADER.match(line)) for line, s in zip(filled, starts, strict=True)
    ]
