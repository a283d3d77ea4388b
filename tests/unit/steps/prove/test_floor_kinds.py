"""Floors by kind and variants of a model (data/gpu_perf_floors.yml, steps/prove/floors.py and
references.py), on real figures of healthy cards and real GPU names.

A floor set as a share of a datasheet peak (an estimate) failed healthy cards: the A10 (fp32
14.68 TFLOPS against 19.0) and the RTX 4090 / 4090 D, whose FP32 peak counts dual-issue that a
matmul reaches only 56-67 % of. Below an estimate is now `unverified`; the affected rows are set
from measurements. An Azure pass line got a 10 % warn band on top and warned a real A100 copying
at 25.8 GB/s. A MIG slice or a variant card (4090 D, Laptop, Ti, H200 NVL) was judged by the
base model's rows."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from gpuonboard.errors import UsageError
from gpuonboard.facts.nvidia_smi import GpuInfo, parse_text_q
from gpuonboard.steps.checks.model_match import variant_words
from gpuonboard.steps.prove.floors import (
    BANDED,
    Floor,
    floors_for,
    judge,
    kind_of,
    load_floors,
    match_floor_row,
    perf_checks,
)
from gpuonboard.steps.prove.gpu_benchmark import load_gpu_references, match_gpu_reference
from gpuonboard.steps.prove.references import load_references, match_reference

TABLE = load_floors()
FIX = Path(__file__).resolve().parents[3] / "fixtures"

# real torch.mm TFLOPS of healthy cards (fp32 with TF32 off): zzc0721/torch-performance-test-data
# database.md @ bbb8e247d5dc170e9a4a58062ede9bdbe6a17c21 (method: test.py @ 6a6d5ce470a8, torch.mm,
# best of sizes 1024..10240), one line per row of that table, with the name nvidia-smi prints;
# the A10: a public cuBLAS table (search index file 46791468179: CUBLAS_DEFAULT_MATH 14.68,
# CUBLAS_TF32_TENSOR_OP_MATH 35.33)
REAL_MATMULS: list[tuple[str, dict[str, float], str]] = [
    ("NVIDIA GeForce RTX 4090", {"fp32": 54.69, "fp16": 158.93, "bf16": 160.53}, "4090 48GB, docker cloud"),
    ("NVIDIA GeForce RTX 4090", {"fp32": 55.01, "fp16": 165.08, "bf16": 170.06}, "4090 24GB, bare metal"),
    ("NVIDIA GeForce RTX 4090", {"fp32": 54.77, "fp16": 171.06, "bf16": 173.31}, "4090 24GB, Arch Linux"),
    ("NVIDIA GeForce RTX 4090", {"fp32": 46.48, "fp16": 162.35, "bf16": 162.39}, "4090 24GB, UCloud"),
    ("NVIDIA GeForce RTX 4090", {"fp32": 53.79, "fp16": 167.27, "bf16": 162.43}, "4090 48GB, cloud"),
    ("NVIDIA GeForce RTX 4090", {"fp32": 54.67, "fp16": 167.80, "bf16": 163.09}, "4090 24GB, cloud"),
    ("NVIDIA GeForce RTX 4090 D", {"fp32": 51.41, "fp16": 155.5, "bf16": 151.09}, "4090D 48GB, docker"),
    ("NVIDIA GeForce RTX 4090 D", {"fp32": 49.05, "fp16": 149.15, "bf16": 145.77}, "4090D 48GB, cloud"),
    ("NVIDIA GeForce RTX 4090 D", {"fp32": 50.07, "fp16": 152.64, "bf16": 148.91}, "4090D 24GB, cloud"),
    ("NVIDIA GeForce RTX 3090", {"fp32": 24.46, "fp16": 75.64, "bf16": 76.34}, "3090 24GB, bare metal"),
    ("NVIDIA GeForce RTX 3090", {"fp32": 24.84, "fp16": 75.88, "bf16": 76.68}, "3090 24GB, cloud"),
    ("NVIDIA A10", {"fp32": 14.68, "tf32": 35.33}, "A10 cuBLAS table"),
]


def by_name(checks: list[Any]) -> dict[str, Any]:
    return {c.name: c for c in checks}


def _result(name: str, **gpu: Any) -> dict[str, Any]:
    """A gpu_perf.py result (its contract's shape) holding only the given figures of GPU 0."""
    return {
        "device": "cuda",
        "gpus": [{"index": 0, "name": name, "matmul_tflops": {}, "membw_gbps": {}, **gpu}],
    }


@pytest.mark.parametrize(("name", "figures", "where"), REAL_MATMULS, ids=[r[2] for r in REAL_MATMULS])
def test_real_healthy_cards_pass_their_rows(name: str, figures: dict[str, float], where: str) -> None:
    checks = perf_checks(_result(name, matmul_tflops=figures), TABLE, [GpuInfo(index=0, name=name)])
    judged = {c.name: c.verdict for c in checks if "_tflops_gpu0" in c.name}
    assert len(judged) == len(figures), judged  # each figure judged by a floor
    assert set(judged.values()) == {"pass"}, (where, judged)
    assert by_name(checks)["perf_floor_known"].verdict == "pass"


def test_the_measured_rows_still_fail_a_slow_card() -> None:
    # half the slowest real RTX 4090 figure: below the measured floor is a failure
    checks = by_name(perf_checks(_result("NVIDIA GeForce RTX 4090", matmul_tflops={"fp32": 23.2}), TABLE, []))
    fp32 = checks["perf_fp32_tflops_gpu0"]
    assert fp32.verdict == "fail" and fp32.expected == ">= 31.6 TFLOPS (rtx-4090 floor; PASS from 34.8)"
    assert "46.48-55.01 TFLOPS (zzc0721/torch-performance-test-data" in fp32.detail


def test_below_an_estimate_is_unverified_never_a_failure() -> None:
    """Every floor of the shipped table set as a datasheet share (not verified, no kind): a figure
    1 % below it is `unverified` and says it is an estimate; 1 % above it passes (no warn band)."""
    estimates = 0
    for row in TABLE["floors"]:
        for metric, floor in floors_for(row, {}).items():
            if floor.kind != "estimate":
                continue
            estimates += 1
            assert not floor.verified, (row["id"], metric)
            assert judge(0.99 * floor.value, floor) == "unverified", (row["id"], metric)
            assert judge(1.01 * floor.value, floor) == "pass", (row["id"], metric)
    assert estimates > 50


def test_an_estimate_breach_says_so() -> None:
    # the A10's memory floor is 70 % of its datasheet 600 GB/s
    r = _result("NVIDIA A10", membw_gbps={"copy": 400.0})
    c = by_name(perf_checks(r, TABLE, []))["perf_membw_gbps_gpu0"]
    assert c.verdict == "unverified"
    assert c.expected == ">= 420 GB/s (a10 floor; an estimate: below it is not judged)"
    assert c.detail.startswith("below an estimated floor (70 % of datasheet GDDR6 600 GB/s")
    assert "no measurement of this model backs it, so this is no hardware claim" in c.detail


def test_kinds_of_the_shipped_table() -> None:
    kinds = {(r["id"], m): kind_of(f) for r in TABLE["floors"] for m, f in r["floors"].items()}
    for (row_id, metric), kind in kinds.items():
        source = next(r for r in TABLE["floors"] if r["id"] == row_id)["floors"][metric]["source"]
        # Azure's health checks are production pass lines; nothing else is
        assert (kind == "pass_line") == source.startswith("Azure HPC health checks"), (row_id, metric)
    assert kinds[("a10", "fp32_tflops")] == kinds[("rtx-4090", "fp32_tflops")] == "measured"
    assert kinds[("rtx-4090", "tf32_tflops")] == "estimate"


# Real CUDA bandwidthTest runs (pinned memory) against Azure's pass line of 24 GB/s for the A100
# SXM (nd96amsr_a100_v4 / nd96asr_v4: check_cuda_bw 24): Princeton's della A100 at 1 GB
# transfers, H2D 25.8, D2H 25.7 GB/s (jdh4/della-gpu-A100 README.md, search index file
# 29226121242), and an "NVIDIA A100-SXM4-40GB" in quick mode, H2D 26.1, D2H 25.6 GB/s (a setup
# note in a public repository, search index file 22770156462)
@pytest.mark.parametrize(
    ("name", "mib", "h2d", "d2h"),
    [("NVIDIA A100-SXM4-80GB", 81920, 25.8, 25.7), ("NVIDIA A100-SXM4-40GB", 40960, 26.1, 25.6)],
)
def test_a_pass_line_has_no_warn_band(name: str, mib: int, h2d: float, d2h: float) -> None:
    info = GpuInfo(index=0, name=name, memory_total_mib=mib, pcie_gen_max=4, pcie_width_max=16)
    r = _result(name, h2d_gbps=h2d, d2h_gbps=d2h, pcie={"gen": 4, "width": 16})
    c = by_name(perf_checks(r, TABLE, [info]))
    for check in ("perf_h2d_gbps_gpu0", "perf_d2h_gbps_gpu0", "perf_h2d_gpu0"):
        assert c[check].verdict == "pass", c[check]
    assert c["perf_h2d_gbps_gpu0"].expected.startswith(">= 24.0 GB/s (a100-sxm-")
    assert c["perf_h2d_gbps_gpu0"].expected.endswith(" floor; a pass line: no warn band)")
    # below the line still fails
    r = _result(name, h2d_gbps=20.0, d2h_gbps=d2h, pcie={"gen": 4, "width": 16})
    assert by_name(perf_checks(r, TABLE, [info]))["perf_h2d_gbps_gpu0"].verdict == "fail"


def test_the_band_applies_to_measured_and_host_floors_only() -> None:
    assert BANDED == ("measured", "host")
    assert judge(105, Floor(100, "s", True, "measured")) == "warn"
    assert judge(105, Floor(100, "vars.perf_floors", False, "host")) == "warn"
    assert judge(105, Floor(100, "s", False, "pass_line")) == "pass"
    assert judge(99, Floor(100, "s", False, "pass_line")) == "fail"
    assert judge(99, Floor(100, "s", True, "measured")) == "fail"


def test_an_nvlink_estimate_breach_is_unverified_and_a_pass_line_breach_fails() -> None:
    # A100 rows: p2p_nvlink 70 % of the datasheet (an estimate); H100 SXM: Azure's 335 GB/s line
    for name, gbps, verdict in (
        ("NVIDIA A100-SXM4-80GB", 200.0, "unverified"),
        ("NVIDIA H100 80GB HBM3", 300.0, "fail"),
        ("NVIDIA H100 80GB HBM3", 340.0, "pass"),  # within 10 % of a pass line: no warning
    ):
        r = _result(name)
        r["gpus"].append({**r["gpus"][0], "index": 1})
        r["p2p"] = {
            "access": [[True, True]] * 2,
            "gbps": [[None, gbps], [gbps, None]],
            "topology": {"0-1": "NV12"},
        }
        p2p = by_name(perf_checks(r, TABLE, []))["perf_p2p"]
        assert p2p.verdict == verdict, (name, p2p)
    assert (
        "that floor is an estimate (70 % of 300 GB/s"
        in by_name(
            perf_checks(
                {
                    **_result("NVIDIA A100-SXM4-80GB"),
                    "p2p": {
                        "access": [[True, True]] * 2,
                        "gbps": [[None, 200.0], [200.0, None]],
                        "topology": {"0-1": "NV12"},
                    },
                },
                TABLE,
                [],
            )
        )["perf_p2p"].detail
    )


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (
            "{value: 1, source: s, verified: false, kind: guess}",
            "kind must be one of measured, pass_line, estimate",
        ),
        (
            "{value: 1, source: s, verified: false, kind: measured}",
            "kind measured contradicts 'verified: false'",
        ),
        (
            "{value: 1, source: s, verified: true, kind: estimate}",
            "kind estimate contradicts 'verified: true'",
        ),
    ],
)
def test_a_bad_kind_is_refused(tmp_path: Path, text: str, said: str) -> None:
    path = tmp_path / "floors.yml"
    path.write_text(f"floors:\n  - id: x\n    gpu: X1\n    floors:\n      fp32_tflops: {text}\n")
    with pytest.raises(UsageError) as err:
        load_floors(path)
    assert str(path) in str(err.value) and ", line 5" in str(err.value) and said in str(err.value)


