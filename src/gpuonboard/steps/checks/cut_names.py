"""What a GPU name nvidia-smi's table cut before its model ('NVIDIA GeForce ...') still says
against the ordered model, read by `match_model` (steps/checks/model_match.py): the brand word
before the cut (no A100 is a GeForce: every name NVIDIA's driver gives one, data/gpu_pci_ids.yml,
lacks it) and the GPU's memory (no RTX 3090 has 8 GB: data/gpu_name_markers.yml `sold_memory`).
Where neither rules the model out, the cut name warns as before (its tail may hold the model)."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable

from gpuonboard.facts.gpu_ids import every_name
from gpuonboard.model_names import _MEMORY, model_tokens

# brand words nvidia-smi prints before the model, which the name's words leave out (vendor words)
_BRANDS = {"GEFORCE": "GeForce", "TESLA": "Tesla"}
_VRAM_LOW = 0.90  # below 90 % of the smallest size sold: not that size (nvidia-smi shows 94-99 %)


@functools.cache
def _driver_names() -> tuple[tuple[frozenset[str], str], ...]:
    """(words, upper-case text) of every name NVIDIA's driver gives a GPU (data/gpu_pci_ids.yml)."""
    names = {n for found in every_name().values() for n in found}
    return tuple((frozenset(model_tokens(n)), n.upper()) for n in sorted(names))


def _brand_problem(model: str, words: frozenset[str], delivered: str) -> str | None:
    """Why a brand word before the cut ('GeForce') is no name of the ordered model's: NVIDIA's
    driver names it some way, never with that brand."""
    said = [b for b in _BRANDS if re.search(rf"\b{b}\b", delivered.upper())]
    named = [text for have, text in _driver_names() if words <= have]
    if not said or not named:
        return None
    if any(re.search(rf"\b{b}\b", text) for b in said for text in named):
        return None
    brand = _BRANDS[said[0]]
    return (
        f"'{model}' ordered, and the name says {brand} before its cut: no name NVIDIA's driver gives"
        f" the {model} says {brand}"
    )


def cut_name_problems(
    model: str,
    want: Iterable[str],
    delivered: str,
    vram_mib: int | None,
    sold: Iterable[tuple[frozenset[str], tuple[int, ...]]],
) -> list[str]:
    """The problems of a name cut before the ordered model's words (unseen) that the words before
    the cut and the GPU's memory still tell: a brand the model is never sold under, memory below
    every size NVIDIA sells the model with (`sold`: data/gpu_name_markers.yml `sold_memory`; a
    board is reworked to more memory, never to less). Empty when neither tells."""
    words = frozenset(model_tokens(" ".join(w for w in want if not _MEMORY.match(w))))
    if not words:
        return []
    problems = [p for p in [_brand_problem(model, words, delivered)] if p]
    if vram_mib is not None and not any(_MEMORY.match(w) for w in want):  # (a size ordered: judged)
        sizes = next((s for row, s in sold if row == words), ())
        if sizes and vram_mib < _VRAM_LOW * min(sizes) * 1024:
            shown = " or ".join(f"{n} GB" for n in sizes)
            problems.append(
                f"'{model}' ordered, the GPU has {vram_mib} MiB, and NVIDIA sells it with {shown} only"
            )
    return problems
