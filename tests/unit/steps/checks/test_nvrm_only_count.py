"""A saved log of NVRM lines only counts its NVRM lines: a forum's bare `> ` quote mark above them
is no line of the log ("it holds only lines with NVRM (5 lines ..." of 4: measure35d 19).

Real capture: tests/fixtures/real/SOURCES.md (Ubuntu Forums, 2019)."""

from __future__ import annotations

from pathlib import Path

from ...offline_judge import checks

REAL = Path(__file__).parents[3] / "fixtures" / "real"
QUOTED = REAL / "dmesg__quote-marker-line-above-xid62-rminitadapter__gtx780__ubuntuforums-2019.txt"


def test_the_quote_mark_is_not_counted(tmp_path: Path) -> None:
    row = next(c for c in checks(tmp_path, "dmesg.txt", QUOTED.read_text()) if c.name == "nvswitch_sxid")
    assert row.verdict == "unverified"
    assert "it holds only lines with NVRM (4 lines, first `[  416.096724] NVRM: GPU at PCI" in row.actual, (
        row.actual
    )
