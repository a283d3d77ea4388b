"""GPU health and driver/container compatibility over real SSH, on boxes replaying real captures."""

from __future__ import annotations

from typing import Any

from conftest import Project, host_entry

from gpuonboard.testing import TestHostPool

H100_ORDER = {"gpu_model": "H100 80GB", "gpu_count": 8, "vram": "80GB"}


def check(
    project: Project, pool: TestHostPool, name: str, **extra: Any
) -> tuple[int, dict[str, dict[str, str]]]:
    project.write_inventory({name: host_entry(pool.hosts[name], pool, **extra)})
    r = project.cli("check", "--host", name)
    assert "Traceback" not in r.stdout + r.stderr
    return r.returncode, project.rules(name)


def test_healthy_8gpu_nvlink_box_has_no_failed_health_check(project: Project, pool: TestHostPool) -> None:
    code, rules = check(project, pool, "good")
    assert code == 0
    health = ["ecc_mode", "ecc_uncorrectable", "pcie_link", "power_limit", "throttling"]
    assert all(rules[n]["verdict"] == "pass" for n in [*health, "temperature", "foreign_processes"])
    # the replayed -q -x has MIG on every GPU: <remapped_rows>N/A</remapped_rows>, not read
    assert rules["memory_repair"]["verdict"] == "unverified"
    assert "MIG mode on all 8 GPUs" in rules["memory_repair"]["actual"]
    assert rules["interconnect"]["verdict"] == "pass"


def test_throttling_box_fails_with_the_active_reasons(project: Project, pool: TestHostPool) -> None:
    code, rules = check(project, pool, "throttled", order=H100_ORDER)
    assert code == 1
    assert rules["throttling"]["verdict"] == "fail"
    assert rules["throttling"]["actual"].startswith("GPU 0: hw_slowdown, hw_power_brake_slowdown; GPU 1:")
    assert "cooling and power" in rules["throttling"]["detail"]
    # the real capture is the -q text form: the probe's fallback parsed all 8 GPUs
    assert rules["gpu_count"]["actual"] == "8"
    assert rules["gpu_model"]["verdict"] == "pass"


def test_foreign_process_on_the_gpu_fails(project: Project, pool: TestHostPool) -> None:
    code, rules = check(project, pool, "busy", order={"gpu_model": "T4", "gpu_count": 1, "vram": "15GB"})
    assert code == 1
    fp = rules["foreign_processes"]
    assert fp["verdict"] == "fail"
    assert fp["actual"] == "GPU 0: pid 5762 python (1005 MiB); GPU 0: pid 675 /usr/lib/xorg/Xorg (22 MiB)"
    assert rules["virtualization"]["actual"] == "Pass-Through"


def test_pending_row_remap_fails(project: Project, pool: TestHostPool) -> None:
    code, rules = check(project, pool, "remap", order={"gpu_model": "A10", "gpu_count": 1})
    assert code == 1
    assert rules["memory_repair"]["verdict"] == "fail"
    assert rules["memory_repair"]["actual"] == (
        "GPU 0: row remap pending; GPU 0: 4 row(s) remapped after uncorrectable errors"
    )


def test_old_driver_on_consumer_card_runs_2408_only_through_minor_version_compat(
    project: Project, pool: TestHostPool
) -> None:
    rtx = {"gpu_model": "RTX 4090", "gpu_count": 1, "vram": "24GB"}
    image = {"container_image": "nvcr.io/nvidia/pytorch:24.08-py3", "state_dir": "/nonexistent"}
    code, rules = check(project, pool, "rtx", order=rtx, vars=image)
    assert code == 0
    ngc = rules["ngc_driver"]
    assert ngc["verdict"] == "warn" and "525.60.13" in ngc["detail"]
    assert ngc["expected"].startswith(">= 560 for 24.08 (CUDA 12.6")
    assert "consumer" in ngc["actual"] and "535.86.05" in ngc["actual"]
    assert "804" in ngc["detail"] and "23.10" in ngc["detail"]


def test_datacenter_driver_below_forward_compat_floor_runs_through_minor_version_compat(
    project: Project, pool: TestHostPool
) -> None:
    # 535.54.03 is on R535, but 24.08's forward compatibility needs 535.86 or later: the container
    # starts on the host's CUDA 12.2 driver (minor version compatibility), with a warning
    image = {"container_image": "nvcr.io/nvidia/pytorch:24.08-py3", "state_dir": "/nonexistent"}
    code, rules = check(project, pool, "good", vars=image)
    assert code == 0
    assert rules["ngc_driver"]["verdict"] == "warn"
    assert (
        rules["ngc_driver"]["actual"]
        == "535.54.03 on datacenter GPU (NVIDIA A100-SXM4-80GB): minor version compat"
    )


def test_thresholds_are_overridable_from_inventory_vars(project: Project, pool: TestHostPool) -> None:
    vars_ = {"gpu_health": {"temperature_warn": 1}, "container_image": "nvcr.io/nvidia/pytorch:23.10-py3"}
    code, rules = check(project, pool, "good", vars=vars_)
    assert rules["temperature"]["verdict"] == "warn" and rules["temperature"]["expected"] == "< 1 C"
    assert code == 0
    bad = {"gpu_health": {"temperature_wran": 1}}
    project.write_inventory({"good": host_entry(pool.hosts["good"], pool, vars=bad)})
    r = project.cli("check", "--host", "good")
    assert r.returncode == 2  # refused before connecting
    assert r.stderr.strip().endswith(
        "step 'gpu_health' for host 'good': unknown gpu_health threshold 'temperature_wran' (known:"
        " temperature_warn, temperature_fail, power_cap_warn, power_cap_fail)."
    )
