"""Which GPU a box has where its name does not say it, from the PCI device id nvidia-smi prints
beside the name (facts/gpu_ids.py): a driver older than the card names it "NVIDIA Graphics
Device" or "Device 2331", and the id still names the card as a current driver would
(data/gpu_pci_ids.yml); a name that is another product than every name NVIDIA's driver, of
any release, gives the GPU's id is another card than the id, and neither is trusted silently.
Used by `gpu_model`.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterable

from gpuonboard.facts.gpu_ids import all_names_by_id, every_name, names_by_id, shown_id
from gpuonboard.facts.nvidia_smi import GpuInfo
from gpuonboard.once import lazy_re
from gpuonboard.steps.checks.model_match import is_placeholder_name, is_vgpu, model_tokens, stated_form

LIST = "NVIDIA's driver list of PCI ids (data/gpu_pci_ids.yml)"


def named_by_id(g: GpuInfo) -> GpuInfo | None:
    """A GPU the driver named with a placeholder, named as its PCI device id is (the name a
    current driver prints for it); None where the id was not read, is not in the table, or
    names more than one card (its subsystem unread)."""
    if not g.pci_device_id or not is_placeholder_name(g.name):
        return None
    names = names_by_id(g.pci_device_id, g.pci_subsystem_id)
    return dataclasses.replace(g, name=names[0]) if len(names) == 1 else None


def model_name(g: GpuInfo) -> str:
    """The name the model is read from: the driver's own, or where it printed a placeholder,
    the name of its PCI device id (named_by_id): the NVLink links and the GPU family expected."""
    named = named_by_id(g)
    return g.name if named is None else named.name


def placeholder_text(g: GpuInfo, named: GpuInfo | None = None) -> str:
    """'GPU 0 named 'Graphics Device' (a driver placeholder, not a model)', and where its id
    names the card: '...; its PCI device id 10de:2184 is 'NVIDIA GeForce GTX 1660' in ...'."""
    text = f"{g.called()} named '{g.name.strip()}' (a driver placeholder, not a model"
    if named is None or not g.pci_device_id:
        return text + ")"
    return f"{text}; its PCI device id {shown_id(g.pci_device_id)} is '{named.name}' in {LIST})"


# words of a name that state a dimension a shorter name of the same card may leave out: a memory
# size ('144G' is read as 144GB), a memory type, an SXM generation; the form words, read whole by
# `stated_form`; platform words (HGX, DGX: a baseboard, no product)
_SIZE = lazy_re(r"^\d+GB$")
_KIND = lazy_re(r"^(?:HBM|GDDR|LPDDR)\d[EX]?$")
_GENERATION = lazy_re(r"^SXM\d+$")
_NOT_MODEL = lazy_re(r"^(?:\d+GB|(?:HBM|GDDR|LPDDR)(?:\d[EX]?)?|SXM\d*|PCIE\d*|HGX\d*|DGX\d*)$")


def _dimensions(name: str) -> tuple[frozenset[str], tuple[frozenset[str], ...]]:
    """A GPU name's model words (its model number and variant words: 'H20' and '3E' of
    'NVIDIA H20-3e', 'RTX4090' and 'D'), and what it states of each other dimension: its memory
    sizes, memory types, SXM generations and form factor (empty where it does not say)."""
    words = model_tokens(name)
    form = stated_form(name)
    return frozenset(w for w in words if not _NOT_MODEL.match(w)), (
        frozenset(w for w in words if _SIZE.match(w)),
        frozenset(w for w in words if _KIND.match(w)),
        frozenset(w for w in words if _GENERATION.match(w)),
        frozenset({form} if form else ()),
    )


def same_product(listed: str, name: str) -> bool:
    """Whether two names of a GPU are one product: the same model words (model number and every
    variant word: 'NVIDIA H20' is not 'NVIDIA H20-3e' nor 'NVIDIA H20 NVL16', 'L40' not 'L40S'),
    and each other dimension (memory size, memory type, SXM generation, form factor) the same where
    both state it: a name that leaves one out says less ('NVIDIA A100-SXM-80GB', a 470 driver's,
    is the 'NVIDIA A100-SXM4-80GB'), one that states another is another card ('GH200 480GB' and
    'GH200 144G HBM3e'; 'H100 PCIe' and the SXM-only 'H100 80GB HBM3')."""
    (model, said), (other_model, other_said) = _dimensions(listed), _dimensions(name)
    return model == other_model and all(
        not a or not b or a == b for a, b in zip(said, other_said, strict=True)
    )


@functools.cache
def _ids_by_words() -> dict[frozenset[str], tuple[str, ...]]:
    """Each name's words (model_tokens) -> the device ids any driver release gave that name."""
    out: dict[frozenset[str], list[str]] = {}
    for device, names in every_name().items():
        for n in names:
            out.setdefault(frozenset(model_tokens(n)), []).append(device)
    return {words: tuple(dict.fromkeys(ids)) for words, ids in out.items()}


