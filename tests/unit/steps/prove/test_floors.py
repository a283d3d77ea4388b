"""The gpu_perf floors table and its judging (issue 29), on result documents shaped exactly as
the gpu_perf.py contract. The figures come from cited public measurements where one exists
(stas00/ml-engineering's Maximum Achievable Matmul FLOPS table, commit 744d01e: H100 SXM BF16
794.5 and FP8 1402.6 TFLOPS; Azure's HPC health-check pass lines for 8 x H100: host<->GPU 48,
GPU-to-GPU 335 GB/s); the others are constructed around the floors and say so."""

from __future__ import annotations

import copy
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from gpuonboard.errors import UsageError
from gpuonboard.facts.nvidia_smi import GpuInfo
from gpuonboard.remote import gpu_perf as gp
from gpuonboard.steps.base import StepArgsError
from gpuonboard.steps.prove.floors import (
    FLOORS_FILE,
    METRICS,
    load_floors,
    match_floor_row,
    p2p_check,
    parse_overrides,
    perf_checks,
    verdict_for,
)
from gpuonboard.steps.prove.sustained import sustained_check

TABLE = load_floors()


def by_name(checks: list[Any]) -> dict[str, Any]:
    return {c.name: c for c in checks}


# every model the issue names, by the name nvidia-smi gives it (memory in MiB where the row needs it)
MODELS = {
    "NVIDIA H200": ("h200", None),
    "NVIDIA H100 80GB HBM3": ("h100-sxm", 81559),
    "NVIDIA H100 PCIe": ("h100-pcie", 81559),
    "NVIDIA H100 NVL": ("h100-nvl", 95830),
    "NVIDIA H800": ("h800-sxm", None),
    "NVIDIA H800 PCIe": ("h800-pcie", None),
    "NVIDIA H20": ("h20", None),
    "NVIDIA A100-SXM4-80GB": ("a100-sxm-80gb", 81920),
    "NVIDIA A100-SXM4-40GB": ("a100-sxm-40gb", 40960),
    "NVIDIA A100 80GB PCIe": ("a100-pcie-80gb", None),  # no facts: "80GB" in the name decides
    "NVIDIA A100-PCIE-40GB": ("a100-pcie-40gb", 40960),
    "NVIDIA A800-SXM4-80GB": ("a800-sxm", None),
    "NVIDIA A800 80GB PCIe": ("a800-pcie", None),
    "NVIDIA L40S": ("l40s", None),
    "NVIDIA L20": ("l20", None),
    "NVIDIA A10": ("a10", None),
    "NVIDIA A10G": ("a10g", None),
    "NVIDIA GeForce RTX 4090": ("rtx-4090", None),
    "NVIDIA GeForce RTX 3090": ("rtx-3090", None),
    "Tesla V100-SXM2-32GB": ("v100-sxm", None),
    "Tesla V100-PCIE-16GB": ("v100-pcie", None),
}


def test_the_shipped_table_loads_and_every_floor_has_a_source() -> None:
    ids = [row["id"] for row in TABLE["floors"]]
    assert len(ids) == len(set(ids))
    for row in TABLE["floors"]:
        assert row["floors"], row["id"]
        for metric, floor in row["floors"].items():
            assert metric in METRICS
            assert floor["value"] > 0 and isinstance(floor["verified"], bool)
            source = floor["source"]
            # a datasheet-derived floor says which share of which figure it is
            assert any(w in source for w in ("%", "Azure", "vars.")), (row["id"], metric, source)
    # the measured ones are the only verified ones
    verified = {(r["id"], m) for r in TABLE["floors"] for m, f in r["floors"].items() if f["verified"]}
    assert ("h100-sxm", "bf16_tflops") in verified and ("h100-sxm", "fp32_tflops") not in verified


@pytest.mark.parametrize("name", sorted(MODELS))
def test_every_model_of_the_issue_has_its_row(name: str) -> None:
    want, memory = MODELS[name]
    row = match_floor_row(TABLE, name, memory)
    assert row is not None and row["id"] == want


def test_no_row_for_lookalikes() -> None:
    for name in ("NVIDIA GH200 480GB", "NVIDIA L40", "NVIDIA H200 NVL", "Some Future GPU"):
        assert match_floor_row(TABLE, name) is None, name
    # the memory size from the facts wins over a name that does not say it
    assert match_floor_row(TABLE, "NVIDIA A100-SXM4", 40960)["id"] == "a100-sxm-40gb"  # type: ignore[index]


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "floors.yml"
    path.write_text(text)
    return path


ROW = "floors:\n  - id: x\n    gpu: X1\n    floors:\n"


@pytest.mark.parametrize(
    ("body", "said"),
    [
        ("      fp64_tflops: {value: 1, source: s, verified: false}\n", "row x, fp64_tflops: unknown metric"),
        (
            "      fp32_tflops: {value: -1, source: s, verified: false}\n",
            "row x, fp32_tflops: needs a positive 'value'",
        ),
        (
            "      fp32_tflops: {value: 1, source: '', verified: false}\n",
            "row x, fp32_tflops: needs a 'source'",
        ),
        (
            "      fp32_tflops: {value: 1, source: s, verified: maybe}\n",
            "needs 'verified: true' or 'verified: false'",
        ),
    ],
)
def test_a_bad_table_names_file_line_and_row(tmp_path: Path, body: str, said: str) -> None:
    path = _write(tmp_path, ROW + body)
    with pytest.raises(UsageError) as err:
        load_floors(path)
    assert str(path) in str(err.value) and ", line 5" in str(err.value) and said in str(err.value)