# --------------------------------------------------------------------------- variants


def _mig_names() -> list[str]:
    """The CUDA names of the MIG devices of real `nvidia-smi -L` captures: '<board> MIG <profile>'
    (as CUDA names them: 'NVIDIA A100-SXM4-40GB MIG 1g.5gb', HTCondor's condor_gpu_discovery
    doc, search index file 42058297690)."""
    names = ["NVIDIA A100-SXM4-40GB MIG 1g.5gb"]
    for path in sorted((FIX / "real").glob("nvidia-smi-L__*mig*.txt")):
        board = ""
        for line in path.read_text().splitlines():
            if m := re.match(r"GPU \d+: (.+?) \(UUID", line):
                board = m[1]
            elif (m := re.match(r"\s+MIG (\S+)\s+Device", line)) and board:
                names.append(f"{board} MIG {m[1]}")
    return sorted(set(names))


# real names of variants of models with rows: the 4090 D and 3090 Ti (database.md above;
# bewantbe/busy-gemm-benchmark README.md @ c206738cbda9), the 4090 Laptop GPU (`nvidia-smi`
# output quoted in public notes, search index file 62435704369: "NVIDIA GeForce RTX 4090 Laptop
# GPU, 16376 MiB") and the H200 NVL (a torch listing, search index file 66510701415: "GPU:
# `NVIDIA H200 NVL` (143771 MiB, driver `570.195.03`)")
VARIANTS = [
    "NVIDIA GeForce RTX 4090 Laptop GPU",
    "NVIDIA GeForce RTX 3090 Ti",
    "NVIDIA H200 NVL",
]


