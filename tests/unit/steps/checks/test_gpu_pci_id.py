"""Which GPU a box has where its name does not say it: the PCI device id nvidia-smi prints
beside the name (facts/gpu_ids.py, data/gpu_pci_ids.yml, steps/checks/gpu_identity.py)."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from gpuonboard.connection.gather import parse_facts
from gpuonboard.facts.gpu_ids import IDS_FILE, device_id, names_by_id, subsystem_id
from gpuonboard.facts.nvidia_smi import parse_any
from gpuonboard.facts.probe import ProbeOutput
from gpuonboard.inventory import OrderSpec
from gpuonboard.resources import table_rows
from gpuonboard.steps.checks.acceptance import evaluate
from gpuonboard.steps.checks.gpu_identity import disagreement, model_name

FIXTURES = Path(__file__).parents[3] / "fixtures"
REAL = FIXTURES / "real"
DERIVED = FIXTURES / "derived"
GTX1660_XML = REAL / "nvidia-smi-q-x__geforce-gtx-1660__1gpu__driver418.43__graphics-device-name.xml"
NO_ID_XML = (
    DERIVED / "nvidia-smi-q-x__geforce-gtx-1660__1gpu__graphics-device-name__no-device-id__derived.xml"
)
H100_Q = REAL / "nvidia-smi-q__h100-80gb-hbm3__8gpu__driver535.161.08.txt"
H100_AS_PCIE_Q = DERIVED / "nvidia-smi-q__h100-80gb-hbm3__8gpu__device-id-2331-pcie__derived.txt"


def _model_check(path: Path, ordered: str, count: int, probe: str = "nvidia_smi"):  # type: ignore[no-untyped-def]
    facts = parse_facts({probe: ProbeOutput(path.read_text(), "", 0)})
    checks = {c.name: c for c in evaluate(OrderSpec(gpu_model=ordered, gpu_count=count), facts)}
    return checks["gpu_model"]


@pytest.mark.parametrize(
    ("ordered", "verdict"), [("GTX 1660", "pass"), ("GTX 1660 Ti", "fail"), ("RTX 4090", "fail")]
)
def test_a_placeholder_name_is_judged_by_its_pci_device_id(ordered: str, verdict: str) -> None:
    # driver 418.43 names the card "Graphics Device"; its <pci_device_id> 218410DE is the GTX 1660
    check = _model_check(GTX1660_XML, ordered, 1)
    assert check.verdict == verdict, check
    assert "10de:2184 is 'NVIDIA GeForce GTX 1660'" in check.actual
    assert "Graphics Device" in check.actual  # (the driver's own word kept, with where the model came from)


def test_a_placeholder_whose_id_was_not_read_stays_unverified() -> None:
    check = _model_check(NO_ID_XML, "GTX 1660", 1)
    assert (check.verdict, check.actual) == (
        "unverified",
        "GPU 0 named 'Graphics Device' (a driver placeholder, not a model)",
    )


@pytest.mark.parametrize("ordered", ["H100 SXM", "H100 80GB", "HGX H100"])
def test_a_name_that_is_another_card_than_its_id_is_said_never_passed(ordered: str) -> None:
    assert _model_check(H100_Q, ordered, 8, "nvidia_smi_q").verdict == "pass"  # (the real box)
    check = _model_check(H100_AS_PCIE_Q, ordered, 8, "nvidia_smi_q")
    assert check.verdict == "warn", check
    assert "10de:2331" in check.detail and "'NVIDIA H100 PCIe'" in check.detail and "disagree" in check.detail


def _real_gpus():  # type: ignore[no-untyped-def]
    for path in sorted(REAL.glob("nvidia-smi*")):
        report = parse_any(path.read_text(errors="replace"))
        for g in report.gpus if report is not None else ():
            if g.pci_device_id:
                yield pytest.param(g, id=f"{path.name}-{g.index}")


@pytest.mark.parametrize("gpu", list(_real_gpus()))
def test_no_real_capture_has_a_name_another_card_than_its_id(gpu) -> None:  # type: ignore[no-untyped-def]
    # every real name agrees with NVIDIA's driver list, or is no model name (a placeholder, a
    # vGPU profile 'NVIDIA RTXA6000-24Q' on the A6000's 2230) or an id the list lacks (pre-Turing)
    assert disagreement(gpu) is None


def test_the_ids_are_read_from_every_format_that_prints_them() -> None:
    xml = parse_any((REAL / "nvidia-smi-q-x__h200__1gpu__driver580.159.04.xml").read_text())
    text = parse_any((REAL / "nvidia-smi-q__h200__1gpu__driver580.159.04.txt").read_text())
    csv = parse_any((REAL / "nvidia-smi-query-gpu__h200__1gpu__driver590.48.01__load.csv").read_text())
    assert xml is not None and text is not None and csv is not None
    assert [(g.pci_device_id, g.pci_subsystem_id) for g in (*xml.gpus, *text.gpus)] == [
        ("2335", "10DE 18BF")
    ] * 2
    assert [(g.pci_device_id, g.pci_subsystem_id) for g in csv.gpus] == [("2335", "10DE 18BE")]
    # an AWS passthrough A10G prints '000000DE' for both: no id read, never device 0000
    (a10g,) = parse_any(
        (REAL / "nvidia-smi-q-x__a10g__1gpu__driver515.105.01__aws-passthrough.xml").read_text()
    ).gpus  # type: ignore[union-attr]
    assert (a10g.name, a10g.pci_device_id, a10g.pci_subsystem_id) == ("NVIDIA A10G", None, None)


@pytest.mark.parametrize(
    ("raw", "device", "subsystem"),
    [
        ("0x233010DE", "2330", "10DE 2330"),
        ("233010de", "2330", "10DE 2330"),
        ("000000DE", None, None),
        ("[REDACTED]", None, None),
        ("N/A", None, None),
        (None, None, None),
        ("3FC81458", None, "1458 3FC8"),  # (a Gigabyte subsystem: no NVIDIA device id)
    ],
)
def test_id_words(raw: str | None, device: str | None, subsystem: str | None) -> None:
    assert device_id(raw) == device
    assert subsystem_id(raw) == subsystem


def test_the_subsystem_picks_among_an_ids_names() -> None:
    assert names_by_id("20B2", "10DE 1625") == ("NVIDIA PG509-210",)
    assert names_by_id("20B2", "10DE 147F") == ("NVIDIA A100-SXM4-80GB",)
    # the id alone names two cards: neither is taken (a placeholder on it stays unverified)
    assert names_by_id("20B2") == ("NVIDIA A100-SXM4-80GB", "NVIDIA PG509-210")
    assert names_by_id("2684") == ("NVIDIA GeForce RTX 4090",)
    assert names_by_id("2685") == ("NVIDIA GeForce RTX 4090 D",)
    assert names_by_id("FFFF") == ()


def test_model_name_keeps_a_real_name() -> None:
    (g,) = parse_any(GTX1660_XML.read_text()).gpus  # type: ignore[union-attr]
    assert (g.name, model_name(g)) == ("Graphics Device", "NVIDIA GeForce GTX 1660")
    (h,) = parse_any((REAL / "nvidia-smi-q-x__h200__1gpu__driver580.159.04.xml").read_text()).gpus  # type: ignore[union-attr]
    assert model_name(h) == "NVIDIA H200"


def test_the_table_rows_are_well_formed() -> None:
    rows = table_rows(IDS_FILE, "ids")
    assert len(rows) > 800
    for row in rows:
        assert re.fullmatch(r"[0-9A-F]{4}", row["id"]), row
        assert "sub" not in row or re.fullmatch(r"[0-9A-F]{4} [0-9A-F]{4}", row["sub"]), row
        assert row["name"].strip() == row["name"] and row["name"], row


def _named(name: str, device: str, subsystem: str | None = None):  # type: ignore[no-untyped-def]
    # a real capture's GPU with the name and ids another driver release printed for that card
    (g,) = parse_any((REAL / "nvidia-smi-q-x__h200__1gpu__driver580.159.04.xml").read_text()).gpus  # type: ignore[union-attr]
    return dataclasses.replace(g, name=name, pci_device_id=device, pci_subsystem_id=subsystem)


@pytest.mark.parametrize(
    ("name", "device", "subsystem"),
    [
        # names NVIDIA's README printed for the id in an earlier release (data/gpu_pci_ids.yml `was`)
        ("NVIDIA PG506-242", "20B3", "10DE 14A7"),  # 515.48.07 to 525.60.13; now 'NVIDIA A100-SXM-64GB'
        ("HGX GB200", "2941", "10DE 2046"),  # 570.123.01 to 570.124.06; now 'NVIDIA GB200'
        ("NVIDIA HGX GB200", "2941", "10DE 20CA"),  # 570.123.07 to 570.133.07
        ("NVIDIA A800 40GB PCIe", "20F6", "10DE 17A3"),  # 515.86.01 to 525.53; now 'A800 40GB Active'
        # a driver before the README's table (470, NVIDIA's nvmitten test data) names the A100
        # SXM4 80GB 'NVIDIA A100-SXM-80GB': its words are the listed name's, less the 4
        ("NVIDIA A100-SXM-80GB", "20B2", "10DE 147F"),
        ("NVIDIA GB200", "2941", "10DE 2046"),  # (the newest name)
    ],
)
def test_a_name_another_release_gave_the_id_is_the_same_card(name: str, device: str, subsystem: str) -> None:
    assert disagreement(_named(name, device, subsystem)) is None


@pytest.mark.parametrize(
    ("name", "device", "said"),
    [
        ("NVIDIA H100 80GB HBM3", "2331", "'NVIDIA H100 PCIe'"),  # a form factor: SXM-only name, PCIe id
        ("NVIDIA GeForce RTX 4090", "2685", "'NVIDIA GeForce RTX 4090 D'"),  # a variant word
        ("NVIDIA GeForce RTX 4090 D", "2684", "'NVIDIA GeForce RTX 4090'"),
        ("NVIDIA A100-SXM4-40GB", "20B2", "A100-SXM4-80GB"),  # a memory size
        ("NVIDIA L40", "26B9", "'NVIDIA L40S'"),  # another model number
        ("NVIDIA A100-SXM-64GB", "20B2", "A100-SXM4-80GB"),
    ],
)
def test_names_that_conflict_are_still_said(name: str, device: str, said: str) -> None:
    text = disagreement(_named(name, device))
    assert text is not None and said in text, text


def test_every_name_any_release_printed_agrees_with_its_id() -> None:
    # the table holds every README release's names (scripts/gpu_pci_ids.py): none is another card
    rows = table_rows(IDS_FILE, "ids")
    assert any(row.get("was") for row in rows)
    for row in rows:
        assert disagreement(_named(row["name"], row["id"], row.get("sub"))) is None, row
    # a placeholder is named only by the newest release's name, never by a former one
    assert names_by_id("2941", "10DE 2046") == ("NVIDIA GB200",)
    assert names_by_id("20B3", "10DE 14A7") == ("NVIDIA A100-SXM-64GB",)
