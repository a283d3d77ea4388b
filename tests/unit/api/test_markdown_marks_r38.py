"""A saved text's lines under Markdown decoration (api/markdown_marks.py), round 38.

m38c 18: two quoted kernel lines inside a list item, a quote and italics (`    - > _Mar 21 ...`,
`  Mar 21 ... fallen off the bus._`) were refused as "a kernel log with several messages on one
line": the Xid 79 was not read."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api.markdown_marks import markdown_unmarked

from ..offline_judge import verdicts

REAL = Path(__file__).resolve().parents[2] / "fixtures" / "real"
NOTES_18 = "notes-md__list-item-quote-italics-syslog-xid79-fallen-off-bus__rtx3060.txt"
ORDER = "gpu_model: GeForce RTX 3060\ngpu_count: 1\n"


def read(name: str) -> str:
    return (REAL / name).read_text(encoding="utf-8")


def _lines() -> list[str]:
    """The capture's two log lines, their decoration off (as the notes show them)."""
    text = read(NOTES_18)
    first, second = (line.strip() for line in text.splitlines() if line.strip())
    return [first.removeprefix("- > _"), second.removesuffix("_")]


def test_the_italic_quote_in_a_list_item_reads_its_xid(tmp_path: Path) -> None:
    got = verdicts(tmp_path, "notes.txt", read(NOTES_18), ORDER)
    assert got["gpu_xid"][0] == "fail", got["gpu_xid"]
    assert "0000:01:00" in got["gpu_xid"][1] and "Xid 79" in got["gpu_xid"][1]
    assert "several messages" not in got["nvswitch_sxid"][1]
    assert got["nvswitch_sxid"][0] == "unverified"  # (NVRM lines only)


@pytest.mark.parametrize(
    "decorate",
    [
        lambda lines: [f"- {line}" for line in lines],  # (each line an item)
        lambda lines: [f"* > {line}" for line in lines],
        lambda lines: [f"**{lines[0]}", f"{lines[1]}**"],  # (bold)
        lambda lines: [f"1. *{lines[0]}", f"   {lines[1]}*"],  # (under a numbered item)
        lambda lines: [f"  + _{lines[0]}_", f"  + _{lines[1]}_"],  # (each line its own italics)
    ],
)
def test_any_such_decoration_reads_the_same(tmp_path: Path, decorate: object) -> None:
    assert callable(decorate)
    text = "\n".join(decorate(_lines())) + "\n"
    got = verdicts(tmp_path, "notes.txt", text, ORDER)
    assert got["gpu_xid"][0] == "fail" and "Xid 79" in got["gpu_xid"][1], (text, got["gpu_xid"])


def test_lines_without_decoration_and_an_unclosed_mark_are_kept() -> None:
    plain = ["[ 1.0] NVRM: x", "               NVRM: y", "* not closed", "_open"]
    assert markdown_unmarked(plain) == plain
    # (a paragraph ends at a blank line: a mark closed after it closes no emphasis)
    assert markdown_unmarked(["_a", "", "b_"]) == ["_a", "", "b_"]


def test_a_continued_line_keeps_its_indent_past_the_items_column() -> None:
    """(the column is the first line's text's, after `- _`: 18 blanks are 15 past it)"""
    lines = ["- _[ 5.1] NVRM: The NVIDIA GPU 0000:b3:00.0", "                  NVRM: fallen off_"]
    got = markdown_unmarked(lines)
    assert got == ["[ 5.1] NVRM: The NVIDIA GPU 0000:b3:00.0", "               NVRM: fallen off"]


@pytest.mark.parametrize("mark", ["-", "*", "+"])
def test_a_list_marker_is_stripped_only_where_the_same_starts_every_line(mark: str) -> None:
    """revK F7: a list is drawn with one marker; `- old` / `+ new` lines are a diff's, no list."""
    lines = _lines()
    assert markdown_unmarked([f"{mark} {line}" for line in lines]) == lines
    mixed = [f"- {lines[0]}", f"+ {lines[1]}"]
    assert markdown_unmarked(mixed) == mixed
    mixed = [f"{mark} {lines[0]}", f"{'*' if mark != '*' else '-'} {lines[1]}"]
    assert markdown_unmarked(mixed) == mixed


def test_a_line_mid_paragraph_that_starts_with_an_underscore_opens_no_emphasis() -> None:
    """A value cut at one column where its rest starts with `_` (a Windows -q's process path
    `...MicrosoftWindows.Client.CBS` / `_cw5n1h2txyewy\\SearchHost.exe`) and a later value's
    cut ending in `_`: no paragraph opens mid-paragraph, so nothing is taken off (before, the
    lines between lost their `_` and the -q read as wrapped beyond rejoining)."""
    lines = [
        "            Name                          : C:\\Windows\\SystemApps\\MicrosoftWindows.Client.CBS",
        "_cw5n1h2txyewy\\SearchHost.exe",
        "            Type                          : C+G",
        "            Name                          : C:\\Program Files\\WindowsApps\\Microsoft.YourPhone_",
    ]
    assert markdown_unmarked(lines) == lines
    # (the same two lines as a paragraph of their own, under a blank: an emphasis, taken off)
    assert markdown_unmarked(["", "_cw5n1h2 SearchHost.exe", "YourPhone_"]) == [
        "",
        "cw5n1h2 SearchHost.exe",
        "YourPhone",
    ]
