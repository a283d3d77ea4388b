"""nvidia-smi's table with its lines joined into one and its spaces collapsed (a web page's copy:
Aliyun's ACK Edge docs, issue wikis' excerpts; measure35a 12-14): its rows read again where the
table's borders say where each line ends (facts/nvidia_smi/table_joined.py). Before, only the
banner was read: model, count and memory unverified, the driver of two of them unjudged."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpuonboard.api import output_runs
from gpuonboard.errors import UsageError
from gpuonboard.facts.nvidia_smi import parse_any, parse_table
from gpuonboard.facts.nvidia_smi.table_joined import rows_apart

from ..offline_judge import details, verdicts

REAL = Path(__file__).parents[2] / "fixtures" / "real"
ACK = "__table-on-one-line__aliyun-ack-edge.txt"
POD_T4 = (
    f"nvidia-smi__tesla-t4-cgpu-share-3231mib__1gpu__driver418.87.01__kubectl-exec-pod__copied-command{ACK}"
)
NODE_T4 = f"nvidia-smi__tesla-t4__1gpu__driver418.87.01__python3-process{ACK}"
POD_V100 = f"nvidia-smi__tesla-v100-sxm2-16gb__1gpu__driver515.105.01__mig-column{ACK}"
B200 = (
    "nvidia-smi__b200__1gpu__driver580.105.08__table-on-one-line__cut-in-processes-header"
    "__vllm-32373-wiki.txt"
)
A6000 = (
    "nvidia-smi__rtx-a6000__1gpu__driver525.125.06__after-oom-message__table-on-one-line"
    "__cut-in-processes-rule__vllm-1201-wiki.txt"
)
NSHX = "nvidia-smi__a100-sxm4-40gb__1gpu__driver535.129.03__table-on-one-line__nshx-csdn.txt"

# (capture, driver, GPU 0's name, its memory MiB and used MiB, whether its rows were read whole,
# the processes read)
ONE_LINE = [
    (POD_T4, "418.87.01", "Tesla T4", 3231, 3043, True, ()),
    (NODE_T4, "418.87.01", "Tesla T4", 15079, 3053, True, ((8796, "python3", 3043),)),
    (POD_V100, "515.105.01", "Tesla V100-SXM2...", 16384, 334, True, ()),
    (B200, "580.105.08", "NVIDIA B200", 183359, 0, True, ()),
    (A6000, "525.125.06", "NVIDIA RTX A6000", 49140, 13936, True, ()),
    # (cut right under GPU 0's closing border: a GPU row below it may have been cut away)
    (NSHX, "535.129.03", "NVIDIA A100-SXM4...", 40960, 1024, False, ()),
]


@pytest.mark.parametrize(("name", "driver", "gpu0", "mib", "used", "whole", "procs"), ONE_LINE)
def test_a_real_table_on_one_line_reads_its_gpu_rows(
    name: str,
    driver: str,
    gpu0: str,
    mib: int,
    used: int,
    whole: bool,
    procs: tuple[tuple[int, str, int], ...],
) -> None:
    report = parse_any((REAL / name).read_text())
    assert (report.source, report.driver_version) == ("table", driver)
    [gpu] = report.gpus
    assert (gpu.index, gpu.name, gpu.memory_total_mib, gpu.memory_used_mib) == (0, gpu0, mib, used)
    assert report.complete == whole
    assert tuple((p.pid, p.name, p.used_memory_mib) for p in gpu.processes) == procs


def _collapsed(text: str) -> str:
    """`text` as such a page shows it: every run of blanks one space, the lines joined by one."""
    return " ".join(re.sub(r"[ \t]+", " ", line).strip() for line in text.splitlines() if line.strip())


def _gpus(text: str) -> list[tuple[int, str | None, int | None, int | None, str | None]]:
    return [
        (g.index, g.name, g.memory_total_mib, g.memory_used_mib, g.pci_bus_id) for g in parse_table(text).gpus
    ]


def _whole_tables() -> list[str]:
    """Every real whole table of one or more GPUs whose lines are all box lines below its date
    line (no prompt, note or wrap around it)."""
    found = []
    for path in sorted(REAL.glob("nvidia-smi__*.txt")):
        text = path.read_text(errors="replace")
        lines = [line for line in text.splitlines() if line.strip()]
        body = lines[1:] if lines and not lines[0].lstrip().startswith(("+", "|")) else lines
        if not body or not all(line.strip()[:1] in "+|" and line.strip()[-1:] in "+|" for line in body):
            continue
        report = parse_table(text)
        if report.source == "table" and report.gpus and report.complete:
            found.append(path.name)
    return found


WHOLE = _whole_tables()


def test_the_class_is_many_tables() -> None:
    assert len(WHOLE) >= 40


@pytest.mark.parametrize("name", WHOLE)
def test_every_real_whole_table_joined_on_one_line_reads_the_same_gpus(name: str) -> None:
    """Each real whole table, its spaces collapsed, reads the same GPUs with its lines joined into
    one as with its lines apart (the page's copy of it reads as the table does)."""
    text = (REAL / name).read_text(errors="replace")
    apart = "\n".join(re.sub(r"[ \t]+", " ", line).strip() for line in text.splitlines()) + "\n"
    joined = _collapsed(text) + "\n"
    assert _gpus(joined) == _gpus(apart)
    assert parse_table(joined).driver_version == parse_table(apart).driver_version
    assert parse_table(joined).complete == parse_table(apart).complete


@pytest.mark.parametrize(
    "line",
    [
        # (a row of another count of cells than its border's: no guess)
        "+----------+ | NVIDIA-SMI 418.87.01 Driver Version: 418.87.01 | |---+---+---+ | 0 Tesla T4 On | 0 |"
        " +---+---+---+",
        # (words after a row: a sentence quoting it)
        "+----------+ | NVIDIA-SMI 418.87.01 Driver Version: 418.87.01 | is what the image ships with",
        # (a `|` before the first border)
        "a | b +----------+ | NVIDIA-SMI 418.87.01 Driver Version: 418.87.01 | +----------+",
    ],
)
def test_a_line_whose_structure_does_not_say_where_its_lines_end_is_left_as_it_is(line: str) -> None:
    assert rows_apart([line]) == [line]


def test_the_date_line_before_the_first_border_is_a_line_of_its_own() -> None:
    text = (REAL / NODE_T4).read_text().splitlines()
    lines = rows_apart(text)
    assert lines[0] == "Mon Aug 7 09:18:26 2023"
    assert lines[1].startswith("+---") and lines[2].startswith("| NVIDIA-SMI 418.87.01")
    assert "| 0 8796 C python3 3043MiB |" in lines


T4_ORDER = 'gpu_model: T4\ngpu_count: 1\nvram: 16GB\nmin_driver: "{}"\n'


def test_the_cgpu_pods_share_of_a_t4_fails_vram_naming_the_sharing_layer(tmp_path: Path) -> None:
    """measure35a 12: the pod sees 3231 MiB of the 16 GB T4 (Aliyun cGPU): vram fails, naming a
    share of the GPU; the driver is judged (418.87.01 >= 418)."""
    text = (REAL / POD_T4).read_text()
    got = verdicts(tmp_path, "session.txt", text, T4_ORDER.format("418"))
    assert got["vram"][0] == "fail" and "3231 MiB" in got["vram"][1]
    assert got["min_driver"] == ("pass", "418.87.01")
    assert "a share of the GPU" in details(tmp_path, "session.txt", text, T4_ORDER.format("418"))["vram"]


@pytest.mark.parametrize(("ordered", "verdict"), [("418", "pass"), ("450", "fail")])
def test_the_nodes_table_on_one_line_is_judged_whole(tmp_path: Path, ordered: str, verdict: str) -> None:
    """measure35a 13: model, count, memory and the driver judged (418.87.01 fails >= 450)."""
    got = verdicts(tmp_path, "nvidia-smi.txt", (REAL / NODE_T4).read_text(), T4_ORDER.format(ordered))
    assert got["min_driver"] == (verdict, "418.87.01")
    assert got["gpu_model"][0] == got["gpu_count"][0] == got["vram"][0] == got["nvidia_driver"][0] == "pass"
    assert got["foreign_processes"][0] == "fail" and "python3" in got["foreign_processes"][1]


def test_the_edge_pods_v100_table_on_one_line_is_judged_whole(tmp_path: Path) -> None:
    """measure35a 14: the same shape with a `MIG M.` cell, judged alike."""
    order = 'gpu_model: V100 16GB SXM2\ngpu_count: 1\nvram: 16GB\nmin_driver: "520"\n'
    got = verdicts(tmp_path, "nvidia-smi.txt", (REAL / POD_V100).read_text(), order)
    assert got["gpu_model"][0] == got["gpu_count"][0] == got["vram"][0] == "pass"
    assert got["min_driver"] == ("fail", "515.105.01")


def test_a_run_two_counts_cut_each_their_own_way_is_left_as_it_is() -> None:
    """The table before R304 (driver 295.40) joined: under its GPU rows' `|---+---+---|`,
    `| Compute processes: GPU Memory | | GPU PID Process name Usage |` is one row of three cells
    or two of one; the lines above are cut, the rest left whole (never a guess)."""
    name = (
        "nvidia-smi__geforce-gtx-550-ti__1gpu__driver295.40__old-layout-nb-name__processes-not-supported"
        "__ubuntuforums.txt"
    )
    lines = rows_apart([_collapsed((REAL / name).read_text())])
    assert "| 0. GeForce GTX 550 Ti | 0000:01:00.0 N/A | N/A N/A |" in lines
    assert lines[-1].startswith("| Compute processes: GPU Memory | | GPU PID")
    assert lines[-1].endswith("| 0. Not Supported | +" + "-" * 77 + "+")


def _boxed(name: str) -> str:
    """A real table's box lines (its date line, prompt and notes left out), spaces collapsed,
    joined into one line."""
    text = (REAL / name).read_text(errors="replace")
    return _collapsed("\n".join(line for line in text.splitlines() if line.strip()[:1] in "+|"))


@pytest.mark.parametrize("name", WHOLE)
def test_every_real_table_joined_on_one_line_after_another_is_two_outputs(name: str) -> None:
    """revO F1: two tables on one line, no words between (a page's copy of a before and an
    after): both banners counted, as on lines of their own (refused as two outputs), or the
    line left as it is (nothing read); never the first table read and the second dropped."""
    one = _boxed(name)
    for joined in (f"{one} {one}", one + one):
        runs = output_runs.outputs_in("nvidia_smi_table", joined)[1]
        assert runs == 2 or not parse_table(joined).gpus


A100_4 = "nvidia-smi__a100-sxm4-80gb__4gpu__driver555.42.02.txt"


def _gpu_gone(text: str, index: int) -> str:
    """`text` (a table of GPUs with three rows each) as the same box shows it with GPU `index`
    gone: its three rows and the border under them left out (a test input built from the real
    table, the after of a before)."""
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if re.match(rf"\|\s+{index}\s+NVIDIA", line))
    return "\n".join(lines[:at] + lines[at + 4 :]) + "\n"


