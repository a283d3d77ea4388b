"""facts/nvidia_smi/query_csv.py: a CSV of `--query-compute-apps`, `--query-accounted-apps` or
`--query-retired-pages` lists processes or retired pages, one GPU's once per row, never GPUs,
even where its header holds only the fields those queries share with `--query-gpu` (`timestamp,
gpu_name, gpu_bus_id, gpu_serial, gpu_uuid`); a `--query-gpu` CSV reads those `gpu_*` aliases as
its `name`, `pci.bus_id`, `serial`, `uuid`, and rows that share a UUID or bus id are never
separate GPUs. Real capture (tests/fixtures/real), edited in-test as each test says."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.errors import UsageError
from gpuonboard.facts.nvidia_smi.query_csv import QUERY_FIELDS, is_query_header, parse_query_csv

from ..offline_judge import verdicts

REAL = Path(__file__).parents[2] / "fixtures" / "real"
APPS = "query-compute-apps-csv__gpu-uuid-process-name__3-processes-2-gpus__dcgm-exporter-94.txt"
ORDER = "gpu_count: 8\ngpu_model: H100\n"
H100 = "NVIDIA H100 80GB HBM3, 00000000:18:00.0, GPU-11111111-2222-3333-4444-555555555555"


def test_the_real_compute_apps_csv_is_named_as_processes(tmp_path: Path) -> None:
    """dcgm-exporter#94's `--query-compute-apps` CSV as stored (3 processes on 2 GPUs), saved as
    nvidia-smi.txt: it is said to list processes, not GPUs, and judged as no GPU list."""
    text = (REAL / APPS).read_text()
    assert not is_query_header(text.splitlines()[0])
    with pytest.raises(UsageError, match=r"a --query-compute-apps CSV lists processes, not GPUs"):
        verdicts(tmp_path, "nvidia-smi.txt", text, ORDER)


@pytest.mark.parametrize("name", ["nvidia-smi.txt", "apps.csv"])
def test_a_compute_apps_csv_of_the_shared_fields_counts_no_gpu(tmp_path: Path, name: str) -> None:
    """Round 30 (LLL): dcgm-exporter#94's capture edited in-test to the shared fields, as
    `--query-compute-apps=timestamp,gpu_uuid,gpu_name` prints it (a `timestamp` column of one
    stamp put first, `process_name` renamed `gpu_name` and its cells the GPU's name): its 3
    process rows were read as 3 GPUs (gpu_count fail "3" for an order of 8); now refused as a
    CSV of processes or retired pages, naming the --query-gpu to save."""
    lines = (REAL / APPS).read_text().splitlines()
    rows = [f"2022/08/19 10:00:00.000, {line.split(',')[0]}, NVIDIA H100 80GB HBM3" for line in lines[1:]]
    text = "\n".join(["timestamp, gpu_uuid, gpu_name", *rows]) + "\n"
    assert not is_query_header(text.splitlines()[0])
    with pytest.raises(UsageError, match=r"lists processes or retired pages, not GPUs") as refused:
        verdicts(tmp_path, name, text, ORDER)
    assert f"--query-gpu={','.join(QUERY_FIELDS)}" in str(refused.value)


@pytest.mark.parametrize(
    ("header", "query"),
    [
        ("timestamp, gpu_name, gpu_bus_id, gpu_uuid", "--query-compute-apps, --query-accounted-apps"),
        ("gpu_name, gpu_bus_id, gpu_serial, gpu_uuid", "--query-compute-apps, --query-accounted-apps"),
        (
            "gpu_name, gpu_bus_id, gpu_uuid, retired_pages.address, retired_pages.cause",
            "--query-retired-pages",
        ),
        ("gpu_name, gpu_bus_id, gpu_uuid, pid, gpu_utilization, max_memory_usage", "--query-accounted-apps"),
    ],
)
def test_headers_of_other_queries_are_no_query_gpu_header(tmp_path: Path, header: str, query: str) -> None:
    """Headers built from `nvidia-smi --help-query-compute-apps / -accounted-apps /
    -retired-pages` field names over 3 rows of one H100 (its page or process cells filled in):
    each was read as a --query-gpu CSV of 3 GPUs; now each names its query."""
    extra = len(header.split(",")) - 3
    rows = [", ".join([H100, *(["1"] * extra)]) for _ in range(3)]
    if header.startswith("timestamp"):
        rows = [f"2024/01/01 10:00:00.000, {H100}"] * 3
    assert not is_query_header(header)
    with pytest.raises(UsageError, match=query):
        verdicts(tmp_path, "nvidia-smi.txt", "\n".join([header, *rows]) + "\n", ORDER)


def test_the_gpu_aliases_of_a_query_gpu_csv_are_read() -> None:
    """`--query-gpu=index,gpu_name,gpu_bus_id,gpu_uuid,driver_version` (aliases --help-query-gpu
    lists): the GPU's name, bus id and UUID are read from them."""
    text = f"index, gpu_name, gpu_bus_id, gpu_uuid, driver_version\n0, {H100}, 550.54.15\n"
    assert is_query_header(text.splitlines()[0])
    (gpu,) = parse_query_csv(text, ()).gpus
    assert (gpu.name, gpu.pci_bus_id) == ("NVIDIA H100 80GB HBM3", "00000000:18:00.0")
    assert gpu.uuid == "GPU-11111111-2222-3333-4444-555555555555"


def test_rows_sharing_a_uuid_are_never_separate_gpus() -> None:
    """dcgm-exporter#94's two rows of GPU-777ead31-... read as a --query-gpu CSV of `index, uuid,
    name` (indexes 0, 1, 2 given in-test, one stamp-less query): the shared UUID leaves the GPU
    count unknown, never 3 GPUs."""
    lines = (REAL / APPS).read_text().splitlines()[1:]
    text = "index, uuid, name\n" + "".join(
        f"{i}, {line.split(',')[0]}, NVIDIA H100 80GB HBM3\n" for i, line in enumerate(lines)
    )
    report = parse_query_csv(text, ())
    assert not report.complete and "cannot be told apart" in report.gap
