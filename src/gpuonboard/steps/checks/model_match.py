"""GPU model matching for the `acceptance` step: is a delivered GPU name the ordered model?

Owns the normalisation of GPU names (vendor words, joined numbers, memory sizes, a name
nvidia-smi's table cut with '...'), the GPU count an order's model may carry ('8x A100'), and
`match_model` / `model_matches`, which `rule_gpu_model` applies to each delivered GPU.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass

from gpuonboard.steps.base import Verdict

# words that name the maker or a brand an order may leave out ("RTX 4090" is always GeForce,
# "T4" always Tesla); QUADRO is not here: "Quadro RTX 6000" (Turing) is another card than an
# "RTX 6000" (Ada)
_VENDOR_WORDS = {"NVIDIA", "TESLA", "GEFORCE", "CORPORATION"}
# tokens in a delivered name that make it another product than a name without them; such a
# token fails the match unless the order names it too. D: the China-market RTX 4090 D; MIG: a
# MIG device (a slice of a GPU); NVL / PCIE: the PCIe cards of SXM lines (H100 NVL, H100 PCIe);
# SFF: the 70 W small-form-factor cards (RTX 4000 SFF Ada is not an RTX 4000 Ada)
_OTHER_PRODUCT = {"D", "TI", "SUPER", "NVL", "PCIE", "LAPTOP", "MAXQ", "MOBILE", "MIG", "QUADRO", "SFF"}
_SHOW = {
    "TI": "Ti",
    "SUPER": "SUPER",
    "PCIE": "PCIe",
    "LAPTOP": "Laptop",
    "MAXQ": "Max-Q",
    "MOBILE": "Mobile",
}
# such a word written joined to the number in orders: 4090D, 3090Ti, 4080Super, H100NVL
_JOINED_SUFFIX = re.compile(r"(?<=\d)(D|TI|SUPER|NVL)\b")
# interconnect words in an order's model ("A100 80GB NVLink"): the `interconnect` rule judges them
_INTERCONNECT = re.compile(r"^(NVLINK|NVSWITCH)\d*$")
# a GPU count in an order's model, as vendor quotes write it: "8x A100 80G", "A100*8", "A100 x8"
_COUNT_PREFIX = re.compile(r"^\s*(\d+)\s*[xX\u00d7*]\s*(?=\S)")
_COUNT_SUFFIX = re.compile(r"(?:\s+[xX\u00d7]\s*|\s*[*\u00d7]\s*)(\d+)\s*$")
_MEMORY = re.compile(r"^(\d+)GB$")
_SXM = re.compile(r"^SXM\d*$")
# SXM parts whose names do not say SXM; their PCIe versions say so ("NVIDIA H100 PCIe",
# "NVIDIA H100 NVL", "NVIDIA H800 PCIe", "NVIDIA H200 NVL"). nvidia-smi names: "NVIDIA H100 80GB
# HBM3", "NVIDIA H800" (also "NVIDIA H800 80GB HBM3"), "NVIDIA H20", "NVIDIA H200", "NVIDIA B200".
_SXM_ONLY = ({"H100", "HBM3"}, {"H800"}, {"H20"}, {"H200"}, {"B200"})
# superchips whose name carries CPU + GPU memory ("NVIDIA GH200 480GB": 97871 MiB of VRAM): an
# ordered size is checked against the VRAM (or that name's number, when ordered so)
_SUPERCHIPS = {"GH200", "GB200"}
# words that open a name ("Quadro RTX 6000"): never in the tail nvidia-smi's table cuts off
_LEADING = {"QUADRO"}
# how close nvidia-smi's VRAM (MiB) is to an ordered "80GB" (meaning 80 GiB class): reserved
# regions and ECC take up to ~7 % (L40S 46068 MiB of 48 GiB, A10 23028 MiB of 24 GiB)
_VRAM_CLASS = (0.92, 1.08)
# Names a driver prints for a GPU it has no name for (a driver older than the card, e.g. 418.43
# on a GTX 1660: tests/fixtures/real/nvidia-smi-q-x__geforce-gtx-1660__1gpu__driver418.43__
# graphics-device-name.xml), and lspci's form for a device id missing from pci.ids: no model
_PLACEHOLDER = re.compile(
    r"^\s*(?:(?:NVIDIA\s+)?Graphics\s+Device|(?:NVIDIA\s+)?Device\s+(?:10de:)?[0-9a-f]{4})?\s*$",
    re.IGNORECASE,
)


def is_placeholder_name(name: str) -> bool:
    """True for a name that is no model: empty, "Graphics Device", "NVIDIA Graphics Device",
    "Device 10de:2184" (the driver does not know the card): the model cannot be judged from it."""
    return bool(_PLACEHOLDER.match(name))


@dataclass(frozen=True)
class _Name:
    """A GPU name split into normalised words."""

    tokens: tuple[str, ...]
    joined: frozenset[str]  # words joined from a letters word and the number after it: RTX4090
    cut: bool  # nvidia-smi's table cut the name with '...'
    fragment: str  # the visible start of the word the cut fell in ('GENE'); '' at a word boundary


def split_count(model: str) -> tuple[str, int | None]:
    """An order's model without a GPU count written into it: '8x A100 80G' -> ('A100 80G', 8)."""
    for pattern in (_COUNT_PREFIX, _COUNT_SUFFIX):
        match = pattern.search(model)
        if match and int(match.group(1)) > 0:
            rest = (model[: match.start()] + " " + model[match.end() :]).strip()
            if rest:
                return rest, int(match.group(1))
    return model, None


