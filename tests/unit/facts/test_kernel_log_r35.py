"""Kernel log reading, round 35 (measure35d, measure35e; tests/fixtures/real/SOURCES.md, "Round 35
fixes (fixN5d)"): what a saved log's own lines say of how much of the log it is."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.facts.kernel_log import parse_kernel_log
from gpuonboard.facts.kernel_pager import pager_view
from gpuonboard.steps.checks.xid_rules import rule_sxid, rule_xid

REAL = Path(__file__).parents[2] / "fixtures" / "real"
PAGER_TAIL = REAL / (
    "dmesg-journalctl-pager__screen-lines-101434-101480-of-101480-end-twice__macbook-forum.txt"
)


def test_a_pagers_last_screen_of_a_journal_is_not_the_whole_log() -> None:
    """measure35d 20: the last 47 of 101,480 journal lines (2 of the kernel's), below less's
    `lines 101434-101480/101480 (END)`: "no Xid in the kernel log" passed; it is a tail."""
    log = parse_kernel_log(PAGER_TAIL.read_text())
    assert "lines 101434-101480 of 101480" in log.left_out
    assert rule_xid(log.events, True, narrowed=log.left_out).verdict == "unverified"
    assert rule_sxid(log.events, True, narrowed=log.left_out).verdict == "unverified"


@pytest.mark.parametrize(
    "prompt",
    [
        "lines 101434-101480/101480 (END)",  # (a tail)
        "lines 1-52/1234 4%",  # (a head)
        "lines 53-104/1234 8%",
        "lines 2-40",
        "byte 2048/31337 6%",
        "42%",
        "--More--(42%)",
        "(END)",  # (the screen's first line not known)
        ":lines 10-52/52 (END)",
    ],
)
def test_every_pager_prompt_that_shows_part_of_the_output_says_so(prompt: str) -> None:
    lines = ["[ 5000.000001] usb 1-1: new high-speed USB device", prompt]
    assert pager_view(lines) != ""


@pytest.mark.parametrize(
    ("lines", "at_boot"),
    [
        (["[    0.000000] Linux version 6.8.0", "lines 1-22/22 (END)"], False),
        (["[    0.000000] Linux version 6.8.0", "(END)"], True),  # (from boot to the end)
        (["a", "lines 1-40/80 50%", "b", "lines 41-80/80 (END)"], False),  # (two screens, all)
        (["[ 1.0] a line saying 42% done"], False),  # (no prompt: a log's own words)
    ],
)
def test_a_pager_view_of_the_whole_output_is_whole(lines: list[str], at_boot: bool) -> None:
    assert pager_view(lines, at_boot) == ""
