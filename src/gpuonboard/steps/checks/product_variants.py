"""Words that make a GPU name another product, read from the data: where NVIDIA's driver names one
device 'NVIDIA H20' and another device 'NVIDIA H20 NVL16' (data/gpu_pci_ids.yml, every name the
newest driver prints), the words the longer name adds (NVL16) make it another product than the
shorter one, so an order for 'H20' is not met by an H20 NVL16 (rule `gpu_model`), nor an order
for 'H20 NVL16' by an H20. Likewise 'Embedded GPU' (RTX A2000 Embedded GPU: an MXM module),
'OEM' (GeForce RTX 3050 OEM: fewer cores), 'A' (RTX 3050 A Laptop GPU: another chip). Not such
words: memory sizes and types (the memory rules judge them: 'NVIDIA H100' and 'NVIDIA H100 80GB
HBM3' are both H100s), edition and form words (steps/checks/model_match.py judges SXM, PCIe,
Workstation, Server), and the marker words model_names._OTHER_PRODUCT already names (D, Ti, NVL,
3e, Max-Q ...: a longer name that adds one of them is left to that word's own rule). Two names of
one device id (a subsystem's name, 'NVIDIA A800 80GB PCIe LC') are one product's and add no such
word.

The words learned make a vocabulary, read in every name: 'Embedded' marks the RTX A500 Embedded
GPU too (the driver prints no plain 'NVIDIA RTX A500'), 'NVL16' the name 'NVIDIA H20 NVL16 96GB'
too. A word of one letter ('A') is read only in the names it was learned from (every other word
of such a name in the name, its memory, form and edition words aside): alone it is too common a
word. The pairs are learned once, by scripts/data_tables.py, into data/compiled/product_variants.json
(read while data/gpu_pci_ids.yml is the one they were learned from; learned here otherwise: an
O(n^2) pass over the names, ~25 ms)."""

from __future__ import annotations

import re
from typing import Any

from gpuonboard.facts.gpu_ids import IDS_FILE, every_name
from gpuonboard.model_names import _EDITION_WORDS, _MEMORY_KIND, _OTHER_PRODUCT, model_tokens
from gpuonboard.resources import derived_doc
from gpuonboard.steps.checks.once import loaded_once

#: the learned pairs' compiled copy, data/compiled/product_variants.json
DERIVED = "product_variants"

# words that say memory or form, never which product: '80GB', 'HBM3' (and its family 'HBM'),
# 'SXM4', 'PCIE'
_NOT_A_VARIANT = re.compile(r"^(?:\d+GB|(?:HBM|GDDR|LPDDR|SXM|PCIE)\d*[A-Z]?)$")


def _is_variant_word(word: str) -> bool:
    return not (_NOT_A_VARIANT.match(word) or _MEMORY_KIND.match(word) or word in _EDITION_WORDS)


def learned_pairs() -> dict[frozenset[str], frozenset[str]]:
    """A product name's words -> the words it adds to a shorter product's name (another device),
    learned from every name of data/gpu_pci_ids.yml (an O(n^2) pass: scripts/data_tables.py
    keeps its result)."""
    ids: dict[frozenset[str], set[str]] = {}
    for device, names in every_name().items():
        for name in names:
            ids.setdefault(frozenset(model_tokens(name)), set()).add(device)
    by_size = sorted(ids, key=len)
    out: dict[frozenset[str], frozenset[str]] = {}
    for longer in by_size:
        words: set[str] = set()
        for shorter in by_size:
            if len(shorter) >= len(longer):
                break
            added = longer - shorter
            if shorter < longer and not ids[shorter] & ids[longer] and not added & _OTHER_PRODUCT:
                words |= {w for w in added if _is_variant_word(w)}
        if words:
            out[longer] = frozenset(words)
    return out


def learned_doc() -> dict[str, Any]:
    """`learned_pairs` as data/compiled/product_variants.json keeps it: [name's words, its words]."""
    pairs = sorted([sorted(name), sorted(words)] for name, words in learned_pairs().items())
    return {"names": pairs}


def _pairs() -> list[tuple[frozenset[str], frozenset[str]]]:
    doc = derived_doc(DERIVED, IDS_FILE)
    names = doc[0].get("names") if doc is not None and isinstance(doc[0], dict) else None
    if not isinstance(names, list) or not all(
        isinstance(row, list) and len(row) == 2 and all(isinstance(w, str) for part in row for w in part)
        for row in names
    ):
        names = learned_doc()["names"]
    return [(frozenset(name), frozenset(words)) for name, words in names]


@loaded_once
def _vocabulary() -> tuple[frozenset[str], tuple[tuple[frozenset[str], frozenset[str]], ...]]:
    """(the words read in every name, (a name's words -> its one-letter words read only there))."""
    pairs = _pairs()
    words = frozenset(w for _, added in pairs for w in added if len(w) > 1)
    tied = tuple(
        (frozenset(w for w in name if _is_variant_word(w)), frozenset(w for w in added if len(w) == 1))
        for name, added in pairs
        if any(len(w) == 1 for w in added)
    )
    return words, tied


def vocabulary() -> frozenset[str]:
    """Every word the driver's names say makes another product (NVL16, EMBEDDED, OEM, A)."""
    words, tied = _vocabulary()
    return words.union(*(added for _, added in tied))


def data_variant_words(tokens: frozenset[str]) -> frozenset[str]:
    """The words of a whole GPU name (its `model_tokens`) that the driver's names say make it
    another product: {'NVL16'} of 'NVIDIA H20 NVL16' and of 'NVIDIA H20 NVL16 96GB', {'A'} of
    'NVIDIA GeForce MX570 A'."""
    words, tied = _vocabulary()
    out = tokens & words
    for name, added in tied:
        if name <= tokens:
            out |= added
    return out
