"""The truth audit's third round (its part of tests/unit/facts/audit_captures.py): each value
below was read off the capture by hand, not copied from the parser's output. R3-F1..F4 are the
findings of that round; each test named after one fails without its fix (R3-F1, memory repair
N/A in MIG mode, is tested in tests/unit/steps/checks/test_gpu_health_repair_unread.py)."""

from __future__ import annotations

import pytest

from gpuonboard.facts.disks import parse_lsblk_json
from gpuonboard.facts.nvidia_smi import GpuInfo, parse_any
from gpuonboard.facts.nvlink import parse_nvlink_status
from gpuonboard.facts.topo import interconnect, parse_topo
from gpuonboard.steps.base import Check
from gpuonboard.steps.checks import gpu_health

from .audit_captures import read, saved

LOST = "nvidia-smi__rtx-pro-6000-blackwell__4gpu-1-lost__driver610.57.04.txt"
ADDRESSING = "nvidia-smi-q__geforce-rtx-4090__8gpu__driver535.154.05__addressing-mode-unknown-error.txt"
ECC_VIEW = "nvidia-smi-q-d-ecc__a100-pcie-40gb__2gpu__driver555.42.02.txt"


def checks(*names: str) -> dict[str, Check]:
    facts = saved(*names)
    return {c.name: c for c in gpu_health.evaluate(facts)}


def test_r3_f2_gpu_lost_with_its_index_before_the_table() -> None:
    # "Unable to determine the device handle for GPU1: 0000:34:00.0: Unknown Error" over a table
    # of GPUs 0, 2 and 3 (R610 prints the index before the address): GPU 1 was not seen at all
    c = checks(LOST)
    health = c["gpu_health"]
    assert health.verdict == "fail"
    assert health.actual == "GPU 1 (0000:34:00.0): nvidia-smi reads no device handle: Unknown Error"
    facts = saved(LOST)
    assert facts.gpu is not None
    assert [(g.index, g.pci_bus_id) for g in facts.gpu.gpus] == [
        (0, "00000000:16:00.0"),
        (1, "0000:34:00.0"),
        (2, "00000000:AC:00.0"),
        (3, "00000000:CA:00.0"),
    ]


def test_lost_gpu_table_values() -> None:
    r = parse_any(read(LOST))
    assert (r.source, r.driver_version, r.cuda_version, len(r.gpus)) == ("table", "610.57.04", "13.3", 3)
    g = r.gpus[0]
    figures = (g.memory_used_mib, g.memory_total_mib, g.power_limit_w, g.temperature_c)
    assert figures == (88450, 97887, 300.0, 87)
    assert [(p.pid, p.name, p.used_memory_mib) for p in g.processes] == [(6194, "VLLM::Worker_TP1", 88438)]


def test_r3_f3_addressing_mode_unknown_error_is_no_sensor_fault() -> None:
    # "Addressing Mode : Unknown Error" on all 8 GPUs of a healthy 8 x RTX 4090 box (R535): not a
    # sensor, no check reads it; it warned "a failing fan or sensor"
    g = parse_any(read(ADDRESSING)).gpus[0]
    assert g.cell_faults == ("Addressing Mode reads Unknown Error",) and not g.faults
    row = checks(ADDRESSING)["sensor_faults"]
    assert row.verdict == "pass"
    assert row.actual.startswith("every sensor read; not read (no sensor, no check uses it): GPU 0: Addr")


def test_r3_f3_a_real_sensor_fault_still_warns() -> None:
    # the fan cell of a table reading ERR! beside the no-sensor field: the sensor warns
    gpus = [GpuInfo(index=0, name="x", cell_faults=("Addressing Mode reads Unknown Error",))]
    gpus.append(GpuInfo(index=1, name="x", cell_faults=("fan sensor reads ERR!",)))
    gpus.append(GpuInfo(index=2, name="x", cell_faults=("temperature.gpu reads [Unknown Error]",)))
    row = gpu_health.rule_sensor_faults(gpus)
    assert row is not None and row.verdict == "warn"
    assert row.actual.startswith("GPU 1: fan sensor reads ERR!; GPU 2: temperature.gpu reads [Unknown Error]")


