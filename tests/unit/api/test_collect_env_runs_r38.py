"""vLLM's sectioned collect_env writes a run of GPUs of one name on one line, `GPU 0: NVIDIA L40
(x8)` (api/collect_env.py; measure38e 02: read as one GPU named `NVIDIA L40 (x8)`, gpu_count FAIL
"7 of the 8 ordered GPUs missing")."""

from __future__ import annotations

import re
from pathlib import Path

from ..offline_judge import verdicts

REAL = Path(__file__).resolve().parents[2] / "fixtures" / "real"
L40 = "collect_env__8x-l40__driver535.247.01__vllm-sectioned-gpu-line-run-x8__vllm-lora-issue.txt"
H20 = "collect_env__8x-h20__driver550.144.03__cut-in-lscpu__vllm-25015.txt"


def test_a_gpu_line_ending_in_x8_is_eight_gpus_of_that_name(tmp_path: Path) -> None:
    text = (REAL / L40).read_text(encoding="utf-8")
    got = verdicts(tmp_path, L40, text, "gpu_model: L40\ngpu_count: 8\n")
    assert got["gpu_count"] == ("pass", "8"), got["gpu_count"]
    assert got["gpu_model"][0] == "pass"
    assert "(x8)" not in got["gpu_model"][1] and "8 x NVIDIA L40" in got["gpu_model"][1]


def test_the_run_counts_what_it_says_not_the_order(tmp_path: Path) -> None:
    text = (REAL / L40).read_text(encoding="utf-8").replace("L40 (x8)", "L40 (x4)")
    got = verdicts(tmp_path, L40, text, "gpu_model: L40\ngpu_count: 8\n")
    assert got["gpu_count"][0] == "fail" and got["gpu_count"][1].startswith("4"), got["gpu_count"]


def test_eight_gpu_lines_and_their_run_read_alike(tmp_path: Path) -> None:
    """The family: the H20 report's eight `GPU N: NVIDIA H20` lines written as one run."""
    text = (REAL / H20).read_text(encoding="utf-8")
    run = re.sub(r"GPU 0: NVIDIA H20\n(?:GPU \d: NVIDIA H20\n)+", "GPU 0: NVIDIA H20 (x8)\n", text)
    assert run != text
    order = "gpu_model: H20\ngpu_count: 8\n"
    assert verdicts(tmp_path, H20, run, order) == verdicts(tmp_path, H20, text, order)
