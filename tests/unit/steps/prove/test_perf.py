"""The `gpu_perf` step (issue 29): settings, the sentence said before it runs, the run through
run_script with a stand-in for the host's python (printing a result shaped as the contract), and
`vars.perf_floors` merged from a vendor profile, a group and a host."""

from __future__ import annotations

import json
import textwrap
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from gpuonboard import inventory
from gpuonboard.connection import LocalRunner
from gpuonboard.connection.gather import Facts, parse_facts
from gpuonboard.facts.nvidia_smi import GpuReport
from gpuonboard.facts.probe import ProbeOutput
from gpuonboard.inventory import Host
from gpuonboard.runner.playbook import load as load_playbook
from gpuonboard.steps import REGISTRY
from gpuonboard.steps.base import Check, StepArgsError, StepContext
from gpuonboard.steps.prove import script_bytes
from gpuonboard.steps.prove.floors import load_floors, parse_overrides, perf_checks
from gpuonboard.steps.prove.perf import GpuPerfStep, about, perf_settings, summary
from gpuonboard.testing import add_executable

from .test_floors import FACTS, _result

REPO = Path(__file__).resolve().parents[4]


def test_registered_read_only_bundled_and_in_the_prove_playbook() -> None:
    assert REGISTRY["gpu_perf"] is GpuPerfStep and GpuPerfStep.read_only
    assert b"GPUONBOARD_PLAN" in script_bytes("gpu_perf.py")
    steps = [s.kind for s in load_playbook(REPO / "playbooks" / "prove.yml").steps]
    assert steps.index("gpu_perf") == steps.index("gpu_benchmark") + 1


def _step(**args: Any) -> GpuPerfStep:
    return GpuPerfStep(args)


def test_settings_from_args_vars_and_mode() -> None:
    s = perf_settings(_step(), {})
    assert (s.mode, s.seconds, s.sustain, s.size_scale, s.straggler_margin) == ("quick", 1.5, 45.0, 1.0, 0.1)
    s = perf_settings(_step(), {"perf_mode": "FULL", "perf_straggler_margin": "0.05"})
    assert (s.mode, s.seconds, s.sustain, s.straggler_margin) == ("full", 8.0, 300.0, 0.05)
    assert perf_settings(_step(sustain=0), {"perf_sustain": 30}).sustain == 0  # the arg wins
    s = perf_settings(_step(), {}, cpu=True)  # no GPU listed: information only, small and short
    assert (s.seconds, s.sustain, s.size_scale) == (0.5, 0.0, 0.0625)
    assert s.argv() == ["--mode", "quick", "--seconds", "0.5", "--sustain", "0", "--size-scale", "0.0625"]
    for args, var, said in (
        ({"mode": "fast"}, {}, "mode must be one of quick, full, not 'fast'"),
        ({}, {"perf_size_scale": 2}, "size_scale must be > 0 and <= 1"),
        ({"seconds": 0}, {}, "seconds must be > 0"),
        ({}, {"perf_sustain": -1}, "sustain must be >= 0"),
        ({"straggler_margin": 1}, {}, "straggler_margin must be between 0 and 1"),
    ):
        with pytest.raises(StepArgsError, match=said):
            perf_settings(_step(**args), var)


def test_the_sentence_before_the_run() -> None:
    quick = perf_settings(_step(), {})
    est, said = about(quick, 8)
    assert said == "quick mode, about 2 min for 8 GPUs" and 90 < est < 150  # the issue: about 2 minutes
    est, said = about(perf_settings(_step(mode="full"), {}), 8)
    assert said.startswith("full mode, about") and 6 * 60 < est < 12 * 60
    assert about(perf_settings(_step(), {}, cpu=True), 0)[1].endswith("s for the CPU (no GPU listed)")


def test_summary_names_what_could_not_be_judged() -> None:
    checks = [Check("a", "", "", "pass"), Check("perf_floor_known", "", "", "unverified")]
    assert summary("GPU performance", checks) == (
        "GPU performance: 1 check(s) not judged: perf_floor_known; the other 1 passed",
        False,
    )
    msg, failed = summary("x", [*checks, Check("b", "", "", "warn")])
    assert msg == "x: passed with 1 warning(s): b; 1 check(s) not judged: perf_floor_known" and not failed


# --------------------------------------------------------------------------- the step, run


def _facts(gpus: int) -> Facts:
    facts = parse_facts({"os_release": ProbeOutput("ID=ubuntu\n", "", 0)})
    if not gpus:
        return facts
    report = GpuReport("xml", "550.90.07", "12.4", gpus, tuple(FACTS[:gpus]))
    return replace(facts, gpu=report)


def _ctx(tmp_path: Path, result: dict[str, Any], gpus: int, check: bool = False, **vars: Any) -> StepContext:
    out = tmp_path / "gpu_perf.out"
    out.write_text(
        f'GPUONBOARD_PLAN {{"gpus": {gpus}, "estimate_s": 1}}\nGPUONBOARD_RESULT {json.dumps(result)}\n'
    )
    python = add_executable(tmp_path, "fake-python", f"#!/bin/sh\ncat '{out}'\n")
    host = Host("box", "127.0.0.1", connection="local", vars={"train_python": str(python), **vars})
    return StepContext(host, LocalRunner(host), _facts(gpus), check, tmp_path)


def test_a_run_is_judged_and_said_before(tmp_path: Path) -> None:
    said: list[str] = []
    ctx = _ctx(tmp_path, _result(1), 1, remote_tmp=str(tmp_path))
    ctx.progress = said.append
    result = _step().execute(ctx)
    assert said and said[0].startswith("step gpu_perf: quick mode, about ") and said[0].endswith("for 1 GPU")
    assert result.status == "ok", result.msg
    assert result.msg.startswith("GPU performance on cuda (quick mode, about ") and "all " in result.msg
    names = {c.name for c in result.checks}
    assert {"perf_floor_known", "perf_bf16_tflops_gpu0", "perf_h2d_gpu0", "perf_sustained_gpu0"} <= names
    assert result.diff is not None and result.diff["table"][0]["bf16_tflops"] == 794.5