def test_a_row_without_gpu_or_floors_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="every row needs an id and a gpu"):
        load_floors(_write(tmp_path, "floors:\n  - id: x\n    floors: {}\n"))
    with pytest.raises(UsageError, match="row x: needs a 'floors:' mapping"):
        load_floors(_write(tmp_path, "floors:\n  - id: x\n    gpu: X1\n"))
    assert FLOORS_FILE.name == "gpu_perf_floors.yml"


def test_overrides() -> None:
    assert parse_overrides(None) == {} and parse_overrides("") == {}
    assert parse_overrides({"bf16_tflops": 745, "fp8_tflops": "1400"}) == {
        "bf16_tflops": 745.0,
        "fp8_tflops": 1400.0,
    }
    for bad, said in (
        ([1, 2], "vars.perf_floors must be a mapping"),
        ({"bf16": 745}, "vars.perf_floors: unknown metric 'bf16'"),
        ({"bf16_tflops": 0}, "vars.perf_floors: bf16_tflops must be a positive number"),
        ({"bf16_tflops": True}, "must be a positive number, not True"),
        ({"bf16_tflops": "fast"}, "not 'fast'"),
    ):
        with pytest.raises(StepArgsError, match=said):
            parse_overrides(bad)


def test_pass_warn_fail_band() -> None:
    assert verdict_for(110, 100) == "pass"
    assert verdict_for(109.9, 100) == "warn" and verdict_for(100, 100) == "warn"
    assert verdict_for(99.9, 100) == "fail"


# --------------------------------------------------------------------------- results


def _h100(index: int) -> GpuInfo:
    return GpuInfo(
        index=index,
        name="NVIDIA H100 80GB HBM3",
        memory_total_mib=81559,
        pcie_gen_current=5,
        pcie_gen_max=5,
        pcie_width_current=16,
        pcie_width_max=16,
        power_limit_w=700.0,
        default_power_limit_w=700.0,
        clock_event_reasons=(),
        clock_event_reasons_known=True,
    )


FACTS = [_h100(i) for i in range(8)]


def _gpu(index: int) -> dict[str, Any]:
    """One healthy H100 SXM: bf16 and fp8 are the MAMF measurements (794.5, 1402.6 TFLOPS);
    fp32 / tf32 / fp16 and the memory copy are CONSTRUCTED above their PASS lines; host copies
    are above Azure's 48 GB/s line, a Gen5 x16 figure."""
    return {
        "index": index,
        "name": "NVIDIA H100 80GB HBM3",
        "capability": "9.0",
        "matmul_tflops": {"fp32": 52.0, "tf32": 400.0, "bf16": 794.5, "fp16": 790.0, "fp8": 1402.6},
        "skipped": {},
        "membw_gbps": {"copy": 2900.0, "triad": 3000.0},
        "h2d_gbps": 53.0,
        "d2h_gbps": 54.0,
        "pcie": {"gen": 5, "width": 16},
        "error": None,
    }


def _sustained(index: int, **over: Any) -> dict[str, Any]:
    base = {
        "sm_clock_first_mhz": 1980,
        "sm_clock_last_mhz": 1965,
        "sm_clock_min_mhz": 1950,
        "sm_clock_max_mhz": 1980,
        "temp_max_c": 70,
        "temp_median_c": 66 + index % 3,
        "power_median_w": 690,
        "power_limit_w": 700,
        "reasons": {"sw_power_cap": 0, "hw_thermal_slowdown": 0},
        "tflops_first": 700.0,
        "tflops_last": 690.0,
        "samples": 118,
    }
    return {**base, **over}


def _result(n: int = 8) -> dict[str, Any]:
    """An 8 x H100 SXM NVSwitch box; P2P 380 GB/s per ordered pair (above Azure's 335)."""
    topo = {f"{i}-{j}": "NV18" for i in range(n) for j in range(i + 1, n)}
    return {
        "schema": 1,
        "ok": True,
        "device": "cuda",
        "mode": "quick",
        "torch": "2.7.0",
        "cuda": "12.6",
        "cuda_device_count": n,
        "elapsed_s": 150.0,
        "gpus": [_gpu(i) for i in range(n)],
        "p2p": {
            "access": [[True] * n for _ in range(n)],
            "gbps": [[None if i == j else 380.0 for j in range(n)] for i in range(n)],
            "topology": topo,
        },
        "sustained": {"seconds": 60.0, "per_gpu": {str(i): _sustained(i) for i in range(n)}},
        "sampler": "nvidia-smi",
        "worker_errors": [],
    }


