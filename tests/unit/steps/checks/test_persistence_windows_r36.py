"""persistence_mode on Windows tables whose header rows were dropped: the cell Linux prints the
persistence mode in holds the Windows driver model (`WDDM`, `TCC`), which is never a persistence
mode (Windows has none): the row says N/A with the driver model, as it does where the header
names the column (`Driver-Model`, `TCC/WDDM`), never `Enabled`. And a value the rule does not
know is no pass.

Real captures: tests/fixtures/real/SOURCES.md (the RTX 5080 595.97 diagnosis report, posted
without its header rows; every real Windows table, its header rows taken off in memory)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.facts.nvidia_smi import GpuInfo, parse_any
from gpuonboard.steps.checks.gpu_health.modes import rule_persistence

from ...offline_judge import checks

REAL = Path(__file__).parents[3] / "fixtures" / "real"
RTX5080 = (
    REAL / "nvidia-smi__geforce-rtx-5080__1gpu__driver595.97__windows-wddm__header-rows-dropped__"
    "gpu-diagnosis-report.txt"
)
WINDOWS_TABLES = sorted(
    p.name
    for p in REAL.glob("nvidia-smi__*windows*.txt")
    if "Driver-Model" in p.read_text() or "TCC/WDDM" in p.read_text()
)


def persistence(tmp_path: Path, text: str) -> tuple[str, str]:
    row = next(c for c in checks(tmp_path, "nvidia-smi.txt", text) if c.name == "persistence_mode")
    return row.verdict, row.actual


def test_the_rtx_5080_table_without_its_header_reads_the_driver_model(tmp_path: Path) -> None:
    """`|   0  NVIDIA GeForce RTX 5080     WDDM   |`: the driver model, no persistence mode (was
    `PASS Enabled`)."""
    (gpu,) = parse_any(RTX5080.read_text()).gpus
    assert (gpu.driver_model, gpu.persistence_mode) == ("WDDM", None)
    assert persistence(tmp_path, RTX5080.read_text()) == (
        "pass",
        "N/A on GPU 0 (Windows WDDM driver model: no persistence mode)",
    )


def test_there_are_windows_tables() -> None:
    assert len(WINDOWS_TABLES) >= 5


@pytest.mark.parametrize("name", WINDOWS_TABLES)
def test_every_real_windows_table_without_its_header_rows_says_the_same(tmp_path: Path, name: str) -> None:
    """Each real Windows table with the rows that name its columns taken off reads the same
    driver model, and persistence_mode says the same, as the whole table."""
    whole = (REAL / name).read_text()
    headless = "\n".join(
        line
        for line in whole.splitlines()
        if not any(w in line for w in ("Driver-Model", "TCC/WDDM", "Pwr:Usage/Cap", "MIG M."))
    )
    assert [g.driver_model for g in parse_any(headless).gpus] == [
        g.driver_model for g in parse_any(whole).gpus
    ]
    assert persistence(tmp_path, headless) == persistence(tmp_path, whole)


def test_a_value_the_rule_does_not_know_is_no_pass() -> None:
    """A persistence mode read as neither Enabled nor Disabled (a cell the reader did not know,
    constructed here) is unverified naming it, never `Enabled`."""
    gpu = GpuInfo(index=0, name="NVIDIA GeForce RTX 5080", persistence_mode="WDM")
    row = rule_persistence([gpu])
    assert (row.verdict, row.actual) == ("unverified", "GPU 0 reads 'WDM'")
