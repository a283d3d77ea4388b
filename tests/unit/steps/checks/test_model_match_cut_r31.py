"""What a GPU name still says before the table's cut, and the H20-3e's variant word (measure31a):
a whole 'NVIDIA H20-3e' passed an `H20` order (141 GB HBM3e, another card than the 96 GB H20),
and its table cut in GPU 1's row was only unverified; 'NVIDIA GeForce ...' with 4096MiB was
unverified for an A100 order (no A100 is a GeForce, none has 4 GB) and 'NVIDIA GeForce ...' with
7979MiB only warned for an RTX 3090 (24 GB) order."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.steps.checks.model_match import match_model

from ...offline_judge import details, verdicts

REAL = Path(__file__).parents[3] / "fixtures" / "real"
H20_3E = "nvidia-smi__h20-3e__2gpu__driver570.124.06__cut-in-gpu1-row__hami-1520.txt"
GEFORCE_8G = (
    "nvidia-smi__geforce-name-cut__1gpu-7979mib__driver470.57.02__cut-at-processes__bellperson-227.txt"  # noqa: E501
)
GEFORCE_4G = (
    "session__fabricmanager-fails__modinfo-510__nvidia-smi-geforce-name-cut-4096mib__gpu-operator-356.txt"
)


def _judged(tmp_path: Path, capture: str, order: str) -> tuple[str, str]:
    text = (REAL / capture).read_text(encoding="utf-8")
    return (
        verdicts(tmp_path, capture, text, order)["gpu_model"][0],
        details(tmp_path, capture, text, order)["gpu_model"],
    )


def test_the_h20_3e_read_before_the_cut_fails_an_h20_order(tmp_path: Path) -> None:
    verdict, detail = _judged(tmp_path, H20_3E, "gpu_model: H20\ngpu_count: 8\n")
    assert verdict == "fail"
    assert "'3e' in the name marks another product (not ordered)" in detail


@pytest.mark.parametrize(
    ("ordered", "delivered", "vram_mib", "verdict"),
    [
        ("H20", "NVIDIA H20-3e", 143771, "fail"),
        ("H20-3e", "NVIDIA H20-3e", 143771, "pass"),
        ("H20 141GB", "NVIDIA H20-3e", 143771, "pass"),  # only the -3e has 141 GB: it names it
        ("H20 96GB", "NVIDIA H20-3e", 143771, "fail"),
        ("H20", "NVIDIA H20", 97871, "pass"),
        ("H20-3e", "NVIDIA H20", 97871, "fail"),
    ],
)
def test_the_h20_3e_is_another_card_than_the_h20(
    ordered: str, delivered: str, vram_mib: int, verdict: str
) -> None:
    assert match_model(ordered, delivered, vram_mib=vram_mib).verdict == verdict


def test_a_geforce_cut_before_its_model_fails_an_a100_naming_brand_and_memory(tmp_path: Path) -> None:
    verdict, detail = _judged(tmp_path, GEFORCE_4G, "gpu_model: A100\ngpu_count: 8\n")
    assert verdict == "fail"
    assert "the name says GeForce before its cut" in detail
    assert "4096 MiB, and NVIDIA sells it with 40 GB or 64 GB or 80 GB only" in detail


def test_a_geforce_cut_with_8_gb_fails_an_rtx_3090(tmp_path: Path) -> None:
    verdict, detail = _judged(tmp_path, GEFORCE_8G, "gpu_model: RTX 3090\ngpu_count: 1\n")
    assert verdict == "fail"
    assert "'RTX 3090' ordered, the GPU has 7979 MiB, and NVIDIA sells it with 24 GB only" in detail


@pytest.mark.parametrize(
    ("ordered", "delivered", "vram_mib", "verdict"),
    [
        ("RTX 3070", "NVIDIA GeForce ...", 7979, "warn"),  # its tail may hold it
        ("RTX 3090", "NVIDIA GeForce ...", 24576, "warn"),
        ("RTX 3090", "NVIDIA GeForce ...", None, "warn"),  # no memory read: nothing rules it out
        ("RTX 3090", "NVIDIA GeForce RTX 30...", 7979, "fail"),
        ("V100", "Tesla ...", 16160, "warn"),  # 'Tesla V100-SXM2-16GB'
        ("A100", "Tesla ...", 40536, "fail"),  # no A100 is named Tesla
        ("A100", "NVIDIA A100-SXM...", 81920, "pass"),
        ("A100", "NVIDIA A100-SXM4-40GB", 40536, "pass"),
        ("A100", "NVIDIA A100-SXM-64GB", 65536, "pass"),  # (20B3: a size NVIDIA sells it with)
    ],
)
def test_cut_names_by_brand_and_memory(
    ordered: str, delivered: str, vram_mib: int | None, verdict: str
) -> None:
    assert match_model(ordered, delivered, vram_mib=vram_mib).verdict == verdict
