"""Two saved `nvidia-smi --query-gpu` CSVs of one box asking other fields (one `name,
memory.total`, the other the temperatures or the PCIe link) each answer what the other does not:
a folder holding both is judged on both, merged by GPU (api/unread.py `joined_queries`,
facts/gpu_merge.py: the second read as the format `csv2`), where it used to be refused as "a
second nvidia_smi_csv output" (exit 2). A field both give otherwise is a disagreement of the two
(facts/gpu_agree.py), and two that cannot be of one box are refused in one sentence naming both.
The pairs are cut from real single captures, the edit named in each test: the columns of one
real query split between two files."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from gpuonboard.api import offline
from gpuonboard.connection.gather import parse_facts
from gpuonboard.errors import UsageError
from gpuonboard.steps.base import Check

REAL = Path(__file__).parents[2] / "fixtures" / "real"
# name, pci.bus_id, vbios_version, temperature.gpu, utilization.gpu [%], memory.total [MiB], ...
A100_PCIE = REAL / "nvidia-smi-query-gpu__a100-pcie-40gb__2gpu__driver555.42.02.csv"
# index, name, memory.total [MiB], driver_version, pci.bus_id, ecc.mode.current, clocks_event_reasons.active
H200 = REAL / "nvidia-smi-query-gpu__h200__1gpu__driver580.159.04.csv"
ORDER = "order:\n  gpu_model: A100 40GB PCIe\n  gpu_count: 2\n"


def _columns(capture: Path, names: list[str], rows: slice = slice(None)) -> str:
    """The columns `names` (as the header names them, units and all) of a real CSV, its rows
    `rows` (after the header), in nvidia-smi's `, ` layout."""
    table = [[cell.strip() for cell in row] for row in csv.reader(capture.read_text().splitlines())]
    at = [table[0].index(name) for name in names]
    return "".join(", ".join(row[i] for i in at) + "\n" for row in [table[0], *table[1:][rows]])


def _judged(tmp_path: Path, files: dict[str, str], order: str = ORDER) -> tuple[list[str], dict[str, Check]]:
    """The notes and the checks (by rule) of `files` saved in one folder."""
    folder = tmp_path / "box"
    folder.mkdir()
    for name, text in files.items():
        (folder / name).write_text(text)
    (tmp_path / "order.yml").write_text(order)
    notes: list[str] = []
    facts = parse_facts(offline.load_outputs([str(folder)], notes))
    checks = offline.judge(facts, offline.load_order(str(tmp_path / "order.yml")))
    return notes, {c.name: c for c in checks}


def test_two_queries_of_one_box_keyed_by_pci_address_are_merged(tmp_path: Path) -> None:
    """Edit: the real 2 x A100-PCIE-40GB query split in two files: `name, pci.bus_id,
    memory.total` and `pci.bus_id, vbios_version, temperature.gpu, utilization.gpu`. Before:
    exit 2, "a second nvidia_smi_csv output ... pass one file per command". Now: one box, each
    GPU's fields from both (names and memory from the first, temperatures from the second, by
    PCI address), gpu_model, gpu_count and temperature pass, the note names both files."""
    files = {
        "query-gpu-a.csv": _columns(A100_PCIE, ["name", "pci.bus_id", "memory.total [MiB]"]),
        "query-gpu-b.csv": _columns(
            A100_PCIE, ["pci.bus_id", "vbios_version", "temperature.gpu", "utilization.gpu [%]"]
        ),
    }
    notes, checks = _judged(tmp_path, files)
    assert any("query-gpu-b.csv and" in n and "merged by GPU" in n for n in notes), notes
    # (round 28: the note says how the GPUs were matched)
    assert any("its GPUs matched by pci.bus_id." in n for n in notes), notes
    assert checks["gpu_model"].verdict == checks["gpu_count"].verdict == "pass"
    assert (checks["temperature"].verdict, checks["temperature"].actual) == ("pass", "39 C on GPU 0")


