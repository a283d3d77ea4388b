"""A script's output of several tools in one block, each under a heading line of the script's own
(`--- CPU ---`, `=== RAM ===`, `## GPU`) after a blank line, with no prompt between them (a
benchmark's environment snapshot: a `--query-gpu` CSV, then `--- CPU ---` and lscpu's lines, then
`--- RAM ---` and `free -h`): read as one output, the CSV's rows took the other tools' lines as
rows of its own ("CSV row 2: has 1 cells") and free's `Mem:` line was never read. Cut at those
headings, each part is read as an output of its own where it is one; a part that is none is said
in a note."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import NamedTuple

from gpuonboard.once import lazy_re

# a heading line a script prints between its sections (a word or few between dashes, equals
# signs or hashes), with a blank line (or the text's start) above it
_HEADING = re.compile(
    r"^[ \t]*(?:-{3,}|={3,}|#{1,3})[ \t]*([A-Za-z][\w /().:-]{0,40}?)[ \t]*(?:-{3,}|={3,})?[ \t]*$"
)

# a heading marked on both sides (`---- meminfo ----`, `=== GPU ===`): one with no blank line above
# it too (a script's `echo "---- lscpu ----"` right after the line before, m36e 19)
_CLOSED = re.compile(
    r"^[ \t]*(?:-{3,}[ \t]*[A-Za-z][^-]*?[ \t]*-{3,}|={3,}[ \t]*[A-Za-z][^=]*?[ \t]*={3,})[ \t]*$"
)


class Block(NamedTuple):
    """One section: its heading ("" for the text above the first), first line (1-based), text."""

    heading: str
    first: int
    text: str


def split(text: str, detect: Callable[[str], str | None]) -> list[Block] | None:
    """The text's sections at its heading lines, where there are two or more and at least two
    of them read as an output of a known kind (`detect`), each of another kind; None otherwise."""
    lines = text.split("\n")
    cuts = [
        i
        for i, line in enumerate(lines)
        if _HEADING.match(line)
        and (i == 0 or not lines[i - 1].strip() or _CLOSED.match(line))
        and "|" not in line
    ]
    if not cuts:
        return _unheaded(lines, detect)
    starts = [0, *cuts] if cuts[0] > 0 else cuts
    blocks = []
    for at, start in enumerate(starts):
        end = starts[at + 1] if at + 1 < len(starts) else len(lines)
        heading = lines[start].strip() if start in cuts else ""
        body = lines[start + 1 if heading else start : end]
        if any(line.strip() for line in body):
            blocks.append(Block(heading, start + 2 if heading else 1, "\n".join(body).strip("\n") + "\n"))
    kinds = [kind for b in blocks if (kind := detect(b.text)) is not None]
    # (outputs of several tools; one output twice, `-q` pasted again under its own `==NVSMI LOG==`
    # banner, is refused as such elsewhere)
    if len(blocks) < 2 or len(kinds) < 2 or len(set(kinds)) < len(kinds):
        return None
    return blocks


# the heading of a section cut at a blank line (_unheaded)
UNHEADED = "(a blank line)"


def _unheaded(lines: list[str], detect: Callable[[str], str | None]) -> list[Block] | None:
    """Sections cut at blank lines, with no heading and no prompt (a node record's `## CPU and
    memory` block: some lines of lscpu, a blank line, `free -h`): only where every section reads
    as an output of a known kind, each of another kind (lscpu and free never print a blank
    line inside); None otherwise."""
    blocks: list[Block] = []
    start = 0
    for i, line in enumerate([*lines, ""]):
        if line.strip():
            continue
        if any(row.strip() for row in lines[start:i]):
            blocks.append(Block(UNHEADED, start + 1, "\n".join(lines[start:i]) + "\n"))
        start = i + 1
    kinds = [detect(b.text) for b in blocks]
    if len(blocks) < 2 or None in kinds or len(set(kinds)) < len(kinds):
        return None
    # (only outputs that never print a blank line of their own: `docker version`'s Client and
    # Server sections, `docker info` below them, are one output's parts, read together)
    return blocks if all(kind in _NO_BLANK_LINE for kind in kinds) else None


# the kinds of output that print no blank line inside (a blank line between two is no part of either)
_NO_BLANK_LINE = frozenset({"lscpu", "free", "df", "lsblk", "numactl", "nproc", "ibdev2netdev", "os_release"})


def where(path: str, block: Block) -> str:
    """How a sentence names a section: `FILE lines 5-14 (under `--- CPU ---`)`."""
    last = block.first + block.text.count("\n") - 1
    if block.heading in (UNHEADED, GLUED):
        return f"{path} lines {block.first}-{last}"
    under = f"under `{block.heading}`" if block.heading else "above the first heading"
    return f"{path} lines {block.first}-{last} ({under})"


# the header of `nvidia-smi topo -m`'s matrix: GPU labels first (`\tGPU0\tGPU1 ...`), no self cell
_MATRIX_HEADER = re.compile(r"^[ \t]*GPU0(?:[ \t]+(?:GPU|NIC)\d+)+\b")


def output_then_matrix(text: str, detect: Callable[[str], str | None]) -> list[Block] | None:
    """An nvidia-smi output with a `topo -m` matrix pasted right under it in one block, no prompt
    or heading between them (a report's `## CUDA + NVLink topology` block: the table, a blank
    line, the matrix): the two, each read as an output of its own. Before, the matrix was read as
    lines of the table's and dropped: "no topo -m output was given". None where the text holds
    no such matrix below another nvidia-smi output."""
    lines = text.split("\n")
    at = next((i for i, line in enumerate(lines) if i and _MATRIX_HEADER.match(line)), None)
    if at is None or not any(line.strip() for line in lines[:at]):
        return None
    above, below = "\n".join(lines[:at]).strip("\n") + "\n", "\n".join(lines[at:]).strip("\n") + "\n"
    if detect(above) != "nvidia_smi" or detect(below) != "nvidia_topo":
        return None
    return [Block(UNHEADED, 1, above), Block(UNHEADED, at + 1, below)]


# the heading of a section cut at another output's header line, with no line between (glued)
GLUED = "(no line between)"

# header lines that open an output of their own whatever stands above them: df's (`Filesystem`
# then its size column: `Size`, `1K-blocks`, `Type` of -T), lsblk's (`NAME MAJ:MIN`); free's is
# told by memory.opens_with_free_header
_OPENING_HEADER = lazy_re(
    r"^[ \t]*(?:Filesystem[ \t]+(?:Size|1K-blocks|1024-blocks|Type)\b|NAME[ \t]+MAJ:MIN\b)"
)


def glued(text: str, detect: Callable[[str], str | None]) -> list[Block] | None:
    """A text of several tools' outputs one right under another, no blank line, heading or prompt
    between them (an environment report's `CPU and memory` block: lscpu's last line, then free's
    header without its leading blanks, m37e 17): cut at each header line that opens a free, df or
    lsblk output below another output's last line. Only where every part reads as an output of a
    known kind, each of another kind; None otherwise (read as one output, as before)."""
    from gpuonboard.facts.memory import opens_with_free_header

    lines = text.split("\n")
    cuts = [
        i
        for i, line in enumerate(lines)
        if i
        and lines[i - 1].strip()
        and (_OPENING_HEADER.match(line) or opens_with_free_header(line.strip()))
    ]
    if not cuts:
        return None
    starts = [0, *cuts]
    blocks = [
        Block(
            GLUED,
            start + 1,
            "\n".join(lines[start : starts[at + 1] if at + 1 < len(starts) else len(lines)]).strip("\n")
            + "\n",
        )
        for at, start in enumerate(starts)
    ]
    kinds = [detect(b.text) for b in blocks]
    if None in kinds or len(set(kinds)) < len(kinds):
        return None
    return blocks
