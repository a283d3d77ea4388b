"""A saved file holding a kernel log's lines and another command's output, one after the other,
with no prompt between them (`dmesg | tail` then `nvidia-smi`, pasted as one block: pastebin
jJdbRLSr, measure32c 31): each is read as an output of its own. Before, the file was read as the
other output alone and the kernel's lines, an Xid 79 among them, were dropped without a word.

Only a run at the head or the tail of the text is split off, or both (`dmesg | tail`, the other
output, `dmesg | tail` again: one log with the lines between its two runs said left out, `[...]`;
an Xid in either run is judged, and none seen proves nothing). One mechanism reads the three: the
log is its runs of lines, the other output the one stretch beside or between them. Only where the
kernel's lines are read as a kernel log and the rest, which holds no line of the kernel's, as an
output of another kind: a line of the kernel's is known by its own marks (a dmesg stamp, a syslog
or journal line of `kernel`, an NVRM or SXid line: api/saved_kinds.log_line, a syslog's other
programs' lines taken with them), never by a time alone."""

from __future__ import annotations

import itertools
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
    runs = [run for run in (_run(lines, filled, kernel_line), _run(lines, filled[::-1], kernel_line)) if run]
    spans = sorted({(min(run), max(run)) for run in runs})
    if not spans or (len(spans) == 2 and spans[0][1] >= spans[1][0]):
        return None  # (no kernel line at either end, or the kernel's lines only)
    return _pieces(lines, spans, kernel_line, kind_of)


def _pieces(
    lines: list[str],
    spans: list[tuple[int, int]],
    kernel_line: Callable[[str], bool],
    kind_of: Callable[[str], str | None],
) -> list[Piece] | None:
    """The log (its runs of lines, `spans`: first and last indexes, LEFT_OUT between two) and the
    other output, the one stretch of lines beside or between them that holds a line, none of
    them the kernel's, in the file's order; None where the log is not read as a kernel log or
    the other as an output of another kind."""
    bounds = [-1, *(i for span in spans for i in span), len(lines)]
    stretches = [(bounds[k] + 1, bounds[k + 1]) for k in range(0, len(bounds), 2)]  # (first, end)
    other = [(a, b) for a, b in stretches if any(line.strip() for line in lines[a:b])]
    if len(other) != 1 or any(kernel_line(line) for line in lines[other[0][0] : other[0][1]]):
        return None
    a, b = other[0]
    runs = [lines[first : last + 1] for first, last in spans]
    log = "\n".join(runs[0] + [line for run in runs[1:] for line in (LEFT_OUT, *run)]) + "\n"
    if kind_of(log) != KERNEL or kind_of("\n".join(lines[a:b]).strip("\n") + "\n") in (None, KERNEL):
        return None
    end = len(lines) - (not lines[-1].strip())  # (the file's last line: not the newline ending it)
    # (the other output after the log's first run as its lines are, the file's end kept where it
    # is last; before the log, with the line end the log's first line follows)
    said = "\n".join(lines[a:b]) + ("" if a > spans[0][0] else "\n")
    gap = (spans[0][1] + 2, spans[1][0]) if len(spans) == 2 else None
    pieces = [
        Piece(spans[0][0] + 1, spans[-1][1] + 1, log, True, gap),
        Piece(a + 1, min(b, end), said, False),
    ]
    return pieces if a > spans[0][0] else pieces[::-1]


def _run(lines: list[str], order: list[int], kernel_line: Callable[[str], bool]) -> list[int]:
    """The line indexes, in `order`, of the kernel's lines from the first non-blank line on, up
    to the first that is not one (blank lines inside the run are taken with it)."""
    return list(itertools.takewhile(lambda i: kernel_line(lines[i]), order))


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