def test_a_keyless_query_of_as_many_gpus_is_merged_by_order(tmp_path: Path) -> None:
    """Edit: the real 1 x H200 query split in two: `index, name, memory.total, driver_version`
    and `ecc.mode.current, clocks_event_reasons.active` (no key shared: one row each, matched by
    order). Before: exit 2. Now: ecc_mode read from the second, driver and model from the
    first, each pass; each field keeps its file's format in its provenance."""
    files = {
        "query-gpu-a.csv": _columns(H200, ["index", "name", "memory.total [MiB]", "driver_version"]),
        "query-gpu-b.csv": _columns(H200, ["ecc.mode.current", "clocks_event_reasons.active"]),
    }
    order = "order:\n  gpu_model: H200\n  gpu_count: 1\n"
    notes, checks = _judged(tmp_path, files, order)
    assert checks["gpu_model"].verdict == checks["nvidia_driver"].verdict == "pass"
    assert checks["ecc_mode"].verdict == "pass", checks["ecc_mode"]
    assert any("matched by order only" in n and "add uuid to both queries" in n for n in notes), notes


def test_two_queries_matched_by_index_only_say_so(tmp_path: Path) -> None:
    """Edit: the real 1 x H200 query split in two, both keeping `index`: `index, name,
    memory.total` and `index, ecc.mode.current`. Merged by index as before (a saved folder is one
    box's outputs), but before the note said only "CSV outputs of the box": two files of two
    boxes matched by index alone were merged silently. Now the note says the GPUs were matched
    by index only, that nothing in both files shows they are one box's, and to add uuid."""
    files = {
        "query-gpu-a.csv": _columns(H200, ["index", "name", "memory.total [MiB]"]),
        "query-gpu-b.csv": _columns(H200, ["index", "ecc.mode.current"]),
    }
    order = "order:\n  gpu_model: H200\n  gpu_count: 1\n"
    notes, checks = _judged(tmp_path, files, order)
    assert checks["ecc_mode"].verdict == "pass", checks["ecc_mode"]
    said = "its GPUs matched by index only: nothing in both files shows they are one box's; add uuid"
    assert any(said in n for n in notes), notes


def test_two_index_views_with_no_gpu_in_common_are_refused_saying_so(tmp_path: Path) -> None:
    """Edit: the real 1 x H200 query split in two, the second's index cell edited from 0 to 1
    (two `-i` views: GPU 0 in one, GPU 1 in the other). Refused as before (nothing joins them;
    gpu_count is never read from two views), but it now says "no GPU in common" where it said
    the two "cannot be of one box" because one GPU's index was in no row of the other."""
    folder = tmp_path / "box"
    folder.mkdir()
    (folder / "query-gpu-a.csv").write_text(_columns(H200, ["index", "name", "memory.total [MiB]"]))
    second = _columns(H200, ["index", "ecc.mode.current"]).split("\n")
    (folder / "query-gpu-b.csv").write_text("\n".join([second[0], "1" + second[1][1:], *second[2:]]))
    assert second[1].startswith("0,")
    with pytest.raises(UsageError) as raised:
        offline.load_outputs([str(folder)])
    assert "no GPU in common: no index of one is in a row of the other" in str(raised.value)


def test_two_queries_reading_one_field_otherwise_disagree(tmp_path: Path) -> None:
    """Edit: the real 2 x A100 query split as above, the second also asking `memory.total`, its
    GPU 1's blanked to 81920 MiB (another card's). Before: exit 2. Now: the two answers are a
    disagreement named with both formats ("40960 MiB in the CSV query, 81920 MiB in the second
    CSV query"), and gpu_model is unverified, never judged on either answer alone."""
    second = _columns(A100_PCIE, ["pci.bus_id", "temperature.gpu", "memory.total [MiB]"])
    lines = second.splitlines(keepends=True)
    lines[2] = lines[2].replace("40960 MiB", "81920 MiB")
    files = {
        "query-gpu-a.csv": _columns(A100_PCIE, ["name", "pci.bus_id", "memory.total [MiB]"]),
        "query-gpu-b.csv": "".join(lines),
    }
    _, checks = _judged(tmp_path, files)
    said = checks["gpu_model"].actual
    assert checks["gpu_model"].verdict == "unverified", checks["gpu_model"]
    assert "the CSV query" in said and "the second CSV query" in said, said


