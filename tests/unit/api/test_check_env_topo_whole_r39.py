"""SGLang's check_env lists the GPUs torch sees (`GPU 0,1: NVIDIA A100-SXM4-80GB`), which
CUDA_VISIBLE_DEVICES narrows; its `NVIDIA Topology:` is `nvidia-smi topo -m`'s matrix, which it
does not. Where the matrix's header line is whole (GPU columns, then the NICs' or `CPU Affinity`)
and lists GPU0 to GPU(n-1) for torch's n, torch's list is the box's whole set: gpu_model passes,
gpu_count is exactly n (measure39e 06, 07: unverified as "the box may have others"). A header cut
short, or one listing more GPUs than torch, proves nothing of the sort: the view stays a floor."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api import collect_env

from ..offline_judge import verdicts

REAL = Path(__file__).resolve().parents[2] / "fixtures" / "real"
A100_8 = REAL / (
    "sglang-check_env__8x-a100-sxm4-80gb__driver550.90.07__root-prompt-topo-header-whole-cut-in-gpu2-row"
    "__sglang-965.txt"
)
A100_2 = REAL / (
    "sglang-check_env__2x-a100-sxm4-80gb__driver535.54.03-printed-twice__topo-header-whole-legend-cut"
    "__sglang-661.txt"
)
B200_8 = REAL / "sglang-check_env__8x-b200__driver590.48.01__topo-cut__sglang-24834.txt"


@pytest.mark.parametrize(("path", "n"), [(A100_8, 8), (A100_2, 2), (B200_8, 8)])
def test_whole_topo_header_makes_torch_list_the_box(tmp_path: Path, path: Path, n: int) -> None:
    text = path.read_text()
    model = "B200" if "b200" in path.name else "A100-SXM4-80GB"
    got = verdicts(tmp_path, "check_env.txt", text, f"gpu_model: {model}\ngpu_count: {n}\n")
    assert got["gpu_model"][0] == "pass", got["gpu_model"]
    assert got["gpu_count"] == ("pass", str(n)), got["gpu_count"]
    # (more ordered than the box's whole set: GPUs missing, no longer "the box may have others")
    got = verdicts(tmp_path, "check_env.txt", text, f"gpu_count: {2 * n}\n")
    assert got["gpu_count"][0] == "fail", got["gpu_count"]


def _header_cut(text: str) -> str:
    """The report cut inside its matrix's header, after its GPU columns (no line end)."""
    at = text.index("NVIDIA Topology:")
    header_end = text.index("\n", text.index("GPU0", at))
    return text[: text.index("GPU1", at, header_end) + len("GPU1")]


@pytest.mark.parametrize("path", [A100_8, A100_2])
def test_cut_or_wider_header_leaves_torch_view_a_floor(tmp_path: Path, path: Path) -> None:
    """The header cut after GPU1 (no column after its GPUs), or the report's GPU list narrowed to
    GPU 0 beside the whole header: torch's view of some GPUs, said so."""
    text = path.read_text()
    found, _ = collect_env.parts(_header_cut(text))
    assert found[0].partial == collect_env.VISIBLE, found[0]
    line = next(row for row in text.splitlines() if row.startswith("GPU 0,1"))
    narrowed = text.replace(line, "GPU 0: NVIDIA A100-SXM4-80GB")
    got = verdicts(tmp_path, "check_env.txt", narrowed, "gpu_model: A100-SXM4-80GB\ngpu_count: 1\n")
    assert got["gpu_model"][0] == "unverified", got["gpu_model"]
    assert "CUDA_VISIBLE_DEVICES" in got["gpu_count"][1], got["gpu_count"]
