"""A kernel log with lines left out by hand (`...`) that shows only application Xids (a warning)
stays a warning (measure35a 08: Xid 13 x8 and Xid 43 on an H800 became unverified, "lines were
left out of it by hand", while a fault such a log shows still fails): what is shown is shown;
the sentence says what was left out may be worse. Real capture: tests/fixtures/real/SOURCES.md."""

from __future__ import annotations

from pathlib import Path

from ...offline_judge import checks

REAL = Path(__file__).parents[3] / "fixtures" / "real"
DXVK = "dmesg__xid-31-13-32-application-faults__hand-elided__dxvk-1027.txt"


def test_a_shown_warning_stays_a_warning(tmp_path: Path) -> None:
    text = (REAL / DXVK).read_text(encoding="utf-8")
    got = {c.name: c for c in checks(tmp_path, "dmesg.txt", text, "gpu_count: 1\n")}["gpu_xid"]
    assert got.verdict == "warn", got.actual
    assert "left out of it by hand" in got.actual, got.actual
    assert "may hold worse Xid errors" in got.detail, got.detail
