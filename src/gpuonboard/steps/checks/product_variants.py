"""Words that make a GPU name another product, read from the data: where NVIDIA's driver names one
device 'NVIDIA H20' and another device 'NVIDIA H20 NVL16' (data/gpu_pci_ids.yml, every name the
newest driver prints), the words the longer name adds (NVL16) make it another product than the
shorter one, so an order for 'H20' is not met by an H20 NVL16 (rule `gpu_model`). Likewise
'Embedded GPU' (RTX A2000 Embedded GPU: an MXM module), 'OEM' (GeForce RTX 3050 OEM: fewer
cores), 'A' (RTX 3050 A Laptop GPU: another chip). Not such words: memory sizes and types
(the memory rules judge them: 'NVIDIA H100' and 'NVIDIA H100 80GB HBM3' are both H100s), edition
and form words (steps/checks/model_match.py judges SXM, PCIe, Workstation, Server), and the
marker words model_names._OTHER_PRODUCT already names (D, Ti, NVL, 3e, Max-Q ...: a longer name
that adds one of them is left to that word's own rule). Two names of one device id (a subsystem's
name, 'NVIDIA A800 80GB PCIe LC') are one product's and add no such word."""

from __future__ import annotations

import re

from gpuonboard.facts.gpu_ids import every_name
from gpuonboard.model_names import _EDITION_WORDS, _MEMORY_KIND, _OTHER_PRODUCT, model_tokens
from gpuonboard.steps.checks.once import loaded_once

# words that say memory or form, never which product: '80GB', 'HBM3' (and its family 'HBM'),
# 'SXM4', 'PCIE'
_NOT_A_VARIANT = re.compile(r"^(?:\d+GB|(?:HBM|GDDR|LPDDR|SXM|PCIE)\d*[A-Z]?)$")


def _is_variant_word(word: str) -> bool:
    return not (_NOT_A_VARIANT.match(word) or _MEMORY_KIND.match(word) or word in _EDITION_WORDS)


@loaded_once
def _variants() -> dict[frozenset[str], frozenset[str]]:
    """A product name's words -> the words it adds to a shorter product's name (another device)."""
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


def data_variant_words(tokens: frozenset[str]) -> frozenset[str]:
    """The words of a whole GPU name (its `model_tokens`) that make it another product than a
    shorter name the driver prints for another device: {'NVL16'} of 'NVIDIA H20 NVL16'."""
    return _variants().get(tokens, frozenset())
