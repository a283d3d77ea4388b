"""A line a paste put in place of lines it left out by hand: `...`, `…` (the typographic one is
ASCII again after api/paste.py), `[...]`, `(...)`. A listing that holds one is not whole: the
devices, ports or CPUs it stands for are not known (leptonai/gpud#752's `ibstat` paste starts
with `...` above its one CA). Values a paste redacted as `...` (`CA type: ...`) are no such
line. In a listing of records (a head line, then fields in the tool's order: ibstat's CAs and
ports, /proc/cpuinfo's CPUs), such a line between two fields of one record, the one after it
coming later in the record than the one before (`Hardware version`, `...`, `Port 1:` where the
GUID lines were cut), stands for fields of that record only, and hides no record.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

# (one line; re.M so that a whole text's such lines can be found or removed at once)
ELISION = re.compile(r"^\s*[\[(<]?\s*(?:\.{3,}|…)\s*[\])>]?\s*$", re.M)


def elided(text: str, heads: Sequence[re.Pattern[str]] = ()) -> str | None:
    """Why `text` is not whole where a line of it stands for lines left out, else None; with the
    `heads` of its records, a line inside one record (module doc) does not count."""
    lines = text.splitlines()
    rank = _field_order(lines, heads) if heads else {}
    for number, line in enumerate(lines, 1):
        if ELISION.match(line) and not _inside_record(lines, number - 1, heads, rank):
            return f"lines were left out by hand (`{line.strip()}` on line {number})"
    return None


def _key(line: str) -> str:
    """A field line's label, its numbers made alike (`Port 1:` and `Port 2:`, `GID[  0]`)."""
    label = line.partition(":")[0] if ":" in line else line
    return re.sub(r"\d+", "#", " ".join(label.split()))


def _field_order(lines: list[str], heads: Sequence[re.Pattern[str]]) -> dict[str, int]:
    """Each field label's place in the text's first record (1 on): the order its tool prints a
    record's fields in (lines after the last record, arm64's model lines, are in none)."""
    rank: dict[str, int] = {}
    begun = False
    for line in lines:
        if any(h.match(line) for h in heads):
            if begun:
                break
            begun = True
        elif begun and line.strip() and not ELISION.match(line):
            rank.setdefault(_key(line), len(rank) + 1)
    return rank


def _inside_record(lines: list[str], at: int, heads: Sequence[re.Pattern[str]], rank: dict[str, int]) -> bool:
    """Whether the elided line `at` lies between two fields of one record: the nearest lines
    around it (other elisions passed) a field and a later field of the first record, or the head
    and a field, no blank line between; never at the text's top or end, nor before a head."""
    if not heads:
        return False
    said = [i for i, ln in enumerate(lines) if ln.strip() and not ELISION.match(ln)]
    before = next((i for i in reversed(said) if i < at), None)
    after = next((i for i in said if i > at), None)
    if before is None or after is None or any(h.match(lines[after]) for h in heads):
        return False
    if any(not ln.strip() for ln in lines[before:after]):
        return False  # (a blank line: records end there, /proc/cpuinfo's, ibv_devinfo's)
    if any(h.match(lines[before]) for h in heads):
        return True
    return rank.get(_key(lines[after]), 0) > rank.get(_key(lines[before]), 0) > 0
