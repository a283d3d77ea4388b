"""The truth audit's captures we read right (tests/unit/facts/audit_captures.py): each value below
was read off the capture by hand, not copied from the parser's output."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.facts.cpu import CpuInfo, parse_lscpu
from gpuonboard.facts.disks import Mount, parse_df
from gpuonboard.facts.gpu_merge import merge
from gpuonboard.facts.infiniband import parse_ibv_devinfo
from gpuonboard.facts.kernel_log import parse_kernel_log
from gpuonboard.facts.memory import parse_free
from gpuonboard.facts.nvidia_smi import parse_any
from gpuonboard.facts.nvlink import parse_nvlink_status
from gpuonboard.facts.probe import ProbeOutput
from gpuonboard.facts.topo import interconnect, parse_topo
from gpuonboard.steps.checks.fabric_health import rule_xid
from gpuonboard.steps.checks.gpu_health import rule_power_limit

from .audit_captures import FINDINGS, PARSED_RIGHT

FIXTURES = Path(__file__).parents[2] / "fixtures"


def read(name: str) -> str:
    return (FIXTURES / name).read_text()


# file, source, driver, cuda, attached, GPUs, complete, (name, MiB total, bus id, power limit W,
# default power limit W, persistence)
SMI = [
    # 515 table of a TITAN V: persistence On, ECC cell N/A
    (
        "real/nvidia-smi__titan-v__1gpu__driver515.65.01.txt",
        ("table", "515.65.01", "11.7", None, 1, True),
        ("NVIDIA TITAN V", 12288, "00000000:AF:00.0", 250.0, None, "Enabled"),
    ),
    # WSL: 'NVIDIA-SMI 530.47' beside 'Driver Version: 531.68' (the Windows driver): the driver is 531.68
    (
        "real/nvidia-smi__geforce-rtx-3070__1gpu__driver531.68__wsl-smi530.47.txt",
        ("table", "531.68", "12.1", None, 1, True),
        ("NVIDIA GeForce RTX 3070", 8192, "00000000:2B:00.0", 220.0, None, "Enabled"),
    ),
    # R361: no CUDA version in the header, a 4-digit PCI domain, ECC on (count 0)
    (
        "real/nvidia-smi__tesla-k20m__1gpu__driver361.93.02.txt",
        ("table", "361.93.02", None, None, 1, True),
        ("Tesla K20m", 4743, "0000:82:00.0", 225.0, None, "Disabled"),
    ),
    (
        "real/nvidia-smi-q-x__a10g__1gpu__driver515.105.01__aws-passthrough.xml",
        ("xml", "515.105.01", "11.7", 1, 1, True),
        ("NVIDIA A10G", 23028, "00000000:00:1E.0", 300.0, 300.0, "Disabled"),
    ),
    (
        "real/nvidia-smi-q-x__geforce-rtx-3060__1gpu__driver570.124.04.xml",
        ("xml", "570.124.04", "12.8", 1, 1, True),
        ("NVIDIA GeForce RTX 3060", 12288, "00000000:2D:00.0", 170.0, 170.0, "Enabled"),
    ),
    # persistence N/A (WDDM-era driver numbering): not a value
    (
        "real/nvidia-smi-q-x__geforce-rtx-3080__1gpu__driver536.40.xml",
        ("xml", "536.40", "12.2", 1, 1, True),
        ("NVIDIA GeForce RTX 3080", 10240, "00000000:04:00.0", 336.0, 320.0, None),
    ),
    (
        "real/nvidia-smi-q-x__geforce-rtx-3080__1gpu__driver595.58.03__dtd-v13.xml",
        ("xml", "595.58.03", "13.2", 1, 1, True),
        ("NVIDIA GeForce RTX 3080", 10240, "00000000:0C:00.0", 320.0, 320.0, "Disabled"),
    ),
    # the power limit set to 200 W of a 350 W default
    (
        "real/nvidia-smi-q-x__geforce-rtx-3090__1gpu__driver525.147.05__power-limit-lowered.xml",
        ("xml", "525.147.05", "12.0", 1, 1, True),
        ("NVIDIA GeForce RTX 3090", 24576, "00000000:00:10.0", 200.0, 350.0, "Enabled"),
    ),
    (
        "real/nvidia-smi-q-x__quadro-p2000__1gpu__driver525.125.06.xml",
        ("xml", "525.125.06", "12.0", 1, 1, True),
        ("Quadro P2000", 5120, "00000000:17:00.0", 75.0, 75.0, "Enabled"),
    ),
    # every power reading N/A: none invented
    (
        "real/nvidia-smi-q-x__quadro-p400__1gpu__driver418.43.xml",
        ("xml", "418.43", "10.1", 1, 1, True),
        ("Quadro P400", 1998, "00000000:43:00.0", None, None, "Disabled"),
    ),
    # a Windows nounits query: power.default_limit reads [Unknown Error] (blank line after the header)
    (
        "real/nvidia-smi-query-gpu-nounits__geforce-rtx-2080-ti__1gpu__driver442.19__unknown-error-cell.csv",
        ("csv", None, None, None, 1, True),
        ("GeForce RTX 2080 Ti", None, None, 210.0, None, None),
    ),
    # R610 query: driver_version still answers (kmd_version beside it)
    (
        "real/nvidia-smi-query-gpu__geforce-rtx-2080-super__1gpu__driver610.57.04__nvenc-load.csv",
        ("csv", "610.57.04", None, 1, 1, True),
        ("NVIDIA GeForce RTX 2080 SUPER", 8192, "00000000:0C:00.0", 250.0, 250.0, "Disabled"),
    ),
    # F1: R610 heads its table "KMD Version: 610.57.04   CUDA UMD Version: 13.3"; "Off" persistence
    (
        "real/nvidia-smi__geforce-rtx-2080-super__1gpu__driver610.57.04__kmd-version.txt",
        ("table", "610.57.04", "13.3", None, 1, True),
        ("NVIDIA GeForce RTX 2080 ...", 8192, "00000000:0C:00.0", 250.0, None, "Disabled"),
    ),
    # F1 on Windows: the "Driver-Model" column (WDDM) where Linux has "Persistence-M"
    (
        "real/nvidia-smi__geforce-rtx-2080-super__1gpu__driver610.62__windows-wddm.txt",
        ("table", "610.62", "13.3", None, 1, True),
        ("NVIDIA GeForce RTX 2080 ...", 8192, "00000000:0C:00.0", 250.0, None, None),
    ),
    # round 12: older Windows tables head that column "TCC/WDDM": the driver model, no persistence
    (
        "real/nvidia-smi__geforce-rtx-2060__1gpu__driver442.50__windows-tcc-wddm.txt",
        ("table", "442.50", "10.2", None, 1, True),
        ("GeForce RTX 206...", 8192, "00000000:09:00.0", 215.0, None, None),
    ),
    (
        "real/nvidia-smi__geforce-rtx-3050-4gb-laptop__1gpu__driver531.88__windows-tcc-wddm.txt",
        ("table", "531.88", "12.1", None, 1, True),
        ("NVIDIA GeForce RTX 3050 4...", 4096, "00000000:01:00.0", None, None, None),
    ),
    # round 12: DTD v6 (driver 340): the process list is <compute_processes>
    (
        "real/nvidia-smi-q-x__tesla-k20m__1gpu__driver340.24__dtd-v6__icsw.xml",
        ("xml", "340.24", None, 1, 1, True),
        ("Tesla K20m", 4799, "0000:0D:00.0", 225.0, 225.0, "Disabled"),
    ),
    # round 14: driver 352 on GeForce: the process table says `Not Supported`, no empty list
    (
        "real/nvidia-smi__geforce-gtx-780-ti__2gpu__driver352.79__processes-not-supported.txt",
        ("table", "352.79", None, None, 2, True),
        ("GeForce GTX 780 Ti", 3071, "0000:01:00.0", None, None, "Disabled"),
    ),
    # round 14: a CSV whose header names no index, name or memory.total (utilisation, power)
    (
        "real/nvidia-smi-query-gpu__util-power-only__1gpu__k8s-pod-busy.csv",
        ("csv", None, None, None, 1, True),
        ("", None, None, None, None, None),
    ),
    # round 13: a `-q` without its banner, one GPU of 8 shown, lines left out by hand (`[...]`)
    (
        "real/nvidia-smi-q-elided__a100-sxm4-80gb__1of8gpu__driver510.73.08__remap-pending__no-banner.txt",
        ("text", "510.73.08", "11.6", 8, 1, False),
        ("NVIDIA A100-SXM4-80GB", None, "00000000:10:1C.0", None, None, None),
    ),
    # round 13: a `-q -d ECC,ROW_REMAPPER -i` section view, its Pending line annotated `<===`
    (
        "real/nvidia-smi-q-d-ecc-row-remapper-i__1of8gpu__driver550.90.07__remap-pending-annotated.txt",
        ("text", "550.90.07", "12.4", 8, 1, True),
        ("", None, "00000000:52:00.0", None, None, None),
    ),
    # round 12: a collector's test file trimmed to temperature and power: no ECC mode, no version
    (
        "real/nvidia-smi-q-x__rtx-pro-6000-blackwell__1gpu__driver580-trimmed__netdata.xml",
        ("xml", None, None, None, 1, True),
        ("NVIDIA RTX PRO 6000 Blackwell", None, "00000000:01:00.0", None, None, None),
    ),
    # round 12: GPU 7's MIG cell `Disabled*` (a change pending the next GPU reset)
    (
        "real/nvidia-smi__a100-sxm4-40gb__8gpu__driver450.102.04__mig-pending-gpu7__dgx-doc.txt",
        ("table", "450.102.04", "11.0", None, 8, True),
        ("A100-SXM4-40GB", 40537, "00000000:07:00.0", 400.0, None, "Enabled"),
    ),
    # round 12: a laptop RTX 2070's name cut inside its model number ("207...")
    (
        "real/nvidia-smi__geforce-rtx-2070-laptop__1gpu__driver440.100__name-cut.txt",
        ("table", "440.100", "10.2", None, 1, True),
        ("GeForce RTX 207...", 7973, "00000000:01:00.0", None, None, "Disabled"),
    ),
    # F2/F3: "Driver Version : 610.57.04 [Deprecated; ...]" beside "KMD Version : 610.57.04";
    # the limits under "GPU Ceiling Power Limit"
    (
        "real/nvidia-smi-q__geforce-rtx-2080-super__1gpu__driver610.57.04__kmd-version.txt",
        ("text", "610.57.04", "13.3", 1, 1, True),
        ("NVIDIA GeForce RTX 2080 SUPER", 8192, "00000000:0C:00.0", 250.0, 250.0, "Disabled"),
    ),
    (
        "real/nvidia-smi-q__geforce-rtx-2080-super__1gpu__driver610.62__windows-wddm.txt",
        ("text", "610.62", "13.3", 1, 1, True),
        ("NVIDIA GeForce RTX 2080 SUPER", 8192, "00000000:0C:00.0", 250.0, 250.0, None),
    ),
    # round 15: nvidia-smi's infoROM warning after the table is no part of it
    (
        "real/nvidia-smi__tesla-v100-sxm2-32gb__8gpu__driver460.32.03__inforom-corrupted-gpu7__azhpc.txt",
        ("table", "460.32.03", "11.2", None, 8, True),
        ("Tesla V100-SXM2...", 32510, "00000001:00:00.0", 300.0, None, "Disabled"),
    ),
    # round 15: GB200 (a name that holds 'B200', another model)
    (
        "real/nvidia-smi__gb200__4gpu__driver580.126.09__openshift-blog.txt",
        ("table", "580.126.09", "13.0", None, 4, True),
        ("NVIDIA GB200", 189471, "00000008:01:00.0", 1200.0, None, "Enabled"),
    ),
    # round 15: a MIG-capable model whose MIG mode reads N/A (whole GPU)
    (
        "real/nvidia-smi-q-x__rtx-pro-6000-blackwell-max-q__1gpu__driver590.44.01__telegraf.xml",
        ("xml", "590.44.01", "13.1", 1, 1, True),
        (
            "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition",
            97887,
            "00000000:61:00.0",
            300.0,
            300.0,
            "Enabled",
        ),
    ),
    # round 15: one GH200 as the table (the count since boot only) and as -q (1 lifetime error)
    (
        "real/nvidia-smi__gh200-480gb__1gpu__driver550.127.05__gls.txt",
        ("table", "550.127.05", "12.4", None, 1, True),
        ("NVIDIA GH200 480GB", 97871, "00000000:DD:00.0", 700.0, None, "Enabled"),
    ),
    (
        "real/nvidia-smi-q__gh200-480gb__1gpu__driver550.127.05__dram-unc-1__power-limit-700of900__gls.txt",
        ("text", "550.127.05", "12.4", 1, 1, True),
        ("NVIDIA GH200 480GB", 97871, "00000000:DD:00.0", 700.0, 900.0, "Enabled"),
    ),
    # round 15: an idle A10 (P8, 15.65 W of 150 W) whose driver reports SW Power Cap active
    (
        "real/nvidia-smi-q__a10__1gpu__driver550.90.12__idle-sw-power-cap__gls.txt",
        ("text", "550.90.12", "12.4", 1, 1, True),
        ("NVIDIA A10", 23028, "00000000:08:00.0", 150.0, 150.0, "Enabled"),
    ),
    # round 15: WSL2 on a desktop: the GPU drives the display, utilisation ERR!
    (
        "real/nvidia-smi__geforce-rtx-3090__1gpu__driver470.76__wsl-smi470.28__util-err__display-on.txt",
        ("table", "470.76", "11.4", None, 1, True),
        ("NVIDIA GeForce ...", 24576, "00000000:01:00.0", 350.0, None, "Disabled"),
    ),
    # cut at both ends (the excerpt): CUDA 'N/A' is no version but nvidia-smi's word for
    # no CUDA driver, kept as printed (values.no_cuda); cut inside its Processes table, after
    # the GPU rows: the GPU facts whole, the process list open (GpuInfo.processes_open)
    (
        "edited/nvidia-smi__geforce-rtx-5070__1gpu__driver575.64.03__cuda-na__cut-both-ends__edited.txt",
        ("table", "575.64.03", "N/A", None, 1, True),
        ("NVIDIA GeForce RTX 5070", 12227, "00000000:02:00.0", 250.0, None, "Disabled"),
    ),
]


@pytest.mark.parametrize(("name", "report", "gpu0"), SMI, ids=[c[0].split("/")[1][:60] for c in SMI])
def test_nvidia_smi_capture(name: str, report: tuple[object, ...], gpu0: tuple[object, ...]) -> None:
    r = parse_any(read(name))
    assert (r.source, r.driver_version, r.cuda_version, r.attached_gpus, len(r.gpus), r.complete) == report
    g = r.gpus[0]
    got = (g.name, g.memory_total_mib, g.pci_bus_id, g.power_limit_w, g.default_power_limit_w)
    assert (*got, g.persistence_mode) == gpu0
    assert not g.faults


def test_unknown_error_cell_is_that_sensor_only() -> None:
    name = (
        "real/nvidia-smi-query-gpu-nounits__geforce-rtx-2080-ti__1gpu__driver442.19__unknown-error-cell.csv"
    )
    g = parse_any(read(name)).gpus[0]
    assert g.cell_faults == ("power.default_limit reads [Unknown Error]",)
    assert (g.power_draw_w, g.utilization_gpu_pct, g.temperature_c) == (228.82, 100, 56)


def test_lowered_power_limit_fails() -> None:
    gpus = list(parse_any(read(SMI[7][0])).gpus)
    check = rule_power_limit(gpus, 0.9, 0.8)
    assert (check.verdict, check.actual) == ("fail", "GPU 0 200 W of 350 W")


TITAN_MB = "edited/nvidia-smi__geforce-gtx-titan__3gpu__driver325.15__mb-units__cut-in-processes__edited.txt"
Q610 = "real/nvidia-smi-q__geforce-rtx-2080-super__1gpu__driver610.57.04__kmd-version.txt"
Q610_WIN = "real/nvidia-smi-q__geforce-rtx-2080-super__1gpu__driver610.62__windows-wddm.txt"
TABLE610 = "real/nvidia-smi__geforce-rtx-2080-super__1gpu__driver610.57.04__kmd-version.txt"
TABLE610_WIN = "real/nvidia-smi__geforce-rtx-2080-super__1gpu__driver610.62__windows-wddm.txt"
CSV610 = "real/nvidia-smi-query-gpu__geforce-rtx-2080-super__1gpu__driver610.57.04__nvenc-load.csv"


def test_mb_table_cut_in_processes_keeps_its_gpu_rows_whole() -> None:
    # F9: R325 printed "14MB /  6143MB" (binary megabytes) for each GTX TITAN; cut inside its
    # process table, after every GPU row: the GPU facts whole, each process list open
    r = parse_any(read(TITAN_MB))
    assert (r.driver_version, len(r.gpus), r.complete) == ("325.15", 3, True)
    assert all(g.processes_open and not g.record_cut for g in r.gpus)
    assert [g.pci_bus_id for g in r.gpus] == ["0000:03:00.0", "0000:04:00.0", "0000:84:00.0"]
    assert [(g.memory_used_mib, g.memory_total_mib) for g in r.gpus] == [(14, 6143)] * 3
    assert not any("memory column" in w for w in r.warnings)


def test_r610_tables_rows() -> None:
    # F1: "97W /  250W", "815MiB /   8192MiB", P2, 8 %; 4 processes (2 ffmpeg) on Linux
    g = parse_any(read(TABLE610)).gpus[0]
    assert (g.power_draw_w, g.memory_used_mib, g.performance_state, g.utilization_gpu_pct) == (
        97.0,
        815,
        "P2",
        8,
    )
    assert [(p.pid, p.name) for p in g.processes if p.type == "C"] == [(28511, "ffmpeg"), (28512, "ffmpeg")]
    assert g.driver_model is None
    # Windows: the first column's right cell is the driver model, persistence has no value there
    w = parse_any(read(TABLE610_WIN)).gpus[0]
    assert (w.driver_model, w.persistence_mode, w.power_draw_w, w.memory_used_mib) == (
        "WDDM",
        None,
        37.0,
        797,
    )
    assert len(w.processes) == 19 and not w.cell_faults


def test_r610_q_power_nested_under_ceiling_block() -> None:
    # F3: "Instantaneous Power Draw : 97.75 W" (average N/A); Current / Default 250 W under
    # "GPU Ceiling Power Limit" (not the N/A "GPU Base Power" block); Max 350 W
    for name, draw in ((Q610, 97.75), (Q610_WIN, 37.21)):
        g = parse_any(read(name)).gpus[0]
        assert (g.power_draw_w, g.power_limit_w, g.default_power_limit_w, g.max_power_limit_w) == (
            draw,
            250.0,
            250.0,
            350.0,
        )
    assert parse_any(read(Q610_WIN)).gpus[0].driver_model == "WDDM"


def test_r610_q_deprecated_version_without_kmd_line() -> None:
    # F2: were the KMD / CUDA UMD lines absent, the deprecated fields are read by their number,
    # the note kept as a warning
    text = "\n".join(
        line for line in read(Q610).splitlines() if not line.startswith(("KMD Version", "CUDA UMD Version"))
    )
    r = parse_any(text)
    assert (r.driver_version, r.cuda_version) == ("610.57.04", "13.3")
    assert any("Deprecated" in w and "610.57.04" in w for w in r.warnings)


def test_merge_prefers_a_version_over_a_value_that_is_none() -> None:
    # F2 in the merge: -q (richer) says no version number, the CSV says 610.57.04
    q = (
        read(Q610)
        .replace("610.57.04 [Deprecated; will be removed in CUDA 14.0. Use KMD Version instead]", "see KMD")
        .replace("KMD Version ", "KMD Note    ")
    )
    assert parse_any(q).driver_version == "see KMD"
    raw = {"nvidia_smi_q": ProbeOutput(q, "", 0), "nvidia_smi_csv": ProbeOutput(read(CSV610), "", 0)}
    report = merge(raw, parse_any).report
    assert report is not None and report.source == "text+csv"
    assert report.driver_version == "610.57.04"


def test_engine_utilisation_in_every_format() -> None:
    # F4 (reading): "utilization.encoder 100 %", 0 % decoder / JPEG / OFA, 2 encoder sessions
    # (CSV); "Encoder : 100 %" ... "Active Sessions : 2" (-q) on the same box
    for name in (CSV610, Q610):
        g = parse_any(read(name)).gpus[0]
        got = (g.encoder_util_pct, g.decoder_util_pct, g.jpeg_util_pct, g.ofa_util_pct, g.encoder_sessions)
        assert got == (100.0, 0.0, 0.0, 0.0, 2), name
    # -q -x: <utilization><encoder_util>0 %</encoder_util> ... <encoder_stats><session_count>0
    xml = read("real/nvidia-smi-q-x__geforce-rtx-3080__1gpu__driver595.58.03__dtd-v13.xml")
    g = parse_any(xml).gpus[0]
    assert (g.encoder_util_pct, g.decoder_util_pct, g.jpeg_util_pct, g.ofa_util_pct, g.encoder_sessions) == (
        0.0,
        0.0,
        0.0,
        0.0,
        0,
    )
    busy = xml.replace("<encoder_util>0 %", "<encoder_util>57 %").replace(
        "<encoder_stats>\n\t\t\t<session_count>0", "<encoder_stats>\n\t\t\t<session_count>3"
    )
    g = parse_any(busy).gpus[0]
    assert (g.encoder_util_pct, g.encoder_sessions) == (57.0, 3)
    # the table has no engine figures: None, never 0
    assert parse_any(read(TABLE610)).gpus[0].encoder_util_pct is None


def test_r610_topo_single_gpu() -> None:
    topo = parse_topo(
        read("real/nvidia-smi-topo-m__geforce-rtx-2080-super__1gpu__driver610.57.04__ansi-escapes.txt")
    )
    assert (topo.gpus, dict(topo.cpu_affinity), dict(topo.numa_affinity)) == (
        ("GPU0",),
        {"GPU0": "0-23"},
        {"GPU0": "0"},
    )
    assert interconnect(topo) == "single"


def test_nvlink_all_inactive_consumer_card() -> None:
    status = parse_nvlink_status(
        read("real/nvidia-smi-nvlink-s__geforce-rtx-2080-super__all-inactive__driver610.57.04.txt")
    )
    assert [(g.index, g.name, g.links, g.note) for g in status.gpus] == [
        (0, "NVIDIA GeForce RTX 2080 SUPER", (), "all_inactive")
    ]


def test_power9_lscpu() -> None:
    info = parse_lscpu(read("real/lscpu__power9-ppc64le__2socket-6numa__v100-traverse.txt"))
    assert info == CpuInfo("ppc64le", "POWER9, altivec supported", 2, 16, 4, 128, 32)


def test_ibv_devinfo_two_of_four_ports_down() -> None:
    ports = parse_ibv_devinfo(read("real/ibv_devinfo__connectx3-mlx4__2hca-2of4-ports-down.txt")).ports
    assert [(p.device, p.port, p.state, p.rate_gbps, p.link_layer) for p in ports] == [
        ("mlx4_1", 1, "ACTIVE", None, "InfiniBand"),  # without -v: no rate printed
        ("mlx4_1", 2, "DOWN", None, "InfiniBand"),
        ("mlx4_0", 1, "ACTIVE", None, "InfiniBand"),
        ("mlx4_0", 2, "DOWN", None, "InfiniBand"),
    ]


def test_ibv_devinfo_verbose_down_port() -> None:
    ports = parse_ibv_devinfo(read("real/ibv_devinfo-v__connectx3-mlx4__port-down-polling.txt")).ports
    # 4X at 2.5 Gbps as printed for a port still polling: a DOWN port, never counted as up
    assert [(p.device, p.port, p.state, p.rate_gbps, p.phys_state, p.active) for p in ports] == [
        ("mlx4_1", 2, "DOWN", 10.0, "POLLING", False)
    ]


def test_xid_79_with_a_pasted_first_line() -> None:
    log = parse_kernel_log(read("real/dmesg-T__xid-79-unknown-pid__titan-v.txt"))
    assert [(e.kind, e.code, e.pci) for e in log.xids()] == [("xid", 79, "0000:02:00")]
    assert rule_xid(log.events, True, "", [(0, "00000000:02:00.0")], log.covers_boot).verdict == "fail"


def test_df_pt_long_device_name() -> None:
    mounts = parse_df(read("real/df-PT__long-device-name-mapper__jc-generic.txt"))
    kib = 1024
    assert mounts == (
        Mount("/dev/mapper/VolGroup00-LogVol00", 6030784 * kib, 1147932 * kib, 4571556 * kib, "/", "ext3"),
        Mount("proc", 0, 0, 0, "/proc", "proc"),
        Mount("sysfs", 0, 0, 0, "/sys", "sysfs"),
    )


def test_free_wide_and_human() -> None:
    wide = parse_free(read("real/free-w__centos-7.7-vm.txt"))
    assert (wide.total_bytes, wide.available_bytes, wide.swap_total_bytes, wide.warnings) == (
        8053804 * 1024,
        6483996 * 1024,
        2097152 * 1024,
        (),
    )
    human = parse_free(read("real/free-h__centos-7.7-vm.txt"))  # 3.7G / 3.2G / 2.0G
    assert human.total_bytes is not None and human.available_bytes is not None
    assert (round(human.total_bytes / 2**30, 1), round(human.available_bytes / 2**30, 1)) == (3.7, 3.2)
    assert human.swap_total_bytes == 2 * 2**30


def test_every_audit_capture_is_on_disk_and_in_sources() -> None:
    sources = (FIXTURES / "real" / "SOURCES.md").read_text() + (FIXTURES / "edited" / "README.md").read_text()
    for name in PARSED_RIGHT | FINDINGS.keys():
        assert (FIXTURES / name).is_file(), name
        assert f"`{name.split('/', 1)[1]}`" in sources, name
    assert not PARSED_RIGHT & FINDINGS.keys()


def test_a_process_table_that_says_not_supported_is_no_empty_list() -> None:
    """`|    0   Not Supported   |` (driver 352, GeForce) read as an empty table, warned as
    "processes not visible (container?)" (round 14): this driver lists no processes here."""
    r = parse_any(
        read("real/nvidia-smi__geforce-gtx-780-ti__2gpu__driver352.79__processes-not-supported.txt")
    )
    assert [g.processes_known for g in r.gpus] == [False, False]
    assert r.warnings == (
        "process table says Not Supported: this driver does not list this card's processes",
    )
