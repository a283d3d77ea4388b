"""Heading lines a script or a page printed above an output (`--- GPU ---`, `GPU info:`, a
poster's `**2x AMD Opteron(TM) Processor 6272:**` or `Here is my numactl output:`): read as no
part of the output, never where such a line is a copied prompt or command (which narrows what the
output lists). One rule for every kind whose detection or reader starts at the text's top: an
nvidia-smi CSV, XML or `-L` listing, whose reader reads its first line as the output's; and any
output detected below the headings and not with them (`numactl -H`, `df`, `lsblk`, `-L`). Before,
a heading above a whole `numactl -H` made it "not a recognised command output", where the same
heading above an lscpu (detected by its lines anywhere) was read (measure39d 20)."""

from __future__ import annotations

import re

from gpuonboard.api import saved_text, transcript
from gpuonboard.api.command_line import elsewhere, run
from gpuonboard.api.saved_kinds import detect_kind
from gpuonboard.facts.nvidia_smi import parse_any
from gpuonboard.facts.nvidia_smi.query_csv import is_query_header
from gpuonboard.once import lazy_re

# a heading a script or a page printed above an output (`--- GPU 详细规格 ---`, `=== GPU ===`, a
# Markdown `## GPUs` or `**GPU**`), or a line of prose that ends in a colon (`GPU info:`)
_HEADING = re.compile(
    r"[ \t]*(?:(?:-{2,}|={2,}|#{1,6}|\*{2})[ \t]*[^\s,|].{0,60}?[ \t]*(?:-{2,}|={2,}|\*{2})?"
    r"|[^\s,|<][^,|<]{0,80}:)[ \t]*"
)
# the first line of an nvidia-smi output whose reader starts at its first line: a `--query-gpu`
# CSV's header, the XML's declaration or root, `-L`'s first GPU
_OUTPUT_START = re.compile(
    r"[ \t]*(?:<\?xml\s|<nvidia_smi_log\b|<!DOCTYPE nvidia_smi_log\b|GPU 0: .*\(UUID: )"
)


def below_heading(text: str) -> tuple[str, str] | None:
    """(the text from its output's first line on, one clause saying what was left out) where at
    most two heading lines (_HEADING, blank lines between) stand above an nvidia-smi CSV's header,
    XML or `-L` listing (a script's `--- GPU ---` over its `--query-gpu` CSV, a doc's `GPU info:`):
    no line of the output, which its reader read as the output's first (before, such a CSV was
    "listed no GPU (output not recognised as any nvidia-smi format)"); or above any output whose
    kind is detected from the lines below them and not from the text as given (a poster's heading
    over `numactl -H`: module doc). None otherwise, and where
    a line above is a copied prompt or command (_typed: a root's `# nvidia-smi -L -i 0`), which
    the saved output's own reader reads as the command that printed it."""
    lines = text.split("\n")
    filled = [i for i, line in enumerate(lines) if line.strip()]
    known: bool | None = None  # (whether the text as given is of a kind detected: asked once)
    for n, first in enumerate(filled[1:3], start=1):
        above = [lines[i].strip() for i in filled[:n]]
        if not all(_HEADING.fullmatch(line) and not _typed(line) for line in above):
            return None
        if not (starts := is_query_header(lines[first]) or bool(_OUTPUT_START.match(lines[first]))):
            known = detect_kind(text) is not None if known is None else known
        if starts or (not known and detect_kind("\n".join(lines[first:])) is not None):
            shown = "`, `".join(line[:80] for line in above)
            said = (
                f"line{'s' if n > 1 else ''} `{shown}` above the output (a heading a script or a page"
                " printed) read as no part of it"
            )
            return "\n".join(lines[first:]), said
    return None


