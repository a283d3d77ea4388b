"""A saved text's lines under the Markdown decoration a note or a README put around them, dropped
before they are read (api/saved_text.unquote, with a quote's `> ` marks): a list item's marker on
every line, the same on each (`- `, `* `, `+ `: each log line one item; `- a` / `+ b` is a diff),
and an emphasis around a paragraph (`_`, `*`, `__`, `**` before its first word and after its
last, a list item's marker and quote marks before it: `    - > _Mar 21 20:18:56 pc kernel: ...`
... `... has fallen off the bus._`).

No output read here starts every line with a list marker and a blank, or opens a line with an
emphasis mark that a later line of its paragraph closes at its end. Before, measure38c 18's two
quoted kernel lines (an Xid 79 and the fallen GPU's line) were read with the `- > _` before the
first's stamp, taken for a message joined onto other words, and the log refused as "several
messages on one line": the Xid 79 was not read.

The emphasis's paragraph is Markdown's: the lines from the one it opens on to the first blank
line. Its lines after the first lose the indent the list item gave them (the item's content
column, or all of it on a lazy continuation line that has less), and no more: a line indented
past it keeps the rest (dmesg's continued lines under their stamp)."""

from __future__ import annotations

import re

from gpuonboard.once import lazy_re

__all__ = ["markdown_unmarked"]

# a list item's marker at a line's start: its indent, `-`, `*` or `+`, a blank
_ITEM = lazy_re(r"^[ \t]{0,8}(?P<mark>[-*+])[ \t]+(?=\S)")
# a paragraph's first line under its decoration: indent, a list marker (`-`, `*`, `+`, `1.`),
# quote marks, then an emphasis opener right before a word (group `em`)
_OPENER = lazy_re(
    r"^[ \t]*(?P<block>(?:(?:[-*+]|\d{1,3}[.)])[ \t]+)?(?:>[ \t]?)*)(?P<em>__|\*\*|_|\*)(?=[^\s_*])"
)


_HEADING_WORDS = 4


def markdown_unmarked(lines: list[str]) -> list[str]:
    """`lines` without their Markdown decoration (the module's): a list marker every non-empty
    line carries, and each emphasised paragraph's marks. Lines as given where there is none."""
    filled = [line for line in lines if line.strip()]
    # (the same marker on every line: a list is drawn with one, while `- old` / `+ new` lines are
    # a diff's, no list: revK F7)
    marks = {m.group("mark") if (m := _ITEM.match(line)) else None for line in filled}
    if len(filled) >= 2 and len(marks) == 1 and None not in marks:
        lines = [_ITEM.sub("", line, count=1) for line in lines]
    out = list(lines)
    i = 0
    while i < len(out):
        end = _emphasis_end(out, i)
        # (a lone emphasised line of a few words is a heading, `**GPU**`, said as one where it
        # stands above an output: api/test_offline_heading_above_r35.py)
        if end is None or (end == i and len(out[i].split()) <= _HEADING_WORDS):
            i += 1
            continue
        out[i : end + 1] = _unemphasised(out[i : end + 1])
        i = end + 1
    return out


def _emphasis_end(lines: list[str], start: int) -> int | None:
    """The index of the line that closes the emphasis line `start` opens (the same line or a
    later one of its paragraph, ending in the same mark right after a word); None where it opens
    none or nothing closes it."""
    m = _OPENER.match(lines[start])
    # (it opens a paragraph: the text's first line, one under a blank, or a list item's or a
    # quote's; a line mid-paragraph that starts with `_` is a wrapped value's rest, as
    # `_cw5n1h2txyewy\SearchHost.exe` of a Windows -q cut at one column, no emphasis)
    if m is None or not (start == 0 or not lines[start - 1].strip() or m.group("block")):
        return None
    closer = re.compile(rf"(?<=[^\s_*]){re.escape(m.group('em'))}[ \t]*$")
    for end in range(start, len(lines)):
        if not lines[end].strip():
            return None
        tail = lines[end][m.end() :] if end == start else lines[end]
        if closer.search(tail):
            return end
    return None


def _unemphasised(paragraph: list[str]) -> list[str]:
    """An emphasised paragraph's lines without the decoration before its first line's words (its
    content column), the emphasis's closing mark, and the indent the lines after the first have
    up to that column."""
    first = _OPENER.match(paragraph[0])
    assert first is not None
    column, em = first.end(), first.group("em")
    lines = [paragraph[0][column:], *paragraph[1:]]
    lines[-1] = re.sub(rf"{re.escape(em)}([ \t]*)$", r"\1", lines[-1], count=1)
    out = [lines[0]]
    for line in lines[1:]:
        indent = len(line) - len(line.lstrip(" \t"))
        out.append(line[min(indent, column) :])
    return out