def test_a_healthy_8x_h100_passes_every_check() -> None:
    checks = perf_checks(_result(), TABLE, FACTS)
    bad = [c for c in checks if c.verdict != "pass"]
    assert not bad, bad
    c = by_name(checks)
    assert c["perf_floor_known"].actual == "NVIDIA H100 80GB HBM3: h100-sxm"
    assert c["perf_bf16_tflops_gpu3"].expected == ">= 540 TFLOPS (h100-sxm floor; PASS from 594)"
    assert c["perf_bf16_tflops_gpu3"].actual == "GPU 3 NVIDIA H100 80GB HBM3: 794 TFLOPS (147 % of the floor)"
    assert c["perf_h2d_gpu0"].actual == "GPU 0: 53.0 GB/s host->device / 54.0 GB/s device->host on Gen5 x16"
    assert c["perf_stragglers"].actual == "none of 8 GPUs on 9 metric(s)"
    assert c["perf_p2p"].actual == "NV18: 56 pairs, min 380 / median 380 GB/s"
    assert "sw_power_cap" not in c["perf_sustained_gpu0"].detail
    assert c["perf_temp_spread"].actual.startswith("2 °C")
    for name in ("perf_power_w_gpu7", "perf_fp8_tflops_gpu7", "perf_p2p_nvlink_gbps_gpu0"):
        assert (name in c) == (name != "perf_p2p_nvlink_gbps_gpu0"), name


def test_the_slow_gpu_is_named() -> None:
    r = _result()
    r["gpus"][3]["matmul_tflops"]["bf16"] = 500.0  # 63 % of its peers
    c = by_name(perf_checks(r, TABLE, FACTS))
    s = c["perf_straggler_bf16_tflops_gpu3"]
    assert s.verdict == "fail" and s.actual == "GPU 3: 500 TFLOPS vs median 794 TFLOPS (-37 %)"
    assert c["perf_bf16_tflops_gpu3"].verdict == "fail"
    assert "below the floor; likely causes: none found" in c["perf_bf16_tflops_gpu3"].detail
    assert "perf_stragglers" not in c and "perf_straggler_bf16_tflops_gpu2" not in c


def test_a_figure_just_above_the_floor_warns() -> None:
    r = _result(1)
    r["gpus"][0]["matmul_tflops"]["fp8"] = 1000.0  # floor 954, PASS from 1049
    c = by_name(perf_checks(r, TABLE, FACTS[:1]))
    assert c["perf_fp8_tflops_gpu0"].verdict == "warn"
    assert c["perf_fp8_tflops_gpu0"].detail.startswith("within 10 % above the floor")
    assert "perf_stragglers" not in c and "perf_temp_spread" not in c  # one GPU: nothing to compare


def test_a_gen3_figure_on_a_gen5_card_names_the_link() -> None:
    r = _result()
    r["gpus"][2].update(h2d_gbps=11.8, d2h_gbps=12.1, pcie={"gen": 3, "width": 16})
    c = by_name(perf_checks(r, TABLE, FACTS))
    link = c["perf_h2d_gpu2"]
    assert link.verdict == "fail" and link.expected.startswith(
        ">= 35.0 GB/s each way (70 % of ~50 GB/s, Gen5 x16)"
    )
    assert link.detail.startswith(
        "GPU 2: 11.8 GB/s host->device, a Gen3 x16 figure on a Gen5 x16 card: riser or slot;"
        " the link ran at Gen3 x16 under load"
    )
    assert c["perf_h2d_gbps_gpu2"].verdict == "fail"  # and below Azure's 48 GB/s line
    assert c["perf_straggler_h2d_gbps_gpu2"].verdict == "fail"


def test_a_gen4_x8_link_without_facts_is_judged_on_the_sampled_link() -> None:
    r = _result(1)
    r["gpus"][0].update(name="NVIDIA L40S", h2d_gbps=13.0, d2h_gbps=13.2, pcie={"gen": 4, "width": 8})
    link = by_name(perf_checks(r, TABLE, []))["perf_h2d_gpu0"]
    assert link.verdict == "pass" and link.expected.startswith(
        ">= 8.8 GB/s each way (70 % of ~12 GB/s, Gen4 x8)"
    )
    r["gpus"][0]["pcie"] = None
    assert by_name(perf_checks(r, TABLE, []))["perf_h2d_gpu0"].verdict == "unverified"


def test_pairs_without_peer_access_and_a_slow_nvlink_pair() -> None:
    r = _result(4)
    r["p2p"]["access"][0][3] = r["p2p"]["access"][3][0] = False
    r["p2p"]["gbps"][0][3] = r["p2p"]["gbps"][3][0] = None
    r["p2p"]["gbps"][1][2] = 300.0  # below Azure's 335 GB/s line
    p2p = by_name(perf_checks(r, TABLE, FACTS[:4]))["perf_p2p"]
    assert p2p.verdict == "fail"
    assert "NVLink pairs below 335 GB/s: 1->2 300 GB/s" in p2p.detail
    assert "no peer access between GPUs 0-3: all-reduce runs without P2P there" in p2p.detail


def test_pcie_pairs_are_judged_against_their_own_kind_only() -> None:
    r = _result(4)
    r["p2p"]["topology"] = {
        "0-1": "PIX",
        "2-3": "PIX",
        "0-2": "SYS",
        "0-3": "SYS",
        "1-2": "SYS",
        "1-3": "SYS",
    }
    for i, j in ((0, 1), (1, 0), (2, 3), (3, 2)):
        r["p2p"]["gbps"][i][j] = 25.0
    for i, j in ((0, 2), (2, 0), (0, 3), (3, 0), (1, 2), (2, 1), (1, 3), (3, 1)):
        r["p2p"]["gbps"][i][j] = 14.0
    p2p = by_name(perf_checks(r, TABLE, FACTS[:4]))["perf_p2p"]
    assert p2p.verdict == "pass", p2p  # SYS pairs slower than PIX pairs is the topology, not a fault
    assert "no pair is NVLink" in p2p.detail
    r["p2p"]["gbps"][1][3] = 9.0
    p2p = by_name(perf_checks(r, TABLE, FACTS[:4]))["perf_p2p"]
    assert p2p.verdict == "warn" and "1->3 9 GB/s vs 14 for SYS" in p2p.detail


