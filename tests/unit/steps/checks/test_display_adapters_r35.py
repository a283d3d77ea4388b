"""A DGX Station A100 lists its display card, `NVIDIA DGX Display`, as a GPU beside the 4 A100s
(measure35c 22): it failed gpu_model ("'A100' not in the name") and counted as a fifth GPU ("more
GPUs than ordered"). A display-only adapter of data/gpu_name_markers.yml `display_adapters` is
left out of the model, count and memory and named. Real captures: tests/fixtures/real/SOURCES.md,
tests/fixtures/sessions/SOURCES.md."""

from __future__ import annotations

from pathlib import Path

import pytest

from ...offline_judge import verdicts

REAL = Path(__file__).parents[3] / "fixtures" / "real"
ORDER = "gpu_model: A100 80GB\ngpu_count: 4\nvram: 80GB\n"
LISTING = "page__nvidia-smi-L-HASH-COMMENTED-in-pbs-script__dgx-station-a100-4gpu-2mig-plus-dgx-display.txt"
TABLE = (
    "nvidia-smi__dgx-station-a100__4gpu-mig-plus-dgx-display__driver470.141.03__gpu-rows-only__kr-notes.txt"
)


def _judged(tmp_path: Path, name: str, order: str = ORDER) -> dict[str, tuple[str, str]]:
    path = REAL / name if (REAL / name).exists() else REAL.parent / "sessions" / name
    return verdicts(tmp_path, name, path.read_text(encoding="utf-8"), order)


@pytest.mark.parametrize("name", [LISTING, TABLE])
def test_the_display_card_is_no_gpu_of_the_order(tmp_path: Path, name: str) -> None:
    got = _judged(tmp_path, name)
    for rule in ("gpu_model", "gpu_count"):
        verdict, actual = got[rule]
        assert verdict != "fail", (rule, actual)
        assert "GPU 3 NVIDIA DGX Display left out" in actual, (rule, actual)
    assert "more GPUs than ordered" not in got["gpu_count"][1]


def test_the_whole_listing_passes_model_and_count(tmp_path: Path) -> None:
    got = _judged(tmp_path, LISTING)
    assert got["gpu_model"][0] == "pass" and got["gpu_count"][0] == "pass", got


def test_five_ordered_are_still_short(tmp_path: Path) -> None:
    """The display card makes up no fifth GPU: an order of 5 fails."""
    got = _judged(tmp_path, LISTING, "gpu_count: 5\n")["gpu_count"]
    assert got[0] == "fail", got
