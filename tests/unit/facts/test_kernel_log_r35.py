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


PIECES = REAL / "dmesg__sxid-22013-blank-lines-then-bond-mlx5-4428s-first-bracket-lost__ru-chat-hgx.txt"


def test_two_excerpts_pasted_with_blank_lines_between_are_not_the_whole_log() -> None:
    """measure35d 14: an SXid at 117.98 s, blank lines, then ` 4428.423595] bond0: ...` (its `[`
    lost): ~4,300 s of log missing; gpu_xid and nvswitch_sxid passed."""
    log = parse_kernel_log(PIECES.read_text())
    assert "4,310 s after the line above" in log.left_out
    assert rule_xid(log.events, True, narrowed=log.left_out).verdict == "unverified"
    assert rule_sxid(log.events, True, narrowed=log.left_out).verdict == "unverified"


def test_a_line_whose_stamp_lost_its_bracket_is_a_copy_begun_mid_line() -> None:
    """The same capture without its blank lines: the bond0 line that lost its `[` still says so."""
    text = "\n".join(line for line in PIECES.read_text().splitlines() if line.strip()) + "\n"
    assert "is a line copied from its middle" in parse_kernel_log(text).left_out


@pytest.mark.parametrize(
    "text",
    [
        # (double spacing: a forum's, every line)
        "[  1.000000] a\n\n[ 900.000000] b\n\n[ 901.000000] c\n\n[ 950.000000] d\n",
        # (blank lines, then the next second: a pause, no gap)
        "[  1.000000] a\n[  2.000000] b\n\n[  3.000000] c\n[  4.000000] d\n",
        # (a gap with no blank line: a log's own quiet hours)
        "[  1.000000] a\n[ 9000.000000] b\n",
        # (the first line lost its `[`: a copy begun there, said by where the log starts)
        " 4428.423595] bond0: a\n[ 4429.000000] b\n",
    ],
)
def test_one_run_of_a_log_is_no_excerpts(text: str) -> None:
    assert parse_kernel_log(text).pieced == ""


CUT_AFTER_CE = REAL / (
    "dmesg-syslog__edac-ce-reserved-x6-then-reboot-last-line-cut-at-hostname__hisilicon-messages-cn-notes.txt"
)


def _health(text: str) -> dict[str, tuple[str, str]]:
    """The kernel log rules' verdicts and sentences on `text` as the box's log."""
    from gpuonboard.connection.gather import parse_facts
    from gpuonboard.facts.probe import ProbeOutput
    from gpuonboard.steps.checks.fabric_health import health_checks

    checks = health_checks(parse_facts({"kernel_log": ProbeOutput(text, "", 0)}))
    return {c.name: (c.verdict, c.actual) for c in checks}


@pytest.mark.parametrize(
    "text",
    [
        CUT_AFTER_CE.read_text(),  # (measure35d 12: a newline after the cut head)
        "[    1.000000] EDAC MC0: 1 CE memory read error on CPU_SrcID#0_MC#0_Chan#1_DIMM#0 (channel:1"
        " slot:0 page:0x1 offset:0x0 grain:32 syndrome:0x0)\n[    2.000000] EDAC MC1: 1",
    ],
)
def test_corrected_errors_beside_a_cut_last_line_are_not_all_the_errors(text: str) -> None:
    """A log cut inside its last line (a head without its message, `EDAC MC1: 1` without its
    `UE` or `CE`): what it went on to say is not known. host_hw_errors passed the corrected
    errors above it, while gpu_xid said the log was cut."""
    verdict, actual = _health(text)["host_hw_errors"]
    assert verdict == "unverified"
    assert "the log ends inside a line, cut short" in actual
