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
from gpuonboard.steps.prove.references import link_generation

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


RTX2080TI_NCCL = (
    FIX / "real" / "nccl-tests-all_reduce_perf__geforce-rtx-2080-ti__2gpu-pcie3-pix-no-p2p__autodl.txt"
)
RTX2080TI_TOPO = FIX / "real" / "nvidia-smi-topo-m__geforce-rtx-2080-ti__2gpu-pix__autodl.txt"


def _nccl_tests_result(text: str, name: str, n: int) -> dict[str, Any]:
    """An allreduce.py result document carrying a real nccl-tests run's figures: its rows from
    1 MiB up (our sweep's range), out-of-place busbw, sums exact (#wrong 0), NCCL's P2P off as
    the script sets it where a pair has no peer access."""
    rows = []
    for line in text.splitlines():
        cells = line.split()
        if len(cells) == 13 and cells[0].isdecimal() and int(cells[0]) >= 1 << 20:
            assert cells[8] == "0"
            rows.append({"bytes": int(cells[0]), "busbw_gbps": float(cells[7]), "correct": True})
    peak = max(r["busbw_gbps"] for r in rows)
    pairs = [[i, j] for i in range(n) for j in range(i + 1, n)]
    p2p = {"gpus": list(range(n)), "pairs_without_access": pairs, "nccl_p2p_disabled": True}
    return {
        "ok": True, "backend": "nccl", "device": "cuda", "device_name": name, "world_size": n,
        "cuda_device_count": n, "rows": rows, "all_correct": True, "peak_busbw_gbps": peak,
        "max_bytes": rows[-1]["bytes"], "p2p": {**p2p, "set_by": "gpuonboard", "environment": {}},
    }  # fmt: skip


def test_a_pcie_gen3_box_is_not_judged_by_the_gen4_row() -> None:
    """Real capture (AutoDL, Anthony-Hoo/Anthony-Hoo.github.io): 2 GPUs on one PCIe Gen3 x16
    switch (topo PIX), no peer access (`topo -p2p p` NS), nccl-tests all_reduce busbw 4.00 GB/s
    at 1 GiB: what a Gen3 link through host memory moves. Those GPUs are RTX 2080 Ti, whose
    variant word 'Ti' matches no row, so the GPU name and link generation here are read from the
    real Tesla T4 capture (`nvidia-smi -q -x`: PCIe Gen3 x16), a Gen3 card the `*` row matches.
    The `pcie-gen4-no-nvlink` estimate (20 GB/s) failed such a box as "low bus bandwidth" (20 %
    of the reference): its figure assumes a Gen4 link; on a Gen3 link it is no claim."""
    t4 = parse_any((FIX / "real" / "nvidia-smi-q-x__tesla-t4__1gpu__driver515.105.01.xml").read_text()).gpus
    name, gen = t4[0].name, link_generation(t4)
    assert (name, gen) == ("Tesla T4", 3)
    link = interconnect(parse_topo(RTX2080TI_TOPO.read_text()))
    assert link == "pcie"
    r = _nccl_tests_result(RTX2080TI_NCCL.read_text(), name, 2)
    assert r["peak_busbw_gbps"] == 4.0
    table = load_references()
    busbw = {x.name: x for x in allreduce_checks(r, table, name, 2, link, pcie_gen=gen)}["allreduce_busbw"]
    assert busbw.verdict == "warn", busbw
    assert busbw.expected == "a reference for 2 x Tesla T4 (pcie)"
    assert busbw.detail.startswith(
        "row pcie-gen4-no-nvlink is for PCIe Gen4 links or later and these GPUs link at PCIe Gen3:"
        " its figure is no claim about this box; no reference row for this topology"
    )
    # an unread link generation is no Gen4 link either; a Gen4 or Gen5 box is judged by the row
    unread = {x.name: x for x in allreduce_checks(r, table, name, 2, link)}["allreduce_busbw"]
    assert unread.verdict == "warn" and "nvidia-smi gave no PCIe link generation" in unread.detail
    # (on Gen4 a run without peer access is judged against half the row's peer-to-peer figure,
    # what host memory moves: this Gen3 figure, 4 GB/s, is 40 % of that 10 GB/s and fails, as
    # the same figure with P2P on does; it warned "not comparable" at any figure)
    gen4 = {x.name: x for x in allreduce_checks(r, table, name, 2, link, pcie_gen=4)}["allreduce_busbw"]
    assert gen4.verdict == "fail" and "pcie-gen4-no-nvlink" in gen4.expected, gen4
    half = {
        x.name: x for x in allreduce_checks({**r, "peak_busbw_gbps": 8.0}, table, name, 2, link, pcie_gen=4)
    }
    assert half["allreduce_busbw"].actual.endswith("with NCCL's P2P off: not comparable"), half
    on = {**r, "p2p": None}
    gen4 = {x.name: x for x in allreduce_checks(on, table, name, 2, link, pcie_gen=4)}["allreduce_busbw"]
    assert gen4.verdict == "fail" and "pcie-gen4-no-nvlink" in gen4.expected
    assert (match_reference(table, name, 2, "pcie", 5) or {}).get("id") == "pcie-gen4-no-nvlink"
    # the 2080 Ti's own name matched no row before and after (a variant word)
    ti = {x.name: x for x in allreduce_checks(r, table, "NVIDIA GeForce RTX 2080 Ti", 2, link, pcie_gen=3)}
    assert ti["allreduce_busbw"].verdict == "warn"
