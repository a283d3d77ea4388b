"""A process typed `G` that holds most of a GPU's memory is a job, not a display server
(measure35c 02: the fake GPU operator's pod shows pid 8 typed G holding 83968 of 83968 MiB at
100 %; it was the warn of "a graphics process (e.g. a display server)"). A desktop's Xorg or
gnome-shell holding tens of MiB stays a warn. Real captures: tests/fixtures/*/SOURCES.md."""

from __future__ import annotations

from pathlib import Path

import pytest

from ...offline_judge import verdicts

FIXTURES = Path(__file__).parents[3] / "fixtures"


def test_a_g_process_holding_all_the_memory_fails(tmp_path: Path) -> None:
    name = "page__kubectl-exec-nvidia-smi__fake-gpu-operator-h100-G-process-holds-all-memory-100pct.txt"
    text = (FIXTURES / "sessions" / name).read_text(encoding="utf-8")
    verdict, actual = verdicts(tmp_path, name, text, "gpu_count: 1\n")["foreign_processes"]
    assert verdict == "fail", actual
    assert "pid 8" in actual and "holds most of the GPU's memory" in actual, actual


@pytest.mark.parametrize(
    "name",
    [
        # Xorg and gnome-shell (tens to hundreds of MiB, firefox 273 MiB) on a desktop's GPU
        "nvidia-smi__geforce-rtx-2070-laptop__1gpu__driver440.100__name-cut.txt",
        "nvidia-smi__gb10__1gpu__driver580.95.05__memory-not-supported.txt",
    ],
)
def test_a_desktop_display_server_still_warns(tmp_path: Path, name: str) -> None:
    text = (FIXTURES / "real" / name).read_text(encoding="utf-8")
    verdict, actual = verdicts(tmp_path, name, text, "gpu_count: 1\n")["foreign_processes"]
    assert verdict == "warn", actual