def test_r3_f4_a_q_d_ecc_view_names_no_model_so_nothing_is_excused() -> None:
    # `nvidia-smi -q -d ECC`: ECC Mode Current Enabled on both GPUs, every DRAM/SRAM count 0, no
    # Product Name, no MIG mode, no row remapping: it said "no ECC on these GPUs", "nothing
    # pending" and "no MIG on this model"
    c = checks(ECC_VIEW)
    assert (c["ecc_mode"].verdict, c["ecc_mode"].actual) == ("pass", "Enabled on all 2 GPUs")
    assert (c["ecc_uncorrectable"].verdict, c["ecc_uncorrectable"].actual) == ("pass", "0")
    assert c["memory_repair"].verdict == "unverified"
    assert (c["mig_mode"].verdict, c["mig_mode"].actual) == ("unverified", "not reported for all 2 GPUs")


def test_r3_f4_the_same_box_with_the_table_is_named() -> None:
    # with the table beside it the GPUs are named A100-PCIE-40GB: a data-centre GPU
    c = checks("nvidia-smi__a100-pcie-40gb__2gpu__driver555.42.02.txt", ECC_VIEW)
    assert (c["ecc_mode"].verdict, c["ecc_mode"].actual) == ("pass", "Enabled on all 2 GPUs")
    assert c["memory_repair"].verdict == "unverified"


# file, (source, driver, cuda, GPUs), GPU 0: (name, MiB total, MiB used, bus id, power limit W,
# persistence, ECC mode)
SMI = [
    (
        "nvidia-smi-q__titan-v__1gpu__driver560.35.03.txt",
        ("text", "560.35.03", "12.6", 1),
        ("NVIDIA TITAN V", 12288, 290, "00000000:01:00.0", 250.0, "Disabled", None),
    ),
    (
        "nvidia-smi-q__geforce-rtx-4090__8gpu__driver535.154.05__2-busy-6-gen1.txt",
        ("text", "535.154.05", "12.2", 8),
        ("NVIDIA GeForce RTX 4090", 24564, 0, "00000000:01:00.0", 450.0, "Enabled", "Disabled"),
    ),
    (
        "nvidia-smi-q__geforce-rtx-4090__8gpu__driver535.154.05__2-busy-later.txt",
        ("text", "535.154.05", "12.2", 8),
        ("NVIDIA GeForce RTX 4090", 24564, 0, "00000000:01:00.0", 450.0, "Enabled", "Disabled"),
    ),
    (
        ADDRESSING,
        ("text", "535.154.05", "12.2", 8),
        ("NVIDIA GeForce RTX 4090", 24564, 22078, "00000000:01:00.0", 450.0, "Enabled", "Disabled"),
    ),
    (
        "nvidia-smi__h100-pcie__2gpu__driver555.42.02.txt",
        ("table", "555.42.02", "12.5", 2),
        ("NVIDIA H100 PCIe", 81559, 1, "00000000:C2:00.0", 350.0, "Disabled", "Enabled"),
    ),
    (
        "nvidia-smi__a100-pcie-40gb__2gpu__driver555.42.02.txt",
        ("table", "555.42.02", "12.5", 2),
        ("NVIDIA A100-PCIE-40GB", 40960, 1, "00000000:12:00.0", 250.0, "Disabled", "Enabled"),
    ),
    (
        "nvidia-smi-query-gpu__a100-pcie-40gb__2gpu__driver555.42.02.csv",
        ("csv", None, None, 2),
        ("NVIDIA A100-PCIE-40GB", 40960, 1, "00000000:12:00.0", None, None, None),
    ),
]


@pytest.mark.parametrize(("name", "report", "gpu0"), SMI, ids=[c[0][:60] for c in SMI])
def test_nvidia_smi_capture(name: str, report: tuple[object, ...], gpu0: tuple[object, ...]) -> None:
    r = parse_any(read(name))
    assert (r.source, r.driver_version, r.cuda_version, len(r.gpus)) == report
    assert r.complete
    g = r.gpus[0]
    got = (g.name, g.memory_total_mib, g.memory_used_mib, g.pci_bus_id, g.power_limit_w)
    assert (*got, g.persistence_mode, g.ecc_mode) == gpu0


def test_4090_boxes_processes_by_hand() -> None:
    # two python jobs on GPUs 1 and 4 (21602 / 23632 MiB); on the other box GPUs 0, 3 and 7
    busy = parse_any(read("nvidia-smi-q__geforce-rtx-4090__8gpu__driver535.154.05__2-busy-6-gen1.txt")).gpus
    assert [(g.index, [(p.pid, p.used_memory_mib) for p in g.processes]) for g in busy if g.processes] == [
        (1, [(1285135, 21602)]),
        (4, [(1292330, 23632)]),
    ]
    other = parse_any(read(ADDRESSING)).gpus
    assert [g.pci_bus_id for g in other][:3] == ["00000000:01:00.0", "00000000:21:00.0", "00000000:41:00.0"]
    assert [(g.index, g.processes[0].pid) for g in other if g.processes][:2] == [(0, 2180559), (3, 2163744)]


