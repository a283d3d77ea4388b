"""A GPU's name against the names NVIDIA's driver gives its PCI device id: two names are one
product only where their model words (model number, variant words) are the same and each other
dimension (memory size, memory type, SXM generation, form factor) agrees where both state it
(steps/checks/gpu_identity.py `same_product`, `disagreement`; data/gpu_pci_ids.yml)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from gpuonboard.facts.gpu_ids import all_names_by_id
from gpuonboard.facts.nvidia_smi import parse_any
from gpuonboard.steps.checks.gpu_identity import disagreement, same_product

REAL = Path(__file__).parents[3] / "fixtures" / "real"


def _named(name: str, device: str, subsystem: str | None = None):  # type: ignore[no-untyped-def]
    # a real capture's GPU given the name and ids of another card of NVIDIA's table
    (g,) = parse_any((REAL / "nvidia-smi-q-x__h200__1gpu__driver580.159.04.xml").read_text()).gpus  # type: ignore[union-attr]
    return dataclasses.replace(g, name=name, pci_device_id=device, pci_subsystem_id=subsystem)


# (device id, the name printed, the name the table gives the id, the id whose name it is)
CONFLICTS = [
    ("2329", "NVIDIA H20-3e", "'NVIDIA H20'", "10de:232c"),  # a variant word one side only
    ("232C", "NVIDIA H20", "'NVIDIA H20-3e'", "10de:2329"),
    ("230E", "NVIDIA H20", "'NVIDIA H20 NVL16'", "10de:2329"),
    ("2329", "NVIDIA H20 NVL16", "'NVIDIA H20'", "10de:230e"),
    ("2348", "NVIDIA GH200 480GB", "'NVIDIA GH200 144G HBM3e'", "10de:2342"),  # memory sizes ('144G')
    ("2342", "NVIDIA GH200 144G HBM3e", "'NVIDIA GH200 120GB' or 'NVIDIA GH200 480GB'", "10de:2348"),
    # the SXM5 80GB's whole name on the 94GB's id, whose name says no size: says more than it
    ("2339", "NVIDIA H100 80GB HBM3", "'NVIDIA H100'", "10de:2330"),
]


@pytest.mark.parametrize(("device", "name", "listed", "theirs"), CONFLICTS)
def test_a_name_of_another_card_than_its_id_is_said(device: str, name: str, listed: str, theirs: str) -> None:
    text = disagreement(_named(name, device))
    assert text is not None, name
    assert f"is {listed} in" in text and f"(NVIDIA's name for {theirs})" in text, text


@pytest.mark.parametrize(
    ("listed", "name"),
    [
        ("NVIDIA H20", "NVIDIA H20-3e"),  # a variant word on one side is another product
        ("NVIDIA H20-3e", "NVIDIA H20"),
        ("NVIDIA H20 NVL16", "NVIDIA H20"),
        ("NVIDIA H20", "NVIDIA H20 NVL16"),
        ("NVIDIA GH200 144G HBM3e", "NVIDIA GH200 480GB"),  # sizes both state, unlike
        ("NVIDIA GH200 120GB", "NVIDIA GH200 144G HBM3e"),
        ("NVIDIA H100 PCIe", "NVIDIA H100 80GB HBM3"),  # PCIe against an SXM-only name
        ("NVIDIA GeForce RTX 4090 D", "NVIDIA GeForce RTX 4090"),
        ("NVIDIA A100-SXM4-80GB", "NVIDIA A800-SXM4-80GB"),
        ("NVIDIA L40S", "NVIDIA L40"),
        ("NVIDIA H200 NVL", "NVIDIA H200"),
        ("NVIDIA A10G", "NVIDIA A10"),
        ("NVIDIA GeForce RTX 5090 D v2", "NVIDIA GeForce RTX 5090 D"),
        ("NVIDIA A100-SXM4-80GB", "NVIDIA A100-SXM4-40GB"),
        ("NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM2e"),  # memory types both state, unlike
    ],
)
def test_names_that_differ_in_a_stated_dimension_are_other_products(listed: str, name: str) -> None:
    assert not same_product(listed, name)
    assert not same_product(name, listed)


@pytest.mark.parametrize(
    ("listed", "name"),
    [
        ("NVIDIA A100-SXM4-80GB", "NVIDIA A100-SXM-80GB"),  # the generation one side leaves out
        ("NVIDIA H100 80GB HBM3", "NVIDIA H100"),  # the shorter name says less
        ("NVIDIA GB200", "NVIDIA HGX GB200"),  # a platform word, no product
        ("NVIDIA GeForce RTX 5090 D v2", "NVIDIA GeForce RTX 5090 D V2"),
    ],
)
def test_a_name_that_says_less_is_the_same_product(listed: str, name: str) -> None:
    assert same_product(listed, name) and same_product(name, listed)


def test_a_shorter_name_than_the_ids_is_no_conflict_even_where_another_id_has_it() -> None:
    # 'NVIDIA H100' is 2339's name; on 2330 it says less than 'NVIDIA H100 80GB HBM3', no other card
    assert all_names_by_id("2339") == ("NVIDIA H100",)
    assert disagreement(_named("NVIDIA H100", "2330", "10DE 16C1")) is None
    # and where it is not less, the other model words make it another card
    assert disagreement(_named("NVIDIA H100", "2331")) is not None  # the SXM-only name on the PCIe id


def test_an_id_whose_every_row_is_an_older_releases_is_said_with_those_names() -> None:
    """2336 is listed by older releases only ('NVIDIA H100 80GB HBM2e', 525.47.07 to 525.85.05):
    a conflicting name on it said "its PCI device id 10de:2336 is  in NVIDIA's driver list", an
    empty name."""
    text = disagreement(_named("NVIDIA H100 PCIe", "2336"))
    assert text is not None
    assert "is 'NVIDIA H100 80GB HBM2e' in" in text and "is  in" not in text, text
