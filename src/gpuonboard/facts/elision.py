"""A line a paste put in place of lines it left out by hand: `...`, `…` (the typographic one is ASCII
again after api/paste.py), `[...]`, `(...)`, and the same with a word saying so: `[snip]`, `<snip>`,
`...<snip>...`, `[...snip...]`, `... snip ...`, `--snip--`, `[... 200 lines omitted ...]`,
`<truncated>`, `(12 lines skipped)`, `... 40 more lines ...` (open-gpu-kernel-modules#626's journal
holds `[...snip...]`). A poster's own break line between kept lines (`-bk-`, `----`, `* * *`,
`(break)`: measure38c 12's syslog quoted as ten lines picked from four boots) is HAND_BREAK. A
listing that holds one is not whole: the devices, ports, CPUs or kernel lines it stands for are not
known (leptonai/gpud#752's `ibstat` paste starts with `...` above its one CA). Values a paste
redacted as `...` (`CA type: ...`) are no such line. This is the one definition every reader that
checks for elisions uses. `grep -A/-B/-C`'s `--` between the groups of lines it kept is GREP_GROUPS,
apart: a reader that knows its groups reads it as grep's (nvidia-smi -q's records,
facts/nvidia_smi/text_q.py), a kernel log as lines left out where it stands between two kernel
lines (hand_break, facts/kernel_log._elided)."""

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
    r")\s*$",
    re.M | re.I,
)
# `grep -A/-B/-C`'s separator between the groups of lines it kept: the lines between are not shown
# (a table's `---` rule is none)
GREP_GROUPS = lazy_re(r"^[ \t]*--[ \t]*$")
# the marks a poster draws a break line of: dashes (ASCII, en, em: a forum's typography turns `-`
# into them), asterisks, equals signs, tildes, underscores, dots, slashes
_BREAK_MARK = r"[-*=~_./\u2013\u2014\u2026\u00b7\u2022]"
# a poster's hand-made break between kept lines (measure38c 12's `-bk-`, revK F2): a line of marks
# only (`----`, `***`, `* * *`, `=====`, `~~~`, `\u2014\u2014`, grep's `--`), or a word for a break
# alone or in marks or brackets (`bk`, `-bk`, `(break)`, `[bk]`, `<bk>`, `/bk/`, `\u2014bk\u2014`,
# `[cut]`, `(snip)`, `<...>`). It says lines were left out only between two kept lines
# (facts/kernel_log: a Markdown rule above a log, a mail's `-- ` signature below it, say nothing)
HAND_BREAK = lazy_re(
    rf"^\s*(?:(?:{_BREAK_MARK}\s*){{2,}}"
    rf"|(?:{_BREAK_MARK}\s*)*[\[(<{{]?\s*(?:{_BREAK_MARK}\s*)*(?:bk|break|snip(?:ped)?|cut|\.{{3}}|\u2026)"
    rf"\s*(?:{_BREAK_MARK}\s*)*[\])>}}]?\s*(?:{_BREAK_MARK}\s*)*)$",
    re.I,
)


def elided_line(line: str) -> bool:
    """Whether `line` stands for lines left out of a log: an ELISION line, grep's `--`, or a
    poster's HAND_BREAK (never a wrapped line's piece: facts/kernel_wrap)."""
    return ELISION.match(line) is not None or (len(line) <= 40 and HAND_BREAK.match(line) is not None)


def hand_break(line: str) -> bool:
    """Whether `line` is a break line that says lines were left out where it stands between two
    kept lines: grep's `--` or a poster's HAND_BREAK, no ELISION line (that says so anywhere)."""
    return len(line) <= 40 and ELISION.match(line) is None and HAND_BREAK.match(line) is not None


# the words one of which every ELISION line holds (facts/may_hold): dots, or what its note says
# was left out (`snip`, `omitted`, `40 more lines`)
_WORDS = tuple(
    (word,)
    for word in (
        *("..", "\u2026", "more", "snip", "cut", "omitted", "skipped", "truncated", "elided"),
        *("removed", "trimmed", "redacted", "deleted"),
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
