"""A real `nvidia-smi` table cut inside its GPU rows (measure33e 15, a blog's 8 x RTX 4090):
the rows read are evidence, as in a whole table. GPUs whose process list the cut took, holding
more memory than a desktop's display does (the busy mark, BUSY_MEMORY_MIB), run a job whatever
that list would name: a fail of what was read. And a GPU whose first row the cut went through
(`| 6 NVIDIA GeForce RTX 4`) is seen: the cut's sentence counts it, and so does gpu_count."""

from pathlib import Path

from gpuonboard.facts.nvidia_smi.table import TABLE_ROW_BEGUN, parse_table

from ...offline_judge import details, verdicts

REAL = Path(__file__).parents[3] / "fixtures" / "real"
# GPUs 0-5 at 4-22 GiB used (1, 2 and 4 at ~100 %), GPU 3's fan ERR!, cut in GPU 6's first row
RTX4090 = (
    REAL
    / (
        "nvidia-smi__geforce-rtx-4090__collapsed-spaces__driver550.144.03__gpu3-fan-err"
        "__cut-in-gpu6-row__cnblogs-asandstar.txt"
    )
).read_text()
CUT = "nvidia-smi's output lists 6 GPU(s) and was cut off inside the first row of GPU 6: at least 7 GPUs"


def test_busy_gpus_of_a_table_cut_in_its_rows_fail(tmp_path: Path) -> None:
    """foreign_processes was unverified ("no process list was read ... (the output was cut
    short: its process list may be in the part cut away)"): 20 GiB held at 100 % is a job's."""
    verdict, actual = verdicts(tmp_path, "nvidia-smi.txt", RTX4090)["foreign_processes"]
    assert verdict == "fail", actual
    assert actual.startswith("GPU 0 at 0 % utilisation with 21.8 GiB used; GPU 1 at 100 % utilisation")
    assert actual.endswith(f"(of what was read; incomplete probe: {CUT}; its process list cut away)")
    detail = details(tmp_path, "nvidia-smi.txt", RTX4090)["foreign_processes"]
    assert detail.startswith(
        "another job is using the GPUs you rent: a GPU that drives no display holds more"
    )


def test_a_gpu_busy_by_utilisation_alone_of_a_cut_list_stays_unverified(tmp_path: Path) -> None:
    """The same table with every GPU's memory used made 300 MiB (derived: what a desktop holds):
    a desktop's graphics processes (a warn) may be the list the cut took: unverified."""
    text = RTX4090
    for used in ("22273MiB", "20622MiB", "20584MiB", "21833MiB", "4171MiB", "6934MiB"):
        text = text.replace(f"{used} /", "300MiB /")
    verdict, actual = verdicts(tmp_path, "nvidia-smi.txt", text)["foreign_processes"]
    assert verdict == "unverified", actual
    assert actual.endswith("(the output was cut short: its process list may be in the part cut away)")


def test_a_gpu_driving_a_display_with_its_list_cut_stays_unverified(tmp_path: Path) -> None:
    """The same table with every GPU's Disp.A `On` (derived): a desktop's applications may hold
    GiBs on a GPU that drives a display, so the figures alone are no job's: unverified."""
    text = RTX4090.replace(".0 Off | Off |", ".0 On | Off |")
    verdict, actual = verdicts(tmp_path, "nvidia-smi.txt", text)["foreign_processes"]
    assert verdict == "unverified", actual


def test_the_row_the_cut_went_through_is_counted() -> None:
    report = parse_table(RTX4090)
    assert [g.index for g in report.gpus] == [0, 1, 2, 3, 4, 5]
    assert f"{TABLE_ROW_BEGUN}6 (its index read, nothing else of it)" in report.warnings


def test_gpu_count_counts_the_gpu_seen_in_the_cut_row(tmp_path: Path) -> None:
    """Ordered 7: 6 rows read and GPU 6's begun is at least 7 (it was unverified, "6 listed");
    ordered 8: at least 7, unverified still, the sentence saying the 7th."""
    seven = verdicts(tmp_path, "nvidia-smi.txt", RTX4090, "gpu_model: RTX 4090\ngpu_count: 7\n")
    assert seven["gpu_count"] == ("pass", f"6 listed; incomplete probe: {CUT}")
    eight = verdicts(tmp_path, "nvidia-smi.txt", RTX4090, "gpu_model: RTX 4090\ngpu_count: 8\n")
    assert eight["gpu_count"] == ("unverified", f"6 listed; incomplete probe: {CUT}")


def test_a_row_cut_after_its_whole_name_cell_is_read_not_counted_twice() -> None:
    """A cut after GPU 6's whole name cell (`| 6 NVIDIA GeForce RTX 4090 Off |`, derived) reads
    GPU 6 (round 30's cut first row): no row begun beyond it."""
    report = parse_table(RTX4090.rstrip("\n") + "090 Off |\n")
    assert report.gpus[-1].index == 6
    assert not any(w.startswith(TABLE_ROW_BEGUN) for w in report.warnings)