@pytest.mark.parametrize("topology", [None, {}, {"0-1": "NV18"}])
def test_an_nvlink_floor_that_could_not_be_applied_is_unverified(topology: dict[str, str] | None) -> None:
    """8 x H100 SXM at 60 GB/s a pair against a 335 floor: without `topo -m` (nvidia-smi failed, or
    it lacks the pairs) the kind of the pairs is unknown, so the floor is not applied and the
    check is `unverified`, never a pass."""
    r = _result()
    r["p2p"]["topology"] = topology
    r["p2p"]["gbps"] = [[None if i == j else 60.0 for j in range(8)] for i in range(8)]
    p2p = by_name(perf_checks(r, TABLE, FACTS))["perf_p2p"]
    assert p2p.verdict == ("fail" if topology else "unverified"), p2p  # the NVLink pair read fails
    unknown = 56 if topology != {"0-1": "NV18"} else 54
    assert f"the kind of {unknown} pair(s) is unknown" in p2p.detail
    assert "the NVLink floor 335 GB/s could not be applied to them" in p2p.detail
    if topology:
        assert "NVLink pairs below 335 GB/s: 0->1 60 GB/s, 1->0 60 GB/s" in p2p.detail


def test_without_a_floor_unknown_pairs_are_judged_among_themselves() -> None:
    r = _result()
    r["p2p"]["topology"] = None
    p2p = p2p_check(r["p2p"], None, 0.1)
    assert (
        p2p is not None and p2p.verdict == "pass" and p2p.actual == "any: 56 pairs, min 380 / median 380 GB/s"
    )


def test_sustained_window() -> None:
    r = _result(2)
    per = r["sustained"]["per_gpu"]
    per["0"] = _sustained(0, reasons={"sw_power_cap": 40, "hw_thermal_slowdown": 3}, temp_median_c=80)
    per["1"] = _sustained(1, sm_clock_last_mhz=1500, reasons={"sw_power_cap": 90})
    c = by_name(perf_checks(r, TABLE, FACTS[:2]))
    assert c["perf_sustained_gpu0"].verdict == "fail"
    assert c["perf_sustained_gpu0"].detail.startswith("hw_thermal_slowdown seen under load")
    assert c["perf_sustained_gpu1"].verdict == "warn"
    assert "the SM clock fell 24 % over the window" in c["perf_sustained_gpu1"].detail
    assert "sw_power_cap in 90 samples: the GPU ran at its power cap" in c["perf_sustained_gpu1"].detail
    assert c["perf_temp_spread"].verdict == "warn" and c["perf_temp_spread"].actual == (
        "13 °C: GPU 0 80 °C, GPU 1 67 °C"
    )


def test_low_power_with_a_low_clock_is_power_delivery() -> None:
    r = _result(1)
    r["sustained"]["per_gpu"]["0"] = _sustained(0, sm_clock_last_mhz=1400, power_median_w=380)
    c = by_name(perf_checks(r, TABLE, FACTS[:1]))
    assert "power delivery" in c["perf_sustained_gpu0"].detail
    # 380 W < 525 W, 75 % of the TDP: an estimate, no hardware claim (the sustained rule says it)
    assert c["perf_power_w_gpu0"].verdict == "unverified"
    assert c["perf_power_w_gpu0"].detail.startswith("below an estimated floor (75 % of datasheet max TDP")


def test_a_model_without_a_row_gets_relative_checks_only() -> None:
    r = _result(2)
    for g in r["gpus"]:
        g["name"] = "NVIDIA Future GPU"
    r["gpus"][1]["matmul_tflops"]["bf16"] = 500.0
    checks = perf_checks(r, TABLE, [])
    c = by_name(checks)
    assert c["perf_floor_known"].verdict == "unverified"
    assert c["perf_floor_known"].actual == "no floor is known for NVIDIA Future GPU"
    assert c["perf_bf16_tflops_unfloored"].verdict == "unverified"
    assert c["perf_straggler_bf16_tflops_gpu1"].verdict == "fail"
    assert not [x for x in checks if x.name.startswith("perf_bf16_tflops_gpu")]


def test_host_overrides_replace_the_row() -> None:
    # the issue's acceptance spec for rented H100 servers, set as this host's floors
    spec = parse_overrides({"fp32_tflops": 54, "tf32_tflops": 444, "fp16_tflops": 734, "bf16_tflops": 745})
    c = by_name(perf_checks(_result(1), TABLE, FACTS[:1], spec))
    assert c["perf_bf16_tflops_gpu0"].verdict == "warn"  # 794.5 < 1.10 x 745
    assert c["perf_bf16_tflops_gpu0"].expected == ">= 745 TFLOPS (vars.perf_floors; PASS from 820)"
    assert c["perf_tf32_tflops_gpu0"].verdict == "fail"
    assert c["perf_fp8_tflops_gpu0"].expected.startswith(">= 954 TFLOPS (h100-sxm floor")  # row kept
    assert (
        "vars.perf_floors (bf16_tflops, fp16_tflops, fp32_tflops, tf32_tflops)"
        in c["perf_floor_known"].actual
    )
    # an unknown model judged on the host's floors alone
    r = _result(1)
    r["gpus"][0]["name"] = "NVIDIA Future GPU"
    c = by_name(perf_checks(r, TABLE, [], {"bf16_tflops": 100.0}))
    assert c["perf_floor_known"].verdict == "pass" and c["perf_bf16_tflops_gpu0"].verdict == "pass"


