"""One rule for a kernel log that is only part of the boot's (lines left out by hand, `| grep`,
`| tail`, cut after its last whole line): its faults are judged as shown, since what it leaves
out can only add faults: one that fails fails, one that warns warns (naming what is left out
too), and a log that shows none is unverified. Before, a warning in such a log was demoted to
unverified (measure33d 06), while host_hw_errors kept its warning. A driver line the log ends
inside is a fault shown but not read: unverified, as before.

Real capture: tests/fixtures/real/SOURCES.md (doitsujin/dxvk#1027)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ...offline_judge import checks

REAL = Path(__file__).parents[3] / "fixtures" / "real"
ELIDED = REAL / "dmesg__xid-31-13-32-application-faults__hand-elided__dxvk-1027.txt"
XID_79 = "[31609.700000] NVRM: Xid (PCI:0000:01:00): 79, pid=1, GPU has fallen off the bus.\n"


def _xid(tmp_path: Path, text: str) -> tuple[str, str, str]:
    check = next(c for c in checks(tmp_path, "dmesg.txt", text) if c.name == "gpu_xid")
    return check.verdict, check.actual, check.detail


def test_application_xids_in_a_hand_elided_log_warn_naming_the_elision(tmp_path: Path) -> None:
    verdict, actual, detail = _xid(tmp_path, ELIDED.read_text())
    assert verdict == "warn", actual
    assert "Xid 31" in actual and "Xid 13" in actual and "Xid 32" in actual, actual
    assert "left out of it by hand, marked `...`" in actual, actual
    assert "give the whole log of this boot" in detail, detail


def test_a_fatal_xid_in_a_hand_elided_log_fails(tmp_path: Path) -> None:
    verdict, actual, _ = _xid(tmp_path, ELIDED.read_text() + XID_79)
    assert verdict == "fail" and "Xid 79" in actual, actual


@pytest.mark.parametrize("tail", ["[31610.000001] usb 1-2: new high-speed USB dev", "[31610.0000"])
def test_the_same_log_cut_inside_another_line_warns(tmp_path: Path, tail: str) -> None:
    """The log cut after its last Xid (edits), inside a line of another driver or inside a line's
    stamp (a line that says nothing yet: before, unverified): the lines after it left out, as
    the elision's are."""
    verdict, actual, detail = _xid(tmp_path, ELIDED.read_text().replace("...\n", "") + tail)
    assert verdict == "warn", actual
    assert "Xid 31" in actual, actual
    if tail.endswith("0000"):
        assert "cut short" in actual and "read the end of the log by hand" in detail, detail


def test_the_same_log_cut_inside_a_driver_line_is_unverified(tmp_path: Path) -> None:
    """The log cut inside an NVRM line (an edit): a fault shown but not read."""
    text = ELIDED.read_text().replace("...\n", "") + "[31610.000001] NVRM: Xid (PCI:0000:01:00): 7"
    verdict, actual, _ = _xid(tmp_path, text)
    assert verdict == "unverified", actual


def test_an_elided_log_showing_no_xid_is_unverified(tmp_path: Path) -> None:
    text = "[    1.0] Linux version 6.8.0 (buildd@lcy02) #1 SMP\n...\n[   20.1] usb 1-2: reset\n"
    verdict, actual, _ = _xid(tmp_path, text)
    assert verdict == "unverified", actual