@pytest.mark.parametrize("sep", [" ", "", "\n"])
def test_a_box_before_and_after_a_gpu_was_lost_on_one_line_is_refused_as_two_outputs(
    tmp_path: Path, sep: str
) -> None:
    """revO F1: the real 4-GPU table and the same box's 3-GPU table after it, joined onto one line
    with no words between: refused as two nvidia-smi outputs, as on lines of their own; before,
    the first was read (4 GPUs, gpu_count passed) and the second ignored."""
    text = (REAL / A100_4).read_text()
    joined = _collapsed(text) + sep + _collapsed(_gpu_gone(text, 3)) + "\n"
    order = 'gpu_model: A100 80GB\ngpu_count: 4\nvram: 80GB\nmin_driver: "550"\n'
    with pytest.raises(UsageError, match="holds 2 nvidia-smi outputs"):
        verdicts(tmp_path, "nvidia-smi.txt", joined, order)


def test_a_line_cut_before_an_ambiguous_run_holding_a_second_banner_is_left_as_it_is() -> None:
    """revO F1: the table before R304 joined twice: the run two counts cut each their own way
    holds the second table's banner; the line is left whole (never the first table's lines
    with the second as its uncounted rest)."""
    name = (
        "nvidia-smi__geforce-gtx-550-ti__1gpu__driver295.40__old-layout-nb-name__processes-not-supported"
        "__ubuntuforums.txt"
    )
    one = _boxed(name)
    assert rows_apart([f"{one} {one}"]) == [f"{one} {one}"]
    assert not parse_table(f"{one} {one}\n").gpus
