"""cpu_cores' words for an lscpu nothing was counted from (steps/checks/host_rules.py
_lscpu_text_unread; measure38d 06): the count lines not in lscpu's form are named, never a
well-formed one in their place, and NanXiao's BSD lscpu (`Total CPU(s):`, no `CPU(s):`) is named
and never read as util-linux's (facts/cpu.py parse_lscpu)."""

from __future__ import annotations

import re
from pathlib import Path

from ...offline_judge import checks

REAL = Path(__file__).resolve().parents[3] / "fixtures" / "real"
BSD_06 = "session__lscpu-freebsd-nanxiao-bsd-lscpu__hash-arrow-notes__xeon-e5645.txt"


def _cpu(tmp_path: Path, text: str, order: str = "cpu_cores: 12\n") -> tuple[str, str, str]:
    got = {c.name: c for c in checks(tmp_path, "lscpu.txt", text, order)}["cpu_cores"]
    return got.verdict, got.actual, got.detail


def test_the_bsd_lscpu_with_notes_names_the_noted_lines_and_the_bsd_tool(tmp_path: Path) -> None:
    verdict, _, detail = _cpu(tmp_path, (REAL / BSD_06).read_text(encoding="utf-8"))
    assert verdict == "unverified"
    assert "the BSD `lscpu`" in detail and "`Total CPU(s):`" in detail, detail
    assert "`Thread(s) per core: 2 # <- With Hyperthreading" in detail, detail
    assert "`Socket(s): 1 # <- This should read as 2`" in detail, detail
    assert "Core(s) per socket: 6" not in detail, detail


def test_the_bsd_lscpu_without_notes_is_named_never_failed(tmp_path: Path) -> None:
    plain = re.sub(r" # <-.*", "", (REAL / BSD_06).read_text(encoding="utf-8"))
    verdict, actual, detail = _cpu(tmp_path, plain)
    assert verdict == "unverified" and actual.startswith("unknown:"), (verdict, actual)
    assert "the BSD `lscpu`" in detail and "not lscpu's own form" not in detail, detail


def test_one_noted_line_of_a_respaced_copy_is_the_one_named(tmp_path: Path) -> None:
    text = (REAL / BSD_06).read_text(encoding="utf-8")
    one = re.sub(r"(?m)^(Thread\(s\) per core:\s+2) # <-.*$", r"\1", text).replace(":      ", ":  ")
    verdict, _, detail = _cpu(tmp_path, one)
    assert verdict == "unverified"
    assert "`Socket(s): 1 # <- This should read as 2`" in detail and "Thread(s)" not in detail, detail
    assert "Core(s) per socket" not in detail, detail
