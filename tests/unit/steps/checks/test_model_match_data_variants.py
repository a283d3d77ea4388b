"""A word a GPU's name adds to the name NVIDIA's driver prints for another device makes it another
product (steps/checks/product_variants.py, read from data/gpu_pci_ids.yml, the driver's own
names): 'NVIDIA H20 NVL16' (230E) is no 'NVIDIA H20' (2329), as the H20-3e is none; so are the
Embedded GPU modules, the RTX 3050 OEM and the RTX 3050 A. Memory, form and edition words are
no such word (the memory and form rules judge them), nor is a subsystem's name of one device.
Before round 32 only the words model_names._OTHER_PRODUCT lists failed: an 'H20' order passed
an H20 NVL16 (the lead's finding, as `3e` was fixed by a word of its own).

The words learned are a vocabulary read in every whole name (review revG): 'Embedded' marks the
RTX A500 Embedded GPU too, whose plain name the driver does not print, and 'NVL16' a name with a
memory word more; an ordered one is demanded ('H20 NVL16' is met by no plain H20: 'NVL16' was
read as the platform word of 'GB200 NVL72', never demanded). 'A' (one letter) is read only in
the names it was learned from."""

from __future__ import annotations

import pytest

from gpuonboard.facts.gpu_ids import every_name
from gpuonboard.steps.checks.model_match import match_model, variant_words
from gpuonboard.steps.checks.product_variants import data_variant_words

# (the driver's name of one device, the name it prints for another device without the word, the word)
PAIRS = [
    ("NVIDIA H20 NVL16", "NVIDIA H20", "NVL16"),
    ("NVIDIA RTX A2000 Embedded GPU", "NVIDIA RTX A2000", "Embedded"),
    ("NVIDIA RTX 5000 Ada Generation Embedded GPU", "NVIDIA RTX 5000 Ada Generation", "Embedded"),
    ("NVIDIA RTX PRO 4000 Blackwell Embedded GPU", "NVIDIA RTX PRO 4000 Blackwell", "Embedded"),
    ("NVIDIA GeForce RTX 3050 OEM", "NVIDIA GeForce RTX 3050", "OEM"),
    ("NVIDIA GeForce RTX 3050 A Laptop GPU", "NVIDIA GeForce RTX 3050 Laptop GPU", "A"),
]


def _printed(name: str) -> bool:
    return any(name in names for names in every_name().values())


@pytest.mark.parametrize(("longer", "shorter", "word"), PAIRS)
def test_a_word_another_devices_name_lacks_marks_another_product(
    longer: str, shorter: str, word: str
) -> None:
    assert _printed(longer) and _printed(shorter)  # (both the driver's names: data/gpu_pci_ids.yml)
    ordered = shorter.removeprefix("NVIDIA ").removeprefix("GeForce ")
    check = match_model(ordered, longer, None)
    assert (check.verdict, check.why) == ("fail", f"'{word}' in the name marks another product (not ordered)")
    assert match_model(f"{ordered} {word}", longer, None).verdict == "pass"
    assert match_model(ordered, shorter, None).verdict == "pass"
    assert variant_words(longer) - variant_words(shorter)  # (the reference tables keep them apart)


@pytest.mark.parametrize(
    ("ordered", "delivered", "verdict"),
    [
        # memory words are no variant word: 'NVIDIA H100' (2339) and 'NVIDIA H100 80GB HBM3' (2330)
        ("H100", "NVIDIA H100 80GB HBM3", "pass"),
        ("H100 SXM", "NVIDIA H100 80GB HBM3", "pass"),
        # a subsystem's name of the same device (20F5 'NVIDIA A800 80GB PCIe LC')
        ("A800 80GB PCIe", "NVIDIA A800 80GB PCIe LC", "pass"),
        # edition words: the Server and Workstation Editions are both the RTX PRO 6000 Blackwell
        ("RTX PRO 6000 Blackwell", "NVIDIA RTX PRO 6000 Blackwell Server Edition", "pass"),
        ("RTX PRO 6000 Blackwell", "NVIDIA RTX PRO 6000 Blackwell Workstation Edition", "pass"),
        # the words of their own rules, as before
        ("RTX PRO 6000 Blackwell", "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition", "fail"),
        ("H100", "NVIDIA H100 NVL", "fail"),
        ("H200", "NVIDIA H200 NVL", "fail"),
        ("H200 PCIe", "NVIDIA H200 NVL", "pass"),
        ("H20", "NVIDIA H20-3e", "fail"),
        ("L40", "NVIDIA L40S", "fail"),
        ("GH200", "NVIDIA GH200 144G HBM3e", "pass"),
        ("A800", "NVIDIA A800 80GB PCIe", "fail"),
    ],
)
def test_the_family_keeps_its_verdicts(ordered: str, delivered: str, verdict: str) -> None:
    check = match_model(ordered, delivered, None)
    assert check.verdict == verdict, check.why


@pytest.mark.parametrize(("longer", "shorter", "word"), PAIRS)
def test_an_ordered_variant_word_is_demanded(longer: str, shorter: str, word: str) -> None:
    """The reverse: an order for the longer product is not met by the shorter one's name. Was a
    pass for 'H20 NVL16' against 'NVIDIA H20' (NVL16 read as a platform, as GB200's NVL72)."""
    ordered = longer.removeprefix("NVIDIA ").removeprefix("GeForce ").removesuffix(" GPU")
    assert match_model(ordered, shorter, None).verdict == "fail"
    assert match_model(ordered, longer, None).verdict == "pass"


def test_an_ordered_nvl16_is_named_as_written() -> None:
    assert match_model("H20 NVL16", "NVIDIA H20", None).why == "'NVL16' not in the name"
    assert match_model("GB200 NVL72", "NVIDIA GB200", None).verdict == "pass"  # (a platform, as before)


@pytest.mark.parametrize(
    ("ordered", "delivered", "word"),
    [
        # the driver prints no 'NVIDIA RTX A500' or 'NVIDIA RTX 3500 Ada Generation': was a pass
        ("RTX A500", "NVIDIA RTX A500 Embedded GPU", "Embedded"),
        ("RTX 3500 Ada", "NVIDIA RTX 3500 Ada Generation Embedded GPU", "Embedded"),
        ("RTX PRO 500 Blackwell", "NVIDIA RTX PRO 500 Blackwell Embedded GPU", "Embedded"),
        # a learned name with a memory word more: was a pass (an exact lookup of the whole name)
        ("H20", "NVIDIA H20 NVL16 96GB", "NVL16"),
        ("RTX A2000", "NVIDIA RTX A2000 12GB Embedded GPU", "Embedded"),
        ("MX570", "NVIDIA GeForce MX570 A 2GB", "A"),
    ],
)
def test_a_learned_word_marks_every_name_it_is_in(ordered: str, delivered: str, word: str) -> None:
    check = match_model(ordered, delivered, None)
    assert (check.verdict, check.why) == ("fail", f"'{word}' in the name marks another product (not ordered)")
    assert match_model(f"{ordered} {word}", delivered, None).verdict == "pass"


def test_a_one_letter_word_is_read_only_in_its_names() -> None:
    assert data_variant_words(frozenset({"A", "MX570"})) == {"A"}
    assert data_variant_words(frozenset({"A", "MX570", "2GB"})) == {"A"}
    assert data_variant_words(frozenset({"A", "RTX4090"})) == frozenset()
    assert data_variant_words(frozenset({"A", "LAPTOP", "RTX3050", "6GB"})) == {"A"}
