"""The sentence refusing a saved fragment of a format this tool reads: lines from inside an
output, its head (and maybe its end) cut off, so what the head says is not known. One sentence
for every format: `nvidia-smi -q` lines from inside a GPU's block (api/saved_forms.py
nvidia_smi_part), `nvidia-smi -q -x` elements from inside a GPU's record (netdata#2922's paste,
cut at both ends), `nvidia-smi topo -m` matrix rows without the header line naming its columns
(sglang#3538's paste, starting at GPU7's row)."""

from __future__ import annotations

import re

from gpuonboard.once import lazy_re

__all__ = ["format_fragment", "fragment_sentence"]


def fragment_sentence(what: str, lacks: str, unknown: str, command: str, shows: str = "") -> str:
    """`what` (the fragment), `lacks` (the part of the output it is without), `unknown` (what is
    not known without it), `command` (the output to save whole), `shows` (`; it shows ...`)."""
    return f"{what}, without {lacks}, so {unknown} are not known{shows}: save the whole `{command}` output."


# elements only nvidia-smi -q -x's GPU record holds (`<fb_memory_usage>`, `<performance_state>`),
# and the ones named after them (`<clocks_event_reason_gpu_idle>`, `<pci_bus_id>`)
_XML_KNOWN = lazy_re(
    r"(?:product_name|product_brand|uuid|minor_number|vbios_version|pci|replay_counter|tx_util|rx_util"
    r"|fan_speed|performance_state|clocks_(?:throttle|event)_reason|fb_memory_usage|bar1_memory_usage"
    r"|compute_mode|utilization|ecc_mode|ecc_errors|retired_pages|remapped_rows|temperature"
    r"|power_readings|gpu_power_readings|clocks|applications_clocks|max_clocks|processes"
    r"|persistence_mode|display_mode)\w*"
)
# an element's opening tag at a line's start (`<volatile>`, `<gpu_temp>`)
_XML_OPENING = lazy_re(r"^[^\S\n]*<([a-z][a-z0-9_]*)\b[^<>]*>", re.M)
_XML_ROOT = re.compile(r"<nvidia_smi_log\b|<\?xml\b")
_XML_GPU = re.compile(r"<gpu\s+id=")
# a row of topo -m's matrix (`GPU7    NV18    NV18 ...  X   NODE`) and its header line (the
# column names, indented: `\tGPU0\tGPU1 ...`, `        GPU0    GPU1`)
_TOPO_ROW = re.compile(
    r"^[^\S\n]*(?:GPU\d+|NIC\d+|mlx\d+_\d+)\s+(?:(?:X|NV\d+|SYS|NODE|PHB|PXB|PIX|PSB)\s+){2,}", re.M
)
_TOPO_HEADER = re.compile(r"^[ \t]+GPU0\b", re.M)


def format_fragment(text: str) -> str | None:
    """The sentence for a fragment of `nvidia-smi -q -x` or `nvidia-smi topo -m` (see the
    module), None for any other text."""
    head = text[:8000]
    # (three elements or more, one of the record's own: a section alone is its element and its
    # children, `<ecc_errors>` with `<volatile>`, `<aggregate>` ..., 1Panel#10990's clocks_event_reasons)
    names = set(_XML_OPENING.findall(head))
    if len(names) >= 3 and any(map(_XML_KNOWN.fullmatch, names)) and not _XML_ROOT.search(head):
        lacks = "the `<nvidia_smi_log>` header above them (driver_version, attached_gpus)"
        if not _XML_GPU.search(head):
            lacks += " and the record's `<gpu id=...>` line"
        return fragment_sentence(
            "elements of `nvidia-smi -q -x` from inside a GPU's record",
            lacks,
            "the driver, the number of GPUs and which GPU they belong to",
            "nvidia-smi -q -x",
        )
    if _TOPO_ROW.search(head) and not _TOPO_HEADER.search(head):
        return fragment_sentence(
            "rows of `nvidia-smi topo -m`'s matrix",
            "its header line (the column names: GPU0, GPU1 ..., NIC0 ...)",
            "the device each column is and the rows above the first",
            "nvidia-smi topo -m",
        )
    return None
