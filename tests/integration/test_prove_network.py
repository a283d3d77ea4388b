"""`gpu_benchmark` (ResNet-50 on the CPU over SSH) and `network` (RTT, upload through OpenSSH,
iperf3 between two test hosts of one group) run for real on test hosts."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys

import pytest
from conftest import Project, host_entry


def _inventory(project: Project, **extra: object) -> None:
    hosts = {}
    for name in ("net1", "net2"):
        entry = host_entry(project.pool.hosts[name], project.pool)
        entry["vars"].update({"train_python": sys.executable, **extra})
        hosts[name] = entry
    project.write_inventory(hosts, groups={"rack": {"hosts": ["net1", "net2"]}})


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch not installed")
def test_gpu_benchmark_runs_resnet50_on_cpu(project: Project) -> None:
    _inventory(project, benchmark_image_size=32, benchmark_steps=2, benchmark_duration=1)
    r = project.cli(
        "provision", "--host", "net1", "--playbook", "prove", "--only", "gpu_benchmark", timeout=120
    )
    assert r.returncode == 0, r.stdout + r.stderr
    rules = project.rules("net1")
    t = rules["resnet50_throughput"]
    assert t["verdict"] == "pass" and "information only" in t["expected"], t
    assert "images/s on the CPU" in t["actual"] and "32 px" in t["actual"]
    result = project.summary()["hosts"][0]["steps"][0]["diff"]["result"]
    assert result["workers"][0]["sustained"]["seconds"] == 1.0


@pytest.mark.skipif(shutil.which("iperf3") is None, reason="iperf3 not installed (scripts/bootstrap.sh)")
def test_network_rtt_upload_and_iperf3_between_group_hosts(project: Project) -> None:
    _inventory(project, iperf_seconds=1, rtt_count=5)
    r = project.cli("provision", "--host", "net1", "--playbook", "prove", "--only", "network", timeout=90)
    assert r.returncode == 0, r.stdout + r.stderr
    rules = project.rules("net1")
    assert rules["ssh_rtt"]["verdict"] == "pass" and "over 5 round trips" in rules["ssh_rtt"]["actual"]
    assert rules["upload_throughput"]["verdict"] == "pass", rules["upload_throughput"]
    ip = rules["iperf3_net2"]
    assert ip["verdict"] == "pass" and "Gbit/s received" in ip["actual"], ip
    # the one-off server is gone (exited after the test or killed by PID)
    res = project.summary()["hosts"][0]["steps"][0]["diff"]["result"]["iperf3"]["net2"]
    port = str(res["port"])
    if shutil.which("ss"):
        ss = subprocess.run(["ss", "-ltn"], capture_output=True, text=True).stdout
        assert f":{port} " not in ss
    # expect_rdma without ibv_devinfo on the host: a clear failure
    _inventory(project, iperf_peers=[], network_upload=False, rtt_count=2, expect_rdma=True)
    r = project.cli("provision", "--host", "net1", "--playbook", "prove", "--only", "network", timeout=60)
    if shutil.which("ibv_devinfo"):
        return
    assert r.returncode == 1, r.stdout + r.stderr
    assert project.rules("net1")["rdma_devices"]["verdict"] == "fail"
