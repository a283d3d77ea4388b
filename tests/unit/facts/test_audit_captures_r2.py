"""The truth audit's second round (its part of tests/unit/facts/audit_captures.py): each value
below was read off the capture by hand, not copied from the parser's output. R2-F1..F4 are the
findings of that round; each test named after one fails without its fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api import offline
from gpuonboard.connection.gather import parse_facts
from gpuonboard.facts import cpu
from gpuonboard.facts.cpu import CpuInfo, parse_lscpu
from gpuonboard.facts.disks import Mount, parse_df
from gpuonboard.facts.kernel_log import parse_kernel_log
from gpuonboard.facts.memory import parse_free
from gpuonboard.facts.nvidia_smi import parse_any
from gpuonboard.facts.nvlink import parse_nvlink_status
from gpuonboard.steps.checks.fabric_health import rule_xid
from gpuonboard.steps.checks.host_rules import rule_cpu

FIXTURES = Path(__file__).parents[2] / "fixtures"
GB10_LSCPU = "real/lscpu__gb10-dgx-spark-cortex-x925-a725__aarch64-2-core-types.txt"
ZH_LSCPU = "real/lscpu__zh-cn__i7-8550u__util-linux-nested.txt"
GB10_SMI = "real/nvidia-smi__gb10__1gpu__driver580.95.05__memory-not-supported.txt"


def read(name: str) -> str:
    return (FIXTURES / name).read_text()


def test_r2_f1_gb10_counts_the_cores_of_both_cpu_types() -> None:
    # "Model name: Cortex-X925 ... Core(s) per socket: 10 / Socket(s): 1", then the same block
    # for "Cortex-A725": 20 cores, no SMT (CPU(s): 20, Thread(s) per core: 1)
    info = parse_lscpu(read(GB10_LSCPU))
    assert info == CpuInfo("aarch64", "Cortex-X925 + Cortex-A725", 1, 20, 1, 20, 20)


def test_r2_f1_gb10_cpu_order_passes(tmp_path: Path) -> None:
    # ordered 20 cores: read as 10 cores / 20 threads it warned "met only by counting hyperthreads"
    (tmp_path / "order.yml").write_text("cpu_cores: 20\n")
    facts = parse_facts(offline.load_outputs([str(FIXTURES / GB10_LSCPU)]))
    check = rule_cpu(offline.load_order(str(tmp_path / "order.yml")), facts)
    assert (check.verdict, check.actual) == ("pass", "20 cores / 20 threads (Cortex-X925 + Cortex-A725)")


def test_r2_f2_lscpu_in_chinese() -> None:
    # "架构：x86_64", "CPU:8", "每个核的线程数：2", "每个座的核数：4", "座：1" (full-width colons)
    text = read(ZH_LSCPU)
    info = parse_lscpu(text)
    assert info == CpuInfo("x86_64", "Intel(R) Core(TM) i7-8550U CPU @ 1.80GHz", 1, 4, 2, 8, 4)
    assert offline.detect_kind(text) == "lscpu"


def test_r2_f2_label_table_is_one_field_per_label() -> None:
    labels = cpu.lscpu_labels()
    fields = {"Architecture", "CPU(s)", "Off-line CPU(s) list", "Model name", "Thread(s) per core"}
    fields |= {"Core(s) per socket", "Core(s) per cluster", "Socket(s)", "Cluster(s)"}
    assert set(labels.values()) <= fields
    # util-linux po/de.po and po/zh_CN.po, as the real captures print them
    assert labels["Kern(e) pro Sockel"] == "Core(s) per socket"
    assert (labels["架构"], labels["座"], labels["CPU"]) == ("Architecture", "Socket(s)", "CPU(s)")
    assert not fields & labels.keys()  # no English label is re-read as another field


def test_raspberry_pi_clusters() -> None:
    # "Core(s) per cluster: 4", "Socket(s): -", "Cluster(s): 1"
    info = parse_lscpu(read("real/lscpu__raspberry-pi-4b-cortex-a72__aarch64-clusters.txt"))
    assert info == CpuInfo("aarch64", "Cortex-A72", None, None, 1, 4, 4)


def test_r2_f3_memory_not_supported_is_no_value_not_a_parse_failure() -> None:
    # "| Not Supported          |" in Memory-Usage (unified memory); "11W /  N/A" power
    r = parse_any(read(GB10_SMI))
    assert (r.source, r.driver_version, r.cuda_version, len(r.gpus), r.complete) == (
        "table",
        "580.95.05",
        "13.0",
        1,
        True,
    )
    g = r.gpus[0]
    assert (g.name, g.pci_bus_id, g.memory_total_mib, g.memory_used_mib) == (
        "NVIDIA GB10",
        "0000000F:01:00.0",
        None,
        None,
    )
    assert (g.power_draw_w, g.power_limit_w, g.utilization_gpu_pct, g.temperature_c) == (11.0, None, 10, 45)
    assert [(p.pid, p.type, p.used_memory_mib) for p in g.processes] == [
        (4174, "G", 84),
        (4399, "G", 125),
        (4761, "G", 273),
    ]
    assert r.warnings == ()


def test_gb10_free_unified_memory() -> None:
    info = parse_free(read("real/free__gb10-dgx-spark__unified-memory.txt"))
    assert (info.total_bytes, info.available_bytes, info.swap_total_bytes) == (
        125513720 * 1024,
        120425308 * 1024,
        16777212 * 1024,
    )


# file, (source, driver, cuda, attached, GPUs, complete), (name, MiB total, MiB used, bus id,
# power limit W, default W, persistence, driver model)
SMI = [
    # MIG on: GPU-Util "N/A", ECC column "On" (no count), 4 MIG devices, 3 processes in GI 2
    (
        "real/nvidia-smi__h100-80gb-hbm3-mig__1gpu-4mig__driver590.48.01__load.txt",
        ("table", "590.48.01", "13.1", None, 1, True),
        ("NVIDIA H100 80GB HBM3", 81559, 11125, "00000000:00:09.0", 700.0, None, "Enabled", None),
    ),
    (
        "real/nvidia-smi-q__h100-80gb-hbm3-mig__1gpu-4mig__driver590.48.01__load.txt",
        ("text", "590.48.01", "13.1", 1, 1, True),
        ("NVIDIA H100 80GB HBM3", 81559, 11125, "00000000:00:09.0", 700.0, 700.0, "Enabled", None),
    ),
    (
        "real/nvidia-smi-q__h200__1gpu__driver590.48.01__load.txt",
        ("text", "590.48.01", "13.1", 1, 1, True),
        ("NVIDIA H200", 143771, 32362, "00000000:83:00.0", 700.0, 700.0, "Enabled", None),
    ),
    (
        "real/nvidia-smi-q__l40s__1gpu__driver595.80__nvenc-load.txt",
        ("text", "595.80", "13.2", 1, 1, True),
        ("NVIDIA L40S", 46068, 1235, "00000000:01:00.0", 350.0, 350.0, "Disabled", None),
    ),
    (
        "real/nvidia-smi-query-gpu__l40s__1gpu__driver595.80__nvenc-load.csv",
        ("csv", "595.80", None, 1, 1, True),
        ("NVIDIA L40S", 46068, 1235, "00000000:01:00.0", 350.0, 350.0, "Disabled", None),
    ),
    (
        "real/nvidia-smi-q__geforce-rtx-4080-super__1gpu__driver595.71.05__nvenc-load.txt",
        ("text", "595.71.05", "13.2", 1, 1, True),
        ("NVIDIA GeForce RTX 4080 SUPER", 16376, 1474, "00000000:01:00.0", 320.0, 320.0, "Disabled", None),
    ),
    (
        "real/nvidia-smi__geforce-rtx-4080-super__1gpu__driver595.71.05__idle.txt",
        ("table", "595.71.05", "13.2", None, 1, True),
        ("NVIDIA GeForce RTX 4080 ...", 16376, 596, "00000000:01:00.0", 320.0, None, "Disabled", None),
    ),
    # Windows: persistence N/A, driver model WDDM, average power N/A (instantaneous 97.49 W)
    (
        "real/nvidia-smi-q__geforce-rtx-2080-super__1gpu__driver591.86__windows-wddm.txt",
        ("text", "591.86", "13.1", 1, 1, True),
        ("NVIDIA GeForce RTX 2080 SUPER", 8192, 1296, "00000000:0C:00.0", 250.0, 250.0, None, "WDDM"),
    ),
    (
        "real/nvidia-smi__geforce-rtx-2080-super__1gpu__driver591.86__windows-wddm-load.txt",
        ("table", "591.86", "13.1", None, 1, True),
        ("NVIDIA GeForce RTX 2080 ...", 8192, 1296, "00000000:0C:00.0", 250.0, None, None, "WDDM"),
    ),
    # MIG on, 5 "MIG Device" sections (each with its own ECC Errors / Shared FB Memory Usage)
    # before the GPU's own FB Memory Usage (143771 MiB, 16959 used)
    (
        "real/nvidia-smi-q__h200-mig__1gpu-5mig__driver590.48.01__load.txt",
        ("text", "590.48.01", "13.1", 1, 1, True),
        ("NVIDIA H200", 143771, 16959, "00000000:83:00.0", 700.0, 700.0, "Enabled", None),
    ),
    (
        "real/nvidia-smi-q__geforce-rtx-4090__8gpu__driver535.154.05__3-idle-gen1.txt",
        ("text", "535.154.05", "12.2", 8, 8, True),
        ("NVIDIA GeForce RTX 4090", 24564, 20328, "00000000:01:00.0", 450.0, 450.0, "Enabled", None),
    ),
    (
        "real/nvidia-smi-q__h100-80gb-hbm3__8gpu__driver535.183.01__power-brake-active.txt",
        ("text", "535.183.01", "12.2", 8, 8, True),
        ("NVIDIA H100 80GB HBM3", 81559, 0, "00000000:53:00.0", 700.0, 700.0, "Enabled", None),
    ),
]


@pytest.mark.parametrize(("name", "report", "gpu0"), SMI, ids=[c[0].split("/")[1][:60] for c in SMI])
def test_nvidia_smi_capture(name: str, report: tuple[object, ...], gpu0: tuple[object, ...]) -> None:
    r = parse_any(read(name))
    assert (r.source, r.driver_version, r.cuda_version, r.attached_gpus, len(r.gpus), r.complete) == report
    g = r.gpus[0]
    got = (g.name, g.memory_total_mib, g.memory_used_mib, g.pci_bus_id, g.power_limit_w)
    assert (*got, g.default_power_limit_w, g.persistence_mode, g.driver_model) == gpu0
    assert not g.faults and not g.cell_faults


def test_mig_table_reads_no_utilisation_and_no_ecc_count() -> None:
    g = parse_any(read("real/nvidia-smi__h100-80gb-hbm3-mig__1gpu-4mig__driver590.48.01__load.txt")).gpus[0]
    assert (g.mig_mode, g.ecc_mode, g.ecc_volatile_uncorrectable, g.utilization_gpu_pct) == (
        "Enabled",
        "Enabled",
        None,
        None,
    )
    assert [(p.pid, p.used_memory_mib) for p in g.processes] == [(21180, 2296), (21181, 1272), (21198, 7484)]


def test_h100_power_brake_nested_under_hw_slowdown() -> None:
    # GPU 00000000:75:00.0: "HW Slowdown : Not Active" but its "HW Power Brake Slowdown : Active",
    # "SW Power Cap : Active", "SW Thermal Slowdown : Active"; 120 replays on GPU 0
    gpus = parse_any(
        read("real/nvidia-smi-q__h100-80gb-hbm3__8gpu__driver535.183.01__power-brake-active.txt")
    ).gpus
    assert set(gpus[2].clock_event_reasons) == {
        "sw_power_cap",
        "hw_power_brake_slowdown",
        "sw_thermal_slowdown",
    }
    assert [g.pcie_replays for g in gpus[:3]] == [120, 111, 58]


def test_h200_nvlink_18_links() -> None:
    status = parse_nvlink_status(read("real/nvidia-smi-nvlink-s__h200__1gpu-18links__driver590.48.01.txt"))
    (gpu,) = status.gpus
    assert (gpu.name, len(gpu.links), {link.speed_gbps for link in gpu.links}) == (
        "NVIDIA H200",
        18,
        {26.562},
    )


def test_jc_df_and_free() -> None:
    kib = 1024
    mounts = parse_df(read("real/df__ubuntu-18.04-vm__snap-loops.txt"))
    root = next(m for m in mounts if m.mountpoint == "/")
    assert root == Mount("/dev/sda2", 20508240 * kib, 5748028 * kib, 13695408 * kib, "/")
    assert len(mounts) == 18
    human = parse_df(read("real/df-h__centos-7.7-vm__lvm-root.txt"))
    root = next(m for m in human if m.mountpoint == "/")
    assert (root.device, root.size_bytes, root.avail_bytes) == (
        "/dev/mapper/centos-root",
        17 * 2**30,
        16 * 2**30,
    )
    free = parse_free(read("real/free-h__ubuntu-18.04-vm.txt"))  # 1.9G total, 1.5G available, 2.0G swap
    assert free.total_bytes is not None and free.available_bytes is not None
    assert (round(free.total_bytes / 2**30, 1), round(free.available_bytes / 2**30, 1)) == (1.9, 1.5)
    assert free.swap_total_bytes == 2 * 2**30


def test_r2_f4_reset_required_without_xid_fails_gpu_xid() -> None:
    # "NVRM: nvAssertOkFailedNoLog: Assertion failed: Reset required [NV_ERR_RESET_REQUIRED]
    # (0x00000062)", no Xid line: it passed as "no Xid in the kernel log"
    text = read("real/dmesg-T__nv-err-reset-required-no-xid__gsp.txt")
    log = parse_kernel_log(text)
    assert [(e.kind, e.fault, e.pci) for e in log.events] == [("nvrm", "reset_required", "")]
    check = rule_xid(log.events, True, "", [(0, "00000000:B3:00.0")], log.covers_boot)
    assert check.verdict == "fail"
    assert "GPU requires a reset (NV_ERR_RESET_REQUIRED) -> reset_gpu" in check.actual
    assert offline.detect_kind(text) == "kernel_log"
