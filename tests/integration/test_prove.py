"""`invoke prove`: the bundled smoke training and all-reduce benchmark run for real over SSH
on a test host (this machine's Python + CPU torch), disk speed on a temp dir."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import Project, host_entry

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("torch") is None,
    reason="torch not installed (scripts/bootstrap.sh with BOOTSTRAP_TESTS=1 installs torch==2.13.0)",
)

FAST = {
    "train_python": sys.executable,
    "train_steps": 30,
    "train_batch_size": 64,
    "train_workers": 1,
    "allreduce_max_size": "4MiB",
    "disk_test_size": "64MiB",
    "model_params": "7B",
    "benchmark_image_size": 32,  # gpu_benchmark: tiny ResNet-50 steps on the CPU
    "benchmark_steps": 2,
    "network_upload": False,  # network: the upload probe is tested in test_prove_network.py
    "rtt_count": 2,
}


def _setup(project: Project, tmp_path: Path, name: str, **extra: Any) -> None:
    disk = tmp_path / "data disk"
    disk.mkdir()
    entry = host_entry(project.pool.hosts[name], project.pool)
    entry["vars"].update({**FAST, "disk_test_dir": str(disk), **extra})
    project.write_inventory({name: entry})


def test_prove_runs_for_real_on_cpu(project: Project, tmp_path: Path) -> None:
    # the private temp dirs go under a parent of this test's own (under the default /tmp, another
    # xdist worker's prove run, started or ended meanwhile, changed what the check below saw)
    remote_tmp = tmp_path / "remote tmp"
    remote_tmp.mkdir()
    # (allreduce_nproc: --nproc used to break torchrun's parser)
    _setup(project, tmp_path, "prove", allreduce_nproc=3, remote_tmp=str(remote_tmp))
    r = project.cli("prove", "--host", "prove", timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    rules = project.rules("prove")
    # the real training: loss fell by the margin, checkpoint reloads bit-identically
    assert rules["loader_yields"]["verdict"] == "pass"
    assert rules["loader_yields"]["actual"] == "30 batches"
    assert rules["loss_falls"]["verdict"] == "pass", rules["loss_falls"]
    assert rules["checkpoint_roundtrip"]["verdict"] == "pass"
    assert "outputs identical" in rules["checkpoint_roundtrip"]["actual"]
    assert rules["training_device"]["actual"].startswith("cpu (no GPU")
    # the real all-reduce: 3 gloo processes (allreduce_nproc), exact sums, information-only verdict
    assert rules["allreduce_correct"]["verdict"] == "pass"
    assert "(3 x gloo)" in rules["allreduce_busbw"]["actual"]
    assert "information only" in rules["allreduce_busbw"]["expected"]
    # disk: measured, checkpoint time for 7B estimated, temp file gone
    assert "GB/s" in rules["disk_write"]["actual"]
    assert "7B params" in rules["checkpoint_time"]["actual"]
    assert not list((tmp_path / "data disk").iterdir())
    assert rules["resnet50_throughput"]["verdict"] == "pass"  # gpu_benchmark: CPU, information
    assert rules["ssh_rtt"]["verdict"] == "pass"  # network
    assert list(remote_tmp.iterdir()) == []  # the private temp dirs (smoke_train, allreduce) were removed


def test_prove_fails_cpu_torch_on_gpu_host_and_check_mode(project: Project, tmp_path: Path) -> None:
    # provegpu replays nvidia-smi (1 GPU) while its torch is this machine's CPU build: the
    # training and the all-reduce ran on the CPU, so they must fail, not pass as "GO"
    _setup(project, tmp_path, "provegpu")
    r = project.cli(
        "provision",
        "--host",
        "provegpu",
        "--playbook",
        "prove",
        "--only",
        "smoke_train,allreduce",
        timeout=180,
    )
    assert r.returncode == 1, r.stdout + r.stderr
    rules = project.rules("provegpu")
    sentence = f"the box lists 1 GPU(s) but torch in {sys.executable} has no CUDA: nothing ran on the GPUs"
    assert rules["training_device"]["verdict"] == "fail"
    assert "nvidia-smi lists 1 GPU" in rules["training_device"]["actual"]
    assert sentence in rules["training_device"]["detail"]
    assert rules["allreduce_busbw"]["verdict"] == "fail", rules["allreduce_busbw"]
    assert sentence in rules["allreduce_busbw"]["detail"]
    assert rules["loss_falls"]["verdict"] == "pass"
    assert rules["allreduce_correct"]["verdict"] == "pass"
    # check mode: nothing runs on the host
    r = project.cli("provision", "--host", "provegpu", "--playbook", "prove", "--check", timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    steps = project.summary()["hosts"][0]["steps"]
    assert all(s["msg"].startswith("check mode:") and not s["checks"] for s in steps), steps


def test_prove_without_torch_fails_clearly(project: Project, tmp_path: Path) -> None:
    _setup(project, tmp_path, "prove", train_python="/usr/bin/python3")
    r = project.cli(
        "provision", "--host", "prove", "--playbook", "prove", "--only", "smoke_train", timeout=60
    )
    if r.returncode == 0:
        pytest.skip("/usr/bin/python3 has torch here")
    assert r.returncode == 1
    msg = project.summary()["hosts"][0]["steps"][0]["msg"]
    assert "No module named 'torch'" in msg and "install PyTorch for /usr/bin/python3" in msg, msg


def test_prove_fails_on_a_box_whose_nvidia_smi_fails(project: Project, tmp_path: Path) -> None:
    # nvidia-smi exits 9 (driver not answering): the CPU run is no "GPU-less box" pass
    from gpuonboard.testing import add_executable

    host = project.pool.hosts["prove"]
    smi = add_executable(
        host.bin_dir,
        "nvidia-smi",
        '#!/bin/sh\necho "NVIDIA-SMI has failed because it couldn\'t communicate with the NVIDIA driver."\n'
        "exit 9\n",
    )
    try:
        _setup(project, tmp_path, "prove")
        r = project.cli(
            "provision",
            "--host",
            "prove",
            "--playbook",
            "prove",
            "--only",
            "smoke_train,allreduce,gpu_benchmark",
            timeout=300,
        )
        assert r.returncode == 1, r.stdout + r.stderr
        rules = project.rules("prove")
        for name in ("training_device", "allreduce_busbw", "benchmark_device"):
            assert rules[name]["verdict"] == "fail", rules[name]
            assert "nvidia-smi failed (exit code 9)" in rules[name]["actual"], rules[name]
            assert "the NVIDIA driver does not answer" in rules[name]["detail"], rules[name]
    finally:
        smi.unlink()
