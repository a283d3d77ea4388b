"""`gpu_perf` (issue 29) runs for real over SSH on a test host: the bundled gpu_perf.py on this
machine's CPU torch (information only, small and short by default on a host without GPUs), and on
a host whose replayed nvidia-smi lists a GPU while torch has no CUDA, which must fail, not pass."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
from conftest import Project, host_entry

pytestmark = pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch not installed")


def _setup(project: Project, tmp_path: Path, name: str, **extra: object) -> Path:
    remote_tmp = tmp_path / "remote tmp"
    remote_tmp.mkdir()
    entry = host_entry(project.pool.hosts[name], project.pool)
    entry["vars"].update({"train_python": sys.executable, "remote_tmp": str(remote_tmp), **extra})
    project.write_inventory({name: entry})
    return remote_tmp


def _run(project: Project, name: str) -> tuple[int, dict[str, object]]:
    r = project.cli("provision", "--host", name, "--playbook", "prove", "--only", "gpu_perf", timeout=180)
    step = project.summary()["hosts"][0]["steps"][0]
    assert step["step"] == "gpu_perf", r.stdout + r.stderr
    return r.returncode, step


def test_gpu_perf_runs_for_real_on_the_cpu(project: Project, tmp_path: Path) -> None:
    remote_tmp = _setup(project, tmp_path, "prove", perf_floors={"fp32_tflops": 1000})
    code, step = _run(project, "prove")
    assert code == 0, step
    assert step["status"] == "ok" and "about" in str(step["msg"]) and "for the CPU" in str(step["msg"])
    rules = project.rules("prove")
    cpu = rules["perf_cpu"]
    assert cpu["verdict"] == "pass" and "fp32" in cpu["actual"] and "TFLOPS" in cpu["actual"], cpu
    result = step["diff"]["result"]  # type: ignore[index]
    assert result["device"] == "cpu" and result["schema"] == 1 and result["sustained"] is None
    assert list(remote_tmp.iterdir()) == []  # the private temp dir was removed


def test_gpu_perf_fails_cpu_torch_on_a_gpu_host_and_bad_floors(project: Project, tmp_path: Path) -> None:
    _setup(project, tmp_path, "provegpu", perf_size_scale=0.0625, perf_seconds=0.3, perf_sustain=0)
    code, step = _run(project, "provegpu")
    assert code == 1, step
    rules = project.rules("provegpu")
    assert rules["perf_device"]["verdict"] == "fail"
    assert "has no CUDA: nothing ran on the GPUs" in rules["perf_device"]["detail"]
    # a bad vars.perf_floors fails the step in one sentence naming the variable, before running
    project.write_inventory(
        {
            "provegpu": {
                **host_entry(project.pool.hosts["provegpu"], project.pool),
                "vars": {"perf_floors": [1]},
            }
        }
    )
    code, step = _run(project, "provegpu")
    assert (
        code == 1
        and step["msg"]
        == "bad gpu_perf setting: vars.perf_floors must be a mapping of metric to number, not [1]"
    )