@functools.lru_cache(maxsize=256)  # (pure, its value immutable: a fleet's hosts and GPUs repeat names)
def _name_tokens(name: str) -> _Name:
    """Normalised words of a GPU name, in order.

    '80 GB'/'80G'/'80GiB' -> '80GB'; 'RTX 4090' and 'RTX4090' -> 'RTX4090'; '4090D' -> '4090 D';
    'PCI-E' -> 'PCIE'; 'Max-Q' -> 'MAXQ'; vendor words dropped. A name nvidia-smi's table cut
    with '...' keeps the cut word's visible start apart (`fragment`), unless the cut fell
    between words (the space before '...' is looked at before it is stripped).
    """
    upper = name.strip().upper()
    cut = upper.endswith("...") or upper.endswith("\u2026")
    upper = upper.rstrip(".\u2026")
    at_boundary = not upper or not upper[-1].isalnum()
    upper = upper.strip()
    upper = re.sub(r"MAX[- ]?Q\b", "MAXQ", upper)
    upper = re.sub(r"\bPCI[- ]?E(?![A-Z])", "PCIE", upper)
    upper = _JOINED_SUFFIX.sub(r" \1", upper)
    upper = re.sub(r"(\d+)\s*G(?:I?B)?\b", r"\1GB", upper)
    raw = [t for t in re.split(r"[^A-Z0-9]+", upper) if t and t not in _VENDOR_WORDS]
    tokens: list[str] = []
    joined: set[str] = set()
    for t in raw:
        # a letters-only word followed by a number is one model name: RTX 4090 == RTX4090
        if tokens and t.isdecimal() and tokens[-1].isalpha() and tokens[-1] not in _OTHER_PRODUCT:
            tokens[-1] += t
            joined.add(tokens[-1])
        else:
            tokens.append(t)
    fragment = ""
    if cut and not at_boundary and tokens and not _MEMORY.match(tokens[-1]):
        fragment = tokens.pop()  # the last word was cut: 'Gene...' of 'Generation'
    return _Name(tuple(tokens), frozenset(joined), cut, fragment)


def model_tokens(name: str) -> set[str]:
    """Normalised tokens of a GPU name: 'NVIDIA A100-SXM4-80GB' -> {A100, SXM4, SXM, 80GB}."""
    tokens = set(_name_tokens(name).tokens)
    for t in list(tokens):
        family = re.match(r"^(SXM|PCIE|NVL|HBM)\d+[A-Z]?$", t)
        if family:
            tokens.add(family.group(1))
    return tokens


def _is_sxm(tokens: set[str]) -> bool:
    """An SXM part: its name says SXM, or it is a known SXM-only name."""
    if any(_SXM.match(t) for t in tokens):
        return True
    return "NVL" not in tokens and "PCIE" not in tokens and any(known <= tokens for known in _SXM_ONLY)


def _show(token: str, joined: Iterable[str] = ()) -> str:
    """A normalised word as people write it: 'RTX4090' -> 'RTX 4090', 'TI' -> 'Ti'."""
    if token in joined or re.fullmatch(r"[A-Z]{2,}\d+", token):
        token = re.sub(r"^([A-Z]+)(\d+)$", r"\1 \2", token)
    return _SHOW.get(token, token)


