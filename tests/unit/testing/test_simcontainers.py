"""The simulator's container stand-ins (testing.simcontainers), run by a real `sh`: the image's
python answers the container step's GPU check only when the container lists the GPUs the check
expects, and always says what is simulated; sim.up owns the inventory's registry_mirror."""

from __future__ import annotations

import subprocess
from pathlib import Path

from gpuonboard.steps.container import _GPU_CHECK_OK, gpu_python_check
from gpuonboard.testing import sim
from gpuonboard.testing.simcontainers import nvidia_smi_standin, python_standin

GPUS = "GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-a)\nGPU 1: NVIDIA A100-SXM4-80GB (UUID: GPU-b)"


def _run(tmp_path: Path, listed: str, *args: str) -> subprocess.CompletedProcess[str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name, text in (("nvidia-smi", nvidia_smi_standin(listed)), ("python", python_standin(_GPU_CHECK_OK))):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin"}
    return subprocess.run(["python", *args], capture_output=True, text=True, env=env, timeout=10)


def test_the_python_standin_passes_the_gpu_check_saying_it_is_simulated(tmp_path: Path) -> None:
    r = _run(tmp_path, GPUS, "-c", gpu_python_check(2))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == (
        "simulated: the 2 GPUs are replayed, no torch in the stand-in image (no matmul or NCCL ran)"
        f" {_GPU_CHECK_OK}"
    )


def test_the_python_standin_fails_when_the_container_lists_fewer_gpus(tmp_path: Path) -> None:
    r = _run(tmp_path, GPUS, "-c", gpu_python_check(8))
    assert r.returncode == 1 and _GPU_CHECK_OK not in r.stdout
    assert "the container lists 2 GPUs, nvidia-smi on the host 8" in r.stderr
    r = _run(tmp_path, GPUS, "-c", "print(1)")  # (anything else: no Python here)
    assert r.returncode == 2 and "no Python in this image" in r.stderr


def test_sim_up_owns_the_registry_mirror_var(tmp_path: Path) -> None:
    """A mirror from an earlier sim.up (its registry's old port, or none now) is not kept."""
    old = {"hosts": {"h1": {"vars": {"registry_mirror": "http://127.0.0.1:1/", "train_python": "/p"}}}}
    fresh = sim.sim_entry("h1", "127.0.3.1", 22, "/k", "SHA256:x", tmp_path, "http://127.0.0.1:2/")
    assert sim.merged(fresh, old)["vars"]["registry_mirror"] == "http://127.0.0.1:2/"
    assert sim.merged(fresh, old)["vars"]["train_python"] == "/p"
    none = sim.sim_entry("h1", "127.0.3.1", 22, "/k", "SHA256:x", tmp_path)
    assert "registry_mirror" not in sim.merged(none, old)["vars"]