def test_real_mig_names_are_read() -> None:
    names = _mig_names()
    assert "NVIDIA H200 MIG 1g.18gb" in names and "NVIDIA A100-SXM4-80GB MIG 1g.10gb" in names
    assert all(variant_words(n) == {"MIG"} for n in names)


@pytest.mark.parametrize("name", [*_mig_names(), *VARIANTS, "NVIDIA GeForce RTX 4090 D"])
def test_a_variant_is_not_judged_by_the_base_models_rows(name: str) -> None:
    floors = match_floor_row(TABLE, name)
    # only a row that names the variant itself judges it (rtx-4090-d)
    assert floors is None or floors["id"] == "rtx-4090-d", floors
    assert match_gpu_reference(load_gpu_references(), name) is None
    refs = load_references()
    for count in (1, 2, 4, 8):
        for link in ("nvlink", "pcie"):
            assert match_reference(refs, name, count, link) is None, (name, count, link)


def test_the_base_models_still_find_their_rows() -> None:
    assert match_floor_row(TABLE, "NVIDIA GeForce RTX 4090")["id"] == "rtx-4090"  # type: ignore[index]
    assert match_floor_row(TABLE, "NVIDIA GeForce RTX 4090 D")["id"] == "rtx-4090-d"  # type: ignore[index]
    assert match_floor_row(TABLE, "NVIDIA H100 NVL")["id"] == "h100-nvl"  # type: ignore[index]
    assert match_floor_row(TABLE, "NVIDIA H200")["id"] == "h200"  # type: ignore[index]
    assert match_gpu_reference(load_gpu_references(), "NVIDIA H200")["id"] == "h200"  # type: ignore[index]


