"""The reference tables are looked up by the GPU names nvidia-smi really prints (real captures in
tests/fixtures/real/): an 8 x H100 SXM box is named "NVIDIA H100 80GB HBM3", with no "SXM" in it,
so a row that asked for "SXM" never matched it and a half-speed NVSwitch fabric only warned "no
reference row"; and a model number inside a longer one ("H200" in "GH200") is not that GPU."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gpuonboard.facts.nvidia_smi import parse_any, parse_text_q
from gpuonboard.facts.topo import interconnect, parse_topo
from gpuonboard.steps.prove import allreduce_checks, load_references, match_reference, parse_result
from gpuonboard.steps.prove.gpu_benchmark import load_gpu_references, match_gpu_reference

FIX = Path(__file__).resolve().parents[3] / "fixtures"
H100_Q = FIX / "real" / "nvidia-smi-q__h100-80gb-hbm3__8gpu__driver535.161.08.txt"
H200_8 = FIX / "real" / "nvidia-smi__h200__8gpu__driver570.158.01.txt"
H200_TOPO = FIX / "real" / "nvidia-smi-topo-m__h200__8gpu-10nic.txt"


def _eight_gpu_result(peak_busbw: float) -> dict[str, Any]:
    """The recorded 8 x A100 NCCL result (tests/fixtures/prove/) with its peak scaled."""
    r = parse_result((FIX / "prove" / "allreduce_8xa100_nccl.out").read_text())
    assert r is not None and r["world_size"] == 8
    scale = peak_busbw / float(r["peak_busbw_gbps"])
    rows = [{**row, "busbw_gbps": row["busbw_gbps"] * scale} for row in r["rows"]]
    return json.loads(json.dumps({**r, "rows": rows, "peak_busbw_gbps": peak_busbw}))


def test_real_8x_h100_sxm_name_finds_its_row_and_a_slow_fabric_fails() -> None:
    gpus = parse_text_q(H100_Q.read_text()).gpus
    assert len(gpus) == 8
    name = gpus[0].name
    assert name == "NVIDIA H100 80GB HBM3"
    table = load_references()
    row = match_reference(table, name, 8, "nvlink")
    assert row is not None and row["id"] == "h100-sxm-8x-nvswitch"
    checks = {c.name: c for c in allreduce_checks(_eight_gpu_result(120.0), table, name, 8, "nvlink")}
    assert checks["allreduce_busbw"].verdict == "fail", checks["allreduce_busbw"]
    assert "h100-sxm-8x-nvswitch" in checks["allreduce_busbw"].expected
    good = {c.name: c for c in allreduce_checks(_eight_gpu_result(460.0), table, name, 8, "nvlink")}
    assert good["allreduce_busbw"].verdict == "pass"


def test_h100_pcie_and_nvl_cards_and_the_h800_are_not_the_sxm_row() -> None:
    table = load_references()
    for name in ("NVIDIA H100 PCIe", "NVIDIA H100 NVL", "NVIDIA H800 80GB HBM3"):
        assert match_reference(table, name, 8, "nvlink") is None, name


def test_real_8x_h200_nvswitch_box_has_a_row() -> None:
    gpus = parse_any(H200_8.read_text()).gpus
    link = interconnect(parse_topo(H200_TOPO.read_text()))
    assert len(gpus) == 8 and link == "nvlink"
    row = match_reference(load_references(), gpus[0].name, 8, link)
    assert row is not None and row["id"] == "h200-sxm-8x-nvswitch"


def test_a_model_number_inside_a_longer_one_is_not_that_gpu() -> None:
    gpu_table = load_gpu_references()
    assert match_gpu_reference(gpu_table, "NVIDIA GH200 480GB") is None  # not the H200 row
    assert match_gpu_reference(gpu_table, "NVIDIA H200")["id"] == "h200"  # type: ignore[index]
    assert match_gpu_reference(gpu_table, "NVIDIA A100-SXM4-80GB")["id"] == "a100"  # type: ignore[index]
    assert match_gpu_reference(gpu_table, "NVIDIA A10G")["id"] == "a10"  # type: ignore[index]
    assert match_gpu_reference(gpu_table, "Tesla T4")["id"] == "t4"  # type: ignore[index]
    assert match_gpu_reference(gpu_table, "NVIDIA RTX A4000") is None
    table = load_references()
    assert match_reference(table, "NVIDIA GH200 480GB", 8, "nvlink") is None
