"""The all-reduce reference table (data/allreduce_reference.yml) and how a row matches a GPU:
its name (model and form, word by word), count and interconnect. gpu_benchmark's table uses
the same name matching."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from gpuonboard.errors import UsageError
from gpuonboard.facts.nvidia_smi import GpuInfo
from gpuonboard.resources import DATA_DIR
from gpuonboard.steps.checks.model_match import show_word, variant_words
from gpuonboard.steps.checks.vgpu_name import vgpu_profile
from gpuonboard.yamlload import load_yaml

REFERENCE_FILE = DATA_DIR / "allreduce_reference.yml"


def load_references(path: Path = REFERENCE_FILE) -> dict[str, Any]:
    """The all-reduce reference table (see the comment at the top of the file)."""
    data = load_yaml(path, UsageError, "all-reduce reference")
    if not isinstance(data, dict) or not isinstance(data.get("references"), list):
        raise UsageError(f"{path}: needs a 'references:' list")
    return data


def name_has(gpu_name: str, token: str, model: bool = True) -> bool:
    """Whether a reference row's `token` ("H100", "RTX 4090"; a form: "SXM", "PCIe") names part of
    nvidia-smi's GPU name, case-insensitively, at the start of a word: a model is not inside a
    longer model number ("A10" is not in "A100", "H200" not in "GH200"; a letter may follow:
    "A10" is in "A10G"); a form may be followed by its generation ("SXM" is in "A100-SXM4-80GB")."""
    pattern = r"(?<![a-z0-9])" + re.escape(token.lower()) + (r"(?![0-9])" if model else "")
    return re.search(pattern, gpu_name.lower()) is not None


def unnamed_variants(row: Mapping[str, Any], gpu_name: str) -> list[str]:
    """The variant words of a GPU name (model_match.variant_words: D, Ti, SUPER, NVL, SFF,
    Laptop, Max-Q, Mobile, MIG) that a row's `gpu` and `form` do not name, as people write them."""
    named = variant_words(f"{row.get('gpu', '')} {row.get('form') or ''}")
    return sorted(show_word(w) for w in variant_words(gpu_name) - named)


def row_matches_name(row: Mapping[str, Any], gpu_name: str) -> bool:
    """A reference row's `gpu` ("*" = any), `form` and `exclude` (a list) against a GPU name. A
    name with a variant word the row does not name matches no row: a MIG slice ('NVIDIA H200 MIG
    1g.18gb') is not the whole H200, an 'RTX 4090 D' or 'RTX 4090 Laptop GPU' not the RTX 4090,
    an 'H200 NVL' not the SXM H200; the base model's figures are no claim about them. Nor does a
    vGPU profile's name ('NVIDIA H100XM-80C', 'NVIDIA H200X-141C': a guest's time-sliced share of
    the board, vgpu_name.vgpu_profile) match a whole GPU's row."""
    if vgpu_profile(gpu_name) is not None:
        return False
    gpu = str(row.get("gpu", "*"))
    if gpu != "*" and not name_has(gpu_name, gpu):
        return False
    form = row.get("form")
    if form and not name_has(gpu_name, str(form), model=False):
        return False
    if unnamed_variants(row, gpu_name):
        return False
    excluded = row.get("exclude") or []
    return not any(name_has(gpu_name, str(x), model=False) for x in excluded)


def variant_note(gpu_name: str) -> str:
    """'' or a sentence saying why a variant's or a vGPU profile's name matched no row of the base
    model's."""
    if (profile := vgpu_profile(gpu_name)) is not None:
        return (
            f"{gpu_name} is {profile.describe()}, a guest's share of the GPU, not the whole GPU, and"
            " no row names it: the whole GPU's figures are no claim about it"
        )
    words = unnamed_variants({}, gpu_name)
    if not words:
        return ""
    said = ", ".join(f"'{w}'" for w in words)
    mig = "a MIG slice, a part of the GPU; " if "MIG" in words else ""
    return (
        f"{gpu_name} is a variant ({said} in the name: {mig}not the base model), and no row names"
        " it: the base model's figures are no claim about it"
    )


