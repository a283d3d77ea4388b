"""A line a paste put in place of lines it left out by hand: `...`, `…` (the typographic one is
ASCII again after api/paste.py), `[...]`, `(...)`, and the same with a word saying so: `[snip]`,
`<snip>`, `[...snip...]`, `... snip ...`, `--snip--`, `[... 200 lines omitted ...]`,
`<truncated>`, `(12 lines skipped)`, `... 40 more lines ...` (open-gpu-kernel-modules#626's journal
holds `[...snip...]`). A listing that holds one is not whole: the devices, ports, CPUs or kernel
lines it stands for are not known (leptonai/gpud#752's `ibstat` paste starts with `...` above its
one CA). Values a paste redacted as `...` (`CA type: ...`) are no such line. This is the one
definition every reader that checks for elisions uses."""

from __future__ import annotations

import re

_DOTS = r"(?:\.{2,}|…)"
# the marks around a note (`--snip--`, `*** snip ***`, `... snip ...`)
_MARK = rf"(?:-{{2,}}|={{2,}}|\*{{1,3}}|{_DOTS})"
_LEFT = r"(?:snip(?:ped)?|cut|omitted|skipped|truncated|elided|removed|trimmed|redacted|deleted)"
_UNITS = r"(?:lines?|entries|rows|messages|records|bytes|characters|chars|output)"
# what the paste says it left out: `snip`, `200 lines omitted`, `lines skipped`, `40 more lines`
_NOTE = (
    rf"(?:(?:\d[\d,]*\s+)?(?:more\s+)?(?:{_UNITS}\s+)?(?:(?:were|are)\s+)?{_LEFT}"
    rf"(?:\s+\d[\d,]*\s+{_UNITS})?(?:\s+here)?|\d[\d,]*\s+more\s+{_UNITS})"
)
_OPEN, _CLOSE = r"[\[(<{]", r"[\])>}]"
# (one line; re.M so that a whole text's such lines can be found or removed at once)
ELISION = re.compile(
    r"^\s*(?:"
    rf"{_OPEN}?\s*{_DOTS}\s*{_CLOSE}?"  # `...`, `[...]`, `(...)`
    rf"|{_OPEN}\s*(?:{_MARK}\s*)?{_NOTE}\s*(?:{_MARK}\s*)?{_CLOSE}"  # `[snip]`, `[... 2 lines omitted ...]`
    rf"|{_MARK}\s*{_NOTE}\s*{_MARK}?"  # `--snip--`, `... snip ...`, `... 40 more lines`
    r"|snip(?:ped)?"  # `snip` alone on its line
    r")\s*$",
    re.M | re.I,
)


def elided(text: str) -> str | None:
    """Why `text` is not whole where a line of it stands for lines left out, else None."""
    for number, line in enumerate(text.splitlines(), 1):
        if ELISION.match(line):
            return f"lines were left out by hand (`{line.strip()}` on line {number})"
    return None
