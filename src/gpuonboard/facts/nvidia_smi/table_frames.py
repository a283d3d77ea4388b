"""The tables of a text that holds several, one after another: `nvidia-smi -l N` (or `watch
nvidia-smi`) prints a whole table every N seconds, each under its date line, and a capture of it
is cut wherever its poster stopped copying; a paste may also begin inside an earlier frame (its
Processes table only). :func:`table_frames` parts them at each banner, so each is read as one
table and the reader keeps the newest that holds GPU rows: a frame's GPU rows, or a later
frame's cut, never hide another frame's (before, the first Processes table ended the GPU rows,
and a text whose first lines were an earlier frame's process list read no GPU at all)."""

from __future__ import annotations

from collections.abc import Sequence

from gpuonboard.once import lazy_re

# the banner line of a table: `| NVIDIA-SMI 525.125.06   Driver Version: ...` (R610: KMD Version)
_BANNER = lazy_re(r"^\s*\|\s*NVIDIA-SMI\s+\S+.*\b(?:Driver|KMD) Version:")
# the box's top border above the banner, and nvidia-smi's own date line above that
_TOP = lazy_re(r"^\s*\+-{10,}[-+]*\+\s*$")
_DATE = lazy_re(r"^\s*[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4}\s*$")
_PROCESSES = lazy_re(r"(?i)\bprocesses:")
_ROW = lazy_re(r"^\s*\|.*\S.*\|\s*$")

FRAMES_READ = "the nvidia-smi output holds {count} tables one after another (`nvidia-smi -l`, `watch`): "


def _start(lines: Sequence[str], banner: int) -> int:
    """Where the frame of the banner at `banner` begins: its top border and date line above it."""
    start = banner
    if start > 0 and _TOP.match(lines[start - 1]):
        start -= 1
    if start > 0 and _DATE.match(lines[start - 1]):
        start -= 1
    return start


def table_frames(lines: Sequence[str]) -> tuple[list[str], list[list[str]]]:
    """(the lines before the first frame where they are the tail of an earlier one, its process
    table; else nothing), and the frames, each from its date line or border to the next's. One
    frame (the common table) is the text's lines whole, its head included."""
    banners = [i for i, line in enumerate(lines) if _BANNER.match(line)]
    starts = [_start(lines, i) for i in banners]
    # (a last frame cut before its banner: its date line, maybe its top border, after the frames)
    late = [i for i, line in enumerate(lines) if starts and i > banners[-1] and _DATE.match(line)]
    if late and all(_TOP.match(line) or not line.strip() for line in lines[late[-1] + 1 :]):
        starts.append(late[-1])
    head = list(lines[: starts[0]]) if starts else []
    # (the tail of an earlier frame: a box row of its Processes table above the first banner)
    orphan = any(_PROCESSES.search(line) or _ROW.match(line) for line in head)
    if len(starts) < 2 and not orphan:
        return [], [list(lines)]
    frames = [list(lines[a:b]) for a, b in zip(starts, [*starts[1:], len(lines)], strict=True)]
    if not orphan:
        frames[0] = head + frames[0]
        head = []
    return head, frames


# a command line that prints the table again and again: `nvidia-smi -l 5`, `--loop=5`, `-lms 500`,
# `--loop-ms=500`, `watch -n 1 nvidia-smi`
_LOOPED = lazy_re(
    r"\bnvidia-smi\b[^|;&\n]*\s(?:-l|--loop|-lms|--loop-ms)(?:[=\s]|$)|\bwatch\b[^|;&\n]*\bnvidia-smi\b"
)


def looped(command: str) -> bool:
    """Whether `command` (a copied command line) prints nvidia-smi's table again and again, so
    the several tables of its output are one run's frames, not outputs of several runs or boxes."""
    return _LOOPED.search(command) is not None
