"""Rules the 2026-12 truth audit found judging wrongly on real captures (findings F4, F5, F7, F8):
each test reads the capture named in the finding, with values read from it by hand."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from gpuonboard.connection.gather import parse_facts
from gpuonboard.facts.nvidia_smi import GpuInfo, GpuProcess, parse_any
from gpuonboard.facts.probe import ProbeOutput
from gpuonboard.inventory import OrderSpec
from gpuonboard.steps.checks import gpu_health
from gpuonboard.steps.checks.acceptance import evaluate
from gpuonboard.steps.checks.gpu_health.modes import load_mig_capable, mig_capable
from gpuonboard.steps.checks.model_match import is_placeholder_name

REAL = Path(__file__).parents[3] / "fixtures" / "real"
NVENC_CSV = "nvidia-smi-query-gpu__geforce-rtx-2080-super__1gpu__driver610.57.04__nvenc-load.csv"
GTX1660_XML = "nvidia-smi-q-x__geforce-gtx-1660__1gpu__driver418.43__graphics-device-name.xml"
GTX1660_NO_ID_XML = "nvidia-smi-q-x__geforce-gtx-1660__1gpu__graphics-device-name__no-device-id__derived.xml"
NO_PERSISTENCE_CSV = (
    "nvidia-smi-query-gpu-nounits__geforce-rtx-2080-ti__1gpu__driver442.19__unknown-error-cell.csv"
)


# --- F4: a GPU busy on its video encoder is not "idle by numbers" -------------------------------


def test_a_gpu_encoding_for_someone_else_fails_foreign_processes() -> None:
    (g,) = parse_any((REAL / NVENC_CSV).read_text()).gpus
    # the capture: utilization.gpu 8 %, memory.used 815 MiB (idle by SM and memory), no process list
    assert (g.utilization_gpu_pct, g.memory_used_mib, g.processes_known) == (8, 815, False)
    # whatever the CSV reader fills of the engine columns, the rule never calls this GPU idle
    assert gpu_health.rule_foreign_processes([g]).verdict != "pass"
    # the capture's engine columns, read by hand: utilization.encoder 100 %, decoder / jpeg / ofa
    # 0 %, encoder.stats.sessionCount 2 (two ffmpeg NVENC jobs)
    busy = dataclasses.replace(
        g,
        encoder_util_pct=100.0,
        decoder_util_pct=0.0,
        jpeg_util_pct=0.0,
        ofa_util_pct=0.0,
        encoder_sessions=2,
    )
    check = gpu_health.rule_foreign_processes([busy])
    assert (check.verdict, check.actual) == (
        "fail",
        "GPU 0 at 8 % utilisation with 0.8 GiB used and encoder 100 %, 2 encoder sessions, and no process"
        " list was read from this output",
    )


def test_an_encoder_session_on_an_empty_process_list_fails_too() -> None:
    # a container's view: the list is known and empty, the encoder works for another VM / container
    g = GpuInfo(
        0, "NVIDIA L4", processes_known=True, utilization_gpu_pct=0, memory_used_mib=300, encoder_sessions=1
    )
    check = gpu_health.rule_foreign_processes([g])
    assert check.verdict == "fail" and "1 encoder session," in check.actual


def test_engines_optional_where_the_output_cannot_show_them() -> None:
    # encoder and decoder read idle, JPEG / OFA absent (older drivers, GPUs without the engine)
    g = GpuInfo(
        0, "NVIDIA A10G", utilization_gpu_pct=0, memory_used_mib=3, encoder_util_pct=0.0, decoder_util_pct=0.0
    )
    check = gpu_health.rule_foreign_processes([g])
    assert check.verdict == "pass" and "(JPEG and OFA not reported)" in check.actual


# --- F5: a driver's placeholder name is no model --------------------------------------------------


@pytest.mark.parametrize("ordered", ["GTX 1660", "RTX 4090"])
def test_graphics_device_placeholder_is_unverified_never_a_wrong_model(ordered: str) -> None:
    # <product_name>Graphics Device</product_name>, driver 418.43, its PCI device id not read (the
    # id names the card: test_gpu_pci_id.py)
    xml = (REAL.parent / "derived" / GTX1660_NO_ID_XML).read_text()
    facts = parse_facts({"nvidia_smi": ProbeOutput(xml, "", 0)})
    checks = {c.name: c for c in evaluate(OrderSpec(gpu_model=ordered, gpu_count=1), facts)}
    model = checks["gpu_model"]
    assert (model.verdict, model.actual) == (
        "unverified",
        "GPU 0 named 'Graphics Device' (a driver placeholder, not a model)",
    )
    assert "PCI device id" in model.detail
    assert checks["gpu_count"].verdict == "pass"


@pytest.mark.parametrize(
    ("name", "placeholder"),
    [
        ("Graphics Device", True),
        ("NVIDIA Graphics Device", True),
        ("Device 10de:2184", True),
        ("Device 2184", True),
        ("", True),
        ("NVIDIA GeForce GTX 1660", False),
        ("NVIDIA RTX A6000", False),
        ("NVIDIA H100 80GB HBM3", False),
    ],
)
def test_placeholder_names(name: str, placeholder: bool) -> None:
    assert is_placeholder_name(name) is placeholder


# --- F7: no reading is no pass --------------------------------------------------------------------


def test_persistence_not_in_the_output_is_unverified() -> None:
    (g,) = parse_any((REAL / NO_PERSISTENCE_CSV).read_text()).gpus  # no persistence_mode column
    assert g.persistence_mode is None
    check = gpu_health.rule_persistence([g])
    assert (check.verdict, check.actual) == ("unverified", "not reported for GPU 0")
    enabled = dataclasses.replace(g, persistence_mode="Enabled")
    assert (
        gpu_health.rule_persistence([enabled]).verdict,
        gpu_health.rule_persistence([g, enabled]).verdict,
    ) == (
        "pass",
        "unverified",
    )


def test_virtualization_not_reported_is_unverified_not_a_pass() -> None:
    (g,) = parse_any((REAL / NO_PERSISTENCE_CSV).read_text()).gpus
    check = gpu_health.rule_virtualization([g])
    assert (check.verdict, check.actual) == ("unverified", "not reported")


# --- F8: MIG-capable models from data, every listed name matched ----------------------------------


def test_every_name_of_the_mig_table_is_mig_capable() -> None:
    rows = load_mig_capable()
    assert any(m == "RTX PRO 6000 Blackwell" for m, _ in rows)
    for match, names in rows:
        for name in names:
            assert mig_capable(name), (match, name)


@pytest.mark.parametrize(
    "name",
    [
        "NVIDIA RTX A1000",
        "NVIDIA GeForce RTX 4090",
        "NVIDIA L40S",
        "NVIDIA RTX 6000 Ada Generation",
        "NVIDIA A10G",
    ],
)
def test_other_models_are_not_mig_capable(name: str) -> None:
    assert not mig_capable(name)


def test_rtx_pro_6000_blackwell_without_a_mode_is_unverified() -> None:
    check = gpu_health.rule_mig([GpuInfo(0, "NVIDIA RTX PRO 6000 Blackwell Server Edition")])
    assert (check.verdict, check.actual) == ("unverified", "not reported for GPU 0")
    # a model without MIG: N/A is no MIG at all, said so
    check = gpu_health.rule_mig([GpuInfo(0, "NVIDIA GeForce RTX 4090")])
    assert (check.verdict, check.actual) == ("pass", "Disabled; GPU 0: no MIG on this model")


def test_a_process_whose_memory_nvidia_smi_does_not_give_is_named_without_none() -> None:
    """Windows' WDDM XML gives `<used_memory>N/A</used_memory>` for its C+G processes: the row
    said "(None MiB)" (round 11, R11-B7)."""
    (g,) = parse_any((REAL / GTX1660_XML).read_text()).gpus
    busy = dataclasses.replace(g, processes=(GpuProcess(7724, "PhoneExperienceHost.exe", "C+G", None),))
    check = gpu_health.rule_foreign_processes([busy])
    assert "PhoneExperienceHost.exe (memory N/A)" in check.actual and "None" not in check.actual
