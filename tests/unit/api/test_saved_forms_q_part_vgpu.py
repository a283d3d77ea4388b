"""Parts of nvidia-smi pasted without what names the GPUs, refused in one sentence saying what
they are (api/saved_forms.py `nvidia_smi_part`): the vGPU licence lines a `-q` is grepped for
(`nvidia-smi -q | grep -A2 'vGPU Software Licensed Product'`, the check NVIDIA's vGPU guides give)
were refused as "not a recognised command output", listing every format this tool reads; the
table's MIG devices and Processes sections without its GPU rows were named "the Processes section
... alone". Real captures: tests/fixtures/real/SOURCES.md."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.errors import UsageError

from ..offline_judge import verdicts

REAL = Path(__file__).parents[2] / "fixtures" / "real"
LICENCE_LINES = [
    "part-of-nvidia-smi-q__vgpu-license-lines__unlicensed-restricted__gpu-operator-628.txt",
    "part-of-nvidia-smi-q__vgpu-license-lines__l4-g6f-licensed__bottlerocket-kernel-kit-285.txt",
]
MIG_TABLE = "nvidia-smi__h100-80gb-hbm3-mig__1gpu-4mig__driver590.48.01__load.txt"


@pytest.mark.parametrize("capture", LICENCE_LINES)
def test_vgpu_licence_lines_are_named_part_of_q(tmp_path: Path, capture: str) -> None:
    """A real paste of the licence lines alone: refused as lines of `-q` from inside a GPU's block."""
    with pytest.raises(UsageError) as refused:
        verdicts(tmp_path, "nvidia-smi-q.txt", (REAL / capture).read_text(), "gpu_count: 1\n")
    assert "lines of `nvidia-smi -q` from inside a GPU's block" in str(refused.value)
    assert "not a recognised command output" not in str(refused.value)


def test_mig_devices_and_processes_alone_are_named_both(tmp_path: Path) -> None:
    """The real H100 MIG table with its banner and GPU rows removed in memory (from its `MIG
    devices:` title on): the refusal names both sections it holds."""
    lines = (REAL / MIG_TABLE).read_text().split("\n")
    title = next(at for at, line in enumerate(lines) if "MIG devices:" in line)
    part = "\n".join(lines[title - 1 :])  # (from the border line above the title)
    with pytest.raises(UsageError) as refused:
        verdicts(tmp_path, "nvidia-smi.txt", part)
    assert "the MIG devices and Processes sections of nvidia-smi's table alone" in str(refused.value)
