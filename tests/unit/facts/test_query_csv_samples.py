"""A `--query-gpu` CSV saved from `nvidia-smi ... -l N` holds one row per GPU per sample under
one header: real captures of one GPU sampled 3-5 times were read as 3-5 GPUs (a 1-GPU box
passed an order of 4, and a busy GPU was judged on its first, idle sample)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.facts.nvidia_smi import parse_any
from gpuonboard.facts.nvidia_smi.query_csv import parse_query_csv

REAL = Path(__file__).parents[2] / "fixtures" / "real"
V100 = "nvidia-smi-query-gpu-l3__tesla-v100-pcie-16gb__1gpu__driver565.57.01__4-samples.csv"
GH200 = "nvidia-smi-query-gpu-l1__gh200__1gpu__5-samples__elided.csv"
BY_INDEX = "nvidia-smi-query-gpu-l1__1gpu__3-samples__index-power-clocks.csv"
NO_ID = "nvidia-smi-query-gpu-l1__1gpu-11gb__3-samples__no-index.csv"


def _report(name: str):  # type: ignore[no-untyped-def]
    return parse_query_csv((REAL / name).read_text(), ())


@pytest.mark.parametrize(("name", "used_mib"), [(V100, 2402), (GH200, 3707), (BY_INDEX, None)])
def test_the_samples_of_one_gpu_are_one_gpu_judged_on_its_newest_row(name: str, used_mib: int | None) -> None:
    report = _report(name)
    assert len(report.gpus) == 1 and report.complete
    assert report.gpus[0].index == 0
    assert report.gpus[0].memory_used_mib == used_mib
    assert any("a query repeated over time (nvidia-smi -l)" in w for w in report.warnings)


def test_the_newest_sample_shows_the_busy_gpu() -> None:
    gpu = _report(V100).gpus[0]
    assert (gpu.utilization_gpu_pct, gpu.temperature_c, gpu.pci_bus_id) == (99, 33, "00000000:D8:00.0")


def test_rows_nothing_tells_apart_over_seconds_leave_the_gpus_unknown() -> None:
    """No index, uuid or PCI address, timestamps a second apart: samples or GPUs cannot be told,
    so every row is kept (each judged) and the count is not known (gpu_count unverified)."""
    report = parse_any((REAL / NO_ID).read_text())
    assert len(report.gpus) == 3 and not report.complete and report.gap
    assert any("cannot be told apart as GPUs or as samples of one" in w for w in report.warnings)


H200 = (REAL / "nvidia-smi-query-gpu__h200__1gpu__driver590.48.01__load.csv").read_text().splitlines()


def _h200_rows(bus_ids: list[str]) -> str:
    """The real H200 query (its UUID and serial redacted to zeros upstream) as one query of
    several GPUs, each row the capture's own with another PCI address."""
    head, row = H200[0], H200[1]
    return "\n".join([head, *(row.replace("00000000:83:00.0", bus) for bus in bus_ids)]) + "\n"


def test_gpus_with_one_redacted_uuid_are_told_apart_by_their_addresses() -> None:
    """A redacted UUID (GPU-00000000-...) or serial (0000000000000) is every GPU's: two GPUs
    are never one for sharing it."""
    buses = [f"00000000:{b:02X}:00.0" for b in (0x18, 0x2A, 0x3A, 0x5D, 0x9A, 0xAB, 0xBA, 0xDB)]
    report = parse_query_csv(_h200_rows(buses), ())
    assert [g.pci_bus_id for g in report.gpus] == buses and report.complete


def test_a_log_of_several_gpus_is_cut_into_its_gpus_in_whole_cycles() -> None:
    buses = ["00000000:18:00.0", "00000000:2A:00.0"]
    report = parse_query_csv(_h200_rows(buses * 3), ())
    assert [g.pci_bus_id for g in report.gpus] == buses and report.complete
    # a repetition that is no cycle (A B B A) is no log of samples: not told apart
    odd = parse_query_csv(_h200_rows([buses[0], buses[1], buses[1], buses[0]]), ())
    assert len(odd.gpus) == 4 and not odd.complete


NO_ID_HEAD = (REAL / NO_ID).read_text().splitlines()[0]


def test_rows_without_identity_read_within_a_second_are_one_query() -> None:
    """One query's rows straddling a second boundary (50.990 to 51.200) are its GPUs."""
    row = (REAL / NO_ID).read_text().splitlines()[1].split(", ", 1)[1]
    stamps = [f"2019/08/23 14:41:{50 + (990 + 30 * k) // 1000}.{(990 + 30 * k) % 1000:03d}" for k in range(8)]
    report = parse_query_csv("\n".join([NO_ID_HEAD, *(f"{t}, {row}" for t in stamps)]) + "\n", ())
    assert len(report.gpus) == 8 and report.complete
    # without timestamps, rows nothing tells apart are not counted as GPUs
    bare = "\n".join(line.split(", ", 1)[1] for line in (REAL / NO_ID).read_text().splitlines()) + "\n"
    report = parse_query_csv(bare, ())
    assert len(report.gpus) == 3 and not report.complete


@pytest.mark.parametrize(
    ("name", "count"),
    [
        ("nvidia-smi-query-gpu__a100-pcie-40gb__2gpu__driver555.42.02.csv", 2),
        ("nvidia-smi-query-gpu__rtx-a6000__2gpu__indented.csv", 2),
        ("nvidia-smi-query-gpu__h200__1gpu__driver590.48.01__load.csv", 1),
    ],
)
def test_one_query_of_several_gpus_keeps_every_gpu(name: str, count: int) -> None:
    report = parse_any((REAL / name).read_text())
    assert len(report.gpus) == count and report.complete
    assert not any("repeated over time" in w for w in report.warnings)


def test_a_one_gpu_log_does_not_pass_an_order_of_four(tmp_path: Path) -> None:
    """The offline judge of the V100 log against an order of 4 V100s: gpu_count fails at 1."""
    import json
    import subprocess
    import sys

    order = tmp_path / "order.yml"
    order.write_text("order:\n  gpu_model: V100 PCIe\n  gpu_count: 4\n  vram: 16GB\n")
    cmd = [sys.executable, "-c", "from gpuonboard.cli import main; main()", "facts", str(REAL / V100)]
    r = subprocess.run([*cmd, "--order", str(order), "--json"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 1, r.stderr
    rules = {x["name"]: x for x in json.loads(r.stdout)["rules"]}
    assert (rules["gpu_count"]["actual"], rules["gpu_count"]["verdict"]) == ("1", "fail")
