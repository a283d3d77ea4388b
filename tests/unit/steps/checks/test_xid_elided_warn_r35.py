"""A kernel log with lines left out by hand (`...`) that shows only application Xids (a warning):
unverified, the warnings shown named (revO F4: a fault could be in the lines left out; measure35a
08's Xid 13 x8 and Xid 43 on an H800 are named, not passed over), while a fault such a log shows
still fails. Real capture: tests/fixtures/real/SOURCES.md."""

from __future__ import annotations

from pathlib import Path

from ...offline_judge import checks

REAL = Path(__file__).parents[3] / "fixtures" / "real"
DXVK = "dmesg__xid-31-13-32-application-faults__hand-elided__dxvk-1027.txt"


def test_a_shown_warning_is_named_and_unverified(tmp_path: Path) -> None:
    """revO F4: the warnings shown are named (each Xid -> check_app), and the verdict stays
    unverified: the lines left out by hand may hold a fault (before this fix: warn)."""
    text = (REAL / DXVK).read_text(encoding="utf-8")
    got = {c.name: c for c in checks(tmp_path, "dmesg.txt", text, "gpu_count: 1\n")}["gpu_xid"]
    assert got.verdict == "unverified", got.actual
    assert "Xid 13 Graphics Engine Exception x4 -> check_app" in got.actual, got.actual
    assert "left out of it by hand" in got.actual and "may hold worse" in got.actual, got.actual
    assert "what it shows warns (application-level Xids" in got.detail, got.detail


def test_a_shown_fault_in_a_hand_elided_log_still_fails(tmp_path: Path) -> None:
    """revO F4: a fault-level Xid among the lines shown (the capture's Xid 13 line made Xid 79, a
    test input) fails as before."""
    text = (
        (REAL / DXVK)
        .read_text(encoding="utf-8")
        .replace("Xid (PCI:0000:01:00): 13,", "Xid (PCI:0000:01:00): 79,", 1)
    )
    assert "Xid (PCI:0000:01:00): 79," in text
    got = {c.name: c for c in checks(tmp_path, "dmesg.txt", text, "gpu_count: 1\n")}["gpu_xid"]
    assert got.verdict == "fail", got.actual
