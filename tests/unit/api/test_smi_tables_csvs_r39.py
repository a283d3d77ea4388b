"""nvidia-smi tables and CSVs judged on real captures never seen before (measure39a, measure39e 19):
a GPU's second row cut inside a cell keeps the cells closed before the cut (facts/nvidia_smi/
table.py _second_row); a first GPU row cut inside its name cell says so; a `--query-gpu` CSV with
utilisation but no memory.used is no job seen (gpu_health/usage.py), names its missing `name`
column (gpu_rules._nameless_view) and judges an `-l` log's hottest sample; a MIG-enabled GPU's
table cut before its `MIG devices:` rows says the ECC counts were cut; the banner line pasted
without its `|` borders is whole where its line ends."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpuonboard.facts.nvidia_smi.table import parse_table

from ..offline_judge import checks

REAL = Path(__file__).resolve().parents[2] / "fixtures" / "real"
CLUB3090 = "nvidia-smi__geforce-rtx-3090__1gpu__driver580.159.04__cut-mid-memory-cell__club3090-222.txt"
LOCALAI = (
    "nvidia-smi__grid-p40-24q-vgpu__driver535.261.03__prompt__cut-after-gpu0-name-no-persistence-cell"
    "__localai-6928.txt"
)
KSYSGUARD = (
    "nvidia-smi-query-gpu-l__1gpu__13-samples__index-util-power-clocks-no-name-no-memory"
    "__ksysguard-gpu-27.txt"
)
EXPORTER = (
    "nvidia-smi__a800-sxm4-80gb-mig-enabled__1gpu__driver535.86.10__cut-after-gpu0-rows-before-mig-devices"
    "__nvidia-gpu-exporter-203.txt"
)
DEEPSPEED = (
    "session__prose-nvcc-version-then-nvidia-smi-banner-line-no-borders-fenced__driver470.129.06"
    "__deepspeed-2055.txt"
)
# whole real tables, one and two GPUs, two layouts (R535's and R555's)
RTX3090 = "nvidia-smi__geforce-rtx-3090__1gpu__driver535.161.07.txt"
A100X2 = "nvidia-smi__a100-pcie-40gb__2gpu__driver555.42.02.txt"
A100_MIG = "nvidia-smi__a100-sxm4-40gb__8gpu__driver450.80.02__7-mig.txt"


def _read(name: str) -> str:
    return (REAL / name).read_text(encoding="utf-8")


def _by_rule(
    tmp_path: Path, name: str, text: str, order: str | None = None
) -> dict[str, tuple[str, str, str]]:
    return {c.name: (c.verdict, c.actual, c.detail) for c in checks(tmp_path, name, text, order)}


# --- 1. a GPU's second row cut inside a cell -------------------------------------------------


def test_a_second_row_cut_in_its_memory_cell_keeps_the_sensors_read(tmp_path: Path) -> None:
    """Real capture (measure39a 11): the RTX 3090's table ends in its second row's Memory-Usage
    cell (`| 72%   67C    P2   378W /  390W |   23422MiB`). Before, the whole row was dropped:
    temperature and power_limit "not reported", their details saying this output gives none.
    The closed sensors cell is read; the cut memory cell is not; the rules stay unverified."""
    order = "gpu_model: GeForce RTX 3090\ngpu_count: 1\nvram: 24GB\n"
    rows = _by_rule(tmp_path, CLUB3090, _read(CLUB3090), order)
    verdict, actual, detail = rows["temperature"]
    assert verdict == "unverified", rows["temperature"]
    assert actual.startswith("67 C on GPU 0 (of what was read"), actual
    assert "reports the GPU temperature" not in detail
    verdict, actual, detail = rows["power_limit"]
    assert verdict == "unverified" and actual.startswith("enforced 390 W"), rows["power_limit"]
    assert "gives no power limit" not in detail
    assert rows["vram"][0] == "unverified" and "no GPU's memory total" in rows["vram"][1]


def _row_cuts(text: str, gpu: int, row: int) -> list[tuple[str, str]]:
    """(the cut text, the row as far as it goes) for `text` cut after every column of GPU
    `gpu`'s `row`-th line (1: second, 2: third), with no line end after the cut."""
    lines = text.split("\n")
    first = next(n for n, line in enumerate(lines) if re.match(rf"^\|\s+{gpu}\s+\S", line))
    at = first + row
    head = "\n".join(lines[:at]) + "\n"
    return [(head + lines[at][:c], lines[at][:c]) for c in range(1, len(lines[at].rstrip()) + 1)]


