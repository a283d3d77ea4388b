"""Round 34 (measure34c 21): a script's output of several tools in one block, each under its own
heading line (`--- CPU ---`, `--- RAM ---`), no prompt between them: read as one CSV, every GPU
rule said "listed no GPU (CSV row 2: has 1 cells ...)" and ram "no free output was given" beside
free's `Mem: 62Gi`; now each part is read as an output of its own (api/script_blocks.py), a part
that is none (the lscpu subset without its `Architecture:` line) said in a note."""

from __future__ import annotations

from pathlib import Path

from gpuonboard.api import offline
from gpuonboard.connection.gather import parse_facts

from ..offline_judge import verdicts

REAL = Path(__file__).parents[2] / "fixtures" / "real"
SNAPSHOT = (
    REAL
    / "script-blocks__query-gpu-csv+lscpu-subset+free-h-under-dash-headings__2x-rtx3090__bench-snapshot.txt"
)
ORDER = 'gpu_model: RTX 3090\ngpu_count: 2\nram: 64GB\nmin_driver: "580"\n'


def test_each_tool_under_its_heading_is_read(tmp_path: Path) -> None:
    got = verdicts(tmp_path, "hardware.txt", SNAPSHOT.read_text(), ORDER)
    assert got["gpu_count"] == ("pass", "2"), got["gpu_count"]
    assert got["gpu_model"][0] == "pass" and got["min_driver"][0] == "pass", got
    assert got["ram"][0] == "pass" and got["ram"][1].startswith("62.0 GiB"), got["ram"]


def test_the_part_not_read_is_said(tmp_path: Path) -> None:
    (tmp_path / "hardware.txt").write_text(SNAPSHOT.read_text())
    notes: list[str] = []
    parse_facts(offline.load_outputs([str(tmp_path / "hardware.txt")], notes))
    said = " ".join(notes)
    assert "a script's output of several tools under its own headings" in said, notes
    assert "not read: lines 6-14 (under `--- CPU ---`)" in said, notes


def test_the_csv_alone_is_read_as_before(tmp_path: Path) -> None:
    csv = SNAPSHOT.read_text().split("\n\n", 1)[0] + "\n"
    assert verdicts(tmp_path, "gpus.csv", csv, ORDER)["gpu_count"] == ("pass", "2")
