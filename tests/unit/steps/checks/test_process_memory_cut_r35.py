"""A process's memory cell cut by the table's width (`13020...`, measure35e 04; `10052...` of the
B200 load table) is no "memory N/A": the cut is said, with the GPU's memory used beside it. Real
captures: tests/fixtures/sessions/SOURCES.md, tests/fixtures/real/SOURCES.md."""

from __future__ import annotations

from pathlib import Path

import pytest

from ...offline_judge import verdicts

FIXTURES = Path(__file__).parents[3] / "fixtures"


@pytest.mark.parametrize(
    ("path", "said"),
    [
        (
            "sessions/transcript__nvidia-smi-8xh200-570.158-vllm-process-memory-cell-cut-13020...__smartlaw-notes.txt",
            "pid 1117159 VLLM::EngineCore (memory cell cut by the table's width: 13020...;"
            " GPU 0 has 130215 MiB used)",
        ),
        (
            "real/nvidia-smi__b200__8gpu__driver580.95.05__load__backslash-line-ends.txt",
            "memory cell cut by the table's width: 10052...",
        ),
    ],
)
def test_a_cut_memory_cell_is_said_cut(tmp_path: Path, path: str, said: str) -> None:
    text = (FIXTURES / path).read_text(encoding="utf-8")
    verdict, actual = verdicts(tmp_path, Path(path).name, text, "gpu_count: 8\n")["foreign_processes"]
    assert verdict == "fail", actual
    assert said in actual and "memory N/A" not in actual, actual
