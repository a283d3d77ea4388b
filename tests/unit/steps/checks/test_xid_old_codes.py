"""Xids only old drivers log (1-12, NVIDIA's catalogue calls them "Unused") are named by their
driver mnemonic and said to be no current driver's code, never "Xid 3 Unused -> replace", which
reads as harmless beside its action (measure32c 29, 35); a log whose last line is the beginning
of a driver line it printed whole before (the same Xid again, the excerpt cut inside it) is cut.

Real captures: tests/fixtures/real/SOURCES.md (pastebin xJaypMZt, xkjT7KVW)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.steps.checks.xid_catalogue import load_xid_catalogue

from ...offline_judge import verdicts

REAL = Path(__file__).parents[3] / "fixtures" / "real"
XID3 = REAL / "dmesg-syslog__xid-3-old-format-no-pci-prefix__fallen-off-bus__pastebin-xJaypMZt.txt"
XID9 = REAL / "dmesg-syslog__xid-9-x13__line-cut-as-stored__pastebin-xkjT7KVW.txt"


def test_xid_3_is_named_and_said_old(tmp_path: Path) -> None:
    verdict, actual = verdicts(tmp_path, "syslog.txt", XID3.read_text())["gpu_xid"]
    assert verdict == "fail", actual
    assert "Xid 3 ROBUST_CHANNEL_FIFO_ERROR_UNK_METHOD (logged only by old drivers" in actual, actual
    assert "Unused" not in actual, actual


def test_a_repeated_xid_whose_last_line_is_cut_says_so(tmp_path: Path) -> None:
    verdict, actual = verdicts(tmp_path, "syslog.txt", XID9.read_text())["gpu_xid"]
    assert verdict == "fail", actual
    assert "Xid 9 ROBUST_CHANNEL_GR_ERROR_INSTANCE" in actual, actual
    assert "the log ends inside a line, cut short: 'NVRM: Xid (0000:00:05): 9, Channel'" in actual, actual


def test_the_same_log_whole_is_not_cut(tmp_path: Path) -> None:
    """Edit: the cut last line left out: twelve whole lines, no cut said."""
    text = "".join(XID9.read_text().splitlines(keepends=True)[:-1])
    verdict, actual = verdicts(tmp_path, "syslog.txt", text)["gpu_xid"]
    assert verdict == "fail" and "cut short" not in actual, actual


@pytest.mark.parametrize("code", range(1, 13))
def test_no_catalogued_xid_is_named_unused(code: int) -> None:
    entry = load_xid_catalogue()[0].get(code)
    assert entry is None or "Unused" not in entry.name, entry