@pytest.mark.parametrize(("name", "gpu"), [(RTX3090, 0), (A100X2, 1)])
def test_a_second_row_cut_at_every_column_reads_every_closed_cell(name: str, gpu: int) -> None:
    """Edits: whole real tables (an RTX 3090's, GPU 1 of an A100 pair's) cut at every column of
    the last GPU's second row. A cell closed by its `|` before the cut is read as in the whole
    table (the sensors: temperature, power cap; the memory); the cell the cut went through is
    not (before, a row of fewer than three cells was dropped whole)."""
    whole = parse_table(_read(name)).gpus[gpu]
    for text, shown in _row_cuts(_read(name), gpu, 1):
        got = parse_table(text).gpus[gpu]
        closed = shown.count("|") - 1  # (cells closed by a `|` after the first one)
        sensors = (whole.temperature_c, whole.power_limit_w) if closed >= 1 else (None, None)
        assert (got.temperature_c, got.power_limit_w) == sensors, shown
        memory = (whole.memory_total_mib, whole.memory_used_mib) if closed >= 2 else (None, None)
        assert (got.memory_total_mib, got.memory_used_mib) == memory, shown
        assert got.record_cut, shown


@pytest.mark.parametrize(("name", "gpu"), [(RTX3090, 0), (A100X2, 1)])
def test_a_third_row_cut_at_every_column_keeps_the_second_row(name: str, gpu: int) -> None:
    """Edits: the same tables cut at every column of the last GPU's third row: its second row,
    whole, is read every time."""
    whole = parse_table(_read(name)).gpus[gpu]
    for text, shown in _row_cuts(_read(name), gpu, 2):
        got = parse_table(text).gpus[gpu]
        assert (got.temperature_c, got.memory_total_mib, got.utilization_gpu_pct) == (
            whole.temperature_c,
            whole.memory_total_mib,
            whole.utilization_gpu_pct,
        ), shown


# --- 2. the first GPU row cut inside its name cell -------------------------------------------


def test_the_first_row_cut_after_its_name_says_so(tmp_path: Path) -> None:
    """Real capture (measure39a 14): a GRID P40-24Q vGPU's table ends on `|   0  GRID P40-24Q`.
    Before: "cut short or mangled before its GPU rows"; the cut is inside GPU 0's first row."""
    rows = _by_rule(tmp_path, LOCALAI, _read(LOCALAI), "gpu_model: GRID P40-24Q\ngpu_count: 1\nvram: 24GB\n")
    for rule in ("gpu_model", "gpu_count", "vram"):
        verdict, actual, _ = rows[rule]
        assert verdict == "unverified", rows[rule]
        assert "inside the first row of GPU 0, its name cell cut after 'GRID P40-24Q'" in actual, actual
        assert "before its GPU rows" not in actual


def test_a_whole_table_cut_inside_its_first_name_says_where(tmp_path: Path) -> None:
    """Edit: the real RTX 3090 table cut inside GPU 0's name (`|   0  NVIDIA GeForce RT`)."""
    text = _read(RTX3090)
    cut = text[: text.index("NVIDIA GeForce RTX 3090") + len("NVIDIA GeForce RT")]
    verdict, actual, _ = _by_rule(tmp_path, "nvidia-smi.txt", cut, "gpu_count: 1\n")["gpu_count"]
    assert verdict == "unverified"
    assert "inside the first row of GPU 0, its name cell cut after 'NVIDIA GeForce RT'" in actual, actual


# --- 3. a `--query-gpu` loop with utilisation and no memory.used, no name ----------------------


KSYS_ORDER = "gpu_model: GeForce RTX 3080 Ti\ngpu_count: 1\n"


def test_a_csv_of_utilisation_without_memory_is_no_job_seen(tmp_path: Path) -> None:
    """Real capture (measure39a 18): a ksysguard `--query-gpu` loop with utilization.gpu (25 %)
    and no memory.used, display_active or name. Before: foreign_processes FAILED on utilisation
    alone (rules.md: utilisation with no memory held is no job's; here memory was never read),
    and gpu_model's detail called the CSV cut."""
    rows = _by_rule(tmp_path, KSYSGUARD, _read(KSYSGUARD), KSYS_ORDER)
    verdict, actual, detail = rows["foreign_processes"]
    assert verdict == "unverified", rows["foreign_processes"]
    assert actual.startswith("GPU 0 at 25 % utilisation, its memory used not reported"), actual
    assert "`memory.used,display_active`" in detail
    verdict, actual, detail = rows["gpu_model"]
    assert verdict == "unverified" and "the `--query-gpu` CSV has no name column" in actual, rows["gpu_model"]
    assert "add `name`" in detail and "cut short" not in detail


def test_the_same_csv_with_memory_read_is_judged_by_it(tmp_path: Path) -> None:
    """Edits: the same capture with a memory.used column: 3000 MiB beside 25 % fails (a job's
    memory), 0 MiB is utilisation alone (unverified, the idle Kepler reading): the change is of
    the memory not read only."""
    text = _read(KSYSGUARD)
    lines = text.split("\n")
    for used, verdict in (("3000", "fail"), ("0", "unverified")):
        edited = "\n".join(
            line + (", memory.used [MiB]" if n == 0 else f", {used} MiB") if line.strip() else line
            for n, line in enumerate(lines)
        )
        rows = _by_rule(tmp_path, KSYSGUARD, edited, KSYS_ORDER)
        assert rows["foreign_processes"][0] == verdict, (used, rows["foreign_processes"])
        assert "memory used not reported" not in rows["foreign_processes"][1]


