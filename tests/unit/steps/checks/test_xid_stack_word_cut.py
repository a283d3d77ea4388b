"""A kernel log whose last line is a raw stack word of a fault's dump cut short (inside its
address, `00000000b8f1`, or its value, `00000000b55d5f01: ffff8d6`), where the log's other lines
are such words: the log ends inside a line, in every log form (dmesg, dmesg -T, syslog,
journalctl, ISO stamps), with or without a newline after it, and no kernel-log rule passes on it
(facts/kernel_cut.py _stack_word_cut). nvswitch_sxid passed on such a journal (measure33c 25).

Real captures: tests/fixtures/real/SOURCES.md (pop-os/pop#3363, turns 26 and 71)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from ...offline_judge import verdicts

REAL = Path(__file__).parents[3] / "fixtures" / "real"
DUMP = "journalctl-k__nvidia-stack-dump-only-no-head__"
T26 = REAL / f"{DUMP}last-address-cut__line-cut-as-stored__pop-os-3363-t26.txt"
T71 = REAL / f"{DUMP}last-word-cut__line-cut-as-stored__pop-os-3363.txt"
RULES = ("gpu_xid", "nvswitch_sxid")


@pytest.mark.parametrize("capture", [T26, T71], ids=["address-cut", "value-cut"])
def test_a_real_dump_cut_inside_its_last_word_passes_no_rule(tmp_path: Path, capture: Path) -> None:
    judged = verdicts(tmp_path, "journal.txt", capture.read_text(), "gpu_count: 1\n")
    last = capture.read_text().rstrip("\n").rsplit("\n", 1)[-1]
    for rule in RULES:
        verdict, actual = judged[rule]
        assert verdict == "unverified", (rule, actual)
        assert f"the log ends inside a line, cut short: {last!r}" in actual, (rule, actual)


SHAPES: list[Callable[[str], str]] = [
    lambda m: f"[ 5107.644336] {m}",  # dmesg
    lambda m: f"[Tue Apr 29 19:24:11 2025] {m}",  # dmesg -T
    lambda m: f"Apr 29 19:24:11 EVE kernel: {m}",  # syslog, journalctl
    lambda m: f"2025-04-29T19:24:11.123456+02:00 EVE kernel: {m}",  # journalctl -o short-iso-precise
]


def _messages(capture: Path) -> list[str]:
    return [line.split("kernel: ", 1)[1] for line in capture.read_text().splitlines()]


@pytest.mark.parametrize("shape", SHAPES, ids=["dmesg", "dmesg-T", "syslog", "iso"])
@pytest.mark.parametrize("capture", [T26, T71], ids=["address-cut", "value-cut"])
@pytest.mark.parametrize("newline", ["", "\n"], ids=["open", "newline"])
def test_the_cut_dump_in_each_log_shape_passes_no_rule(
    tmp_path: Path, shape: Callable[[str], str], capture: Path, newline: str
) -> None:
    text = "\n".join(shape(m) for m in _messages(capture)) + newline
    judged = verdicts(tmp_path, "kern.log", text, "gpu_count: 1\n")
    for rule in RULES:
        verdict, actual = judged[rule]
        assert verdict == "unverified", (rule, actual)
        assert "the log ends inside a line, cut short" in actual, (rule, actual)


@pytest.mark.parametrize("shape", SHAPES, ids=["dmesg", "dmesg-T", "syslog", "iso"])
@pytest.mark.parametrize("newline", ["", "\n"], ids=["open", "newline"])
def test_a_dump_whose_last_word_is_whole_is_not_cut(
    tmp_path: Path, shape: Callable[[str], str], newline: str
) -> None:
    """The same dump without its cut line (its last word whole, `(0x...)` after it): the SXid
    rule reads no cut (the dump is still a fragment for gpu_xid: its own test)."""
    text = "\n".join(shape(m) for m in _messages(T26)[:-1]) + newline
    verdict, actual = verdicts(tmp_path, "kern.log", text, "gpu_count: 1\n")["nvswitch_sxid"]
    assert "ends inside a line" not in actual, actual
    assert verdict == "pass", actual


@pytest.mark.parametrize(
    "last", ["00000000b8f1e2a3", "00000000b8f1e2a3: ffff99da0162b160 (0xffff99da0162b160)"]
)
def test_a_hex_word_in_a_log_of_no_dump_is_read_as_it_is(tmp_path: Path, last: str) -> None:
    """A last line of hex digits alone (or a whole stack word) where no other line is a stack
    word: nothing tells a cut from it, as before."""
    text = f"[    1.000000] usb 1-1: new high-speed USB device number 2\n[    1.100000] {last}"
    verdict, actual = verdicts(tmp_path, "dmesg.txt", text, "gpu_count: 1\n")["nvswitch_sxid"]
    assert "ends inside a line" not in actual, actual