def test_titan_v_560_graphics_processes() -> None:
    g = parse_any(read("nvidia-smi-q__titan-v__1gpu__driver560.35.03.txt")).gpus[0]
    assert [(p.pid, p.type, p.name, p.used_memory_mib) for p in g.processes] == [
        (100607, "G", "/usr/lib/xorg/Xorg", 142),
        (100838, "G", "/usr/bin/gnome-shell", 33),
        (101815, "G", "/opt/test", 111),
    ]


def test_h100_pcie_bridged_topology_and_links() -> None:
    # two H100 PCIe joined by NVLink bridges: "NV12" both ways, CPUs 32-63,96-127, NUMA 1;
    # `nvlink -s`: 12 of 18 links at 26.562 GB/s, links 4, 5, 10, 11, 16, 17 <inactive>
    topo = parse_topo(read("nvidia-smi-topo-m__h100-pcie__2gpu-nv12__driver555.42.02.txt"))
    assert topo.gpus == ("GPU0", "GPU1") and topo.links[("GPU0", "GPU1")] == "NV12"
    assert (topo.cpu_affinity["GPU1"], topo.numa_affinity["GPU1"]) == ("32-63,96-127", "1")
    assert interconnect(topo) == "nvlink"
    h100_links = "nvidia-smi-nvlink-s__h100-pcie__2gpu-12of18-links__driver555.42.02.txt"
    links = parse_nvlink_status(read(h100_links))
    for gpu in links.gpus:
        assert len(gpu.links) == 18
        assert [x.link for x in gpu.links if x.speed_gbps is None] == [4, 5, 10, 11, 16, 17]
    # a PCIe card's bridge is optional: no NVLink row is held against the box
    c = checks("nvidia-smi__h100-pcie__2gpu__driver555.42.02.txt", h100_links)
    assert not [k for k, v in c.items() if "nvlink" in k and v.verdict in ("fail", "warn")]


def test_a100_pcie_without_bridge_all_links_inactive() -> None:
    name = "nvidia-smi-nvlink-s__a100-pcie-40gb__2gpu-all-inactive__driver555.42.02.txt"
    s = parse_nvlink_status(read(name))
    assert [(g.index, g.name, g.note, g.links) for g in s.gpus] == [
        (0, "NVIDIA A100-PCIE-40GB", "all_inactive", ()),
        (1, "NVIDIA A100-PCIE-40GB", "all_inactive", ()),
    ]


# file -> (disk name, bytes, rotational) of every `disk`, by hand
LSBLK = [
    ("lsblk-J-b__vm-22tib-virtio-root__gpud.json", [("/dev/vda", 24189255811072, True)]),
    ("lsblk-J-b__1x-nvme-3.2tb__gpud.json", [("/dev/nvme0n1", 3200631791616, False)]),
    (
        "lsblk-J-b__md-raid1-root__lvm-raid-4x-nvme__gpud.json",
        [("/dev/sda", 1920383410176, False), ("/dev/sdb", 1920383410176, False)]
        + [(f"/dev/nvme{i}n1", 7681501126656, False) for i in (2, 0, 3, 4)]
        + [("/dev/nvme1n1", 15360950534144, False)],
    ),
]


@pytest.mark.parametrize(("name", "disks"), LSBLK, ids=[c[0][:50] for c in LSBLK])
def test_lsblk_disks(name: str, disks: list[tuple[str, int, bool]]) -> None:
    devices = parse_lsblk_json(read(name))
    got = [(d.name, d.size_bytes, d.rota) for d in devices if d.type == "disk"]
    assert sorted(got) == sorted(disks)


def test_lsblk_human_sizes_and_md_raid0() -> None:
    # `lsblk --json` without --bytes: "894.3G" NVMe disks, no ROTA column (None, never a guess)
    lvm = parse_lsblk_json(read("lsblk-J__human-sizes__8x-nvme-lvm-kubelet__gpud.json"))
    nvme = [d for d in lvm if d.type == "disk" and d.name.startswith("nvme")]  # (and a 128 GiB vda)
    assert len(nvme) == 8 and {(d.size_bytes, d.rota) for d in nvme} == {(round(894.3 * 2**30), None)}
    raid = parse_lsblk_json(read("lsblk-J__human-sizes__8x-nvme-md-raid0__gpud.json"))
    md = [d for d in raid if d.name == "md0"]
    assert len(md) == 8 and {d.mountpoints for d in md} == {("/raid",)} and {d.type for d in md} == {"raid0"}