@dataclass(frozen=True)
class ModelMatch:
    """How a delivered GPU name compares with the ordered model: `pass`; `warn` when nvidia-smi's
    table cut the name where the words left to check may be; `fail`, `why` naming the word(s)."""

    verdict: Verdict
    why: str = ""


@dataclass(frozen=True)
class _Delivered:
    """What the words of a delivered GPU name say, as `match_model` weighs them."""

    name: _Name
    have: frozenset[str]  # its tokens with their families (SXM4 -> SXM), the cut word's known part
    frag_known: bool  # the cut word is a known start: 'SXM...', 'PCI...'
    sxm: bool  # an SXM part
    said_sxm: tuple[str, ...]  # the SXM generations the name says: ('SXM4',)
    named: tuple[int, ...]  # the memory sizes (GB) the name says
    superchip: bool  # GH200/GB200: the name's size is CPU + GPU memory


def _delivered(name: _Name) -> _Delivered:
    """The words of a delivered name, with what its cut word ('A100-SXM...') tells."""
    have = model_tokens(" ".join(name.tokens))
    frag = name.fragment
    frag_known = False
    if _SXM.match(frag):  # 'NVIDIA A100-SXM...' (old tables): the part is SXM
        have |= {frag, "SXM"}
        frag_known = True
    elif len(frag) >= 3 and "PCIE".startswith(frag):  # 'NVIDIA A100-PCI...'
        have.add("PCIE")
        frag_known = True
    return _Delivered(
        name=name,
        have=frozenset(have),
        frag_known=frag_known,
        sxm=_is_sxm(have),
        said_sxm=tuple(sorted(t for t in have if _SXM.match(t) and t != "SXM")),
        named=tuple(int(m.group(1)) for t in have if (m := _MEMORY.match(t))),
        superchip=bool(have & _SUPERCHIPS),
    )


def _memory_problem(size: int, show: str, got: _Delivered, vram_mib: int | None) -> str | None:
    """Why an ordered memory size ('80GB') is not met: by the size in the name, else the VRAM."""
    named = list(got.named)
    if size in named:
        return None
    if named and not got.superchip:
        return f"'{show}' ordered, the name says {', '.join(f'{n}GB' for n in sorted(named))}"
    if vram_mib is not None:
        if not _VRAM_CLASS[0] <= vram_mib / (size * 1024) <= _VRAM_CLASS[1]:
            return f"'{show}' ordered, the GPU has {vram_mib} MiB"
        return None
    if named:
        return f"'{show}' ordered, the name says {named[0]}GB (CPU and GPU memory); VRAM unknown"
    return None


def _sxm_problem(token: str, got: _Delivered) -> str | None:
    """Why an ordered 'SXM'/'SXM4' is not met ('' when the cut tail of the name may hold it)."""
    have, said_sxm = got.have, list(got.said_sxm)
    if got.sxm:
        if said_sxm and token != "SXM" and token not in said_sxm:
            return f"'{token}' ordered, the name says {'/'.join(said_sxm)}"
        return None
    if "PCIE" in have or "NVL" in have:
        return f"'{token}' ordered, the name says {'PCIe' if 'PCIE' in have else 'NVL'}"
    if got.name.cut:
        return ""
    return f"'{token}' ordered, the name does not say SXM and is no SXM-only model"


def _word_problem(token: str, show: str, got: _Delivered, vram_mib: int | None) -> str | None:
    """Why one ordered word is not met by the delivered name: None when it is met, '' when the
    cut-off tail of the name may hold it (unseen), else the sentence naming it."""
    name, have, frag = got.name, got.have, got.name.fragment
    memory = _MEMORY.match(token)
    if memory:
        return _memory_problem(int(memory.group(1)), show, got, vram_mib)
    if _SXM.match(token):
        return _sxm_problem(token, got)
    if token == "PCIE":
        if got.sxm:
            said_sxm = list(got.said_sxm)
            return "'PCIe' ordered, this is an SXM part" + (f" ({'/'.join(said_sxm)})" if said_sxm else "")
        if name.cut and "PCIE" not in have:
            return ""
        return None
    if token in have:
        return None
    if token.isdecimal() and any(j.endswith(token) and j[: -len(token)].isalpha() for j in name.joined):
        return None  # a bare number: '4090' is the RTX 4090
    if frag and token.startswith(frag):
        return None  # 'Gene...' of 'Generation'
    if name.cut and token not in _LEADING:
        return ""
    return f"'{show}' not in the name"