def _typed(line: str) -> bool:
    """Whether `line` is a copied prompt or command, as the saved text's readers read one (a
    root's `# nvidia-smi -L -i 0`, `# docker run --rm --gpus 1 ubuntu nvidia-smi -L`, `# srun
    --gres=gpu:1 nvidia-smi -L`: saved_text, transcript), or its words after a root's `#` run a
    command through a wrapper, a container or a launcher (`# sudo ./gpus.sh`, `# srun
    --gres=gpu:1 ./gpus.sh`: command_line), never a heading: the command narrows what the output
    lists (`-i 0`, `| head -1`, `--gpus 1`), and read as a heading, the output was read as the
    box's whole (gpu_count passed on one GPU listed of any box)."""
    if saved_text.copied_command(line) or transcript.command_of(line) != line.strip():
        return True
    words = line.lstrip("#").split()
    if not line.startswith("#") or not words:
        return False
    ran = run(" ".join(words))
    return ran.head[:1] != words[:1] or elsewhere(ran, ()) != ""


def csv_among_prose(text: str) -> tuple[str, str, str] | None:
    """(the `--query-gpu` CSV block, one clause saying what was left out, why it is no answer of
    the box's: QUOTED_CSV, "" where a copied `nvidia-smi --query-gpu=...` line stands right above
    its header) where `text` is prose
    lines around one such CSV, its header and its rows, and no other output: a README's
    `CPU Cores: 176` / `RAM: 718Gi` above `index, name, memory.total [MiB]` and its four rows, a
    line of its own below (measure37c 14). The CSV is read from its header to the blank line
    under it (every row read as a GPU's); the prose is said not read. Before, the file "listed no
    GPU (output not recognised as any nvidia-smi format)". None where a line around it is a box's
    (`|`, `+--`), a copied prompt or command, or of the CSV's shape, or where a row is not read."""
    lines = text.split("\n")
    heads = [i for i, line in enumerate(lines) if is_query_header(line)]
    if len(heads) != 1:
        return None
    start = heads[0]
    end = start + 1
    while end < len(lines) and lines[end].strip() and "," in lines[end]:
        end += 1
    # (the block ends at a blank line: a line of no comma right under a row may be the rest of it,
    # wrapped; a row that ends the text may be cut, `0, NVIDIA H200, 1437`)
    if end >= len(lines) or lines[end].strip():
        return None
    # (a copied `nvidia-smi --query-gpu=...` line, or its prompt, right above the header: the box's
    # answer, read as the box's; revT F2)
    above = next((i for i in range(start - 1, -1, -1) if lines[i].strip()), None)
    ran = above is not None and _query_command(lines[above])
    around = [
        line.strip()
        for i, line in enumerate(lines[:start] + lines[end:])
        if line.strip() and not (ran and i == above)
    ]
    # (no line around it of the CSV's shape: a row above its header is no prose)
    commas = lines[start].count(",")
    if not around or any(line[:1] in "|+" or _typed(line) or line.count(",") == commas for line in around):
        return None
    block = "\n".join(lines[start:end])
    read = parse_any(block)
    if read.source != "csv" or len(read.gpus) != end - start - 1 or not read.complete:
        return None  # (every row a GPU's, whole)
    shown = "`, `".join(line[:60] for line in around[:3]) + ("`, ..." if len(around) > 3 else "`")
    said = (
        f"the `nvidia-smi --query-gpu` CSV ({end - start - 1} rows of `{lines[start].strip()[:80]}`) is"
        f" read from among {len(around)} other line{'s' if len(around) != 1 else ''} of prose (`{shown}),"
        " which are no output of a tool and not read"
    )
    if not ran:  # (a spec, an offer, a wish list: no answer of the box's; revT F2)
        said += f"; {QUOTED_CSV}"
    return block, said, "" if ran else QUOTED_CSV


# why a CSV read from among prose with no copied command above it is no answer of the box's: a
# document may quote one (a spec, a vendor's offer, a wish list); what it passes is capped
QUOTED_CSV = "a CSV quoted among prose: save `nvidia-smi --query-gpu ...` of the box by itself"
_QUERY_COMMAND = lazy_re(r"(?:^|[\s;|&(])(?:\S*/)?nvidia-smi\s+(?:\S+\s+)*?--query-gpu[=\s]")


def _query_command(line: str) -> bool:
    """Whether `line` is a copied `nvidia-smi --query-gpu=...` command line (a prompt and it, or
    the command alone)."""
    command = saved_text.copied_command(line) or transcript.command_of(line)
    return bool(_QUERY_COMMAND.search(command)) and _typed(line)
