"""The tables of data/gpu_name_markers.yml, read once and checked: product-marker words and their
sibling models, names with a marker after a word a table may cut, NVL PCIe cards, memory kinds,
SXM-only models, the memory sizes NVIDIA sells each model with, and marketplace abbreviations.
model_match judges a delivered name against an order with them."""

from __future__ import annotations

from pathlib import Path

from gpuonboard.model_names import _MEMORY_KIND, _OTHER_PRODUCT, _name_tokens
from gpuonboard.resources import DATA_DIR, table_rows
from gpuonboard.steps.checks.once import loaded_once

MARKERS_FILE = DATA_DIR / "gpu_name_markers.yml"


@loaded_once
def marker_siblings(path: str = str(MARKERS_FILE)) -> dict[str, tuple[frozenset[str], ...]]:
    """Per product-marker word whose meaning depends on the model (data/gpu_name_markers.yml:
    PCIE, QUADRO), the words of each model sold both with and without it: {'PCIE': ({'A100'}, ...)}."""
    out: dict[str, tuple[frozenset[str], ...]] = {}
    for row in table_rows(Path(path), "markers"):
        word, siblings = row.get("word"), row.get("siblings")
        words = _name_tokens(word).tokens if isinstance(word, str) else ()
        if len(words) != 1 or words[0] not in _OTHER_PRODUCT or not isinstance(siblings, list):
            raise ValueError(
                f"{path}: marker {word!r} must be one product-marker word with a list of siblings"
            )
        models = [s.get("model") if isinstance(s, dict) else None for s in siblings]
        if not all(isinstance(m, str) and _name_tokens(m).tokens for m in models):
            raise ValueError(f"{path}: every sibling of {word!r} must name its model")
        out[words[0]] = tuple(frozenset(_name_tokens(str(m)).tokens) for m in models)
    return out


# per sibling model of a marker word: (its words, the GB sizes only its product with the word has)
_SizedSiblings = tuple[tuple[frozenset[str], frozenset[int]], ...]


@loaded_once
def marker_sizes(path: str = str(MARKERS_FILE)) -> dict[str, _SizedSiblings]:
    """Per product-marker word (data/gpu_name_markers.yml `markers`), each sibling model whose
    product with the word is sold with memory sizes its sibling without it is not (`with_gb`
    less `without_gb`): {'QUADRO': (({'RTX', '6000'}, {24}), ...)}."""
    out: dict[str, _SizedSiblings] = {}
    for row in table_rows(Path(path), "markers"):
        word = _name_tokens(str(row.get("word") or "")).tokens[0]
        rows = []
        for sib in row.get("siblings") or []:
            sized = [sib.get(k, []) for k in ("with_gb", "without_gb")]
            if not all(isinstance(v, list) and all(isinstance(n, int) and n > 0 for n in v) for v in sized):
                raise ValueError(f"{path}: sibling {sib.get('model')!r} of {word!r}: sizes must be GB lists")
            if only := frozenset(sized[0]) - frozenset(sized[1]):
                rows.append((frozenset(_name_tokens(str(sib["model"])).tokens), only))
        out[word] = tuple(rows)
    return out


@loaded_once
def marked_tails(path: str = str(MARKERS_FILE)) -> tuple[tuple[tuple[str, ...], float | None], ...]:
    """The words of each name of data/gpu_name_markers.yml `tails`: a name nvidia-smi prints with
    a product-marker word after a word its table may cut (`... Blackwell Max-Q Workstation Edition`),
    with the most power that product draws (`max_w`, W; None where the row gives none): a GPU whose
    power cap reads above it is not that product."""
    out = []
    for row in table_rows(Path(path), "tails"):
        words = _name_tokens(str(row.get("name") or "")).tokens
        if not any(w in _OTHER_PRODUCT for w in words):
            raise ValueError(f"{path}: tail {row.get('name')!r} must hold a product-marker word")
        watts = row.get("max_w")
        if watts is not None and not (isinstance(watts, (int, float)) and watts > 0):
            raise ValueError(f"{path}: tail {row.get('name')!r}: max_w must be a number of watts")
        out.append((words, float(watts) if watts is not None else None))
    return tuple(out)


