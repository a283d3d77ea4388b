"""Review fixes in steps/fabric_health.py and data/nvlink_links.yml, data/xid.yml.

1. `NVML: Unable to retrieve Nvlink information as all links are inActive` on a model that has
   NVLink links is a fail (Azure/azurehpc-health-checks customTests/azure_gpu_nvlink.nhc,
   commit 27a6148b6befc28ea6228f7bcea8ab2e591c0611: `die 1 "... has all nvlinks inactive"`).
2. Model rows match on word boundaries: "NVIDIA GH200 480GB" is not an H200 (nor "GB200" a
   B200, "H200" an H20).
3. Xid 154: the action is the one AFTER "to" in "GPU recovery action changed from 0x%x (%s) to
   0x%x (%s)" (NVML nvmlDeviceGpuRecoveryAction_t: 0 None, 1 GPU Reset, 2 Node Reboot,
   3 Drain P2P, 4 Drain and Reset).
"""

from __future__ import annotations

import pytest

from gpuonboard.facts.kernel_log import KernelEvent
from gpuonboard.facts.nvlink import ALL_INACTIVE, parse_nvlink_status
from gpuonboard.steps.checks.fabric_health import (
    load_nvlink_models,
    nvlink_model,
    rule_fabric_manager,
    rule_nvlink,
    rule_nvlink_errors,
    rule_xid,
    xid_action,
)

ALL_INACTIVE_MSG = "NVML: Unable to retrieve Nvlink information as all links are inActive"


def _block(index: int, name: str, body: str) -> str:
    return f"GPU {index}: {name} (UUID: GPU-0000000{index}-aaaa-bbbb-cccc-dddddddddddd)\n{body}\n"


def _up(links: int, speed: str = "26.562") -> str:
    return "\n".join(f"\t Link {i}: {speed} GB/s" for i in range(links))


# --- 1. all links inactive --------------------------------------------------------------------


def test_all_inactive_on_an_nvlink_model_fails() -> None:
    name = "NVIDIA H100 80GB HBM3"
    status = parse_nvlink_status(_block(0, name, _up(18)) + _block(1, name, ALL_INACTIVE_MSG))
    assert status.gpus[1].note == ALL_INACTIVE
    check = rule_nvlink([name, name], status)
    assert check is not None
    assert check.verdict == "fail"
    assert "GPU 1: 0 of 18 links active (all links inactive)" in check.actual
    assert "GPU 0" not in check.actual


def test_all_inactive_on_every_gpu_fails_never_unverified() -> None:
    name = "NVIDIA A100-SXM4-80GB"
    status = parse_nvlink_status("".join(_block(i, name, ALL_INACTIVE_MSG) for i in range(8)))
    check = rule_nvlink([name] * 8, status)
    assert check is not None and check.verdict == "fail"
    assert "GPU 7: 0 of 12 links active (all links inactive)" in check.actual


def test_all_inactive_printed_on_the_gpu_line_fails() -> None:
    name = "NVIDIA H100 80GB HBM3"
    text = f"GPU 0: {name} (UUID: GPU-00000000-aaaa-bbbb-cccc-dddddddddddd) {ALL_INACTIVE_MSG}\n"
    check = rule_nvlink([name], parse_nvlink_status(text))
    assert check is not None and check.verdict == "fail"


def test_all_inactive_on_a_model_without_a_links_row_is_not_judged() -> None:
    """An RTX card with no bridge fitted prints the same sentence: not an NVLink-board part."""
    name = "NVIDIA GeForce RTX 3090 Ti"
    assert rule_nvlink([name], parse_nvlink_status(_block(0, name, ALL_INACTIVE_MSG))) is None


# --- 2. model matching on word boundaries -------------------------------------------------------


def test_gh200_is_not_an_h200() -> None:
    row = nvlink_model("NVIDIA GH200 480GB")
    assert row is None or row.match.lower() != "h200"
    assert row is None or (row.links is None and row.nvswitch is False)


def test_single_gh200_all_inactive_is_not_judged_as_an_nvswitch_h200() -> None:
    name = "NVIDIA GH200 480GB"
    status = parse_nvlink_status(_block(0, name, ALL_INACTIVE_MSG))
    assert rule_nvlink([name], status) is None
    assert rule_nvlink_errors([name], None) is None
    assert rule_fabric_manager([name] * 8, [(None, None)] * 8, None) is None


