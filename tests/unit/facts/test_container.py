"""Container runtime facts from real `docker info` output and real podman JSON on this machine."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from gpuonboard.facts.container import parse_cdi_listing, parse_docker_info, parse_podman_info

REAL = Path(__file__).parents[2] / "fixtures" / "real"


def test_docker_info_text_with_nvidia_runtime() -> None:
    info = parse_docker_info((REAL / "docker-info__docker-28.0.0-rc.1__nvidia-runtime.txt").read_text())
    assert info.engine == "docker"
    assert info.server_version == "28.0.0-rc.1"
    assert info.storage_root == "/var/lib/docker"
    assert info.storage_driver == "overlay2"
    assert info.runtimes == ("io.containerd.runc.v2", "nvidia", "runc")
    assert info.nvidia_runtime and info.default_runtime == "runc"
    assert info.cgroup_version == "2" and info.containers_running == 2
    assert info.warnings == ()


def test_docker_info_json_form() -> None:
    doc = {
        "ServerVersion": "27.1.1",
        "DockerRootDir": "/data/docker",
        "Driver": "overlay2",
        "Runtimes": {"runc": {}, "nvidia": {"path": "nvidia-container-runtime"}},
        "DefaultRuntime": "nvidia",
        "RegistryConfig": {"Mirrors": ["https://mirror.example.cn/"]},
        "CgroupVersion": "2",
        "ContainersRunning": 0,
    }
    info = parse_docker_info(json.dumps(doc))
    assert (info.storage_root, info.default_runtime, info.registry_mirrors) == (
        "/data/docker",
        "nvidia",
        ("https://mirror.example.cn/",),
    )
    assert info.nvidia_runtime


@pytest.mark.parametrize(
    "text", ["", "Client:\n Version: 28\n", "{not json", "Cannot connect to the Docker daemon"]
)
def test_unreadable_docker_info_degrades_with_a_warning(text: str) -> None:
    info = parse_docker_info(text)
    assert info.engine is None and info.warnings and not info.nvidia_runtime


@pytest.mark.skipif(shutil.which("podman") is None, reason="podman not installed")
def test_real_podman_info_json() -> None:
    out = subprocess.run(["podman", "info", "--format", "json"], capture_output=True, text=True, timeout=60)
    if out.returncode != 0:
        pytest.skip(f"podman info failed here: {out.stderr.strip()[:200]}")
    info = parse_podman_info(out.stdout)
    assert info.engine == "podman" and info.server_version and info.storage_root
    assert not info.nvidia_runtime


def test_cdi_listing() -> None:
    assert parse_cdi_listing("/etc/cdi/nvidia.yaml\n/var/run/cdi/other.json\n\n") == (
        "/etc/cdi/nvidia.yaml",
        "/var/run/cdi/other.json",
    )