def test_an_fp8_floor_not_measured_is_not_a_pass() -> None:
    r = _result(1)
    del r["gpus"][0]["matmul_tflops"]["fp8"]
    r["gpus"][0]["skipped"] = {"fp8": "torch 2.0 has no float8 matmul"}
    c = by_name(perf_checks(r, TABLE, FACTS[:1]))["perf_fp8_tflops_gpu0"]
    assert c.verdict == "unverified" and "not measured (torch 2.0 has no float8 matmul)" in c.actual


def test_likely_causes_are_named_below_a_floor() -> None:
    r = copy.deepcopy(_result(1))
    r["gpus"][0]["membw_gbps"]["copy"] = 2000.0
    capped = [replace(FACTS[0], power_limit_w=400.0)]
    c = by_name(perf_checks(r, TABLE, capped, causes=lambda i: f"power limit on GPU {i}"))
    # the h100-sxm memory floor is an estimate (70 % of the datasheet): below it is no failure
    membw = c["perf_membw_gbps_gpu0"]
    assert membw.verdict == "unverified"
    assert membw.detail.startswith("below an estimated floor (70 % of datasheet HBM3 3.35 TB/s")
    assert "no hardware claim; if the GPU is slow, likely causes: power limit on GPU 0;" in membw.detail
    # below a measured floor (the MAMF table's BF16) it fails and names the causes
    r["gpus"][0]["matmul_tflops"]["bf16"] = 500.0
    bf16 = by_name(perf_checks(r, TABLE, capped, causes=lambda i: f"power limit on GPU {i}"))[
        "perf_bf16_tflops_gpu0"
    ]
    assert bf16.verdict == "fail"
    assert bf16.detail.startswith("below the floor; likely causes: power limit on GPU 0; floor source: 68 %")


# --------------------------------------------------------------------------- real runs

REAL_H200 = ("gpu_perf_quick_h200.out", "gpu_perf_full_h200.out")


@pytest.mark.parametrize("name", REAL_H200)
def test_a_real_healthy_h200_passes_every_floor(name: str) -> None:
    """Real gpu_perf.py runs on a rented, healthy 1 x H200 (tests/fixtures/prove/README.md),
    judged with the facts of that very box (its real `nvidia-smi -q -x`). With the floors as
    they were (80 % of the best published matmul, 70 % of the datasheet) all five matmul figures
    WARNed at 102-109 % of their floors: a floor must not cry wolf on a healthy GPU."""
    from gpuonboard.facts.nvidia_smi import parse_any
    from gpuonboard.steps.prove import parse_result

    fixtures = Path(__file__).resolve().parents[3] / "fixtures"
    result = parse_result((fixtures / "prove" / name).read_text())
    assert result is not None and result["ok"] and result["gpus"][0]["name"] == "NVIDIA H200"
    xml = (fixtures / "real" / "nvidia-smi-q-x__h200__1gpu__driver580.159.04.xml").read_text()
    checks = perf_checks(result, TABLE, parse_any(xml).gpus)
    metrics = {c.name for c in checks if c.name.endswith("_gpu0") and "_tflops" in c.name}
    assert len(metrics) == 5  # fp32 tf32 bf16 fp16 fp8: every matmul was judged against a floor
    assert {c.name: c.verdict for c in checks if c.verdict != "pass"} == {}
    bf16 = by_name(checks)["perf_bf16_tflops_gpu0"]
    assert bf16.actual.startswith("GPU 0 NVIDIA H200: ") and "% of the floor" in bf16.actual


def test_datasheet_floors_leave_room_for_what_gpu_perf_reaches() -> None:
    """gpu_perf.py's share of the datasheet dense peak on the real H200 (lower of quick and
    full: fp32 76 %, tf32 71 %, bf16 68 %, fp16 66 %, fp8 63 %) must PASS a floor set as a share
    of any datasheet: each datasheet-derived floor is at most 1 / 1.10 of that share."""
    reached = {
        "fp32_tflops": 0.76,
        "tf32_tflops": 0.71,
        "bf16_tflops": 0.68,
        "fp16_tflops": 0.66,
        "fp8_tflops": 0.63,
    }
    for row in TABLE["floors"]:
        for metric, floor in row["floors"].items():
            source = floor["source"]
            if metric in reached and (" of datasheet" in source or " of whitepaper" in source):
                share = float(source.split(" %", 1)[0]) / 100
                assert share * TABLE["warn_band"] <= reached[metric], (row["id"], metric, share)


SAMPLER = (
    Path(__file__).resolve().parents[3]
    / "fixtures"
    / "real"
    / "nvidia-smi-query-gpu-sampler__h200__1gpu__driver580.159.04__resnet50-load.csv"
)
SAMPLER_FIELDS = tuple(
    "index,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit,"  # noqa: SIM905
    "clocks_throttle_reasons.active,utilization.gpu".split(",")
)