def mig_note(idx: int | None, name: str, info: GpuInfo | None) -> str:
    """'' or why a GPU in MIG mode is judged by no row: CUDA runs on one MIG slice of it (its
    name then says MIG, and `variant_note` says so), whatever name the result carries; likewise
    a vGPU (`nvidia-smi -q` Virtualization Mode VGPU) whose name is no profile name."""
    if info is None:
        return ""
    mode = (info.virtualization_mode or "").strip().upper()
    if mode == "VGPU" and vgpu_profile(name) is None:
        return (
            f"GPU {idx} is a vGPU (nvidia-smi -q: Virtualization Mode VGPU): the benchmark ran on a"
            f" guest's share of the {name}, and the whole GPU's figures are no claim about it"
        )
    if (info.mig_mode or "").lower() != "enabled" or "MIG" in variant_words(name):
        return ""
    return (
        f"MIG mode is enabled on GPU {idx} (nvidia-smi -q): the benchmark ran on a MIG slice, a part"
        f" of the {name}, and the whole GPU's figures are no claim about it"
    )


def link_generation(gpus: Sequence[GpuInfo]) -> int | None:
    """The lowest PCIe link generation of these GPUs (nvidia-smi's max: the lower of the card's
    and the slot's), or None when there is none or any GPU's is unread."""
    gens = [g.pcie_gen_max or 0 for g in gpus]
    return min(gens) if gens and min(gens) > 0 else None


def _gen_fits(row: Mapping[str, Any], pcie_gen: int | None) -> bool:
    """A row with `pcie_gen` (the least link generation its figure assumes) needs a box whose
    GPUs all link at that generation or later, read: an unread generation is no match."""
    want = row.get("pcie_gen")
    return want is None or (pcie_gen is not None and pcie_gen >= int(want))


def names_of(gpu_name: str | Sequence[str]) -> list[str]:
    """The distinct GPU names of a run, in order: one name, or each GPU's."""
    names = [gpu_name] if isinstance(gpu_name, str) else list(gpu_name)
    return list(dict.fromkeys(names)) or [""]


def _rows_for(
    table: Mapping[str, Any], gpu_name: str | Sequence[str], gpu_count: int, interconnect: str
) -> list[dict[str, Any]]:
    """The rows matching GPU name (every one of several: a row judges a mixed box only when it
    fits all its models, as the `*` PCIe row does), count and interconnect, in table order."""
    names = names_of(gpu_name)
    out = []
    for row in table["references"]:
        if not all(row_matches_name(row, name) for name in names):
            continue
        if row.get("gpus") is not None and int(row["gpus"]) != gpu_count:
            continue
        if row.get("interconnect") and row["interconnect"] != interconnect:
            continue
        out.append(dict(row))
    return out


def match_reference(
    table: Mapping[str, Any],
    gpu_name: str | Sequence[str],
    gpu_count: int,
    interconnect: str,
    pcie_gen: int | None = None,
) -> dict[str, Any] | None:
    """The first reference row matching GPU name, count, interconnect and (for a row with
    `pcie_gen`) the GPUs' PCIe link generation, or None."""
    rows = _rows_for(table, gpu_name, gpu_count, interconnect)
    return next((row for row in rows if _gen_fits(row, pcie_gen)), None)


def generation_note(
    table: Mapping[str, Any],
    gpu_name: str | Sequence[str],
    gpu_count: int,
    interconnect: str,
    pcie_gen: int | None,
) -> str:
    """'' or why no row judged the box although one matches its name, count and interconnect:
    that row's figure assumes a newer PCIe link than the GPUs have, or their link is unread."""
    rows = [r for r in _rows_for(table, gpu_name, gpu_count, interconnect) if not _gen_fits(r, pcie_gen)]
    if not rows:
        return ""
    row = rows[0]
    have = (
        f"these GPUs link at PCIe Gen{pcie_gen}"
        if pcie_gen
        else "nvidia-smi gave no PCIe link generation for every GPU"
    )
    return (
        f"row {row['id']} is for PCIe Gen{int(row['pcie_gen'])} links or later and {have}:"
        " its figure is no claim about this box"
    )
