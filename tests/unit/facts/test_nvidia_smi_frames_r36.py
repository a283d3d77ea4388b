"""`nvidia-smi -l N` / `watch nvidia-smi`: a table printed again and again, the capture cut
wherever its poster stopped copying, or begun inside an earlier frame (its process list only;
measure36e 14, a UCloud 2 x T4 VM). Each frame is read as one table and the newest whole one is
kept (facts/nvidia_smi/table_frames.py). Before, the first Processes table ended the GPU rows:
a capture that began with an earlier frame's process list read no GPU ("no GPU row could be
read ... cut short or mangled"), and two frames were refused as two boxes' outputs."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.errors import UsageError
from gpuonboard.facts.nvidia_smi import parse_any, parse_table

from ..offline_judge import verdicts
from .test_nvidia_smi_table_joined_r35 import WHOLE

REAL = Path(__file__).parents[2] / "fixtures" / "real"
UCLOUD = (
    "nvidia-smi__tesla-t4__2gpu__driver525.125.06__l5-frames-process-table-then-frame-cut-after-gpu-rows"
    "__copied-command__ucloud-rapids.txt"
)
ORDER = 'gpu_model: T4\ngpu_count: 2\nvram: 16GB\nmin_driver: "525"\n'


def test_a_real_l5_capture_begun_in_a_process_list_reads_its_frames_gpu_rows(tmp_path: Path) -> None:
    report = parse_any((REAL / UCLOUD).read_text())
    assert (report.source, report.driver_version) == ("table", "525.125.06")
    assert [(g.index, g.name, g.memory_used_mib) for g in report.gpus] == [
        (0, "Tesla T4", 2389),
        (1, "Tesla T4", 1067),
    ]
    assert any("earlier one, its process list" in w for w in report.warnings)
    assert not any("which the GPU table does not have" in w for w in report.warnings)
    got = verdicts(tmp_path, "nvidia-smi.txt", (REAL / UCLOUD).read_text(), ORDER)
    assert got["min_driver"][0] == "pass"
    assert got["gpu_count"] == ("pass", got["gpu_count"][1])
    assert "no GPU row could be read" not in got["gpu_model"][1]
    assert "2 x Tesla T4" in got["gpu_model"][1]
    # (93 % busy with GiBs used on both GPUs: someone's job, whatever list the cut took)
    assert got["foreign_processes"][0] == "fail"


def test_the_class_is_many_tables() -> None:
    assert len(WHOLE) >= 40


def _box(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


@pytest.mark.parametrize("name", WHOLE)
def test_every_real_table_looped_with_its_last_frame_cut_anywhere_reads_the_whole_frame(name: str) -> None:
    """Each real whole table, printed twice by `-l` with the second cut after each of its lines:
    the whole frame's GPUs (and their process lists), never the cut frame's nor none."""
    text = (REAL / name).read_text(errors="replace")
    one = parse_table(text)
    lines = text.splitlines()
    banner = next(i for i, line in enumerate(lines) if "NVIDIA-SMI" in line)
    for k in range(1, len(lines)):
        looped = parse_table("\n".join([*lines, *lines[:k]]) + "\n")
        assert looped.gpus == one.gpus, k
        assert looped.complete
        # (a second frame from its banner on is said)
        assert k <= banner or any("tables one after another" in w for w in looped.warnings), k


@pytest.mark.parametrize("name", WHOLE)
def test_every_real_table_after_the_tail_of_an_earlier_frame_reads_its_gpu_rows(name: str) -> None:
    """Each real whole table after the end of an earlier frame of it (from any line of its
    Processes table on): the whole frame's GPUs, the earlier frame's process rows not read."""
    text = (REAL / name).read_text(errors="replace")
    one = parse_table(text)
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if "Processes:" in line), None)
    if start is None:
        pytest.skip("no Processes table")
    for k in range(start, len(lines)):
        after = parse_table("\n".join([*lines[k:], *lines]) + "\n")
        assert after.gpus == one.gpus, k
        assert after.complete == one.complete


A100_2 = "nvidia-smi__a100-pcie-40gb__2gpu__driver555.42.02.txt"


@pytest.mark.parametrize("command", ["nvidia-smi -l 1", "nvidia-smi --loop=5", "watch -n 1 nvidia-smi"])
def test_frames_of_a_looped_command_are_one_output_of_one_box(tmp_path: Path, command: str) -> None:
    text = (REAL / A100_2).read_text()
    lines = text.splitlines()
    framed = "\n".join([f"$ {command}", *lines, *lines, *lines[:13]]) + "\n"
    got = verdicts(tmp_path, "nvidia-smi.txt", framed, "gpu_count: 2\n")
    assert got["gpu_count"][0] == "pass"


def test_two_tables_under_a_plain_command_are_still_refused_as_two_outputs(tmp_path: Path) -> None:
    text = (REAL / A100_2).read_text()
    with pytest.raises(UsageError, match="2 nvidia-smi outputs"):
        verdicts(tmp_path, "nvidia-smi.txt", f"$ nvidia-smi\n{text}{text}", "gpu_count: 2\n")
