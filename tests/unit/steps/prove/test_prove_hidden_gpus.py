"""A box where torch sees fewer GPUs than nvidia-smi lists (CUDA_VISIBLE_DEVICES left in the host's
environment, MIG on, a GPU CUDA cannot use) must not pass `prove` on the GPUs torch happened to
see: the recorded real 1 x H200 runs, judged as if nvidia-smi had listed the 8 GPUs of the real
8 x H200 capture, used to pass (the all-reduce even as "information only: one GPU")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gpuonboard.facts.nvidia_smi import parse_any
from gpuonboard.steps.prove import allreduce_checks, load_references, parse_result
from gpuonboard.steps.prove.gpu_benchmark import benchmark_checks, load_gpu_references

FIX = Path(__file__).resolve().parents[3] / "fixtures"
H200_8 = parse_any((FIX / "real" / "nvidia-smi__h200__8gpu__driver570.158.01.txt").read_text()).gpus


def _recorded(name: str) -> dict[str, Any]:
    r = parse_result((FIX / "prove" / name).read_text())
    assert r is not None
    return r


def _by_name(checks: list[Any]) -> dict[str, Any]:
    return {c.name: c for c in checks}


def test_allreduce_over_fewer_gpus_than_listed_fails() -> None:
    assert len(H200_8) == 8
    r = _recorded("allreduce_1xh200_nccl.out")  # torch saw 1 GPU
    c = _by_name(allreduce_checks(r, load_references(), H200_8[0].name, 8, "nvlink"))
    assert c["allreduce_gpus"].verdict == "fail"
    assert c["allreduce_gpus"].actual == "torch saw 1; the all-reduce ran over 1"
    assert "torch sees 1 of the 8 GPUs nvidia-smi lists, so 7 of them were not exercised" in (
        c["allreduce_gpus"].detail
    )
    assert "CUDA_VISIBLE_DEVICES" in c["allreduce_gpus"].detail
    # an explicit allreduce_nproc is the user's choice; the matching box is fine
    asked = _by_name(allreduce_checks(r, load_references(), H200_8[0].name, 8, "nvlink", nproc_asked=1))
    assert "allreduce_gpus" not in asked
    one = _by_name(allreduce_checks(r, load_references(), "NVIDIA H200", 1, "unknown"))
    assert "allreduce_gpus" not in one and one["allreduce_busbw"].verdict == "pass"


def test_benchmark_of_fewer_gpus_than_listed_fails() -> None:
    r = _recorded("gpu_benchmark_cuda_h200.out")  # one worker: torch saw 1 GPU
    c = _by_name(benchmark_checks(r, load_gpu_references(), H200_8))
    assert c["resnet50_gpus"].verdict == "fail"
    assert "torch sees 1 of the 8 GPUs nvidia-smi lists" in c["resnet50_gpus"].detail
    assert c["resnet50_gpu0"].verdict == "pass"  # the one it saw is fine
    one = _by_name(benchmark_checks(r, load_gpu_references(), H200_8[:1]))
    assert "resnet50_gpus" not in one
