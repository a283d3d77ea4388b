"""Which GPU a box has where its name does not say it, from the PCI device id nvidia-smi prints
beside the name (facts/gpu_ids.py): a driver older than the card names it "NVIDIA Graphics
Device" or "Device 2331", and the id still names the card as a current driver would
(data/gpu_pci_ids.yml); a name that is another product than every name NVIDIA's driver, of
any release, gives the GPU's id is another card than the id, and neither is trusted silently.
Used by `gpu_model`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from gpuonboard.facts.gpu_ids import all_names_by_id, names_by_id, shown_id
from gpuonboard.facts.nvidia_smi import GpuInfo
from gpuonboard.steps.checks.model_match import is_placeholder_name, is_vgpu, model_matches, model_tokens

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


def same_product(listed: str, name: str) -> bool:
    """Whether two names of a GPU are one product as an order is matched (model_match): one's
    words are met by the other's, either way round ('NVIDIA A100-SXM-80GB', an older driver's,
    and 'NVIDIA A100-SXM4-80GB'; 'NVIDIA GB200' and 'NVIDIA HGX GB200'). Names conflict where a
    word of one marks another card than the other: a form factor (PCIe against the SXM-only
    'H100 80GB HBM3'), a memory size, another model number, a variant word (D, Ti, SUPER, NVL)."""
    same = model_tokens(listed) == model_tokens(name)  # ('NVIDIA DGX Display': no model an order names)
    return same or model_matches(listed, name) or model_matches(name, listed)


def disagreement(g: GpuInfo) -> str | None:
    """Where a GPU's name is another product than every name NVIDIA's driver, of any release,
    gives its PCI device id ('NVIDIA H100 PCIe' on device 2330, the SXM5 H100): say so. None
    where they agree (same_product), where the id or the table's row is missing, for a
    placeholder (named_by_id) and for a vGPU profile (its name is the profile's, its id the
    board's)."""
    if not g.pci_device_id or is_placeholder_name(g.name) or g.name.rstrip().endswith(("...", "\u2026")):
        return None
    if is_vgpu(g.name, g.product_brand, g.virtualization_mode):
        return None
    every = all_names_by_id(g.pci_device_id)
    if not every or any(same_product(n, g.name) for n in every):
        return None
    names = names_by_id(g.pci_device_id, g.pci_subsystem_id)
    shown = " or ".join(f"'{n}'" for n in names)
    return (
        f"named '{g.name.strip()}' but its PCI device id {shown_id(g.pci_device_id, g.pci_subsystem_id)}"
        f" is {shown} in {LIST}"
    )


def disagreements(gpus: Iterable[GpuInfo]) -> str:
    """The GPUs whose name and PCI device id name different cards, alike ones together, with
    what to do; '' where none."""
    said: dict[str, list[str]] = {}
    for g in gpus:
        text = disagreement(g)
        if text is not None:
            said.setdefault(text, []).append(g.called())
    if not said:
        return ""
    listed = "; ".join(f"{', '.join(who)} {text}" for text, who in said.items())
    return (
        f"{listed}: the name and the card's id disagree; ask the vendor which card this is"
        " (`lspci -nn -d 10de:`, `nvidia-smi -q`), and whether its driver or VBIOS is the card's own"
    )
