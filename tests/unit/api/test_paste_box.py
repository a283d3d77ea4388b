"""nvidia-smi's table redrawn with box-drawing characters (a web page's or a terminal font's
rendering: `┌─┬─┐`, `│`, `╞═╪═╡`, `└─┴─┘`) reads as the ASCII table nvidia-smi printed: the same
GPUs and facts from every real table capture, one character for one so no column moves."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api import paste
from gpuonboard.facts.nvidia_smi import parse_any

REAL = Path(__file__).parents[2] / "fixtures" / "real"
# (not a table a page ran onto one line: its borders are no lines of their own to draw)
TABLES = sorted(
    p.name
    for p in REAL.glob("nvidia-smi__*.txt")
    if "+-----" in p.read_text() and "on-one-line" not in p.name
)


def drawn(text: str) -> str:
    """The table as a renderer draws it: each border by its place (top, middle, bottom), the
    header rule doubled, the cell walls as light verticals."""
    lines = text.split("\n")
    borders = [i for i, line in enumerate(lines) if line.lstrip().startswith("+-")]
    out = []
    for i, line in enumerate(lines):
        body = line.lstrip()
        lead = line[: len(line) - len(body)]
        if body.startswith("+-"):
            left, mid, right = ("┌┬┐", "├┼┤", "└┴┘")[0 if i == borders[0] else 2 if i == borders[-1] else 1]
            inner = body[1:-1].replace("-", "─").replace("+", mid)
            out.append(lead + left + inner + right)
        elif body.startswith("|=") and body.rstrip().endswith("|"):
            out.append(lead + "╞" + body[1:-1].replace("=", "═").replace("+", "╪").replace("|", "╪") + "╡")
        else:
            out.append(line.replace("|", "│"))
    return "\n".join(out)


@pytest.mark.parametrize("name", TABLES)
def test_a_box_drawn_table_reads_as_the_ascii_one(name: str) -> None:
    text = (REAL / name).read_text()
    box = drawn(paste.normalise(text))  # (drawn from the table as printed: a paste's other damage undone)
    assert "│" in box
    assert not parse_any(box).gpus  # as drawn, no GPU row is read
    assert parse_any(paste.normalise(box)) == parse_any(paste.normalise(text))


def test_box_characters_map_one_for_one() -> None:
    assert paste.normalise("┌─┬═╤╌┐\n│a│b║\n└─┴─┘") == "+-+=+-+\n|a|b|\n+-+-+"
