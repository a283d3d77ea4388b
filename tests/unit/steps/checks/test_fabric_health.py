"""Fabric rules on real captures: Xid/SXid, NVLink links, Fabric Manager, RDMA ports."""

from pathlib import Path

from gpuonboard.facts.fabric_manager import parse_fabric_manager
from gpuonboard.facts.infiniband import parse_rdma
from gpuonboard.facts.kernel_log import parse_kernel_log
from gpuonboard.facts.nvlink import parse_nvlink_status
from gpuonboard.steps.checks.fabric_health import (
    load_nvlink_models,
    load_xid_catalogue,
    rule_fabric_manager,
    rule_nvlink,
    rule_rdma,
    rule_sxid,
    rule_xid,
)

REAL = Path(__file__).parents[3] / "fixtures" / "real"
H100 = "NVIDIA H100 80GB HBM3"


def read(name: str) -> str:
    return (REAL / name).read_text()


def test_catalogues_load_with_sources() -> None:
    xids, sxids = load_xid_catalogue()
    assert xids[79].action == "reboot" and xids[48].action == "reset_gpu" and xids[13].action == "check_app"
    assert xids[43].action == "ignore" and xids[119].action == "reset_gpu"
    assert sxids[20034].action == "reboot" and sxids[11012].action == "ignore"
    assert all(m.source for m in load_nvlink_models())


def test_xid_79_fails_naming_gpu_code_name_action() -> None:
    log = parse_kernel_log(read("dmesg__xid-79-sxid-20034__nvswitch.txt"))
    c = rule_xid(log.events, True, gpus=[(4, "00000000:91:00.0")])
    assert c.verdict == "fail"
    assert "GPU 4 (0000:91:00): Xid 79 GPU has fallen off the bus -> reboot" in c.actual
    assert "reboot" in c.detail
    s = rule_sxid(log.events, True)
    assert s.verdict == "fail" and "nvidia-nvswitch1 (0000:06:00.0): SXid 20034 LTSSM Fault Up" in s.actual


def test_xid_119_gsp_timeout_needs_a_reset() -> None:
    log = parse_kernel_log(read("dmesg-T__xid-119-gsp-timeout__h100-dell-xe9680.txt"))
    c = rule_xid(log.events, True)
    assert c.verdict == "fail" and "Xid 119 GSP RPC Timeout x5 -> reset_gpu" in c.actual
    assert rule_sxid(log.events, True).verdict == "pass"


def test_application_xids_warn() -> None:
    log = parse_kernel_log(read("dmesg-decode-iso__xid-13-43__plus-oom.txt"))
    c = rule_xid(log.events, True)
    assert c.verdict == "warn"
    assert "Xid 13 Graphics Engine Exception x16 -> check_app" in c.actual and "Xid 43" in c.actual


def test_no_xid_passes_and_unreadable_is_unverified() -> None:
    assert rule_xid((), True).verdict == "pass"
    c = rule_xid((), False, "dmesg: read kernel buffer failed: Operation not permitted")
    assert c.verdict == "unverified" and "Operation not permitted" in c.actual


def test_nvlink_all_up_and_short() -> None:
    status = parse_nvlink_status(read("nvidia-smi-nvlink-s__a100-sxm4-80gb__8gpu.txt"))
    assert rule_nvlink(["NVIDIA A100-SXM4-80GB"] * 8, status).verdict == "pass"  # type: ignore[union-attr]
    v100 = parse_nvlink_status(read("nvidia-smi-nvlink-s__v100-sxm2-32gb__1of-n-gpu__2-inactive.txt"))
    c = rule_nvlink(["Tesla V100-SXM2-32GB"] * 4, v100)
    assert c is not None and c.verdict == "fail"
    assert "GPU 3: 4 of 6 links active, inactive link(s) 3, 5" in c.actual


def test_nvlink_not_applicable_mig_and_missing() -> None:
    assert (
        rule_nvlink(
            ["NVIDIA L40S"],
            parse_nvlink_status(read("nvidia-smi-nvlink-s__l40s__no-nvlink__driver595.80.txt")),
        )
        is None
    )
    mig = parse_nvlink_status(read("nvidia-smi-nvlink-s__h100-mig__not-supported__driver590.48.01.txt"))
    c = rule_nvlink([H100], mig)
    assert c is not None and c.verdict == "unverified"
    assert rule_nvlink([H100], None).verdict == "unverified"  # type: ignore[union-attr]


def test_fabric_manager() -> None:
    fm_on = parse_fabric_manager("active\nLoadState=loaded\n")
    fm_off = parse_fabric_manager("inactive\nLoadState=loaded\n")
    fm_absent = parse_fabric_manager("inactive\nLoadState=not-found\n")
    done = [("Completed", "Success")] * 8
    assert rule_fabric_manager([H100] * 8, done, fm_on).verdict == "pass"  # type: ignore[union-attr]
    c = rule_fabric_manager([H100] * 8, [(None, None)] * 8, fm_off)
    assert c is not None and c.verdict == "fail" and "nvidia-fabricmanager" in c.detail
    assert "not installed" in rule_fabric_manager([H100] * 8, [(None, None)] * 8, fm_absent).actual  # type: ignore[union-attr]
    nostate = rule_fabric_manager(
        [H100] * 8, [(None, None)] * 8, parse_fabric_manager("System has not been booted with systemd\n")
    )
    assert nostate is not None and nostate.verdict == "unverified"
    stuck = rule_fabric_manager([H100], [("In Progress", "N/A")], None)
    assert stuck is not None and stuck.verdict == "fail" and "GPU 0: In Progress" in stuck.actual
    assert rule_fabric_manager(["NVIDIA L40S"] * 8, [(None, None)] * 8, fm_off) is None
    assert rule_fabric_manager([H100] * 4, [(None, None)] * 4, fm_off) is None  # 4-GPU HGX: no NVSwitch


def test_rdma_against_order() -> None:
    sysfs = parse_rdma(read("ib-sysfs__h100-8x-ndr400-ib_plus_bond-roce200__gpud.txt")).ports
    assert rule_rdma((8, 400.0), sysfs).verdict == "pass"  # type: ignore[union-attr]
    ibv = parse_rdma(read("ibv_devinfo-v__connectx6-ib_plus_connectx5-roce__3hca.txt")).ports
    c = rule_rdma((2, 200.0), ibv)
    assert c is not None and c.verdict == "fail" and "mlx5_1/1 ACTIVE 100 Gb/s Ethernet" in c.actual
    assert rule_rdma((8, 400.0), None).verdict == "unverified"  # type: ignore[union-attr]
    assert rule_rdma((1, 100.0), ()).verdict == "fail"  # type: ignore[union-attr]
    assert rule_rdma(None, sysfs) is None
