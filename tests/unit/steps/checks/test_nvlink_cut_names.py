"""nvlink_links on GPU names nvidia-smi's table cut before they say SXM or PCIe ('NVIDIA H800
80G...', 'NVIDIA H100 P...'): nvlink_model gives such a name no row (its cut tail may say PCIe or
NVL), and the rule judges it by the SXM part the words shown name: all of that part's links
active passes, fewer is unverified (the card may be the PCIe one), never silence and never a
fail on a card that need not have them."""

from __future__ import annotations

from pathlib import Path

from gpuonboard.facts.nvlink import parse_nvlink_status
from gpuonboard.steps.checks.fabric_health import nvlink_model, rule_nvlink

REAL = Path(__file__).resolve().parents[3] / "fixtures" / "real"


def _status(name: str):  # type: ignore[no-untyped-def]
    return parse_nvlink_status((REAL / name).read_text())


def test_a_cut_name_with_every_link_of_its_sxm_part_up_passes() -> None:
    status = _status("nvidia-smi-nvlink-s__h800__8gpu-8links__elided.txt")
    assert nvlink_model("NVIDIA H800 80G...") is None  # (its form is not shown)
    check = rule_nvlink({0: "NVIDIA H800 80G..."}, status)
    assert check is not None and check.verdict == "pass", check


def test_a_cut_name_with_fewer_links_than_its_sxm_part_is_unverified_not_silent() -> None:
    # a real H100 PCIe with its NVLink bridges: 12 links, where the H100 SXM has 18
    status = _status("nvidia-smi-nvlink-s__h100-pcie__2gpu-12of18-links__driver555.42.02.txt")
    check = rule_nvlink({0: "NVIDIA H100 P...", 1: "NVIDIA H100 P..."}, status)
    assert check is not None and check.verdict == "unverified", check
    assert "12 of 18 links active" in check.actual and "cut before it says SXM" in check.actual
    # the whole names: the PCIe card has no row, the rule does not apply
    assert rule_nvlink({0: "NVIDIA H100 PCIe", 1: "NVIDIA H100 PCIe"}, status) is None


def test_no_nvlink_output_for_a_cut_name_is_unverified() -> None:
    check = rule_nvlink({0: "NVIDIA H800 80G..."}, None)
    assert check is not None and check.verdict == "unverified"


def test_a_cut_name_of_a_model_without_links_stays_not_applicable() -> None:
    assert rule_nvlink({0: "NVIDIA L40S..."}, None) is None
