"""`check` on a test host (real sshd, the real fact probe) whose nvidia-smi fails or cannot read a
GPU: the report quotes nvidia-smi and advises by cause; an unreadable GPU fails as a fault.

The simulated nvidia-smi prints real outputs only: the "GPU is lost" line users posted
(github.com/JosephKJ/OWOD/issues/81), and the real 8 x A40 table whose GPU 4 reads ERR!
(tests/fixtures/public), as an nvidia-smi whose -q / --query-gpu calls fail (the probe then
falls back to the plain table).
"""

from __future__ import annotations

from pathlib import Path

from conftest import Project, host_entry

from gpuonboard.testing import add_executable
from gpuonboard.testing.hosts import TestHostPool

A40_ERR = (
    Path(__file__).parents[1] / "fixtures" / "public" / "nvidia-smi__a40__8gpu__driver525.60.13__gpu4-err.txt"
)
LOST = (
    "Unable to determine the device handle for GPU 0000:02:00.0: GPU is lost."
    " Reboot the system to recover this GPU"
)


def _host(pool: TestHostPool, name: str, script: str) -> None:
    h = pool.hosts.get(name) or pool.add(name, "no-driver")
    add_executable(h.bin_dir, "nvidia-smi", script)


def test_a_lost_gpu_is_quoted_and_advised_not_install_the_driver(
    project: Project, pool: TestHostPool
) -> None:
    _host(pool, "gtLost", f"#!/bin/sh\necho '{LOST}'\nexit 15\n")
    project.write_inventory({"gtLost": host_entry(pool.hosts["gtLost"], pool)})
    r = project.cli("check", "--host", "gtLost", timeout=120)
    assert r.returncode == 1, r.stdout + r.stderr
    rules = project.rules("gtLost")
    health = rules["gpu_health"]
    assert (health["verdict"], health["actual"]) == (
        "fail",
        f"nothing checked: nvidia-smi failed (exit code 15): {LOST}",
    )
    assert "Xid" in health["detail"] and "install the NVIDIA driver" not in health["detail"]
    assert rules["nvidia_driver"]["actual"] == f"nvidia-smi failed ({LOST})"
    assert "Xid" in rules["nvidia_driver"]["detail"]


def test_the_a40_box_with_an_err_gpu_fails_as_a_fault(project: Project, pool: TestHostPool) -> None:
    table = A40_ERR.read_text()
    assert "'" not in table
    _host(pool, "gtA40", f"#!/bin/sh\n[ \"$#\" -eq 0 ] || exit 2\ncat <<'EOF'\n{table}EOF\n")
    order = {"gpu_model": "8 x A40 48GB", "gpu_count": 8, "vram": "48GB"}
    project.write_inventory({"gtA40": host_entry(pool.hosts["gtA40"], pool, order=order)})
    r = project.cli("check", "--host", "gtA40", timeout=120)
    assert r.returncode == 1, r.stdout + r.stderr
    rules = project.rules("gtA40")
    model = rules["gpu_model"]
    assert (model["verdict"], model["actual"]) == (
        "fail",
        "7 x NVIDIA A40, GPU 4 unreadable (nvidia-smi reads ERR!)",
    )
    assert "not in the name" not in model["detail"]
    assert (rules["gpu_count"]["verdict"], rules["gpu_count"]["actual"]) == ("fail", "8 (1 unreadable)")
    assert rules["vram"]["verdict"] == "pass" and "of the 7 GPUs read" in rules["vram"]["actual"]
    assert rules["gpu_health"]["actual"] == "GPU 4 (00000000:83:00.0): nvidia-smi reads ERR!"
    assert rules["ecc_mode"]["actual"] == "Enabled on all 7 GPUs read (GPU 4 unreadable)"