def _h200_mig_facts() -> list[GpuInfo]:
    facts = parse_text_q(
        (FIX / "real" / "nvidia-smi-q__h200-mig__1gpu-5mig__driver590.48.01__load.txt").read_text()
    )
    gpus = list(facts.gpus)
    assert gpus[0].name == "NVIDIA H200" and gpus[0].mig_mode == "Enabled"
    return gpus


def _quick_h200_on_a_slice(name: str) -> dict[str, Any]:
    """The real healthy-H200 quick run (tests/fixtures/prove/gpu_perf_quick_h200.out) scaled to a
    1g slice (1 of 7 compute slices, 1 of 8 memory slices: NVIDIA's MIG user guide), named `name`."""
    line = next(
        x
        for x in (FIX / "prove" / "gpu_perf_quick_h200.out").read_text().splitlines()
        if x.startswith("GPUONBOARD_RESULT ")
    )
    r = json.loads(line.split(" ", 1)[1])
    g = r["gpus"][0]
    g["name"] = name
    g["matmul_tflops"] = {k: v / 7 for k, v in g["matmul_tflops"].items()}
    g["membw_gbps"] = {k: v / 8 for k, v in g["membw_gbps"].items()}
    r["sustained"] = None
    return r


@pytest.mark.parametrize("name", ["NVIDIA H200 MIG 1g.18gb", "NVIDIA H200"])
def test_a_mig_slice_of_a_real_h200_is_not_failed(name: str) -> None:
    """The real `nvidia-smi -q` of an H200 in MIG mode: a result named as CUDA names the slice,
    or by the board (MIG mode from the facts), gets no floor of the whole H200."""
    checks = perf_checks(_quick_h200_on_a_slice(name), TABLE, _h200_mig_facts())
    assert not [c for c in checks if c.verdict == "fail"], checks
    known = by_name(checks)["perf_floor_known"]
    assert known.verdict == "unverified" and known.actual == f"no floor is known for {name}"
    said = "a MIG slice, a part of the" if name == "NVIDIA H200" else "'MIG' in the name: a MIG slice"
    assert said in known.detail
    assert by_name(checks)["perf_bf16_tflops_unfloored"].actual.startswith(f"no floors row: GPU 0 {name} ")


