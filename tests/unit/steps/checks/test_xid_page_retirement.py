"""Xid 63 / 64 before Ampere: Dynamic Page Retirement, not the catalogue's row remapping. The
driver names the event in its own text (`63, Dynamic Page Retirement: New page retired, reboot to
activate (0x...)`), and a retired page takes effect only at the next reboot: the row says what
the driver said and asks for the reboot, never "GPU memory remapping event -> ignore".

Ampere's row remapper says the same of its remap in its own words (`Row Remapper: New row marked for
remapping, reset gpu to activate.`): pending until a GPU reset, the row asks for that reset.

Real captures: tests/fixtures/real/SOURCES.md (NVIDIA/nvidia-docker#849, stas00/ml-engineering, gpud);
the edits are in memory."""

from __future__ import annotations

from pathlib import Path

from ...offline_judge import checks

REAL = Path(__file__).parents[3] / "fixtures" / "real"
ROW_REMAP = REAL / "dmesg__xid-63-row-remapper-reset-gpu-to-activate__one-line__ml-engineering.txt"
V100 = REAL / "dmesg-T__xid-48-dbe-then-xid-63-dynamic-page-retirement-reboot-to-activate__v100-driver390.txt"


def xid(tmp_path: Path, text: str) -> tuple[str, str]:
    row = next(c for c in checks(tmp_path, "dmesg.txt", text) if c.name == "gpu_xid")
    return row.verdict, row.actual


def test_page_retirement_line_says_reboot_to_activate(tmp_path: Path) -> None:
    verdict, actual = xid(tmp_path, V100.read_text())
    assert verdict == "fail"
    assert "Xid 48 Double Bit ECC Error -> reset_gpu" in actual
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


def test_ampere_row_remapper_line_asks_for_the_reset_it_waits_for(tmp_path: Path) -> None:
    """The gpud capture's Ampere Xid 63 (`Row Remapper: New row (0x...) marked for remapping, reset
    gpu to activate.`): the catalogue's row remapping event, named with the driver's words, and the
    GPU reset the remap waits for (it read "-> ignore")."""
    text = (REAL / "dmesg-time-format-iso__xid-48-63-94__peermem__gpud.txt").read_text()
    _verdict, actual = xid(tmp_path, text)
    assert (
        "Xid 63 GPU memory remapping event, a repair pending until the GPU is reset (the driver: 'Row"
        " Remapper: New row marked for remapping, reset gpu to activate') -> reset_gpu"
    ) in actual, actual
    assert "Dynamic Page Retirement" not in actual


def test_row_remap_pending_alone_fails_with_reset_gpu(tmp_path: Path) -> None:
    """measure35a 04: the one-line example of ml-engineering's debug guide passed as "Xid 63 GPU
    memory remapping event -> ignore"; the remap it records is not active until the GPU is reset."""
    verdict, actual = xid(tmp_path, ROW_REMAP.read_text())
    assert verdict == "fail", actual
    start = "GPU at PCI 0000:10:1c: Xid 63 GPU memory remapping event, a repair pending until the GPU is"
    assert actual.startswith(start), actual
    said = "(the driver: 'Row Remapper: New row marked for remapping, reset gpu to activate') -> reset_gpu"
    assert actual.endswith(said), actual


def test_a_failed_remap_asks_for_the_catalogues_gpu_reset(tmp_path: Path) -> None:
    """Edit (in memory): the same line as the driver prints a failed remap (Xid 64, `Row Remapper
    Error: (0x...) - Row Remapping table is full`): the catalogue's GPU reset (RESET_GPU; a
    replacement is not NVIDIA's resolution), no pending repair said."""
    line = ROW_REMAP.read_text().replace(
        "63, pid=1896, Row Remapper: New row marked for remapping, reset gpu to activate.",
        "64, pid=1896, Row Remapper Error: (0x0000000000abcdef) - Row Remapping table is full",
    )
    verdict, actual = xid(tmp_path, line)
    assert verdict == "fail" and actual.endswith("Xid 64 GPU memory remapping failure -> reset_gpu"), actual


def test_the_reload_the_driver_form_asks_for_a_reboot(tmp_path: Path) -> None:
    """The form NVIDIA's Dynamic Page Retirement guide shows (`63, Dynamic Page Retirement: New
    retired page, reload the driver to activate. (0x...)`; edit of the V100 line, in memory): the
    retired page waits for the driver's reload, as the reboot form's does (it read "-> ignore")."""
    line = next(x for x in V100.read_text().splitlines() if "): 63, " in x)
    reload = "New retired page, reload the driver to activate"
    line = line.replace("New page retired, reboot to activate", reload)
    verdict, actual = xid(tmp_path, line + "\n")
    assert verdict == "fail", actual
    assert actual.endswith("New retired page, reload the driver to activate -> reboot"), actual
