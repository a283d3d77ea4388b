"""A command's output copied from a CI log viewer (Drone's, GitHub Actions' and GitLab's web
views), whose gutter comes along as lines of their own between the output's: each output line's
number alone on its line, with the step's time (`2s`) alone above it in Drone's. Before, such a
`df -h` was refused as "a header this tool cannot read (df run in a language other than
English?)", though its header was English."""

from __future__ import annotations

import re
import textwrap

# a log viewer's line number alone on its line; a step's duration alone (`2s`, `1m 3s`, `350ms`)
_NUMBER = re.compile(r"\s*(\d{1,6})\s*")
_DURATION = re.compile(r"\s*(?:\d+h ?)?(?:\d+m ?)?\d+(?:\.\d+)?(?:ms|s)\s*|\s*\d+[mh]\s*")


def _gutter(line: str) -> bool:
    return bool(_NUMBER.fullmatch(line) or _DURATION.fullmatch(line))


def _groups(lines: list[str], numbered: list[int]) -> list[list[str]] | None:
    """The output lines after each line number (up to the next number, a duration above that
    left out), None where some number is followed by more than one line of output, or a
    duration sits elsewhere than right above a number (no viewer's copy has that shape)."""
    out: list[list[str]] = []
    for n, at in enumerate(numbered):
        end = numbered[n + 1] if n + 1 < len(numbered) else len(lines)
        body = lines[at + 1 : end]
        while body and _DURATION.fullmatch(body[-1]) and n + 1 < len(numbered):
            body = body[:-1]  # (the next line's duration, Drone's, above its number)
        while n + 1 == len(numbered) and body and not body[-1].strip():
            body = body[:-1]
        if len(body) > 1 or any(_gutter(line) for line in body):
            return None
        out.append(body)
    return out


def unviewed(text: str) -> str:
    """`text` without a log viewer's gutter lines where every line of the output from the first
    numbered one on has its number alone on the line above it (one more each line, at least 3
    numbered lines that carry text), and, in Drone's copy, its duration alone above that: the
    output lines alone, below any lines above the first number (the copied command). Any other
    text is returned as it is (a list of GPU indexes has no text between its numbers)."""
    lines = text.split("\n")
    numbered = [i for i, line in enumerate(lines) if _NUMBER.fullmatch(line)]
    if len(numbered) < 3:
        return text
    values = [int(lines[i]) for i in numbered]
    if values != list(range(values[0], values[0] + len(values))):
        return text
    groups = _groups(lines, numbered)
    if groups is None or sum(1 for body in groups if body and body[0].strip()) < 3:
        return text
    top = lines[: numbered[0]]
    while top and _DURATION.fullmatch(top[-1]):
        top = top[:-1]
    kept = [line for body in groups for line in body]
    return "\n".join(top) + ("\n" if top else "") + textwrap.dedent("\n".join(kept)) + "\n"


def viewer_lines(text: str) -> str | None:
    """What a text holds of a log viewer's gutter that `unviewed` could not tell apart safely
    (durations alone, numbers alone, between its lines), said in a few words; None where it has
    fewer than 3 numbers alone, or than 2 beside 2 durations alone (a count or two an output
    prints alone is no gutter), or where a number alone repeats (a viewer numbers each line once:
    `   1` eight times is a column of values, lsblk's `-o ROTA` or `RO`, measure33b 19)."""
    durations = sum(1 for line in text.split("\n") if _DURATION.fullmatch(line))
    alone = [int(m.group(1)) for line in text.split("\n") if (m := _NUMBER.fullmatch(line))]
    numbers = len(alone)
    if numbers < 2 or (numbers < 3 and durations < 2) or len(set(alone)) < numbers:
        return None
    said = [f"{durations} step time(s) alone (`2s`)"] if durations >= 2 else []
    said += [f"{numbers} line number(s) alone"] if numbers >= 2 else []
    return " and ".join(said)