def test_the_all_reduce_check_says_why_a_variant_has_no_row() -> None:
    from gpuonboard.steps.prove.allreduce import reference_check

    c = reference_check(load_references(), "NVIDIA H200 MIG 1g.18gb", 8, "nvlink", 300.0, "300 GB/s")
    assert c.verdict == "warn" and c.detail.startswith(
        "NVIDIA H200 MIG 1g.18gb is a variant ('MIG' in the name: a MIG slice, a part of the GPU;"
    )


@pytest.mark.parametrize("name", ["NVIDIA H200 MIG 1g.18gb", "NVIDIA H200"])
def test_resnet50_on_a_mig_slice_of_a_real_h200_has_no_reference(name: str) -> None:
    from gpuonboard.steps.prove.gpu_benchmark import throughput_check

    w = {"gpu": 0, "device_name": name, "images_per_s": 500.0, "batch_size": 64}
    c = throughput_check({"image_size": 224}, w, _h200_mig_facts(), load_gpu_references(), lambda: [])
    assert c.verdict == "warn" and c.expected == f"a reference for {name}"
    assert "a MIG slice" in c.detail and c.detail.endswith("add one to data/gpu_reference.yml")


# vGPU type names a guest's driver gives the GPU: "NVIDIA H100XM-80C" in an MLPerf inference
# submission's system config (8 of them, pci_id 0x2330 = the H100 SXM board; search index file
# 49208503525), and the Hopper C-series types of NVIDIA's vGPU user guide table "NVLink Multicast
# Support on the NVIDIA Hopper GPU Architecture" (search index file 69514242809)
VGPU_NAMES = ["NVIDIA H100XM-80C", "NVIDIA H800XM-80C", "NVIDIA H200X-141C", "H20X-141C", "NVIDIA H20-96C"]


@pytest.mark.parametrize("name", VGPU_NAMES)
def test_a_vgpu_is_not_judged_by_the_whole_gpus_rows(name: str) -> None:
    """A time-sliced vGPU is a guest's share of the board: 'H100XM' was read as the H100 (a
    letter may follow a model), so the vGPU got the whole H100 SXM's floors (and its
    all-reduce row); 'H20-96C' the H20's, 'H200X-141C' the H200's."""
    assert match_floor_row(TABLE, name) is None
    assert match_gpu_reference(load_gpu_references(), name) is None
    refs = load_references()
    for count in (1, 2, 4, 8):
        for link in ("nvlink", "pcie"):
            assert match_reference(refs, name, count, link, 4) is None, (name, count, link)


def test_the_real_h200_run_on_a_vgpu_says_why_it_has_no_floor() -> None:
    """The real healthy-H200 quick run's figures at a third (a vGPU sharing its board with two
    others) under the MLPerf config's vGPU name: no whole-GPU floor fails it."""
    r = _quick_h200_on_a_slice("NVIDIA H100XM-80C")
    checks = by_name(perf_checks(r, TABLE, []))
    known = checks["perf_floor_known"]
    assert known.verdict == "unverified" and known.actual == "no floor is known for NVIDIA H100XM-80C"
    assert known.detail.startswith(
        "NVIDIA H100XM-80C is a vGPU profile with 80 GB of the H100XM board's framebuffer"
        " (C-series: compute), a guest's share of the GPU, not the whole GPU"
    )
    assert not [c for c in checks.values() if c.verdict == "fail"]


def test_a_gpu_in_vgpu_mode_is_not_judged_by_the_whole_gpus_floor() -> None:
    """A result named by the board while `nvidia-smi -q` says Virtualization Mode VGPU (the real
    H200 facts with that one field set in-test): a vGPU's share, no whole-GPU floor."""
    facts = [replace(_h200_mig_facts()[0], mig_mode="Disabled", virtualization_mode="VGPU")]
    checks = by_name(perf_checks(_quick_h200_on_a_slice("NVIDIA H200"), TABLE, facts))
    known = checks["perf_floor_known"]
    assert known.verdict == "unverified"
    assert "GPU 0 is a vGPU (nvidia-smi -q: Virtualization Mode VGPU)" in known.detail
