"""A failed acceptance rule says what is wrong and what to ask the vendor, on the real outputs
of the mis-delivered A100 box (the `a100-misdelivered` test-host profile): 4 GPUs of 8, a
2 GiB VM's RAM, PCIe only."""

from __future__ import annotations

from pathlib import Path

from gpuonboard.connection.gather import parse_facts
from gpuonboard.facts.probe import ProbeOutput
from gpuonboard.steps.base import Check
from gpuonboard.steps.checks.acceptance import evaluate

from .test_acceptance_rules import ORDER  # (the demo's 8 x A100 order)

FIX = Path(__file__).parents[1] / "fixtures"
MISDELIVERED = {
    "nvidia_smi": "derived/nvidia-smi-q-x__a100-sxm4-80gb__4gpu__derived.xml",
    "nvidia_topo": "derived/nvidia-smi-topo-m__a100__4gpu-pcie__derived.txt",
    "lscpu": "real/lscpu__amd-epyc-9374f__2socket__rtx6000ada-server.txt",
    "free": "real/free__ubuntu-18.04-vm.txt",
    "df": "real/df-h__8gpu-server-mi300x.txt",
}


def _checks() -> dict[str, Check]:
    raw = {k: ProbeOutput((FIX / rel).read_text(), "", 0) for k, rel in MISDELIVERED.items()}
    return {c.name: c for c in evaluate(ORDER, parse_facts(raw))}


def test_missing_gpus_are_counted_and_the_vendor_asked() -> None:
    check = _checks()["gpu_count"]
    assert (check.verdict, check.actual) == ("fail", "4")
    assert check.detail == (
        "4 of the 8 ordered GPUs missing; ask the vendor to install them or for the box that was ordered"
    )


def test_pcie_only_box_for_an_nvlink_order_says_why_it_matters() -> None:
    check = _checks()["interconnect"]
    assert (check.verdict, check.actual) == ("fail", "pcie (weakest GPU link SYS)")
    assert check.detail.startswith(
        "NVLink was ordered, but the GPUs reach each other only over PCIe (the weakest pair through SYS)"
    )
    assert "ask the vendor for the NVLink" in check.detail


def test_too_little_ram_names_the_shortfall() -> None:
    check = _checks()["ram"]
    assert check.verdict == "fail"
    assert check.detail.startswith("1022.1 GiB less than ordered")
    assert "ask the vendor" in check.detail


def test_too_little_gpu_memory_and_an_old_driver_say_what_to_ask_for() -> None:
    """The same real A100 80GB outputs judged against an order they do not meet: a 141 GB card
    and a 550 driver (the box runs 535)."""
    from dataclasses import replace

    raw = {k: ProbeOutput((FIX / rel).read_text(), "", 0) for k, rel in MISDELIVERED.items()}
    checks = {
        c.name: c
        for c in evaluate(replace(ORDER, vram_bytes=141 * 10**9, min_driver="550"), parse_facts(raw))
    }
    vram, driver = checks["vram"], checks["min_driver"]
    assert vram.verdict == "fail" and "ask the vendor for the cards that were ordered" in vram.detail
    assert driver.verdict == "fail" and driver.detail.startswith(
        "the NVIDIA driver is older than the ordered 550: ask the vendor to install a 550 or newer driver"
    ), driver
