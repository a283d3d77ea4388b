"""A saved file holding a kernel log's lines and another command's output, one after the other,
with no prompt between them (`dmesg | tail` then `nvidia-smi`, pasted as one block: pastebin
jJdbRLSr, measure32c 31): each is read as an output of its own. Before, the file was read as the
other output alone and the kernel's lines, an Xid 79 among them, were dropped without a word.

Only a run at the head or the tail of the text is split off (or both: `dmesg | tail`, the other
output, `dmesg | tail` again, read as one log with the lines between its two runs said left out,
`[...]`: an Xid in either run is judged, and none seen proves nothing), and only where the kernel's
lines are read as a kernel log and the rest, which holds no line of the kernel's, as an output of
another kind: a line of the kernel's is known
by its own marks (a dmesg stamp, a syslog or journal line of `kernel`, an NVRM or SXid line:
api/saved_kinds.log_line, a syslog's other programs' lines taken with them), never by a time alone."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

KERNEL = "kernel_log"


class Piece(NamedTuple):
    """One output of the file: its first and last line numbers (1-based), its text, whether it
    is the kernel log's run of lines, and for a log in two runs the other output's lines between
    them (first, last)."""

    first: int
    last: int
    text: str
    kernel: bool
    gap: tuple[int, int] | None = None


# what stands in a log read in two runs for the lines between them (facts/elision.ELISION's)
LEFT_OUT = "[...]"


def split(
    text: str, kernel_line: Callable[[str], bool], kind_of: Callable[[str], str | None]
) -> list[Piece] | None:
    """The kernel log's run of lines and the other output, in the file's order, where the text
    is one of each (see the module's docstring); None otherwise. `kernel_line(line)`: the line
    is the kernel's by its marks; `kind_of(text)`: the kind a text is read as."""
    lines = text.split("\n")
    filled = [i for i, line in enumerate(lines) if line.strip()]
    if len(filled) < 2:
        return None
    head = _run(lines, filled, kernel_line)
    tail = _run(lines, filled[::-1], kernel_line)
    if head and tail and max(head) < min(tail) and (both := _both(lines, head, tail, kernel_line, kind_of)):
        return both
    for run, at_head in ((head, True), (tail, False)):
        if not run or len(run) == len(filled):
            continue
        inside = "\n".join(lines[min(run) : max(run) + 1]) + "\n"
        rest_lines = lines[max(run) + 1 :] if at_head else lines[: min(run)]
        rest = "\n".join(rest_lines).strip("\n") + "\n"
        if any(kernel_line(line) for line in rest_lines):  # (the kernel's lines on both sides)
            continue
        if kind_of(inside) != KERNEL or kind_of(rest) in (None, KERNEL):
            continue
        log = Piece(min(run) + 1, max(run) + 1, inside, True)
        if at_head:
            other = Piece(max(run) + 2, len(lines) - (not lines[-1].strip()), "\n".join(rest_lines), False)
            return [log, other]
        return [Piece(1, min(run), "\n".join(rest_lines) + "\n", False), log]
    return None


def _both(
    lines: list[str],
    head: list[int],
    tail: list[int],
    kernel_line: Callable[[str], bool],
    kind_of: Callable[[str], str | None],
) -> list[Piece] | None:
    """A kernel log's runs at the head and the tail around one other output that holds no line of
    the kernel's: the log (its two runs, LEFT_OUT between them) and the other output; else None."""
    middle = lines[max(head) + 1 : min(tail)]
    if not any(line.strip() for line in middle) or any(kernel_line(line) for line in middle):
        return None
    log = "\n".join([*lines[min(head) : max(head) + 1], LEFT_OUT, *lines[min(tail) : max(tail) + 1]]) + "\n"
    other = "\n".join(middle).strip("\n") + "\n"
    if kind_of(log) != KERNEL or kind_of(other) in (None, KERNEL):
        return None
    gap = (max(head) + 2, min(tail))
    return [Piece(min(head) + 1, max(tail) + 1, log, True, gap), Piece(*gap, "\n".join(middle), False)]


def _run(lines: list[str], order: list[int], kernel_line: Callable[[str], bool]) -> list[int]:
    """The line indexes, in `order`, of the kernel's lines from the first non-blank line on, up
    to the first that is not one (blank lines inside the run are taken with it)."""
    run: list[int] = []
    for i in order:
        if not kernel_line(lines[i]):
            break
        run.append(i)
    return run


def span(piece: Piece) -> str:
    """The piece's lines, as a sentence names them: `lines 1-3`, `line 4`."""
    if piece.gap is not None:  # (a log in two runs)
        first, last = (
            Piece(piece.first, piece.gap[0] - 1, "", True),
            Piece(piece.gap[1] + 1, piece.last, "", True),
        )
        return f"{span(first)} and {span(last).removeprefix('line ').removeprefix('lines ')}"
    return f"line {piece.first}" if piece.first == piece.last else f"lines {piece.first}-{piece.last}"


def where(path: str, piece: Piece) -> str:
    """How a sentence names a piece: `FILE lines 1-3 (kernel log lines, no prompt above them)`."""
    said = "kernel log lines" if piece.kernel else "the other output"
    return f"{path} {span(piece)} ({said}, no prompt above them)"


def note(path: str, pieces: list[Piece]) -> str:
    """The note saying the file was read as two outputs."""
    log = next(piece for piece in pieces if piece.kernel)
    other = next(piece for piece in pieces if not piece.kernel)
    return (
        f"{path}: a kernel log's lines ({span(log)}) and another output ({span(other)}) with no"
        " prompt between them: each is read as an output of its own"
        + (", the log's lines between its two runs left out." if log.gap is not None else ".")
    )
