"""A saved output whose long lines a terminal, a chat or a page wrapped at its width, read with
each line whole again: one mechanism for the outputs whose lines each start in a way the tool
prints (`lscpu`'s `Label:`, `free`'s `Mem:`), so a piece that does not is the rest of the line
before it. Before, a wrap inside a number was read as the number's first digits: `CPU(s): 6` /
`4` was 6 CPUs of a 64-core EPYC (cpu_cores failed "fewer CPUs than ordered"), a `free -b`
wrapped at 20 columns 13.5 GB of a 135 GB box."""

from __future__ import annotations

from collections.abc import Callable


def join_wrap(line: str, width: int) -> str:
    """A line whose pieces are joined by `\\0`, whole: each piece after one `width` long (the wrap
    cut a word or a number) glued on, others after a space (the wrap broke at a space); `width`
    0 (a word wrap): every piece after a space."""
    pieces = line.split("\0")
    joined = pieces[0]
    for piece in pieces[1:]:
        glued = width and len(joined) % width == 0 and len(joined) >= width
        joined += piece if glued else " " + piece
    return joined


def wrap_width(widths: list[int]) -> int:
    """The column a wrap cut its lines at, from the lengths of the pieces it ended (`widths`): a
    terminal's or a page's wrap at a column leaves most of them that long, the widest; a mail's or
    an editor's word wrap breaks each at the last space before its width, so their lengths vary:
    0, every piece was a word's start (before, its pieces that happened to be as long as most
    were glued on: `NVRM: installed in this systemis not supported`, and the driver's message
    was not recognised)."""
    widest = max(widths)
    return widest if widths.count(widest) * 2 >= len(widths) else 0


def rejoined(lines: list[str], starts: Callable[[str], bool]) -> list[str]:
    """`lines` with each line that `starts` says the tool does not start a line with joined to the
    line before it; the first line, a blank line and the line after a blank one are lines of their
    own. The width the wrap cut at is the length most lines followed by a piece share."""
    out: list[str] = []
    widths: list[int] = []
    for line in lines:
        if out and out[-1].strip() and line.strip() and not starts(line):
            widths.append(len(out[-1].rpartition("\0")[2]))  # (the piece the wrap ended)
            out[-1] += "\0" + line
        else:
            out.append(line)
    if not widths:
        return out
    width = wrap_width(widths)
    return [join_wrap(line, width) for line in out]


def all_wraps(lines: list[str], own: list[bool]) -> bool:
    """True when every line that is not a line of its own (`own`), after the first that is, is
    where a wrap put it: the line before could not hold its first word (after a blank or two)
    within the text's widest line. A line wrapped twice or more (or a kernel log's indented
    continuation lines, wrapped too) leaves fewer lines of their own than pieces; a line after a
    short one is no piece."""
    widest = max(map(len, lines), default=0)
    seen = False
    for before, line, whole in zip(["", *lines], lines, own, strict=False):
        seen = seen or whole
        # (2: the break may have dropped two blanks, as the driver prints after `Kernel Module`)
        if seen and not whole and len(before.rstrip()) + 2 + len(line.split(maxsplit=1)[0]) <= widest:
            return False
    return True
