"""Another program's message that prints a dmesg-like `[seconds.micro]` of its own (NetworkManager's
`<error> [1448724794.852826] [dns-manager/...]`, its own clock) is no kernel line joined onto it:
the journal was refused as "a kernel log with several messages on one line (... a chat or a page
joined its lines)" (measure35d 21). A kernel line's words followed by another stamp still are.

Real capture: tests/fixtures/real/SOURCES.md (Ubuntu Forums, 2015)."""

from __future__ import annotations

from pathlib import Path

from gpuonboard.facts.joined_log import joined_messages

REAL = Path(__file__).parents[2] / "fixtures" / "real"
JOURNAL = REAL / (
    "journalctl-p-err__typed-journalcmd-a-p-err__networkmanager-own-bracket-stamp__edac-sbridge-persistenced"
    "__ubuntuforums-2015.txt"
)


def test_a_programs_own_bracketed_clock_is_no_joined_line() -> None:
    assert joined_messages(JOURNAL.read_text()) == 0


def test_a_kernel_line_joined_after_a_programs_line_still_is() -> None:
    """Edit: NetworkManager's line with a syslog kernel line joined onto its end (a chat's join):
    the second syslog head after its words is a joined line."""
    line = next(x for x in JOURNAL.read_text().splitlines() if "<error> [1448724794" in x)
    kernel = "Nov 28 16:33:15 Yak kernel: [   19.525811] NVRM: RmInitAdapter failed! (0x25:0xffffffff:1156)"
    joined = f"{line} {kernel}"
    assert joined_messages(joined + "\n") == 1
