"""A GPU whose memory total is less than every size NVIDIA sells its model with: a board is
reworked to more memory, never less, so such a total is most likely a GPU-sharing layer's cap on
a container or pod (HAMi hooks NVML there: nvidia-smi prints the cap as the total), and the
gpu_model warning and the vram failure say so before a reworked board (measure33c 1: both named
a board changed after sale, or a smaller model or MIG slices, only).

Real capture: tests/fixtures/real/SOURCES.md (Project-HAMi/HAMi#700)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.steps.checks.model_match import SHARED_CAP, match_model

from ...offline_judge import checks

REAL = Path(__file__).parents[3] / "fixtures" / "real"
HAMI = (
    REAL
    / "nvidia-smi__geforce-rtx-3090__1gpu__driver550.54.14__hami-cap-20000mib__copied-command__hami-700.txt"
)


def test_a_hami_pods_capped_3090_names_the_share(tmp_path: Path) -> None:
    judged = {
        c.name: c
        for c in checks(tmp_path, "nvidia-smi.txt", HAMI.read_text(), "gpu_model: RTX 3090\nvram: 24GB\n")
    }
    model, vram = judged["gpu_model"], judged["vram"]
    assert model.verdict == "warn"
    assert (
        f"20000 MiB, and NVIDIA sells the RTX 3090 with 24 GB only: less, so most likely {SHARED_CAP}"
        in model.detail
    )
    assert vram.verdict == "fail" and SHARED_CAP in vram.detail


@pytest.mark.parametrize(
    ("name", "mib"),
    [
        ("NVIDIA GeForce RTX 3090", 20000),  # HAMi's gpumem 20000
        ("NVIDIA GeForce RTX 4090", 12000),
        ("NVIDIA GeForce RTX 4090", 8192),
        ("NVIDIA GeForce RTX 4090 D", 16000),
    ],
)
def test_less_than_sold_is_a_share_first(name: str, mib: int) -> None:
    why = match_model(name.removeprefix("NVIDIA GeForce "), name, mib).why
    assert "less, so most likely a share of the GPU" in why and "changed after sale" in why


@pytest.mark.parametrize(
    ("name", "mib"), [("NVIDIA GeForce RTX 4090", 49140), ("NVIDIA GeForce RTX 3090", 49152)]
)
def test_more_than_sold_is_a_reworked_board(name: str, mib: int) -> None:
    why = match_model(name.removeprefix("NVIDIA GeForce "), name, mib).why
    assert "the name and the memory disagree (a board whose memory was changed after sale" in why
    assert "GPU-sharing" not in why
