"""A line a paste put in place of lines it left out by hand: `...`, `…` (the typographic one is
ASCII again after api/paste.py), `[...]`, `(...)`, and the same with a word saying so: `[snip]`,
`<snip>`, `...<snip>...`, `[...snip...]`, `... snip ...`, `--snip--`, `[... 200 lines omitted ...]`,
`<truncated>`, `(12 lines skipped)`, `... 40 more lines ...` (open-gpu-kernel-modules#626's journal
holds `[...snip...]`), a forum poster's break line `-bk-` (measure38c 12: a syslog quoted as ten
lines picked from four boots). A listing that holds one is not whole: the devices, ports, CPUs or
kernel lines it stands for are not known (leptonai/gpud#752's `ibstat` paste starts with `...`
above its one CA). Values a paste redacted as `...` (`CA type: ...`) are no such line. This is the
one definition every reader that checks for elisions uses. `grep -A/-B/-C`'s `--` between the
groups of lines it kept is GREP_GROUPS, apart: a reader that knows its groups reads it as grep's
(nvidia-smi -q's records, facts/nvidia_smi/text_q.py), a kernel log as lines left out
(elided_line)."""

from __future__ import annotations

import re

from gpuonboard.facts.may_hold import folded, may_hold
from gpuonboard.once import lazy_re

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
ELISION = lazy_re(
    r"^\s*(?:"
    rf"{_OPEN}?\s*{_DOTS}\s*{_CLOSE}?"  # `...`, `[...]`, `(...)`
    # `[snip]`, `[... 2 lines omitted ...]`, `...<snip>...`
    rf"|(?:{_MARK}\s*)?{_OPEN}\s*(?:{_MARK}\s*)?{_NOTE}\s*(?:{_MARK}\s*)?{_CLOSE}(?:\s*{_MARK})?"
    rf"|{_MARK}\s*{_NOTE}\s*{_MARK}?"  # `--snip--`, `... snip ...`, `... 40 more lines`
    r"|snip(?:ped)?"  # `snip` alone on its line
    r"|-{1,2}\s*(?:bk|break)\s*-{1,2}"  # a forum poster's break line, `-bk-`
    r")\s*$",
    re.M | re.I,
)
# `grep -A/-B/-C`'s separator between the groups of lines it kept: the lines between are not shown
# (a table's `---` rule is none)
GREP_GROUPS = lazy_re(r"^[ \t]*--[ \t]*$")


def elided_line(line: str) -> bool:
    """Whether `line` stands for lines left out of a log: an ELISION line, or grep's `--`."""
    return ELISION.match(line) is not None or GREP_GROUPS.match(line) is not None


# the words one of which every ELISION line holds (facts/may_hold): dots, or what its note says
# was left out (`snip`, `omitted`, `40 more lines`)
_WORDS = tuple(
    (word,)
    for word in (
        *("..", "\u2026", "more", "snip", "cut", "omitted", "skipped", "truncated", "elided"),
        *("removed", "trimmed", "redacted", "deleted", "-bk", "-break"),
    )
)


def may_be_elided(text: str) -> bool:
    """False where no line of `text` can be an ELISION line (it holds none of their words):
    a whole text need not then be searched line by line (facts/may_hold). Only the lines with no
    `:` are looked at: no part of the pattern is or matches a colon, so a match (a whole line,
    or whole lines under re.M, split as str.splitlines splits them: `elided` reads those) lies
    in lines without one, and an `nvidia-smi -q` text's `key : value` lines have one (its 73 kB
    of 8 GPUs: its ~7 kB of headers searched for the 13 words, 0.53 -> 0.17 ms)."""
    plain = "\n".join([line for line in text.splitlines() if ":" not in line])
    return may_hold(folded(plain), *_WORDS)


def without_elisions(text: str) -> tuple[str, int]:
    """ELISION.subn("", text): the text less its elision lines, and how many there were."""
    return ELISION.subn("", text) if may_be_elided(text) else (text, 0)


def elided(text: str) -> str | None:
    """Why `text` is not whole where a line of it stands for lines left out, else None."""
    if not may_be_elided(text):
        return None
    for number, line in enumerate(text.splitlines(), 1):
        if ELISION.match(line):
            return f"lines were left out by hand (`{line.strip()}` on line {number})"
    return None