def test_host_floors_fail_a_run_that_the_table_passes(tmp_path: Path) -> None:
    ctx = _ctx(tmp_path, _result(1), 1, remote_tmp=str(tmp_path), perf_floors={"bf16_tflops": 900})
    result = _step().execute(ctx)
    assert result.status == "failed" and "perf_bf16_tflops_gpu0" in result.msg
    assert result.diff is not None and result.diff["perf_floors"] == {"bf16_tflops": "900 TFLOPS"}


def test_bad_settings_fail_in_one_sentence_and_check_mode_runs_nothing(tmp_path: Path) -> None:
    ctx = _ctx(tmp_path, _result(1), 1, perf_floors={"bf16": 900})
    result = _step().execute(ctx)
    assert result.status == "failed" and result.msg.startswith(
        "bad gpu_perf setting: vars.perf_floors: unknown metric 'bf16' (known: fp32_tflops,"
    )
    ctx = _ctx(tmp_path, _result(1), 1, check=True)
    result = _step().execute(ctx)
    assert result.status == "ok" and not result.checks
    assert result.msg.startswith("check mode: the GPU performance run (quick mode, about ")


def test_a_cpu_run_on_a_box_that_lists_gpus_fails(tmp_path: Path) -> None:
    cpu = {
        "schema": 1, "ok": True, "device": "cpu", "mode": "quick", "cuda_device_count": 0, "sampler": None,
        "gpus": [{"index": 0, "name": "cpu", "matmul_tflops": {"fp32": 0.1}, "membw_gbps": {"copy": 6.4},
                  "skipped": {}, "error": None}],
        "p2p": None, "sustained": None, "worker_errors": [],
    }  # fmt: skip
    result = _step().execute(_ctx(tmp_path, cpu, 1, remote_tmp=str(tmp_path)))
    c = {x.name: x for x in result.checks}
    assert result.status == "failed" and c["perf_device"].verdict == "fail"
    assert "has no CUDA: nothing ran on the GPUs" in c["perf_device"].detail
    assert c["perf_cpu"].actual == "on the CPU: fp32 0.1 TFLOPS, copy 6.4 GB/s"
    assert "perf_sampling" not in c  # no sampler on the CPU is not news
    result = _step().execute(_ctx(tmp_path, cpu, 0, remote_tmp=str(tmp_path)))
    assert result.status == "ok" and [x.name for x in result.checks] == ["perf_cpu"]


def test_a_script_error_fails_the_step_with_it(tmp_path: Path) -> None:
    broken = {"schema": 1, "ok": False, "error": "cannot import torch: No module named 'torch'"}
    result = _step().execute(_ctx(tmp_path, broken, 1, remote_tmp=str(tmp_path)))
    assert result.status == "failed"
    assert result.msg.startswith("gpu_perf.py: cannot import torch: No module named 'torch' (install PyTorch")


def test_a_hidden_gpu_and_a_failed_worker(tmp_path: Path) -> None:
    r = _result(1)
    r["worker_errors"] = ["GPU 1: CUDA error: an illegal memory access was encountered"]
    result = _step().execute(_ctx(tmp_path, r, 2, remote_tmp=str(tmp_path)))
    c = {x.name: x for x in result.checks}
    assert c["perf_workers"].verdict == "fail" and "illegal memory access" in c["perf_workers"].actual
    assert c["perf_gpus"].verdict == "fail" and c["perf_gpus"].actual == "torch saw 1"


# --------------------------------------------------------------------------- perf_floors in the inventory

INVENTORY = {
    "hosts.yml": """\
        groups:
          h100:
            vars:
              vendor: acme
              vars:
                perf_floors: {tf32_tflops: 300}
            hosts: [gpu-1, gpu-2]
        hosts:
          gpu-1:
            address: 10.0.0.1
            vars:
              perf_floors: {fp32_tflops: 54, bf16_tflops: 745}
          gpu-2:
            address: 10.0.0.2
        """,
    "vendors/acme.yml": """\
        name: ACME GPU Cloud
        vars:
          perf_floors: {bf16_tflops: 700, fp8_tflops: 1200}
        """,
}


def test_perf_floors_merge_from_vendor_group_and_host(tmp_path: Path) -> None:
    root = tmp_path / "inv"
    for rel, text in INVENTORY.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(textwrap.dedent(text))
    inv = inventory.load(root)
    one = parse_overrides(inv.hosts["gpu-1"].vars["perf_floors"])
    two = parse_overrides(inv.hosts["gpu-2"].vars["perf_floors"])
    # host over group over vendor, metric by metric
    assert one == {"bf16_tflops": 745.0, "fp8_tflops": 1200.0, "tf32_tflops": 300.0, "fp32_tflops": 54.0}
    assert two == {"bf16_tflops": 700.0, "fp8_tflops": 1200.0, "tf32_tflops": 300.0}
    table = load_floors()
    c = {x.name: x for x in perf_checks(_result(1), table, FACTS[:1], two)}
    assert c["perf_bf16_tflops_gpu0"].expected.startswith(">= 700 TFLOPS (vars.perf_floors")  # the vendor's
    assert c["perf_bf16_tflops_gpu0"].verdict == "pass"  # 794.5 >= 770
    c = {x.name: x for x in perf_checks(_result(1), table, FACTS[:1], one)}
    assert c["perf_bf16_tflops_gpu0"].verdict == "warn"  # the host's 745: PASS from 820