@pytest.mark.parametrize(
    ("gpu_name", "match"),
    [
        ("NVIDIA H200", "H200"),
        ("NVIDIA H200 NVL", "H200 NVL"),
        ("NVIDIA H20", "H20"),
        ("NVIDIA B200", "B200"),
        ("NVIDIA GB200", "GB200"),
        ("NVIDIA GB300", "GB300"),
        ("NVIDIA B300 SXM6 AC", "B300"),
        ("NVIDIA H100 80GB HBM3", "H100 80GB HBM3"),
        ("NVIDIA H100 PCIe", "PCIe"),
        ("NVIDIA H100 NVL", "H100 NVL"),
        ("NVIDIA A100-SXM4-80GB", "A100-SXM4"),
        ("NVIDIA A100-PCIE-40GB", "PCIe"),
        ("NVIDIA A800-SXM4-80GB", "A800-SXM4"),
        ("NVIDIA H800", "H800"),
        ("Tesla V100-SXM2-32GB", "V100-SXM2"),
        ("Tesla V100-PCIE-32GB", "PCIe"),
        ("Tesla P100-SXM2-16GB", "P100-SXM2"),
    ],
)
def test_rows_match_their_own_models(gpu_name: str, match: str) -> None:
    row = nvlink_model(gpu_name)
    assert row is not None and row.match == match, gpu_name


@pytest.mark.parametrize(
    "gpu_name",
    [
        "NVIDIA GH200 480GB",  # not H200 (18 links, NVSwitch)
        "NVIDIA GH200 144G HBM3e",
        "NVIDIA A100X",  # converged accelerator (PCIe card + DPU): not A100-SXM4
        "NVIDIA A100 80GB PCIe",
        "NVIDIA H100 NVL",
        "NVIDIA L40S",
        "NVIDIA GeForce RTX 3090",
    ],
)
def test_models_without_baseboard_nvlink_are_not_judged(gpu_name: str) -> None:
    row = nvlink_model(gpu_name)
    assert row is None or row.links is None, (gpu_name, row)


def test_every_row_is_reached_by_its_own_name() -> None:
    """No earlier row shadows a later one: each row's own `match` text finds that row."""
    for row in load_nvlink_models():
        hit = nvlink_model(f"NVIDIA {row.match}")
        assert hit is not None and hit.match == row.match, row.match


# --- 3. Xid 154 ---------------------------------------------------------------------------------


def _xid154(to: str, frm: str = "0x1 (GPU Reset Required)") -> KernelEvent:
    return KernelEvent("xid", 154, "0000:9b:00", f"GPU recovery action changed from {frm} to {to}")


@pytest.mark.parametrize(
    ("frm", "to", "action"),
    [
        ("0x1 (GPU Reset Required)", "0x0 (None)", "ignore"),
        ("0x2 (Node Reboot Required)", "0x0 (None)", "ignore"),
        ("0x4 (Drain and Reset)", "0x0 (None)", "ignore"),
        ("0x0 (None)", "0x1 (GPU Reset Required)", "reset_gpu"),
        ("0x4 (Drain and Reset)", "0x1 (GPU Reset Required)", "reset_gpu"),
        ("0x0 (None)", "0x2 (Node Reboot Required)", "reboot"),
        ("0x0 (None)", "0x2 (OS Reboot)", "reboot"),  # newer drivers' wording
        ("0x0 (None)", "0x1 (PF FLR)", "reset_gpu"),  # newer drivers' wording
        ("0x0 (None)", "0x3 (Drain P2P)", "reset_gpu"),
        ("0x0 (None)", "0x4 (Drain and Reset)", "reset_gpu"),
    ],
)
def test_xid154_reads_the_action_after_to(frm: str, to: str, action: str) -> None:
    assert xid_action(_xid154(to, frm))[0] == action


def test_xid154_back_to_none_passes_the_box() -> None:
    check = rule_xid([_xid154("0x0 (None)")], True, gpus=[(3, "00000000:9B:00.0")])
    assert check.verdict == "pass"


def test_xid154_unreadable_target_is_not_a_pass() -> None:
    event = KernelEvent("xid", 154, "0000:9b:00", "GPU recovery action changed")
    assert xid_action(event)[0] not in ("ignore", "check_app")
