"""The `-q` of the 270 drivers (2011's 270.41.19: a Tesla M2090's `nvidia-smi -i 0 -q`,
measure38b 15): records headed `GPU 0:2:0`, memory under `Memory Usage` in `Mb`, no process list,
each closing with its `Clocks` section. A whole one is whole (it was read as "ends mid-record":
"read before the cut", "its process list may be in the part cut away"), its memory read; one cut
before its Clocks section closed is still cut. Real capture: tests/fixtures/real/SOURCES.md."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from gpuonboard.facts.nvidia_smi import parse_any
from gpuonboard.facts.nvidia_smi.text_q import TEXT_CUT

from ..offline_judge import checks

REAL = Path(__file__).parents[2] / "fixtures" / "real"
M2090 = REAL / (
    "nvidia-smi-q__tesla-m2090__i0-1of2gpu__driver270.41.19__copied-command__gpu-0-2-0-head-no-processes"
    "__microway-blog.txt"
)
ORDER = "gpu_model: Tesla M2090\ngpu_count: 2\nvram: 5GB\n"


def test_the_whole_270_record_is_whole_and_its_memory_read() -> None:
    report = parse_any(M2090.read_text())
    assert report.complete and TEXT_CUT not in report.warnings, report.warnings
    [gpu] = report.gpus
    assert (gpu.memory_total_mib, gpu.memory_used_mib) == (5375, 9)
    assert not gpu.record_cut and not gpu.processes_open


def test_the_270_view_says_no_cut(tmp_path: Path) -> None:
    """Unverified as before (a `-i 0` view of 2 attached), but no cut is said."""
    got = {c.name: c for c in checks(tmp_path, M2090.name, M2090.read_text(), ORDER)}
    assert "before the cut" not in got["nvidia_driver"].actual, got["nvidia_driver"].actual
    assert "cut short" not in got["foreign_processes"].actual, got["foreign_processes"].actual
    assert "`nvidia-smi -i 0 -q` shows only the GPUs it asked for" in got["gpu_count"].actual
    assert got["gpu_count"].verdict == "unverified"
    assert got["vram"].actual.startswith("5375 MiB"), got["vram"].actual
    assert got["persistence_mode"].verdict == "warn"
    assert got["ecc_uncorrectable"].actual.startswith("0"), got["ecc_uncorrectable"].actual


@pytest.mark.parametrize(
    "cut",
    [
        lambda t: t[: t.index("    Clocks")],  # (cut before its Clocks section)
        lambda t: t[: t.index("        Memory                  : 135 MHz")],  # (inside it)
        lambda t: t[: t.index("    Temperature")],  # (well before the end)
    ],
)
def test_a_270_record_cut_before_its_clocks_closed_is_cut(cut: Callable[[str], str]) -> None:
    report = parse_any(cut(M2090.read_text()))
    assert not report.complete and TEXT_CUT in report.warnings, report.warnings
