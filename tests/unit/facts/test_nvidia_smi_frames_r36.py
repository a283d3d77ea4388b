"""`nvidia-smi -l N` / `watch nvidia-smi`: a table printed again and again, the capture cut
wherever its poster stopped copying, or begun inside an earlier frame (its process list only;
measure36e 14, a UCloud 2 x T4 VM). Each frame is read as one table and the newest whole one is
kept (facts/nvidia_smi/table_frames.py). Before, the first Processes table ended the GPU rows:
a capture that began with an earlier frame's process list read no GPU ("no GPU row could be
read ... cut short or mangled"), and two frames were refused as two boxes' outputs."""

from __future__ import annotations

import re
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


# revQ (round 36): only the frame judged was read; every other frame's faults, processes and
# busy figures were dropped and the box passed. Each frame's evidence is now carried into the
# judged frame's GPUs (matched by bus id), and an earlier frame's process rows above the first
# table are read (table_frames.carry_frames).
A30_ERR = "nvidia-smi__a30__8gpu__driver525.85.12__gpu3-err__no-processes.txt"
H100 = "nvidia-smi__h100-80gb-hbm3__8gpu__driver550.90.07.txt"
ORDER_A30 = "gpu_model: A30\ngpu_count: 8\n"
ORDER_H100 = "gpu_model: H100\ngpu_count: 8\n"


def _a30_read() -> str:
    """The real A30 table whose GPU 3 reads ERR!, with GPU 3's rows read (GPU 4's values, its
    index and bus id): the same box a frame later."""
    lines = (REAL / A30_ERR).read_text().splitlines()
    three = next(i for i, line in enumerate(lines) if line.startswith("|   3  ERR!"))
    four = next(i for i, line in enumerate(lines) if line.startswith("|   4  "))
    read = [
        lines[four].replace("|   4  ", "|   3  ").replace(":81:00.0", ":61:00.0"),
        *lines[four + 1 : four + 3],
    ]
    return "\n".join([*lines[:three], *read, *lines[three + 3 :]]) + "\n"


def _h100_busy() -> str:
    """The real idle H100 table with GPU 3 at 97 % and 70 GiB, its python3 process listed."""
    text = (REAL / H100).read_text()
    row = "| N/A   23C    P0             72W /  700W |       1MiB /  81559MiB |      0%      Default |"
    assert row in text
    text = text.replace(row, row.replace("      1MiB", "  70420MiB").replace("  0%", " 97%"), 1)
    none = next(line for line in text.splitlines() if "No running processes found" in line)
    process = "|    3   N/A  N/A     41234      C   python3" + " " * 37 + "70412MiB |"
    return text.replace(none, process.ljust(len(none) - 1)[: len(none) - 1] + "|")


def test_an_err_in_an_earlier_frame_of_a_looped_capture_fails_gpu_health(tmp_path: Path) -> None:
    text = "$ nvidia-smi -l 5\n" + (REAL / A30_ERR).read_text() + _a30_read()
    report = parse_any(text)
    assert report.gpus[3].faults == ("ERR!",)
    got = verdicts(tmp_path, "nvidia-smi.txt", text, ORDER_A30)
    assert got["gpu_health"][0] == "fail" and "GPU 3" in got["gpu_health"][1]


def test_a_busy_gpu_and_its_process_in_an_earlier_frame_fail_foreign_processes(tmp_path: Path) -> None:
    text = "$ nvidia-smi -l 5\n" + _h100_busy() + (REAL / H100).read_text()
    gpu = parse_any(text).gpus[3]
    assert (gpu.utilization_gpu_pct, gpu.memory_used_mib) == (97, 70420)
    assert [p.pid for p in gpu.processes] == [41234]
    got = verdicts(tmp_path, "nvidia-smi.txt", text, ORDER_H100)
    assert got["foreign_processes"][0] == "fail" and "41234" in got["foreign_processes"][1]


def test_an_err_in_the_newest_frame_cut_short_is_read_with_the_older_whole_frame(tmp_path: Path) -> None:
    """A whole idle frame, then the newest cut just after GPU 3's rows, which read ERR!: the
    older whole frame is judged, the newest's ERR! is carried into it (before: dropped, PASS)."""
    lines = (REAL / H100).read_text().splitlines()
    three = next(i for i, line in enumerate(lines) if line.startswith("|   3  "))
    err = [
        "|   3  ERR!                           On  |   00000000:5D:00.0 Off |                 ERR! |",
        "|ERR!  ERR!  ERR!            ERR! /  ERR! |       1MiB /  81559MiB |    ERR!      Default |",
        lines[three + 2],
        lines[three + 3],
    ]
    text = "$ nvidia-smi -l 5\n" + "\n".join([*lines, *lines[:three], *err]) + "\n"
    got = verdicts(tmp_path, "nvidia-smi.txt", text, ORDER_H100)
    assert got["gpu_health"][0] == "fail" and "GPU 3" in got["gpu_health"][1]


def test_an_earlier_frames_process_rows_above_the_first_table_are_read(tmp_path: Path) -> None:
    """No command line: the tail of an earlier frame (its process list naming python3 on GPU 3)
    above a whole idle table; before, those rows were dropped and foreign_processes passed."""
    busy = _h100_busy().splitlines()
    tail = busy[next(i for i, line in enumerate(busy) if "Processes:" in line) - 1 :]
    text = "\n".join(tail) + "\n" + (REAL / H100).read_text()
    got = verdicts(tmp_path, "nvidia-smi.txt", text, ORDER_H100)
    assert got["foreign_processes"][0] != "pass"
    assert "41234" in got["foreign_processes"][1]


@pytest.mark.parametrize("name", WHOLE)
def test_every_real_tables_process_rows_in_an_earlier_frames_tail_are_kept(name: str) -> None:
    """Each real whole table listing processes, after the tail of an earlier frame of it whose
    process rows are its own: every process row of the tail is on its GPU in what is read."""
    text = (REAL / name).read_text(errors="replace")
    one = parse_table(text)
    if not any(g.processes for g in one.gpus):
        pytest.skip("no process rows")
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if "Processes:" in line)
    rows = [line for line in lines[start:] if re.match(r"^\|\s+\d+\s+.*\S\s*\|$", line)]
    idle = [line for line in lines if line not in rows]
    after = parse_table("\n".join([*lines[start:], *idle]) + "\n")
    assert [g.processes for g in after.gpus] == [g.processes for g in one.gpus]