def disagreement(g: GpuInfo) -> str | None:
    """Where a GPU's name is another product than every name NVIDIA's driver, of any release,
    gives its PCI device id ('NVIDIA H100 PCIe' on device 2330, the SXM5 H100): say so. A name the
    driver gives the id agrees; any other where it is the same product as one of the id's names
    (same_product), unless it is a name the driver gives other ids and says more than the id's
    name: it is theirs ('NVIDIA H100 80GB HBM3', 2330's, on 2339's 'NVIDIA H100'; the shorter
    'NVIDIA H100' on 2330 says less, no other card). None too where the id or the table's row is
    missing, for a placeholder (named_by_id) and for a vGPU profile (its name is the profile's,
    its id the board's)."""
    if not g.pci_device_id or is_placeholder_name(g.name) or g.name.rstrip().endswith(("...", "\u2026")):
        return None
    if is_vgpu(g.name, g.product_brand, g.virtualization_mode):
        return None
    every = all_names_by_id(g.pci_device_id)
    words = frozenset(model_tokens(g.name))  # ('NVIDIA DGX Display': no model an order names)
    if not every or any(frozenset(model_tokens(n)) == words for n in every):
        return None
    others = [i for i in _ids_by_words().get(words, ()) if i != g.pci_device_id.upper()]
    if any(same_product(n, g.name) and (not others or words <= model_tokens(n)) for n in every):
        return None
    # (an id whose every row is an older release's: the names it had)
    names = names_by_id(g.pci_device_id, g.pci_subsystem_id) or every
    shown = " or ".join(f"'{n}'" for n in names)
    theirs = f" (NVIDIA's name for {', '.join(shown_id(i) for i in others)})" if others else ""
    return (
        f"named '{g.name.strip()}'{theirs} but its PCI device id"
        f" {shown_id(g.pci_device_id, g.pci_subsystem_id)} is {shown} in {LIST}"
    )


def disagreements(gpus: Iterable[GpuInfo]) -> str:
    """The GPUs whose name and PCI device id name different cards, alike ones together, with
    what to do; '' where none."""
    said: dict[str, list[str]] = {}
    # (the GPUs of a box are mostly alike: each distinct set of what disagreement reads is judged
    # once, not once per GPU; ~50 us each)
    judged: dict[tuple[str | None, ...], str | None] = {}
    for g in gpus:
        key = (g.name, g.pci_device_id, g.pci_subsystem_id, g.product_brand, g.virtualization_mode)
        if key not in judged:
            judged[key] = disagreement(g)
        text = judged[key]
        if text is not None:
            said.setdefault(text, []).append(g.called())
    if not said:
        return ""
    listed = "; ".join(f"{', '.join(who)} {text}" for text, who in said.items())
    return (
        f"{listed}: the name and the card's id disagree; ask the vendor which card this is"
        " (`lspci -nn -d 10de:`, `nvidia-smi -q`), and whether its driver or VBIOS is the card's own"
    )