def _window_with_cell(column: int, marker: str) -> dict[str, Any]:
    """Our own real sampler capture under load (1 x H200, 114 samples) with one column's cell
    replaced by `marker` in every row, summarised by gpu_perf.py as its sustained window."""
    lines = []
    for line in SAMPLER.read_text().splitlines():
        cells = line.split(", ")
        cells[column] = marker
        lines.append(", ".join(cells))
    rows = gp.parse_samples("\n".join(lines), SAMPLER_FIELDS)
    assert len(rows) == 114
    return {**gp.summarize_window(rows, 0, None, None), "seconds": 45}


def test_sustained_reasons_read_as_na_in_every_sample_are_no_pass() -> None:
    """The capture with its clocks_throttle_reasons.active cell `[N/A]` in every row (a driver or
    vGPU that does not report it): the window passed "no hardware or thermal slowdown" over
    reasons it never read; now it is unverified and says which reading was missing."""
    c = sustained_check(0, _window_with_cell(6, "[N/A]"))
    assert c.verdict == "unverified", c
    assert c.detail.startswith("under load nvidia-smi gave no number for the clock-event reasons ([N/A]")
    whole = sustained_check(0, _window_with_cell(7, "100"))  # utilization only: the reasons are read
    assert whole.verdict == "pass", whole


def test_sustained_sm_clock_not_supported_in_every_sample_is_no_pass() -> None:
    """The capture with its clocks.sm cell `[Not Supported]` in every row: "SM clock ? -> ? MHz"
    passed as a clock that held; now unverified."""
    c = sustained_check(0, _window_with_cell(1, "[Not Supported]"))
    assert c.verdict == "unverified", c
    assert c.actual.startswith("GPU 0: SM clock ? -> ? MHz")
    assert c.detail.startswith("under load nvidia-smi gave no number for the SM clock (")
    # a window with no sample at all for the GPU
    empty = sustained_check(0, {"samples": 0, "reasons": {}, "seconds": 45})
    assert empty.verdict == "unverified" and "no number for any field (no sample of this GPU" in empty.detail


def _real_h200_as(name: str, n: int = 1) -> dict[str, Any]:
    """The real quick gpu_perf.py run on a healthy 1 x H200 (tests/fixtures/prove/README.md) with
    its GPU renamed `name` and, for n > 1, copied to n GPUs (index i) with no pairs: the edits a
    test using it makes."""
    from gpuonboard.steps.prove import parse_result

    fixtures = Path(__file__).resolve().parents[3] / "fixtures"
    result = parse_result((fixtures / "prove" / "gpu_perf_quick_h200.out").read_text())
    assert result is not None
    gpu = result["gpus"][0]
    result["gpus"] = [{**copy.deepcopy(gpu), "index": i, "name": name} for i in range(n)]
    result["p2p"] = None
    sustained = result["sustained"]["per_gpu"]["0"]
    result["sustained"]["per_gpu"] = {str(i): copy.deepcopy(sustained) for i in range(n)}
    return result


def test_a_metric_the_row_gives_no_floor_is_one_unverified_check_per_metric() -> None:
    """The real H200 quick run renamed `NVIDIA H800` (its China-market sibling; edits: the name,
    copied to 8 GPUs, GPU 3's bf16 figure set to 650): row h800-sxm has floors for fp32, the
    memory copy and power only, so its bf16 / fp16 / tf32 / fp8 figures are judged by nobody.
    They were one `unverified` check per GPU per metric (32 on a healthy 8 x H800); now ONE per
    metric, naming the row, the GPUs and their median, min and max, never a pass."""
    r = _real_h200_as("NVIDIA H800", 8)
    r["gpus"][3]["matmul_tflops"]["bf16"] = 650.0
    checks = perf_checks(r, TABLE, [])
    c = by_name(checks)
    assert c["perf_fp32_tflops_gpu0"].verdict == "pass"  # the row's own floor judges fp32
    unfloored = [x for x in checks if x.name.endswith("_unfloored")]
    assert [x.name for x in unfloored] == [
        f"perf_{m}_unfloored" for m in ("tf32_tflops", "bf16_tflops", "fp16_tflops", "fp8_tflops")
    ]
    assert all(x.verdict == "unverified" for x in unfloored)
    assert not [x for x in checks if x.name.startswith(("perf_bf16_tflops_gpu", "perf_fp8_tflops_gpu"))]
    bf16 = c["perf_bf16_tflops_unfloored"]
    assert bf16.expected == "a floor for bf16_tflops on every GPU that measured it"
    assert bf16.actual == "none in row h800-sxm: GPU 0-7 NVIDIA H800 median 692 TFLOPS (min 650, max 692)"
    assert bf16.detail.startswith("no bf16_tflops floor, so these figures were compared with their peers")