@loaded_once
def nvl_pcie_cards(path: str = str(MARKERS_FILE)) -> tuple[frozenset[str], ...]:
    """The models of data/gpu_name_markers.yml `nvl_pcie_cards`: their only PCIe card is named
    with NVL (the H200 NVL), so an ordered 'PCIe' is met by it."""
    out = []
    for row in table_rows(Path(path), "nvl_pcie_cards"):
        words, name = _name_tokens(str(row.get("model") or "")).tokens, str(row.get("name") or "")
        if not words or "NVL" not in _name_tokens(name).tokens:
            raise ValueError(
                f"{path}: nvl_pcie_cards row {row.get('model')!r} needs a model and its NVL name"
            )
        out.append(frozenset(words))
    return tuple(out)


@loaded_once
def memory_kinds(path: str = str(MARKERS_FILE)) -> tuple[tuple[frozenset[str], tuple[str, ...]], ...]:
    """The models of data/gpu_name_markers.yml `memory_kinds`, sold with several memory types
    under one name: (the model's words, its types) per row."""
    out = []
    for row in table_rows(Path(path), "memory_kinds"):
        words, kinds = _name_tokens(str(row.get("model") or "")).tokens, row.get("kinds")
        if (
            not words
            or not isinstance(kinds, list)
            or not all(_MEMORY_KIND.match(str(k).upper()) for k in kinds)
        ):
            raise ValueError(
                f"{path}: memory_kinds row {row.get('model')!r} needs a model and its memory types"
            )
        out.append((frozenset(words), tuple(str(k).upper() for k in kinds)))
    return tuple(out)


@loaded_once
def sxm_only(path: str = str(MARKERS_FILE)) -> tuple[frozenset[str], ...]:
    """The models of data/gpu_name_markers.yml `sxm_only` (their words): every card of them whose
    name says neither PCIe nor NVL is an SXM part ('NVIDIA H100', the H100 SXM5 94GB)."""
    out = []
    for row in table_rows(Path(path), "sxm_only"):
        words, names = frozenset(_name_tokens(str(row.get("model") or "")).tokens), row.get("names")
        if not words or not isinstance(names, list) or not names:
            raise ValueError(f"{path}: sxm_only row {row.get('model')!r} needs a model and its SXM names")
        out.append(words)
    return tuple(out)


@loaded_once
def sold_memory(path: str = str(MARKERS_FILE)) -> tuple[tuple[frozenset[str], tuple[int, ...]], ...]:
    """The models of data/gpu_name_markers.yml `sold_memory`: (the model's words, the memory
    sizes in GB NVIDIA sells it with) per row."""
    out = []
    for row in table_rows(Path(path), "sold_memory"):
        words, sizes = _name_tokens(str(row.get("model") or "")).tokens, row.get("sizes")
        sized = isinstance(sizes, list) and all(isinstance(n, int) and n > 0 for n in sizes or [0])
        if not words or not sized:
            raise ValueError(f"{path}: sold_memory row {row.get('model')!r} needs a model and its sizes (GB)")
        out.append((frozenset(words), tuple(sizes or ())))
    return tuple(out)


@loaded_once
def abbreviations(path: str = str(MARKERS_FILE)) -> tuple[tuple[frozenset[str], str, tuple[str, ...]], ...]:
    """The rows of data/gpu_name_markers.yml `abbreviations`: (the model's words, the short word a
    marketplace writes, the words of the name it stands for) per row ('WS' of the RTX PRO 6000)."""
    out = []
    for row in table_rows(Path(path), "abbreviations"):
        model, word = (
            _name_tokens(str(row.get("model") or "")).tokens,
            _name_tokens(str(row.get("word") or "")),
        )
        means = _name_tokens(str(row.get("means") or "")).tokens
        if not model or len(word.tokens) != 1 or not means:
            raise ValueError(
                f"{path}: abbreviations row {row.get('word')!r} needs a model, one word and its meaning"
            )
        out.append((frozenset(model), word.tokens[0], means))
    return tuple(out)
