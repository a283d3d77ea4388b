"""Readings no GPU can give: a power draw many times the limit the same row enforces (laptop
drivers from R550 print `588W /   35W` on an idle RTX 4060 Laptop GPU), memory used above the
total, utilisation above 100 %, a temperature above any a GPU runs at (a sensor's sentinel, 255
C). Such a cell is no reading: sensor_faults warns naming it, where before nothing was said.

Real captures: tests/fixtures/real/SOURCES.md (three laptop tables at 35 W caps: RTX A1000 6GB
Laptop 312 W, RTX 500 Ada 364 W, GeForce RTX 4060 Laptop 588 W); the other cells are edited in
memory of the RTX 4060's table."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.steps.base import Check

from ...offline_judge import checks

REAL = Path(__file__).parents[3] / "fixtures" / "real"
OVER_CAP = sorted(p.name for p in REAL.glob("nvidia-smi__*-over-35W-cap__*.txt"))
RTX4060 = (
    REAL
    / "nvidia-smi__geforce-rtx-4060-laptop__1gpu__driver550.107.02__power-588W-over-35W-cap__xps15-9530.txt"
)
ROW = "| N/A   37C    P3            588W /   35W |       8MiB /   8188MiB |      0%      Default |"


def rows(tmp_path: Path, text: str) -> dict[str, Check]:
    return {c.name: c for c in checks(tmp_path, "nvidia-smi.txt", text)}


def test_there_are_three() -> None:
    assert len(OVER_CAP) == 3


@pytest.mark.parametrize("name", OVER_CAP)
def test_every_real_draw_many_times_its_cap_is_a_sensor_fault(tmp_path: Path, name: str) -> None:
    """`312W /   35W`, `364W /   35W`, `588W /   35W`: sensor_faults warns naming the draw and the
    limit (before: no sensor_faults row at all)."""
    text = (REAL / name).read_text()
    draw = next(w for w in ("312", "364", "588") if f"{w}W /   35W" in text)
    row = rows(tmp_path, text)["sensor_faults"]
    assert row.verdict == "warn"
    assert row.actual == f"GPU 0: power draw reads {draw} W against its 35 W power limit: no reading"
    assert "no reading" in row.detail


def test_a_draw_within_its_cap_is_no_fault(tmp_path: Path) -> None:
    """`10W /   35W` (edited): no sensor_faults row."""
    assert "sensor_faults" not in rows(tmp_path, RTX4060.read_text().replace("588W /", " 10W /"))


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        (
            "       8MiB /   8188MiB",
            "memory used reads 9188 MiB of its 8188 MiB total: no reading",
        ),
        ("      0%      Default", "utilization reads 250 %: no reading"),
        ("37C", "temperature reads 255 C: no reading"),
    ],
)
def test_other_cells_that_cannot_be_readings_warn_the_same(tmp_path: Path, edit: str, said: str) -> None:
    """Memory used above the total, utilisation above 100 %, a temperature of 255 C (edited in
    memory, the draw set within its cap): sensor_faults warns naming the cell."""
    new = {
        "       8MiB /   8188MiB": "    9188MiB /   8188MiB",
        "      0%      Default": "    250%      Default",
        "37C": "255C",
    }[edit]
    text = RTX4060.read_text().replace(ROW, ROW.replace("588W /", " 10W /").replace(edit, new))
    row = rows(tmp_path, text)["sensor_faults"]
    assert (row.verdict, row.actual) == ("warn", f"GPU 0: {said}")


def test_a_temperature_no_gpu_runs_at_is_no_fail(tmp_path: Path) -> None:
    """255 C (edited in memory): temperature is unverified, "no reading", as of 0 C (it failed
    "255 C on GPU 0": a hardware claim from a sensor's sentinel)."""
    text = RTX4060.read_text().replace(ROW, ROW.replace("588W /", " 10W /").replace("37C", "255C"))
    row = rows(tmp_path, text)["temperature"]
    assert (row.verdict, row.actual) == ("unverified", "255 C on GPU 0: no reading")


# revQ Q4: a 255 C sentinel on one GPU of 8 passed the temperature row ("27 C on GPU 4 (GPU 0:
# 255 C, no reading)"): the GPU with no reading may be the hot one; unverified, naming it.
H100 = REAL / "nvidia-smi__h100-80gb-hbm3__8gpu__driver550.90.07.txt"
H100_ROW = "| N/A   23C    P0             72W /  700W |       1MiB /  81559MiB |      0%      Default |"


@pytest.mark.parametrize("value", ["255C", "  0C"])
def test_one_gpus_unreadable_temperature_never_sits_inside_a_pass(tmp_path: Path, value: str) -> None:
    text = H100.read_text()
    assert H100_ROW in text
    row = rows(tmp_path, text.replace(H100_ROW, H100_ROW.replace(" 23C", value), 1))["temperature"]
    assert row.verdict == "unverified"
    assert f"({value.strip()[:-1]} C, no reading)" in row.actual.replace("GPU 3: ", "")
    assert "GPU 3" in row.actual and "GPU 3" in row.detail
    # (the same table whole: a pass, as before)
    assert rows(tmp_path, text)["temperature"].verdict == "pass"