def test_a_model_without_a_row_and_a_partial_row_are_judged_alike() -> None:
    """The real H200 quick run renamed `NVIDIA Future GPU` (edits: the name, 2 GPUs): a model with
    no row gave information-only passes of its figures (`perf_gpu<N>`), and a host's
    vars.perf_floors for one metric turned them into per-GPU unverifieds; both now get the same
    one `unverified` check per metric with no floor, and no pass of an unjudged figure."""
    r = _real_h200_as("NVIDIA Future GPU", 2)
    checks = perf_checks(r, TABLE, [])
    c = by_name(checks)
    assert c["perf_floor_known"].verdict == "unverified"
    assert not [x for x in checks if x.name.startswith("perf_gpu")]
    assert c["perf_bf16_tflops_unfloored"].actual == (
        "no floors row: GPU 0-1 NVIDIA Future GPU median 692 TFLOPS (min 692, max 692)"
    )
    assert c["perf_power_w_unfloored"].verdict == "unverified"
    # a host's vars.perf_floors for one metric: that one judged, the others the same mechanism
    c = by_name(perf_checks(_real_h200_as("NVIDIA Future GPU"), TABLE, [], {"bf16_tflops": 100.0}))
    assert c["perf_bf16_tflops_gpu0"].verdict == "pass"
    assert "perf_bf16_tflops_unfloored" not in c
    assert c["perf_fp8_tflops_unfloored"].verdict == "unverified"
    assert c["perf_fp8_tflops_unfloored"].actual == (
        "none in vars.perf_floors: GPU 0 NVIDIA Future GPU 1,263 TFLOPS"
    )


def test_a_model_without_a_row_still_shows_the_figures_no_floor_judges() -> None:
    """The real H200 quick run renamed `NVIDIA Future GPU` (edits: the name, 2 GPUs, GPU 1's
    triad set to 4,000 GB/s): its triad and host<->device copies have no floor in any row, and
    since the information-only `perf_gpu<N>` checks went, no check showed them; perf_floor_known
    now says them (information, its verdict unchanged)."""
    r = _real_h200_as("NVIDIA Future GPU", 2)
    r["gpus"][1]["membw_gbps"]["triad"] = 4000.0
    known = by_name(perf_checks(r, TABLE, []))["perf_floor_known"]
    assert known.verdict == "unverified"
    assert "measured without a floor (information): membw_triad_gbps GPU 0-1 NVIDIA Future GPU median" in (
        known.detail
    ), known.detail
    assert "(min 4,000, max 4,384)" in known.detail, known.detail
    assert "h2d_gbps GPU 0-1 NVIDIA Future GPU" in known.detail and "d2h_gbps GPU 0-1" in known.detail
    # with a host's vars.perf_floors the row-less GPUs' figures are said all the same
    known = by_name(perf_checks(r, TABLE, [], {"bf16_tflops": 100.0}))["perf_floor_known"]
    assert known.verdict == "pass" and "membw_triad_gbps GPU 0-1" in known.detail
    # a model with a row: nothing added
    assert by_name(perf_checks(_real_h200_as("NVIDIA H200", 2), TABLE, []))["perf_floor_known"].detail == ""


def test_power_and_temperature_of_a_partly_sampled_window_are_no_claim() -> None:
    """The real H200 quick run (2 GPUs, edits: GPU 0's window given `window_s` 57 and `sampled_s`
    14, as when nvidia-smi stops part-way; GPU 1 sampled over the whole window 8 °C hotter): the
    sustained check was already `unverified`, but its 14 s of samples (maybe the ramp-up) still
    failed a vars.perf_floors power line or passed the datasheet one, and set the temperature
    spread. Power and spread are now `unverified` too; only GPUs sampled throughout judge it."""
    r = _real_h200_as("NVIDIA H200", 2)
    per = r["sustained"]["per_gpu"]
    per["0"].update(window_s=57.0, sampled_s=14.0)
    per["1"].update(window_s=57.0, sampled_s=56.5, temp_median_c=72.0)
    c = by_name(perf_checks(r, TABLE, [], {"power_w": 800.0}))
    assert c["perf_sustained_gpu0"].verdict == "unverified"
    assert c["perf_power_w_gpu1"].verdict == "fail"  # the whole window sampled: judged
    power = c["perf_power_w_gpu0"]
    assert power.verdict == "unverified", power
    assert power.detail.startswith("nvidia-smi's samples span only 14 s of the 57 s window")
    assert power.detail.endswith(
        "the samples seen may be the ramp-up, so their fail against the floor is no claim"
    )
    # at or above the floor the partial median (a lower bound: the ramp-up draws less) passes
    datasheet = by_name(perf_checks(r, TABLE, []))["perf_power_w_gpu0"]
    assert datasheet.verdict == "pass", datasheet
    assert "is a lower bound (the ramp-up draws less), and it meets the floor" in datasheet.detail
    spread = c["perf_temp_spread"]
    assert spread.verdict == "unverified", spread
    assert spread.detail.startswith("nvidia-smi's samples of GPU 0 span only part of the window")
    # GPUs sampled throughout that already differ by more: a warning on that evidence
    r["gpus"].append({**copy.deepcopy(r["gpus"][1]), "index": 2})
    per["2"] = {**per["1"], "temp_median_c": 60.0}
    spread = by_name(perf_checks(r, TABLE, []))["perf_temp_spread"]
    assert spread.verdict == "warn"
    assert spread.actual == "12 °C: GPU 1 72 °C, GPU 2 60 °C"