@pytest.mark.parametrize(
    ("second", "why"),
    [
        # the real H200's query (another box, its own PCI address) beside the A100's
        (
            lambda: _columns(H200, ["pci.bus_id", "ecc.mode.current"]),
            "no GPU in common: no pci.bus_id of one is in a row of the other",
        ),
        # one keyless row beside the A100's two GPUs
        (
            lambda: _columns(A100_PCIE, ["temperature.gpu", "utilization.gpu [%]"], slice(0, 1)),
            "2 and 1 GPUs, and no index",
        ),
    ],
)
def test_two_queries_that_cannot_be_one_box_are_refused(tmp_path: Path, second: object, why: str) -> None:
    """Edits: the real A100 query's `name, pci.bus_id, memory.total` beside the real H200
    query's `pci.bus_id, ecc.mode.current` (a GPU address of another box), or beside the A100
    query's own `temperature.gpu, utilization.gpu` of its first row only (1 GPU beside 2,
    nothing to match them by): one sentence naming both files and why, exit 2 (UsageError)."""
    assert callable(second)
    folder = tmp_path / "box"
    folder.mkdir()
    (folder / "query-gpu-a.csv").write_text(_columns(A100_PCIE, ["name", "pci.bus_id", "memory.total [MiB]"]))
    (folder / "query-gpu-b.csv").write_text(second())
    with pytest.raises(UsageError) as raised:
        offline.load_outputs([str(folder)])
    message = str(raised.value)
    assert "query-gpu-a.csv" in message and "query-gpu-b.csv" in message and why in message, message
    assert message.count(". ") == 0 and message.endswith("pass the files of one box.")


def test_two_queries_of_the_same_fields_stay_refused(tmp_path: Path) -> None:
    """The real A100 query saved twice (two samples of the same fields, rivals): refused as
    before, "a second nvidia_smi_csv output"."""
    folder = tmp_path / "box"
    folder.mkdir()
    for name in ("query-gpu-a.csv", "query-gpu-b.csv"):
        (folder / name).write_text(A100_PCIE.read_text())
    with pytest.raises(UsageError, match="a second `nvidia-smi --query-gpu` CSV output"):
        offline.load_outputs([str(folder)])


def test_two_keyless_queries_of_as_many_rows_are_merged_by_order(tmp_path: Path) -> None:
    """Edit: the real 2 x A100-PCIE-40GB query split in two files without its `pci.bus_id`:
    `name, vbios_version, temperature.gpu, utilization.gpu` and `name, memory.total,
    memory.free, memory.used` (two rows each, no index, uuid or bus id; `name` in both, agreeing
    row by row). Before: exit 2, "a second nvidia_smi_csv output", though nvidia-smi prints a
    query's GPUs in PCI bus order each time. Now: merged row by row (row 1's temperature 39 beside
    its 40960 MiB, row 2's 37), the note saying they were matched by order and why."""
    files = {
        "query-gpu-a.csv": _columns(
            A100_PCIE, ["name", "vbios_version", "temperature.gpu", "utilization.gpu [%]"]
        ),
        "query-gpu-b.csv": _columns(
            A100_PCIE, ["name", "memory.total [MiB]", "memory.free [MiB]", "memory.used [MiB]"]
        ),
    }
    folder = tmp_path / "box"
    folder.mkdir()
    for name, text in files.items():
        (folder / name).write_text(text)
    notes: list[str] = []
    facts = parse_facts(offline.load_outputs([str(folder)], notes))
    assert facts.gpu is not None
    assert [(g.temperature_c, g.memory_total_mib) for g in facts.gpu.gpus] == [(39, 40960), (37, 40960)]
    said = "matched by order only (one row each, or as many rows: nvidia-smi prints a query's GPUs in PCI bus"
    assert any(said in n for n in notes), notes


def test_two_keyless_queries_whose_rows_contradict_are_refused(tmp_path: Path) -> None:
    """Edit: as above, the second file's row 2 `name` edited to NVIDIA A100-SXM4-40GB (another
    card in that place): refused in one sentence naming both files and the row that differs."""
    second = _columns(A100_PCIE, ["name", "memory.total [MiB]"]).splitlines(keepends=True)
    second[2] = second[2].replace("A100-PCIE-40GB", "A100-SXM4-40GB")
    folder = tmp_path / "box"
    folder.mkdir()
    (folder / "query-gpu-a.csv").write_text(_columns(A100_PCIE, ["name", "temperature.gpu"]))
    (folder / "query-gpu-b.csv").write_text("".join(second))
    with pytest.raises(UsageError) as raised:
        offline.load_outputs([str(folder)])
    message = str(raised.value)
    assert "query-gpu-a.csv" in message and "query-gpu-b.csv" in message, message
    assert "row 2 reads name NVIDIA A100-PCIE-40GB in one, NVIDIA A100-SXM4-40GB in the other" in message
