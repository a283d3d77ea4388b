"""A kernel log cleared before it was read (`sudo dmesg -C; sleep 60; dmesg`, `dmesg -c >
/dev/null; ...; dmesg -T`, `journalctl --rotate; journalctl --vacuum-time=1s; journalctl -k`)
is no whole log: was PASS "no Xid in the kernel log" on what was left. Derived from real
captures (tests/fixtures/derived: derive.py); each test fails on the code before."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api.narrowed import narrowed

from ..offline_judge import checks

DERIVED = Path(__file__).parents[2] / "fixtures" / "derived"


def _gpu_xid(tmp_path: Path, name: str):  # noqa: ANN202 (an offline_judge check)
    return {c.name: c for c in checks(tmp_path, "kern.txt", (DERIVED / name).read_text())}["gpu_xid"]


@pytest.mark.parametrize(
    ("prompt", "clear"),
    [
        ("dmesg-clear-then-read", "sudo dmesg -C"),
        ("dmesg-c-devnull-then-read", "dmesg -c > /dev/null"),
        ("journalctl-vacuum-then-k", "journalctl --vacuum-time=1s"),
    ],
)
def test_a_log_cleared_before_it_is_read_is_no_pass(tmp_path: Path, prompt: str, clear: str) -> None:
    xid = _gpu_xid(tmp_path, f"dmesg-T-grep-NVRM__loading-line-alone__prompt-{prompt}__derived.txt")
    assert xid.verdict == "unverified", xid
    assert f"`{clear}` clears the kernel log before it is read" in xid.actual


def test_a_fault_in_a_log_read_after_a_clear_still_fails(tmp_path: Path) -> None:
    xid = _gpu_xid(tmp_path, "dmesg__nvrm-fallen-off-bus-no-xid__prompt-dmesg-clear-then-read__derived.txt")
    assert xid.verdict == "fail", xid


@pytest.mark.parametrize(
    "command",
    [
        "dmesg -C",  # (alone: it prints no log)
        "dmesg -c; sleep 60; dmesg",  # (the first printed what it cleared: the text has it)
        "dmesg; dmesg -C",  # (after the read)
        "journalctl --rotate; journalctl -k",  # (rotating deletes nothing)
    ],
)
def test_a_clear_after_the_read_or_printed_is_no_narrowing(command: str) -> None:
    assert "clears the kernel log" not in narrowed("kernel_log", command)


@pytest.mark.parametrize(
    "command",
    [
        "sudo dmesg --clear && dmesg -T",
        "dmesg --read-clear > old.txt; dmesg",
        "sudo journalctl --vacuum-size=1K; sudo journalctl -k -b",
        "ssh box 'sudo dmesg -C; sleep 5; dmesg'",
    ],
)
def test_every_clear_before_a_read_narrows(command: str) -> None:
    assert "clears the kernel log before it is read" in narrowed("kernel_log", command)
