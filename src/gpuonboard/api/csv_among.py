"""A `--query-gpu` CSV among another output's lines. Saved right above nvidia-smi's table in
one file, with no prompt line between them (a pod's log tail a controller quoted: `nvidia-smi
--query-gpu=index,uuid,memory.used --format=csv` then `nvidia-smi`, llm-d-incubation/
llm-d-fast-model-actuation#720): two outputs that cannot be told apart as one box's calls. The
table is read from its own first line (its banner is its own: min_driver judges it), and the
CSV's rows are said not read, never dropped silently. Before, the table was read with the CSV
above it as a quote in a log: its driver version was not judged, and nothing said the CSV was
left out. Without its header among another program's lines (a miner's diagnostic: csv_block),
it is refused with the headerless CSV's own sentence (api/saved_forms.py), not as no output
this tool reads."""

from __future__ import annotations

import re

from gpuonboard.facts.csvtext import csv_rows
from gpuonboard.facts.nvidia_smi import parse_any

# a cell that no nvidia-smi field prints: a label before its value (`Mem:  264488144k total`), or
# a count named by a word after it (`13150800k free`; nvidia-smi's units are `MiB`, `W`, `%`, ...)
LABELLED_CELL = re.compile(r"(?m)(?:^|,)\s*(?:[A-Za-z][A-Za-z ]*:\s+\S|[\d.]+k?\s+[a-z]{3,}\s*(?:,|$))")


# the first line of nvidia-smi's table: its date line, else its top border above the banner
_TABLE_START = re.compile(
    r"^[ \t]*(?:[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4}[ \t]*$"
    r"|\+-{20,}\+?[ \t]*\n[ \t]*\|\s*NVIDIA-SMI\s)",
    re.MULTILINE,
)


def csv_above_table(text: str) -> tuple[str, str] | None:
    """(the text without the CSV, one clause saying what was left out) where `text` holds a
    `--query-gpu` CSV (a header and rows nvidia-smi's CSV reader reads GPUs from) right above
    nvidia-smi's table; a line above the CSV (a copied prompt, a label) is kept. None otherwise."""
    start = _TABLE_START.search(text)
    if start is None or not text[: start.start()].strip():
        return None
    above = text[: start.start()].split("\n")
    filled = [i for i, line in enumerate(above) if line.strip()]
    for first in filled[:2]:  # (the CSV from the first filled line, or from the next one)
        csv = "\n".join(above[first:])
        read = parse_any(csv)
        if read.source == "csv" and read.gpus:
            header = next(line.strip() for line in above[first:] if line.strip())
            rows = len(filled) - filled.index(first) - 1
            said = (
                f"the `nvidia-smi --query-gpu` CSV above nvidia-smi's table ({rows} row"
                f"{'s' if rows != 1 else ''} of `{header[:80]}`) is not read: two outputs in one file"
                " with no prompt line between them; save each output in a file of its own (or with"
                " its prompt line) to have it judged"
            )
            return "\n".join(above[:first]) + ("\n" if first else "") + text[start.start() :], said
    return None


def csv_block(text: str) -> tuple[int, int] | None:
    """(its rows, its fields) of a headerless CSV of nvidia-smi's shape inside another program's
    output (a miner's diagnostic printing its own `--query-gpu` result
    under a heading, its own warning below: RainbowMiner#1796): the longest run of two or more
    lines that are rows of one count of cells, three or more, none a labelled cell
    (LABELLED_CELL: no nvidia-smi field prints one); None where there is none."""
    lines = text.split("\n")
    widths = [
        _width(line) if line.count(",") >= 2 and not LABELLED_CELL.search(line) else 0 for line in lines
    ]
    best: tuple[int, int] | None = None
    at = 0
    while at < len(lines):
        end = at
        while end < len(lines) and widths[end] >= 3 and widths[end] == widths[at]:
            end += 1
        if end - at >= 2 and (best is None or end - at > best[0]):
            best = (end - at, widths[at])
        at = max(end, at + 1)
    return best


def _width(line: str) -> int:
    """The number of cells of `line` read as one CSV row (0 where the csv reader refuses it)."""
    rows = csv_rows([line])
    return len(rows[0]) if rows else 0