def test_an_l_log_judges_the_hottest_sample(tmp_path: Path) -> None:
    """The real loop's rows 1 and 3 read 56 C, its newest 55 C: the temperature is the hottest
    sample's, its row named (before: "55 C on GPU 0", the newest row)."""
    verdict, actual, _ = _by_rule(tmp_path, KSYSGUARD, _read(KSYSGUARD), KSYS_ORDER)["temperature"]
    assert (verdict, actual) == ("pass", "56 C on GPU 0 (CSV row 1, its hottest sample)")
    # (a real log whose newest row is its hottest: no row named)
    v100 = "nvidia-smi-query-gpu-l3__tesla-v100-pcie-16gb__1gpu__driver565.57.01__4-samples.csv"
    verdict, actual, _ = _by_rule(tmp_path, v100, _read(v100), "gpu_count: 1\n")["temperature"]
    assert actual == "33 C on GPU 0", actual


# --- 4. a MIG-enabled GPU's table cut before its `MIG devices:` rows ------------------------


def test_a_mig_table_cut_before_its_slices_says_the_counts_were_cut(tmp_path: Path) -> None:
    """Real capture (measure39a 22): an A800 with MIG `Enabled`, the table ending after GPU 0's
    third row. Before: "nvidia-smi did not report ECC error counts"; in MIG mode the counts are
    on the slices' rows, which the cut took."""
    order = "gpu_model: A800-SXM4-80GB\ngpu_count: 1\nvram: 80GB\n"
    rows = _by_rule(tmp_path, EXPORTER, _read(EXPORTER), order)
    verdict, actual, detail = rows["ecc_uncorrectable"]
    assert verdict == "unverified", rows["ecc_uncorrectable"]
    assert "GPU 0 is in MIG mode" in actual and "part cut away" in actual, actual
    assert "did not report ECC error counts" not in detail


def test_a_mig_table_cut_inside_its_gpu_rows_marks_the_enabled_gpus_read() -> None:
    """Edit: the real 8 x A100 (7 in MIG mode) table cut after GPU 3's third row: GPUs 1-3, MIG
    Enabled, have their slices' rows in the part cut away; GPU 0 (MIG Disabled) has none."""
    text = _read(A100_MIG)
    lines = text.split("\n")
    first = next(n for n, line in enumerate(lines) if re.match(r"^\|\s+3\s+A100", line))
    report = parse_table("\n".join(lines[: first + 3]) + "\n")
    assert [g.mig_slices_cut for g in report.gpus] == [False, True, True, True]


# --- 6. the banner line pasted without its borders --------------------------------------------

BANNER = "NVIDIA-SMI 470.129.06   Driver Version: 470.129.06   CUDA Version: 11.4"


def test_a_banner_line_without_borders_is_read_whole(tmp_path: Path) -> None:
    """Real capture (measure39e 19): the banner fenced alone, without its `|` borders, under a
    prose line and an `nvcc --version` block. Before, its CUDA value (the line's last, a line end
    after it) was read as cut: "the table's banner line is cut short after 'CUDA Version: 11.4'",
    and min_driver was left "not whole"."""
    rows = _by_rule(tmp_path, DEEPSPEED, _read(DEEPSPEED), "min_driver: '470'\ngpu_count: 1\n")
    assert "driver 470.129.06, CUDA 11.4;" in rows["nvidia_driver"][1], rows["nvidia_driver"]
    assert all("cut short after" not in actual for _, actual, _ in rows.values())


@pytest.mark.parametrize("text", [f"{BANNER}\n", f"```\n{BANNER}\n```\n"])
def test_the_banner_line_alone_passes_min_driver(tmp_path: Path, text: str) -> None:
    """Edits: the capture's banner line alone, bare or fenced: min_driver is judged on its whole
    driver value (as the same line with its borders is)."""
    rows = _by_rule(tmp_path, "nvidia-smi.txt", text, "min_driver: '470'\n")
    assert rows["min_driver"][:2] == ("pass", "470.129.06"), rows["min_driver"]


def test_a_banner_that_ends_the_text_without_a_line_end_stays_cut() -> None:
    """Edits: the same line ending the text with no line end (`CUDA Version: 11.` may go on),
    and a bordered banner missing its closing `|`: the last value is not read."""
    assert parse_table(BANNER[:-1]).cuda_version is None
    bordered = f"| {BANNER}\n"
    assert parse_table(bordered).cuda_version is None
    assert parse_table(f"{BANNER}\n").cuda_version == "11.4"
