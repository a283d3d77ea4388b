"""`nvidia-smi -L` as a doc prints a MIG pod's view: its `MIG 1g.10gb     Device  0: (UUID: ...)`
line at the margin (the page lost the indentation), and several pods' views of one GPU in one
file (measure34a 09: refused as "not a recognised command output")."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.errors import UsageError

from ..offline_judge import verdicts

REAL = Path(__file__).parents[2] / "fixtures" / "real"
PODS = REAL / (
    "nvidia-smi-L__h100-pcie__mig-1g.10gb__one-gpu-listed-5-times-by-pods__mig-lines-flush-left"
    "__scaleway-docs-2165.txt"
)
ORDER = "gpu_model: H100 PCIe\ngpu_count: 1\n"


def test_one_pods_view_with_its_mig_line_at_the_margin_is_read(tmp_path: Path) -> None:
    """The real file's first view (its GPU line and its MIG line at the margin): one H100 PCIe,
    its MIG 1g.10gb device read. Before: "not a recognised command output"."""
    text = "".join(PODS.read_text().splitlines(True)[:2])
    got = verdicts(tmp_path, "nvidia-smi-L.txt", text, ORDER)
    assert got["gpu_count"] == ("pass", "1 (MIG on: 1 slice)")
    assert got["gpu_model"][0] == "pass", got["gpu_model"]


def test_five_pods_views_of_one_gpu_are_refused_naming_the_repeat(tmp_path: Path) -> None:
    """The real file whole: GPU 0 with one UUID five times, each with a MIG device: refused in a
    sentence that names the GPU repeated and what repeats it, never "not recognised" nor a
    count of 5 GPUs."""
    with pytest.raises(UsageError) as err:
        verdicts(tmp_path, "nvidia-smi-L.txt", PODS.read_text(), ORDER)
    said = str(err.value)
    assert "GPU 0 (GPU-717ef73c-2d43-4fdc-76d2-1cddef4863bb) is listed 5 times" in said
    assert "several pods' or containers' views of one GPU" in said
