"""A heading line a script or a page printed above an nvidia-smi output whose reader starts at
its first line (a `--query-gpu` CSV's header, the XML, `-L`): no line of the output (measure35c
14: an environment report's `--- GPU 详细规格 ---` above its CSV). Before, the CSV "listed no GPU
(output not recognised as any nvidia-smi format)": model, count and memory unverified. Now the
output is read from its own first line and the heading is said in a note (api/csv_among.py
below_heading)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api import offline
from gpuonboard.connection.gather import parse_facts
from gpuonboard.errors import UsageError

from ..offline_judge import verdicts

REAL = Path(__file__).parents[2] / "fixtures" / "real"
A800 = (
    "nvidia-smi-query-gpu__a800-sxm4-80gb__8gpu__driver580.95.05__heading-line-above-header"
    "__openpi-env-report.csv"
)


def _read(tmp_path: Path, name: str, text: str) -> tuple[list[tuple[int, str | None]], list[str]]:
    """(index, name) of each GPU read from `text` saved as `name`, and the load's notes."""
    folder = tmp_path / f"d{len(list(tmp_path.iterdir()))}"
    folder.mkdir()
    (folder / name).write_text(text, encoding="utf-8")
    notes: list[str] = []
    facts = parse_facts(offline.load_outputs([str(folder / name)], notes=notes))
    return [(g.index, g.name) for g in (facts.gpu.gpus if facts.gpu else ())], notes


def test_the_reports_csv_below_its_heading_is_judged(tmp_path: Path) -> None:
    order = "gpu_model: A800 80GB SXM\ngpu_count: 8\nvram: 80GB\nmin_driver: '580'\n"
    got = verdicts(tmp_path, "gpus.csv", (REAL / A800).read_text(), order)
    assert got["gpu_count"] == ("pass", "8")
    assert got["gpu_model"][0] == got["vram"][0] == got["nvidia_driver"][0] == "pass"
    assert got["min_driver"] == ("pass", "580.95.05")


def test_the_heading_is_said_in_a_note(tmp_path: Path) -> None:
    gpus, notes = _read(tmp_path, "gpus.csv", (REAL / A800).read_text())
    assert len(gpus) == 8
    assert any("`--- GPU 详细规格 ---`" in note and "heading" in note for note in notes)


# real outputs read from their first line, and headings a script or a page prints above one
OUTPUTS = [
    "nvidia-smi-query-gpu__a100-pcie-40gb__2gpu__driver555.42.02.csv",
    "nvidia-smi-query-gpu__h200__1gpu__driver580.159.04.csv",
    "nvidia-smi-query-gpu__rtx-a6000__2gpu__indented.csv",
    "nvidia-smi-q-x__tesla-t4__1gpu__driver515.105.01.xml",
    "nvidia-smi-q-x__a100-sxm4-40gb-mig__1gpu__driver510.47.03.xml",
    "nvidia-smi-L__a16__4gpu__driver470.129.04__ahv-host.txt",
    "nvidia-smi-L__a100-sxm4-80gb__4gpu-1mig-4x1g.20gb__telegraf.txt",
]
HEADINGS = ["--- GPU 详细规格 ---\n", "=== GPU ===\n\n", "## GPUs\n\n", "GPU info:\n", "**GPU**\n", "# GPU\n"]


@pytest.mark.parametrize("heading", HEADINGS)
@pytest.mark.parametrize("name", OUTPUTS)
def test_every_real_output_below_a_heading_reads_as_itself(tmp_path: Path, name: str, heading: str) -> None:
    text = (REAL / name).read_text()
    alone, _ = _read(tmp_path, name, text)
    headed, notes = _read(tmp_path, name, heading + text)
    assert alone and headed == alone
    assert any("heading" in note for note in notes)


@pytest.mark.parametrize(
    "above",
    [
        # (a row of the CSV's shape above its header: no heading)
        "0, NVIDIA A800-SXM4-80GB, 81920 MiB, 8404 MiB, 580.95.05, 8.0\n",
        # (three lines: more than a heading)
        "--- GPU ---\nsome words:\nmore words:\n",
        # (a sentence that does not end in a colon)
        "The box has these GPUs, I think\n",
    ],
)
def test_lines_that_are_no_heading_are_not_dropped(tmp_path: Path, above: str) -> None:
    text = (REAL / A800).read_text().split("\n", 1)[1]
    _, notes = _read(tmp_path, "gpus.csv", above + text)
    # (the note's own words: the test's folder is named "heading" too; lines of prose around a
    # whole CSV are said as prose, api/test_offline_csv_prose_r37.py)
    assert not any("(a heading a script or a page printed)" in note for note in notes)


# a root's copied command above its output (its prompt `#`), which narrows what the output lists
ROOT_COMMANDS = [
    "# nvidia-smi -L -i 0",
    "# nvidia-smi -L | head -1",
    "# docker run --rm --gpus 1 ubuntu nvidia-smi -L",
    "# srun --gres=gpu:1 nvidia-smi -L",
    "# sudo nvidia-smi -L -i 0",
]


@pytest.mark.parametrize("command", ROOT_COMMANDS)
def test_a_roots_copied_command_above_a_listing_is_no_heading(tmp_path: Path, command: str) -> None:
    """revO F2: the first line of the real A16 box's `-L` under a root's copied command that
    lists one GPU of the box: the command read as the output's (one listed, the count
    unverified), never dropped as a heading (before: gpu_count passed 1 on a box of four)."""
    first = (REAL / "nvidia-smi-L__a16__4gpu__driver470.129.04__ahv-host.txt").read_text().split("\n")[0]
    order = "gpu_model: A16\ngpu_count: 1\n"
    got = verdicts(tmp_path, "gpus.txt", f"{command}\n{first}\n", order)
    if "-i 0" in command:
        # (a view of GPUs it asked for hides GPUs, never makes them up: 1 ordered is met on that
        # floor, the view named; round 40, api/test_view_floor_r40.py)
        assert got["gpu_count"][0] == "pass"
        assert got["gpu_count"][1].startswith("1 listed; at least 1 on the box: `"), got["gpu_count"]
    else:
        assert got["gpu_count"][0] == "unverified"
    _, notes = _read(tmp_path, "gpus.txt", f"{command}\n{first}\n")
    # (the note's own words: the test's folder is named "heading" too; lines of prose around a
    # whole CSV are said as prose, api/test_offline_csv_prose_r37.py)
    assert not any("(a heading a script or a page printed)" in note for note in notes)


@pytest.mark.parametrize(
    "command", ["# sudo ./gpus.sh", "# srun --gres=gpu:1 ./gpus.sh", "# CUDA_VISIBLE_DEVICES=0 ./gpus.sh"]
)
def test_a_roots_line_running_a_command_through_a_wrapper_is_no_heading(tmp_path: Path, command: str) -> None:
    """revO F2: a root's line whose words run a command through sudo, a launcher or with an
    environment set (a script printing `-L`'s lines): a command, not a heading; the file is
    refused as no output read here (as before the heading was read), never read as the box's
    whole listing (before: gpu_count passed 1 on one GPU line)."""
    first = (REAL / "nvidia-smi-L__a16__4gpu__driver470.129.04__ahv-host.txt").read_text().split("\n")[0]
    order = "gpu_model: A16\ngpu_count: 1\n"
    with pytest.raises(UsageError, match="not a recognised command output"):
        verdicts(tmp_path, "gpus.txt", f"{command}\n{first}\n", order)
