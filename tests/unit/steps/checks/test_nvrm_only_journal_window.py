"""A plain journal window is no `grep NVRM` (round 33, measure33a 31): ik_llama.cpp#425's journal,
one `kernel: NVRM: Xid ... 31` line among six `llama-swap[80783]:` lines, was said to hold "only
lines with NVRM (7 lines ...)", picked from the log. A line of another program without the word
says the window was not grepped for it: the same for `nvidia` (a `grep -i nvidia`)."""

from __future__ import annotations

from pathlib import Path

from gpuonboard.facts.kernel_quoted import gpu_driver_only, nvidia_only

from ...offline_judge import verdicts

JOURNAL = (
    Path(__file__).parents[3]
    / "fixtures"
    / "real"
    / "dmesg-journalctl__xid31-one-nvrm-line-among-llama-swap-lines__ik-llama-425.txt"
)


def test_a_journal_window_with_other_programs_lines_is_no_grep(tmp_path: Path) -> None:
    got = verdicts(tmp_path, "journal.txt", JOURNAL.read_text(), "gpu_model: RTX 3090\n")
    assert "only lines with NVRM" not in got["nvswitch_sxid"][1], got["nvswitch_sxid"]
    assert got["nvswitch_sxid"] == (
        "pass",
        "no SXid in the kernel log (the log read starts after boot, so it does not cover the whole boot)",
    )
    assert got["gpu_xid"][0] == "warn" and "Xid 31" in got["gpu_xid"][1]


def test_the_kernel_lines_alone_are_still_a_grep() -> None:
    """Control: the window's kernel line alone (what `grep NVRM` keeps) is still picked."""
    lines = JOURNAL.read_text().splitlines()
    kernel = [line for line in lines if " kernel: " in line]
    assert gpu_driver_only(kernel) is not None and gpu_driver_only(lines) is None
    assert nvidia_only(lines) is None
