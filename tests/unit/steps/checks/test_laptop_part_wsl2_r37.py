"""Round 37 (measure37e 07, 08): a GeForce Laptop GPU whose name nvidia-smi cut before `Laptop`
(`NVIDIA GeForce RTX 4080 ...`, 12282 MiB) against a desktop card's order (RTX 4080, sold with
16 GB only) fails gpu_model as the 4090 Laptop does, though the poster trimmed the table (an
incomplete probe): its memory rules the ordered card out. The family: every real table whose cut
GeForce name has less memory than NVIDIA sells the desktop card with (3060 Laptop 6 GB, 4070
Laptop 8 GB, 4080 Laptop 12 GB).

And a WSL2 guest (its kernel `...-microsoft-standard-WSL2`, nvidia-smi from /usr/lib/wsl/lib,
the Windows driver's two-part version beside an older nvidia-smi) warns in `virtualization`
(the GPU is the Windows host's, paravirtualised), never "not reported"."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.facts.nvidia_smi import parse_any
from gpuonboard.steps.checks.model_match import match_model

from ...offline_judge import checks

FIXTURES = Path(__file__).parents[3] / "fixtures"
KR = (
    FIXTURES
    / "sessions"
    / "page__HASH-COMMENT+nvidia-smi+which-nvidia-smi+ls-dev-dxg__rtx-4080-laptop-name-cut-12282MiB-581.57"
    "-smi-580.102.01__wsl2-kr-guide.txt"
)
FLASHDEC = (
    FIXTURES
    / "real"
    / "check-env__rtx-5070__driver581.29-smi580.82.10__platform-microsoft-standard-wsl2__flashdec.txt"
)
LAPTOPS = [
    (
        "nvidia-smi__rtx3060-laptop-wsl__580.76.04-580.97__docker-run-gpus-all__copied-command__cut-after-gpu-row__dify-wsl-pt.txt",
        "RTX 3060",
    ),
    (
        "nvidia-smi__geforce-rtx-3060-name-cut__1gpu__driver546.80__wsl2__cuda-err__cut-in-gpu-row__wsl-11589.txt",
        "RTX 3060",
    ),
    ("nvidia-smi__geforce-rtx-4070-laptop__1gpu__driver575.64.03__spaces-collapsed.txt", "RTX 4070"),
]
ORDER_4080 = "gpu_model: RTX 4080\ngpu_count: 1\nvram: 16GB\nmin_driver: '580'\n"


@pytest.mark.parametrize(("fixture", "desktop"), LAPTOPS)
def test_a_cut_laptop_name_with_less_memory_than_the_desktop_card_fails(fixture: str, desktop: str) -> None:
    [gpu] = parse_any((FIXTURES / "real" / fixture).read_text()).gpus
    assert gpu.name.endswith("...") and gpu.memory_total_mib is not None
    result = match_model(desktop, gpu.name, gpu.memory_total_mib)
    assert result.verdict == "fail", result
    assert "NVIDIA sells it with" in result.why


def test_the_trimmed_wsl2_table_fails_gpu_model_and_warns_virtualization(tmp_path: Path) -> None:
    by_rule = {c.name: c for c in checks(tmp_path, KR.name, KR.read_text(), ORDER_4080)}
    model = by_rule["gpu_model"]
    assert model.verdict == "fail", model
    assert "12282 MiB, and NVIDIA sells it with 16 GB only" in model.detail
    virt = by_rule["virtualization"]
    assert virt.verdict == "warn", virt
    assert "WSL2" in virt.actual and "581.57" in virt.actual


def test_the_laptop_order_of_the_same_table_is_not_failed(tmp_path: Path) -> None:
    order = "gpu_model: RTX 4080 Laptop\ngpu_count: 1\nvram: 12GB\n"
    by_rule = {c.name: c for c in checks(tmp_path, KR.name, KR.read_text(), order)}
    assert by_rule["gpu_model"].verdict != "fail", by_rule["gpu_model"]


def test_a_wsl2_platform_line_warns_virtualization(tmp_path: Path) -> None:
    by_rule = {c.name: c for c in checks(tmp_path, FLASHDEC.name, FLASHDEC.read_text())}
    virt = by_rule["virtualization"]
    assert virt.verdict == "warn", virt
    assert "microsoft-standard-WSL2" in virt.actual


@pytest.mark.parametrize(
    "fixture",
    [
        "nvidia-smi__geforce-rtx-3070__1gpu__driver531.68__wsl-smi530.47.txt",
        "nvidia-smi__geforce-rtx-3090__1gpu__driver470.76__wsl-smi470.28__util-err__display-on.txt",
        LAPTOPS[0][0],
    ],
)
def test_every_real_wsl_table_warns_virtualization(tmp_path: Path, fixture: str) -> None:
    text = (FIXTURES / "real" / fixture).read_text()
    by_rule = {c.name: c for c in checks(tmp_path, "nvidia-smi.txt", text)}
    assert by_rule["virtualization"].verdict == "warn", by_rule["virtualization"]


@pytest.mark.parametrize(
    "fixture",
    [
        # (a newer nvidia-smi than the driver: Colab's container tool, no WSL2)
        "nvidia-smi__newer-tool-450.36.06-than-driver-418.67-mig-err__tesla-k80__colab-pytorch-page.txt",
        # (a native Linux box of mixed driver packages, both three-part versions)
        "nvidia-smi__geforce-rtx-4070-laptop__1gpu__driver575.64.03__spaces-collapsed.txt",
        # (the old layout's tool number: `NVIDIA-SMI 5.319.37   Driver Version: 319.37`)
        "nvidia-smi__tesla-k20m__2gpu__driver319.37__rst-indented.txt",
    ],
)
def test_a_linux_box_is_no_wsl2_guest(tmp_path: Path, fixture: str) -> None:
    text = (FIXTURES / "real" / fixture).read_text()
    by_rule = {c.name: c for c in checks(tmp_path, "nvidia-smi.txt", text)}
    assert "WSL2" not in by_rule["virtualization"].actual