def test_a_partly_sampled_gpu_that_reads_hot_still_warns_the_spread() -> None:
    """The real H200 quick run (edits: GPU 0 sampled over the whole window at 60 °C; GPU 1 given
    `window_s` 57 and `sampled_s` 14, as when nvidia-smi stops part-way, at 75 °C; then a third
    GPU, a copy of GPU 0): a partial median (the ramp-up runs cooler) is a lower bound, so GPU 1
    is at least 15 °C hotter: a warning. It was `unverified` with 2 GPUs, and with 3 GPU 1 was
    left out of the reading (a 0 °C spread)."""
    r = _real_h200_as("NVIDIA H200", 2)
    per = r["sustained"]["per_gpu"]
    per["0"].update(window_s=57.0, sampled_s=56.5, temp_median_c=60.0)
    per["1"].update(window_s=57.0, sampled_s=14.0, temp_median_c=75.0)
    for gpus in (2, 3):
        if gpus == 3:
            r["gpus"].append({**copy.deepcopy(r["gpus"][0]), "index": 2})
            per["2"] = dict(per["0"])
        spread = by_name(perf_checks(r, TABLE, []))["perf_temp_spread"]
        assert spread.verdict == "warn", (gpus, spread)
        assert spread.actual == (
            "15 °C: GPU 1 75 °C, GPU 0 60 °C (GPU 1 sampled over part of the window: at least)"
        )
        assert spread.detail.startswith("GPU 1 runs hotter than its peers")
    # the partly-sampled GPU reading cool is no evidence either way: still no claim
    per["1"]["temp_median_c"] = 50.0
    assert by_name(perf_checks(r, TABLE, []))["perf_temp_spread"].verdict == "unverified"


def test_cuda_devices_are_paired_with_nvidia_smi_gpus_by_pci_address() -> None:
    """CUDA numbers devices fastest first (or as CUDA_VISIBLE_DEVICES lists them), nvidia-smi by
    PCI bus: the facts are the real 8 x H100 `nvidia-smi -q` with GPU 1's link edited to Gen3
    (a riser), and CUDA device 0 is that GPU (its result carries GPU 1's PCI address) measuring
    a Gen3 x16 figure. Paired by index, its 11 GB/s was judged against GPU 0's Gen5 link and
    failed as "a riser"; paired by address it is what its Gen3 link moves."""
    from gpuonboard.facts.nvidia_smi import parse_any

    q = (
        Path(__file__).resolve().parents[3]
        / "fixtures"
        / "real"
        / "nvidia-smi-q__h100-80gb-hbm3__8gpu__driver535.161.08.txt"
    )
    first, second = parse_any(q.read_text()).gpus[:2]
    facts = [first, replace(second, pcie_gen_max=3)]
    r = _result(2)
    r["gpus"][0].update(pci_bus_id="0000:3b:00.0", h2d_gbps=11.0, d2h_gbps=11.2)  # nvidia-smi's GPU 1
    r["gpus"][1].update(pci_bus_id="00000000:19:00.0")  # nvidia-smi's GPU 0
    assert facts[0].pci_bus_id == "00000000:19:00.0" and facts[1].pci_bus_id == "00000000:3B:00.0"
    c = by_name(perf_checks(r, TABLE, facts))
    assert c["perf_h2d_gpu0"].verdict == "pass"
    assert c["perf_h2d_gpu0"].actual.endswith("on Gen3 x16")
    assert c["perf_h2d_gpu1"].actual.endswith("on Gen5 x16")
    # an address no listed GPU has: no other GPU's facts judge it (the sampled link does)
    r["gpus"][0]["pci_bus_id"] = "00000000:99:00.0"
    r["gpus"][0]["pcie"] = None
    assert by_name(perf_checks(r, TABLE, facts))["perf_h2d_gpu0"].verdict == "unverified"


def test_a_sustained_window_the_sampler_saw_only_part_of_is_no_pass() -> None:
    """Our own real sampler capture under load (1 x H200, 114 samples, no timestamp column), each
    row given in-test a timestamp 0.5 s after the last (the sampler's -lms 500) and cut to its
    first 30 rows, as when nvidia-smi stops part-way through a 57 s window: the 14.5 s it saw
    passed as the whole window; now it is unverified and says how much was sampled."""
    lines = SAMPLER.read_text().splitlines()
    stamped = [f"2026/12/04 10:00:{i * 0.5:06.3f}, {line}" for i, line in enumerate(lines[:30])]
    rows = gp.parse_samples("\n".join(stamped), ("timestamp", *SAMPLER_FIELDS))
    assert len(rows) == 30
    window = {**gp.summarize_window(rows, 0, None, None), "seconds": 57, "window_s": 57.0}
    assert window["sampled_s"] == 14.5
    c = sustained_check(0, window)
    assert c.verdict == "unverified", c
    assert "nvidia-smi's samples span only 14 s of the 57 s window" in c.detail
    # the whole window sampled: judged as before
    stamped = [
        f"2026/12/04 10:{i * 0.5 // 60:02.0f}:{i * 0.5 % 60:06.3f}, {line}" for i, line in enumerate(lines)
    ]
    rows = gp.parse_samples("\n".join(stamped), ("timestamp", *SAMPLER_FIELDS))
    whole = {**gp.summarize_window(rows, 0, None, None), "seconds": 57, "window_s": 57.0}
    assert whole["sampled_s"] == 56.5
    assert "samples span only" not in sustained_check(0, whole).detail
