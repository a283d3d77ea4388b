"""`gpuonboard facts`: saved outputs judged offline, through the real CLI."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gpuonboard.api.offline import detect_kind

REAL = Path(__file__).parents[1] / "fixtures" / "real"
DERIVED = Path(__file__).parents[1] / "fixtures" / "derived"


def cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-c", "from gpuonboard.cli import main; main()", "facts", *args]
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize(
    ("name", "kind"),
    [(p.name, None) for p in sorted(REAL.iterdir()) if p.name != "SOURCES.md"],
)
def test_every_real_fixture_is_recognised(name: str, kind: None) -> None:
    text = (REAL / name).read_text()
    expected = {
        # first prefix that matches wins: the longer nvidia-smi-* prefixes before "nvidia-smi"
        "nvidia-smi-topo": "nvidia_topo",
        "nvidia-smi-nvlink-e": "nvidia_nvlink_errors",
        "nvidia-smi-nvlink": "nvidia_nvlink",
        "nvidia-smi-L__": "nvidia_smi_list",
        "nvidia-smi-query-gpu-sampler": None,  # gpu_benchmark's headerless sampler log
        "nvidia-smi": "nvidia_smi",
        "lscpu": "lscpu",
        "free": "free",
        "df-h": "df",
        "df-P-B1": "df",
        "lsblk": "lsblk",
        "nvcc": "nvcc",
        "nproc": None,  # a bare number; only the test-host profiles replay it
        "docker-info": "docker_info",
        "iperf3": "iperf3",
        "ibv_devinfo": "rdma_ports",
        "ib-sysfs": "rdma_ports",
        "dmesg": "kernel_log",
    }
    want = next(v for k, v in expected.items() if name.startswith(k))
    assert detect_kind(text) == want


def test_vendor_outputs_dir_judged_against_an_order(tmp_path: Path) -> None:
    outputs = tmp_path / "from-vendor"
    outputs.mkdir()
    shutil.copy(DERIVED / "nvidia-smi-q-x__a100-sxm4-80gb__4gpu__derived.xml", outputs / "smi.xml")
    shutil.copy(REAL / "nvidia-smi-topo-m__h200__8gpu-10nic.txt", outputs / "topo.txt")
    shutil.copy(REAL / "free__ubuntu-18.04-vm.txt", outputs / "free.txt")
    order = tmp_path / "order.yml"
    order.write_text("order:\n  gpu_model: A100 80GB SXM\n  gpu_count: 8\n  ram: 512GB\n")
    r = cli(tmp_path, str(outputs), "--order", str(order), "--json")
    assert r.returncode == 1, r.stderr
    doc = json.loads(r.stdout)
    rules = {x["name"]: x for x in doc["rules"]}
    assert rules["gpu_count"]["actual"] == "4" and rules["gpu_count"]["verdict"] == "fail"
    assert rules["ram"]["verdict"] == "fail" and rules["gpu_model"]["verdict"] == "pass"
    assert doc["facts"]["summary"]["gpu_count"] == 4
    assert doc["facts"]["gpu"]["gpus"][0]["name"] == "NVIDIA A100-SXM4-80GB"
    assert doc["facts"]["topology"]["gpus"][:2] == ["GPU0", "GPU1"]


def test_health_rules_without_an_order_and_table_output(tmp_path: Path) -> None:
    src = REAL / "nvidia-smi-q__a10__1gpu__driver535.129.03.txt"
    r = cli(tmp_path, str(src))
    assert r.returncode == 1
    assert "memory_repair" in r.stdout and "FAIL" in r.stdout


def test_unrecognised_or_missing_files_are_one_sentence(tmp_path: Path) -> None:
    junk = tmp_path / "notes.txt"
    junk.write_text("hello from the vendor\n")
    r = cli(tmp_path, str(junk))
    assert r.returncode == 2
    assert r.stderr.startswith(f"error: {junk}: not a recognised command output")
    assert len(r.stderr.strip().splitlines()) == 1
    r = cli(tmp_path, str(tmp_path / "nope.xml"))
    assert r.returncode == 2
    assert (
        r.stderr.strip()
        == f"error: {tmp_path / 'nope.xml'}: cannot read this file (No such file or directory)."
    )
    r = cli(tmp_path)  # Invoke's own parser answers a missing positional argument
    assert r.returncode != 0 and "did not receive required positional arguments: 'paths'" in r.stderr


def test_saved_free_b_is_read_as_bytes(tmp_path: Path) -> None:
    """`free -b` saved for `gpuonboard facts`: by its name, or by a total no box has in KiB."""
    from gpuonboard.facts.memory import free_as_kib, free_unit, parse_free

    text = (REAL / "free-b__h200-vm.txt").read_text()
    assert free_unit("free-b__h200-vm.txt", text) == 1 == free_unit("out.txt", text)
    small = (REAL / "free__ubuntu-18.04-vm.txt").read_text()
    assert free_unit("free.txt", small) == 1024 and free_unit("free -b.txt", small) == 1
    kib = parse_free(free_as_kib("out.txt", text))
    assert (kib.total_bytes, kib.available_bytes, kib.swap_total_bytes) == (135148564480, 134617243648, 0)
    outputs = tmp_path / "saved"
    outputs.mkdir()
    shutil.copy(REAL / "free-b__h200-vm.txt", outputs / "mem.txt")
    r = cli(tmp_path, str(outputs), "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["facts"]["summary"]["ram_bytes"] == 135148564480


def test_saved_free_m_is_converted(tmp_path: Path) -> None:
    """`free -m` saved for `gpuonboard facts`: read in MiB (it was refused), named or not."""
    kib = (DERIVED / "free-k__h200-vm__derived.txt").read_text()
    import re

    mib = re.sub(r"(?m)(?<=\s)\d+(?=\s|$)", lambda m: str(int(m.group()) // 1024), kib)  # free -m of it
    for name in ("free -m.txt", "mem.txt"):
        outputs = tmp_path / name.replace(" ", "_")
        outputs.mkdir()
        (outputs / name).write_text(mib)
        r = cli(tmp_path, str(outputs / name), "--json")
        assert r.returncode == 0, r.stdout + r.stderr
        total = json.loads(r.stdout)["facts"]["memory"]["total_bytes"]
        assert abs(total - 135148564480) < 2**20, total
