"""A kernel log that starts inside the NVIDIA driver's own multi-line report (an Xid 119's GSP RPC
timeout report: its RPC history rows, dump_stack's head, the Call Trace's `[nvidia]` frames) holds
no evidence that no Xid was logged: the report's head, the Xid among it, is before its first line.
gpu_xid passed on the tail of such a report (measure33d 26).

Real captures: tests/fixtures/real/SOURCES.md (open-gpu-kernel-modules#942, turn 0; the Dell
XE9680's whole GSP timeout report, whose every tail is the class)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.facts.kernel_oops import dump_fragment

from ...offline_judge import verdicts

REAL = Path(__file__).parents[3] / "fixtures" / "real"
TAIL = REAL / "journalctl-k__gsp-rpc-history-tail-and-nvidia-stack-no-head__frame-cut__ogkm-942.txt"
# a whole GSP timeout report: line 3 its Xid 119, lines 4-33 its body (buffer, RPC history and
# event history with their rows, dump_stack's head, the Call Trace down to `[nvidia]` frames)
WHOLE = REAL / "dmesg-T__xid-119-gsp-timeout__h100-dell-xe9680.txt"


def test_the_tail_of_a_gsp_timeout_report_is_unverified(tmp_path: Path) -> None:
    verdict, actual = verdicts(tmp_path, "journal.txt", TAIL.read_text())["gpu_xid"]
    assert verdict == "unverified", actual
    assert "starts inside a fault's dump in the NVIDIA driver (`NVRM: -7 4102 OS_ERROR_LOG" in actual, actual
    assert "ends cut inside it (`? os_mem_set+0x14/0`)" in actual, actual


def test_the_tail_without_its_last_newline_is_unverified_too(tmp_path: Path) -> None:
    verdict, actual = verdicts(tmp_path, "journal.txt", TAIL.read_text().rstrip("\n"))["gpu_xid"]
    assert verdict == "unverified", actual


# the class: the report cut before each line of its body, each tail up to the trace's end
@pytest.mark.parametrize("start", range(3, 33))
def test_every_tail_of_a_whole_gsp_timeout_report_is_a_fragment(start: int) -> None:
    lines = WHOLE.read_text().splitlines(keepends=True)
    assert "starts inside a fault's dump in the NVIDIA driver" in dump_fragment("".join(lines[start:37]))


def test_the_report_from_its_xid_on_is_no_fragment() -> None:
    lines = WHOLE.read_text().splitlines(keepends=True)
    assert dump_fragment("".join(lines[2:])) == ""


@pytest.mark.parametrize(
    "row",
    [
        "NVRM:     -7    4102 OS_ERROR_LOG                   0 0x0000000000000000",  # as printed
        "NVRM: -7 4102 OS_ERROR_LOG 0 0x0000000000000000",  # a paste's blanks collapsed
        "NVRM:         0x0000000001b4acb0",  # a GSP crash report's stack word (ogkm#942, above it)
        "NVRM: 0x0000000001b4acb0",
        "NVRM:     PC Trace:",
    ],
)
def test_a_log_starting_on_a_row_of_the_drivers_report_is_a_fragment(row: str) -> None:
    text = f"Oct 03 18:00:02 mnemosyne kernel: {row}\nOct 03 18:00:03 mnemosyne kernel: usb 1-2: reset\n"
    assert "starts inside a fault's dump" in dump_fragment(text)


def test_an_ordinary_nvrm_line_first_is_no_fragment() -> None:
    text = "[ 5.1] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  580.82.07  Tue Sep  2 2025\n"
    assert dump_fragment(text + "[ 5.2] NVRM: API mismatch: the client has the version 580\n") == ""
