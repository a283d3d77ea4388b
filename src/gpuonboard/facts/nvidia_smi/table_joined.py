"""nvidia-smi's table with its lines joined into one and its runs of spaces collapsed (a web
page's copy that lost the newlines of the output it quoted: `+----+ | NVIDIA-SMI 418.87.01 ... |
|----+----+----+ | GPU Name ... | ... | 0 Tesla T4 On | 00000000:00:07.0 Off | 0 | | N/A 41C P0
26W / 70W | 3043MiB / 3231MiB | 0% Default | +----+----+----+`): its lines apart again.

The table's own structure says where each line ends: every border line (`+-----+`,
`|----+----+----|`, `|====+====|`) is one word, and the lines between two borders have as many
columns as one of them (the border above, or below: the `|====+====|` rule under the column
titles, an old driver's one-column `|-----|` under its banner), so as many `|` as it has `+` /
`|`. A line is cut into the table's lines only where each run of text between its borders is
rows of one such count, one after another with a blank between, and nothing is left over but a
last row cut short at the line's end (a page's excerpt cut there, read as a table cut there);
else it is left as it is (a sentence quoting a banner, a row with another count of cells: no
guess). Where both counts cut a run into rows, each its own way (the table before R304's
`| Compute processes: GPU Memory | | GPU PID ... |` under a row of three cells), the lines
before it are cut and the rest is left as it is, one line (the whole line left as it is where
that rest holds another table's banner). Two tables on one line are cut into both tables'
lines: api/output_runs counts their banners there, two outputs refused as on lines of their own.
Before, such a table's banner was read and none of its GPU rows: model, count and memory
unverified, the driver of two of them unjudged.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

# one border line: `+---+`, `|---+---+---|`, `|===+===|` (runs of `-` or `=` between `+` / `|`)
_BORDER = re.compile(r"[+|](?:-{3,}[+|])+|[+|](?:={3,}[+|])+")
# nvidia-smi's date line before the table's first border (`Mon Aug 7 08:52:18 2023`), or a
# few words of a page or a prompt before it: no `|` in them
_LEAD = re.compile(r"[^|+]*")
# a table's banner row (`| NVIDIA-SMI 418.87.01 Driver Version: ...`)
_BANNER = re.compile(r"\|\s*NVIDIA-SMI\s+\S+")


def rows_apart(lines: Sequence[str]) -> list[str]:
    """`lines`, each line holding two or more of a table's lines joined (its first a border)
    replaced by those lines (what came before the first border, a line of its own)."""
    out: list[str] = []
    for line in lines:
        split = _split(line) if line.count("|") > 3 and _BORDER.search(line) else None
        out.extend(split if split is not None else [line])
    return out


def _split(line: str) -> list[str] | None:
    """The table's lines `line` joins, or None where its structure does not say so for certain."""
    lead = _LEAD.match(line)
    start = lead.end() if lead is not None else 0
    if _BORDER.match(line, start) is None:
        return None
    borders = list(_BORDER.finditer(line, start))
    found = [line[:start].rstrip()] if line[:start].strip() else []
    for at, border in enumerate(borders):
        found.append(border.group())
        after = borders[at + 1] if at + 1 < len(borders) else None
        text = line[border.end() : after.start() if after else len(line)]
        counts = {_bars(border.group()), *((_bars(after.group()),) if after else ())}
        rows = {tuple(r) for k in counts if (r := _rows(text, k, after is None)) is not None}
        if not rows:
            return None  # (no count cuts the text into rows)
        if len(rows) > 1:
            # (two counts do, each its own way: `| Compute processes: GPU Memory | | GPU PID ... |`
            # under a row of three cells: the lines read so far kept, the rest left as it is;
            # never where the rest holds another table's banner, which would go uncounted: a
            # second output read as the first one's rest)
            rest = line[border.end() :].strip()
            if _BANNER.search(rest):
                return None
            found.append(rest)
            break
        found.extend(rows.pop())
    return found if len(found) - (1 if line[:start].strip() else 0) >= 2 else None


def _bars(border: str) -> int:
    """The `|` of each row a border's columns have (its `+` and `|`)."""
    return border.count("+") + border.count("|")


def _rows(text: str, bars: int, last: bool) -> list[str] | None:
    """`text` (between two borders) as rows of `bars` `|` each, a blank between two; where it is
    the `last` text of the line, its last row may be cut short (fewer `|`); None otherwise."""
    rows: list[str] = []
    at = 0
    while at < len(text):
        if text[at] == " ":
            at += 1
            continue
        if text[at] != "|":
            return None
        end = at
        for _ in range(bars - 1):
            end = text.find("|", end + 1)
            if end < 0:
                return [*rows, text[at:].rstrip()] if last else None
        if end + 1 < len(text) and text[end + 1] != " ":
            return None
        rows.append(text[at : end + 1])
        at = end + 1
    return rows
