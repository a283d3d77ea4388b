"""Whether a saved log is a pager's screen, not the whole output (facts/kernel_log.py,
KernelLog.paged): journalctl pipes its output to `less` (`-FRSXMK`: the long prompt), whose
status line a copy from the terminal takes in with the lines above it:

    lines 101434-101480/101480 (END)      (lines A-B of N: the screen shows lines A to B)
    lines 1-52/1234 4%                    (the first screen of a longer output)
    byte 2048/31337 6%                    (less without line numbers: a byte offset)
    (END)   42%   --More--(42%)           (less's short prompt, more's)

A screen that starts after line 1 holds no line above it, one that ends before line N none below
it: what it shows is a tail or a head of the log, as `| tail` or `| head` keeps (m35d 20: a
journal's last 47 of 101,480 lines, 2 of them the kernel's, passed "no Xid in the kernel log").
Several screens copied one after the other are whole where their lines together run from 1 to N.
A prompt without line numbers (`byte N`, `N%`, `--More--`, `(END)` alone) does not say where the
screen starts: a log whose first line is its boot's first (`starts_at_boot`) is then whole only
where the prompt says the end too (`(END)`, `100%`)."""

from __future__ import annotations

import re

__all__ = ["pager_view"]

# less's long prompt (`-M`): `lines A-B/N`, then `(END)` or `P%`; `lines A-B` where the count is
# not known yet; a `:` before it where the short prompt was kept
_LINES = re.compile(
    r"^:?\s*lines\s+(\d+)-(\d+)(?:/(\d+))?(?:\s+(?:byte\s+\d+(?:/\d+)?\s*)?(?:\(END\)|\d+%))?\s*$"
)
# a prompt that names no line: `byte N[/M] [P%]`, `P%`, `(END)`, more's `--More--(P%)`
_OTHER = re.compile(
    r"^:?\s*(?:byte\s+\d+(?:/\d+)?(?:\s+(\d+)%)?|(\d+)%|\(END\)|--More--(?:\s*\((\d+)%\))?)\s*$"
)


def _lines_view(ranges: list[tuple[int, int, int | None]], marker: str) -> str:
    """Why the screens `ranges` (A, B, N of each `lines A-B/N`) are not the whole output; ""."""
    seen = sorted((a, b) for a, b, _ in ranges)
    total = next((n for _, _, n in ranges if n is not None), None)
    reach = 0
    for a, b in seen:
        if a > reach + 1:
            break
        reach = max(reach, b)
    else:
        if seen[0][0] == 1 and total is not None and reach >= total:
            return ""
    first, last = seen[0][0], max(b for _, b in seen)
    shown = f"lines {first}-{last}" + (f" of {total}" if total is not None else "")
    return (
        f"it is a pager's screen of {shown} (`{marker}`), not the whole output:"
        " the lines of the log it did not show are not in it"
    )


def pager_view(lines: list[str], starts_at_boot: bool = False) -> str:
    """Why the log `lines` is a pager's screen and not the whole output, "" where it is not one
    or its screens show every line (module doc)."""
    ranges: list[tuple[int, int, int | None]] = []
    marker = other = ""
    ended = False
    for line in lines:
        text = line.strip()
        if len(text) > 48 or not text or not (text[0] in "lb:(-" or text[0].isdigit()):
            continue
        if m := _LINES.match(text):
            ranges.append((int(m.group(1)), int(m.group(2)), int(m.group(3)) if m.group(3) else None))
            marker = marker or text
        elif m := _OTHER.match(text):
            percent = next((p for p in m.groups() if p is not None), None)
            ended = ended or text.endswith("(END)") or percent == "100"
            other = other or text
    if ranges:
        return _lines_view(ranges, marker)
    if not other or (starts_at_boot and ended):
        return ""
    return (
        f"it is a pager's screen (`{other}`), not the whole output: the prompt does not say which"
        " lines of the log it showed, and those it did not show are not in it"
    )
