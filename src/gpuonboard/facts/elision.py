"""A line a paste put in place of lines it left out by hand: `...`, `…` (the typographic one is
ASCII again after api/paste.py), `[...]`, `(...)`. A listing that holds one is not whole: the
devices, ports or CPUs it stands for are not known (leptonai/gpud#752's `ibstat` paste starts
with `...` above its one CA). Values a paste redacted as `...` (`CA type: ...`) are no such
line."""

from __future__ import annotations

import re

# (one line; re.M so that a whole text's such lines can be found or removed at once)
ELISION = re.compile(r"^\s*[\[(<]?\s*(?:\.{3,}|…)\s*[\])>]?\s*$", re.M)


def elided(text: str) -> str | None:
    """Why `text` is not whole where a line of it stands for lines left out, else None."""
    for number, line in enumerate(text.splitlines(), 1):
        if ELISION.match(line):
            return f"lines were left out by hand (`{line.strip()}` on line {number})"
    return None
