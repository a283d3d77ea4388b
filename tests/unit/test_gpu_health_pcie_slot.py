"""`pcie_link` and a card in a slot of an older PCIe generation than its own.

The real RTX 4090 capture reports `max_device_link_gen` 4 and `max_host_link_gen` 3: the card
sits in a Gen3 slot, so nvidia-smi's `max_link_gen` (the link's max) is 3 and a link at Gen3
looks "at max" while the card runs at half its host-to-GPU bandwidth.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpuonboard.connection.gather import parse_facts
from gpuonboard.facts.probe import ProbeOutput
from gpuonboard.steps.checks import gpu_health

REAL = Path(__file__).parents[1] / "fixtures" / "real"
RTX4090 = REAL / "nvidia-smi-q-x__geforce-rtx-4090__1gpu__driver535.86.05.xml"
H100_TEXT = REAL / "nvidia-smi-q__h100-80gb-hbm3__8gpu__driver535.161.08.txt"


def _pcie(text: str) -> gpu_health.Check:
    facts = parse_facts({"nvidia_smi": ProbeOutput(text, "", 0)})
    [check] = [c for c in gpu_health.evaluate(facts) if c.name == "pcie_link"]
    return check


def _under_load(xml: str) -> str:
    """The real 4090 capture as it would read under load: link up at the slot's Gen3, busy."""
    xml = re.sub(r"<current_link_gen>1<", "<current_link_gen>3<", xml)
    xml = re.sub(r"<device_current_link_gen>1<", "<device_current_link_gen>3<", xml)
    xml = re.sub(r"<gpu_util>0 %<", "<gpu_util>100 %<", xml)
    return re.sub(r"<performance_state>P\d+<", "<performance_state>P2<", xml)


def test_gen4_card_in_gen3_slot_is_named_even_under_load() -> None:
    check = _pcie(_under_load(RTX4090.read_text()))
    assert check.verdict == "warn"
    assert check.actual == "GPU 0 in a Gen3 slot (the card is Gen4)"
    assert "ask the vendor for a slot or server of the card's generation" in check.detail


def test_idle_gen4_card_in_gen3_slot_names_the_slot_and_the_idle_downshift() -> None:
    check = _pcie(RTX4090.read_text())
    assert check.verdict == "warn"
    assert check.actual == "GPU 0 in a Gen3 slot (the card is Gen4); GPU 0 Gen1 of Gen3"
    assert "below the card's own PCIe generation" in check.detail and "idle" in check.detail


def test_text_form_host_max_below_device_max_warns() -> None:
    text = H100_TEXT.read_text()
    capped = re.sub(r"(Host Max\s+:) 5", r"\1 4", text)
    assert capped != text
    check = _pcie(capped)
    assert check.verdict == "warn"
    assert check.actual.startswith("GPU 0 in a Gen4 slot (the card is Gen5)")


@pytest.mark.parametrize(
    "fixture",
    [
        "nvidia-smi-q-x__h200__1gpu__driver580.159.04.xml",  # host max N/A
        "nvidia-smi-q__a10__1gpu__driver535.129.03.txt",  # host max N/A
        "nvidia-smi-q-x__a100-sxm4-80gb__1of4gpu__driver535.54.03.xml",  # 4 and 4
    ],
)
def test_no_slot_warning_when_the_host_matches_or_does_not_say(fixture: str) -> None:
    assert "slot" not in _pcie((REAL / fixture).read_text()).actual
