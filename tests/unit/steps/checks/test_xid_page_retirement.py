"""Xid 63 / 64 before Ampere: Dynamic Page Retirement, not the catalogue's row remapping. The
driver names the event in its own text (`63, Dynamic Page Retirement: New page retired, reboot to
activate (0x...)`), and a retired page takes effect only at the next reboot: the row says what
the driver said and asks for the reboot, never "GPU memory remapping event -> ignore".

Real capture: tests/fixtures/real/SOURCES.md (NVIDIA/nvidia-docker#849); the edits are in memory."""

from __future__ import annotations

from pathlib import Path

from ...offline_judge import checks

REAL = Path(__file__).parents[3] / "fixtures" / "real"
V100 = REAL / "dmesg-T__xid-48-dbe-then-xid-63-dynamic-page-retirement-reboot-to-activate__v100-driver390.txt"


def xid(tmp_path: Path, text: str) -> tuple[str, str]:
    row = next(c for c in checks(tmp_path, "dmesg.txt", text) if c.name == "gpu_xid")
    return row.verdict, row.actual


def test_page_retirement_line_says_reboot_to_activate(tmp_path: Path) -> None:
    verdict, actual = xid(tmp_path, V100.read_text())
    assert verdict == "fail"
    assert "Xid 48 Double Bit ECC Error -> replace" in actual
    assert (
        "Xid 63 Dynamic Page Retirement (pre-Ampere memory repair): New page retired, reboot to activate"
        " -> reboot"
    ) in actual
    assert "remapping" not in actual


def test_page_retirement_alone_asks_for_a_reboot(tmp_path: Path) -> None:
    """The Xid 63 line alone (the DBE line left out, in memory): the reboot it asks for fails the
    rule (a page retirement pending, as memory_repair's pending retirement fails)."""
    line = next(x for x in V100.read_text().splitlines() if "): 63, " in x)
    verdict, actual = xid(tmp_path, line + "\n")
    assert verdict == "fail"
    assert actual.endswith("New page retired, reboot to activate -> reboot")


def test_ampere_row_remapper_line_keeps_the_catalogue(tmp_path: Path) -> None:
    """The gpud capture's Ampere Xid 63 (`Row Remapper: New row ... marked for remapping`): the
    catalogue's row remapping event, as before."""
    text = (REAL / "dmesg-time-format-iso__xid-48-63-94__peermem__gpud.txt").read_text()
    _verdict, actual = xid(tmp_path, text)
    assert "Xid 63 GPU memory remapping event" in actual
    assert "Dynamic Page Retirement" not in actual
