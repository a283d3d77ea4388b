"""A word a GPU's name adds to the name NVIDIA's driver prints for another device makes it another
product (steps/checks/product_variants.py, read from data/gpu_pci_ids.yml, the driver's own
names): 'NVIDIA H20 NVL16' (230E) is no 'NVIDIA H20' (2329), as the H20-3e is none; so are the
Embedded GPU modules, the RTX 3050 OEM and the RTX 3050 A. Memory, form and edition words are
no such word (the memory and form rules judge them), nor is a subsystem's name of one device.
Before round 32 only the words model_names._OTHER_PRODUCT lists failed: an 'H20' order passed
an H20 NVL16 (the lead's finding, as `3e` was fixed by a word of its own)."""

from __future__ import annotations

import pytest

from gpuonboard.facts.gpu_ids import every_name
from gpuonboard.steps.checks.model_match import match_model, variant_words

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