def _other_models(want: list[str], name: _Name) -> list[str]:
    """The visible model numbers of a cut name that are not the ordered one ('RTX 4080' for an
    ordered '4090'): then the cut tail cannot hold the ordered words left unseen."""
    covered = set(want) | {j for j in name.joined if any(j.endswith(w) for w in want if w.isdecimal())}
    models = [
        t
        for t in name.tokens
        if any(c.isdecimal() for c in t) and not _MEMORY.match(t) and not re.match(r"^(SXM|PCIE|HBM)\d*", t)
    ]
    return [t for t in models if t not in covered]


def _cut_word(want: list[str], got: _Delivered) -> tuple[str | None, str]:
    """What the word nvidia-smi's table cut ('Lap...') may be when no ordered word starts so:
    (a problem when it can only mark another product, a vague note when it may)."""
    frag = got.name.fragment
    if frag and not got.frag_known and not any(t.startswith(frag) for t in want):
        markers = sorted(_show(w) for w in _OTHER_PRODUCT if w.startswith(frag))
        if markers and len(frag) > 1:
            return f"the cut word '{frag.title()}...' marks another product ({', '.join(markers)})", ""
        if markers:
            return None, f"the cut word '{frag.title()}...' may be {' or '.join(markers)}"
    return None, ""


def _cut_note(unseen: list[str], vague: str, joined: Iterable[str]) -> str:
    """The warning for a name cut by nvidia-smi's table: what the cut may hide."""
    note = "name cut by nvidia-smi's table"
    if unseen:
        note += f"; not shown: {', '.join(_show(t, joined) for t in unseen)}"
    elif vague:
        note += f"; {vague}"
    else:
        note += "; the words after the cut are not shown"
    return note + " (`nvidia-smi -L` prints the whole name)"


def match_model(ordered: str, delivered: str, vram_mib: int | None = None) -> ModelMatch:
    """Compare a delivered GPU name with the ordered model (rules in `model_matches`)."""
    want_name = _name_tokens(split_count(ordered)[0])
    want = [t for t in want_name.tokens if not _INTERCONNECT.match(t)]
    name = _name_tokens(delivered)
    if not want:
        return ModelMatch("fail", "no GPU model in the order")
    if not name.tokens and not name.cut:
        return ModelMatch("fail", "the GPU has no name")
    got = _delivered(name)
    problems: list[str] = []
    unseen: list[str] = []  # ordered words the cut-off tail of the name may hold
    for token in want:
        problem = _word_problem(token, _show(token, want_name.joined), got, vram_mib)
        if problem == "":
            unseen.append(token)
        elif problem is not None:
            problems.append(problem)
    if unseen:
        # the cut tail may hold them, unless a visible model number is another than ordered
        others = _other_models(want, name)
        if others:
            says = ", ".join(_show(o, name.joined) for o in others)
            problems += [f"'{_show(t, want_name.joined)}' not in the name (it says {says})" for t in unseen]
            unseen = []
    extra = sorted((got.have & _OTHER_PRODUCT) - set(want))
    problems += [f"'{_show(t)}' in the name marks another product (not ordered)" for t in extra]
    cut_problem, vague = _cut_word(want, got)
    if cut_problem:
        problems.append(cut_problem)
    if problems:
        return ModelMatch("fail", "; ".join(problems))
    if name.cut and (unseen or not name.fragment or vague):
        return ModelMatch("warn", _cut_note(unseen, vague, want_name.joined))
    return ModelMatch("pass")


def model_matches(ordered: str, delivered: str, vram_mib: int | None = None) -> bool:
    """Whether a delivered GPU name is the ordered model (a `warn` of `match_model` included).

    Every ordered word must be in the name (a name cut with '...' may lack the words its cut-off
    tail held; a bare number is met by the model word holding it: '4090' by 'RTX 4090'); a memory
    size ('80GB') is checked against the size in the name, else against the delivered VRAM (for
    GH200/GB200 against the VRAM: their name's size is CPU + GPU memory); 'SXM' is met by a name
    saying SXM or a known SXM-only name, 'PCIe' (also 'PCI-E') by any name that is not SXM. A
    word in the name that marks another product (D, Ti, SUPER, NVL, PCIe, SFF, Laptop, Max-Q,
    Mobile, MIG, Quadro) fails unless the order names it. A GPU count ('8x A100') and
    interconnect words ('NVLink') in the order are left out.
    """
    return match_model(ordered, delivered, vram_mib).verdict != "fail"
