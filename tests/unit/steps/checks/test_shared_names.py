"""Names nvidia-smi prints alike for several products (data/gpu_name_markers.yml `shared_names`):
the Jetson driver names every Orin module's GPU 'Orin (nvgpu)' and every Thor module's 'NVIDIA
Thor', so an order naming one module cannot be told from the name (unverified, naming the
siblings), where it failed "'AGX' not in the name"."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.steps.checks.model_match import match_model
from gpuonboard.steps.checks.shared_names import shared_names

from ...offline_judge import details, verdicts

REAL = Path(__file__).parents[3] / "fixtures" / "real"
ORIN = (
    "nvidia-smi__jetson-agx-orin__1gpu__driver540.4.0.txt",
    # dusty-nv/jetson-containers#1403: the same module, CUDA 12.6, cut at `| Processes:`
    "nvidia-smi__jetson-agx-orin__1gpu__driver540.4.0__cuda12.6__copied-command__cut-at-processes.txt",
)
THOR = "nvidia-smi__thor__1gpu__driver580.00__spaces-collapsed.txt"


@pytest.mark.parametrize("capture", ORIN)
@pytest.mark.parametrize("model", ["AGX Orin 64GB", "Jetson AGX Orin", "Orin NX 16GB", "Jetson Orin Nano"])
def test_an_orin_module_is_unverified_on_orin(tmp_path: Path, capture: str, model: str) -> None:
    text = (REAL / capture).read_text(encoding="utf-8")
    order = f"gpu_model: {model}\ngpu_count: 1\n"
    assert verdicts(tmp_path, capture, text, order)["gpu_model"][0] == "unverified"
    detail = details(tmp_path, capture, text, order)["gpu_model"]
    assert "prints 'Orin (nvgpu)' for each of" in detail
    assert "Jetson Orin NX 16GB" in detail and "/proc/device-tree/model" in detail


@pytest.mark.parametrize(("model", "verdict"), [("Orin", "pass"), ("A100", "fail"), ("AGX Xavier", "fail")])
def test_any_orin_passes_another_gpu_fails(tmp_path: Path, model: str, verdict: str) -> None:
    capture = ORIN[1]
    text = (REAL / capture).read_text(encoding="utf-8")
    assert verdicts(tmp_path, capture, text, f"gpu_model: {model}\n")["gpu_model"][0] == verdict


def test_a_thor_module_ordered_is_unverified_on_the_thor_name(tmp_path: Path) -> None:
    text = (REAL / THOR).read_text(encoding="utf-8")
    assert verdicts(tmp_path, THOR, text, "gpu_model: AGX Thor T5000\n")["gpu_model"][0] == "unverified"
    assert verdicts(tmp_path, THOR, text, "gpu_model: Jetson Thor\n")["gpu_model"][0] == "pass"


@pytest.mark.parametrize(
    ("ordered", "delivered", "verdict"),
    [
        ("IGX Orin", "Orin (nvgpu)", "unverified"),
        ("Jetson Orin", "Orin (nvgpu)", "unverified"),  # the IGX Orin is no Jetson
        ("Orin", "Orin (nvgpu)", "pass"),
        ("AGX Orin", "NVIDIA A100-SXM4-80GB", "fail"),
        ("A100", "NVIDIA A100-SXM4-80GB", "pass"),
    ],
)
def test_shared_names_by_name(ordered: str, delivered: str, verdict: str) -> None:
    assert match_model(ordered, delivered).verdict == verdict


def test_every_row_names_two_products_that_hold_the_name() -> None:
    for row in shared_names():
        assert len(row.products) >= 2
        for _, words in row.products:
            assert row.words - {"NVGPU"} <= words, row.name
