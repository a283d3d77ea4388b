"""Names nvidia-smi prints alike for several products (data/gpu_name_markers.yml `shared_names`):
the Jetson driver names the chip, 'Orin (nvgpu)', for every Orin module, so an order naming one
module ('Jetson AGX Orin 64GB') cannot be told from the name. Read by `match_model`
(steps/checks/model_match.py) before it weighs the ordered words one by one."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from gpuonboard.model_names import _name_tokens, model_tokens
from gpuonboard.resources import DATA_DIR, table_rows
from gpuonboard.steps.base import Verdict
from gpuonboard.steps.checks.once import loaded_once

MARKERS_FILE = DATA_DIR / "gpu_name_markers.yml"


@dataclass(frozen=True)
class SharedName:
    """One name several products print: its words, and each product's (name, words)."""

    name: str
    words: frozenset[str]
    products: tuple[tuple[str, frozenset[str]], ...]


def _words(text: str) -> frozenset[str]:
    return frozenset(model_tokens(" ".join(_name_tokens(text).tokens)))


@loaded_once
def shared_names(path: str = str(MARKERS_FILE)) -> tuple[SharedName, ...]:
    """The rows of data/gpu_name_markers.yml `shared_names`, each name's products' words holding
    the name's model words ('ORIN' of 'Orin (nvgpu)', less the driver's 'NVGPU')."""
    out = []
    for row in table_rows(Path(path), "shared_names"):
        name, products = str(row.get("name") or ""), row.get("products")
        if not _words(name) or not isinstance(products, list) or len(products) < 2:
            raise ValueError(f"{path}: shared name {name!r} needs its words and two products or more")
        out.append(SharedName(name, _words(name), tuple((str(p), _words(str(p))) for p in products)))
    return tuple(out)


def shared_name_judged(model: str, want: list[str], have: frozenset[str]) -> tuple[Verdict, str] | None:
    """(verdict, why) of an order against a name several products print: 'pass' when every one
    of them has the ordered words ('Jetson Orin'), 'unverified' naming them when only some have
    ('Jetson AGX Orin 64GB'); None when the name is no shared one, the name holds every ordered
    word, or no product has them all (judged word by word: 'A100' fails)."""
    row = next((r for r in shared_names() if r.words == have), None)
    if row is None or set(want) <= have:
        return None
    fits = [p for p, words in row.products if set(want) <= words | have]
    if not fits:
        return None
    if len(fits) == len(row.products):
        return "pass", ""
    return "unverified", (
        f"'{model}' ordered, and nvidia-smi prints '{row.name}' for each of"
        f" {', '.join(p for p, _ in row.products)}: the name cannot tell which of them this is"
        " (`cat /proc/device-tree/model` on the box names the module)"
    )
