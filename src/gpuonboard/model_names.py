"""How GPU names and the ordered model read as words (steps/checks/model_match.py compares them):
the normalisation of a name (vendor words, joined numbers, memory sizes, a name nvidia-smi's
table cut with '...'), the GPU count an order's model may carry ('8x A100', '8卡 H200'), and
whether an order's model names a model at all (`names_a_model`: 'Hopper 80GB' names none), which
the inventory loader asks of an order's `gpu_model` too (so it is a module of its own, below
both: it imports neither steps nor the inventory). Pure but for the packaged tables it reads.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass

from gpuonboard.once import lazy_re, loaded_once
from gpuonboard.resources import DATA_DIR, table_rows

FAMILIES_FILE = DATA_DIR / "gpu_architectures.yml"
# the Grace CPU of a superchip, which an order may name: AWS's 'NVIDIA GB200 Grace Blackwell'
GRACE = "GRACE"


@loaded_once
def family_words() -> dict[str, str]:
    """Each word of an architecture family's name (data/gpu_architectures.yml) -> that family:
    {'HOPPER': 'Hopper', 'ADA': 'Ada Lovelace', 'LOVELACE': 'Ada Lovelace', ...}: the words an
    order's model may name its family by (steps/checks/gpu_arch.py checks the table's rows)."""
    families = [str(row.get("family") or "") for row in table_rows(FAMILIES_FILE, "families")]
    return {word: family for family in families for word in family.upper().split()}


# words that name the maker or a brand an order may leave out ("RTX 4090" is always GeForce,
# "T4" always Tesla); QUADRO is not here: "Quadro RTX 6000" (Turing) is another card than an
# "RTX 6000" (Ada)
_VENDOR_WORDS = {"NVIDIA", "TESLA", "GEFORCE", "CORPORATION", "GPU", "GPUS"}
# NVIDIA's product-page names, which no driver prints: 'NVIDIA H100 Tensor Core GPU' (the 'GPU'
# is a vendor word above: 'RTX 4090 Laptop GPU' is its Laptop word), 'GH200 Grace Hopper
# Superchip', 'GB200 Grace Blackwell Superchip'
_TENSOR_CORE = re.compile(r"\b(?:TENSOR[- ]?CORES?|SUPERCHIPS?)\b")
# the only Grace Hopper product is the GH200 ('Grace Hopper 96GB' orders one); a Grace Blackwell
# is a GB200, GB300 or GB10: no model (names_a_model)
_GRACE_HOPPER = "GH200"
# tokens in a delivered name that make it another product than a name without them; such a
# token fails the match unless the order names it too. D: the China-market RTX 4090 D; MIG: a
# MIG device (a slice of a GPU); NVL / PCIE: the PCIe cards of SXM lines (H100 NVL, H100 PCIe);
# SFF: the 70 W small-form-factor cards (RTX 4000 SFF Ada is not an RTX 4000 Ada); V2: a
# revision sold as another card (the RTX 5090 D v2 has 24 GB, the RTX 5090 D 32 GB); CNX: a
# converged card, a PCIe GPU with a ConnectX NIC on its board (pci.ids 2313 'GH100 [H100 CNX]',
# named 'NVIDIA H100 CNX' in GPU databases: search index files 14007831047, 27379275444). PCIE and
# QUADRO mark another product only for the models data/gpu_name_markers.yml lists as sold
# without them too (`_marks_another_product`): the only V100S is a PCIe card; so does 3E (the
# H20-3e has 141 GB HBM3e, the H20 96 GB HBM3)
_OTHER_PRODUCT = {
    "D",
    "TI",
    "SUPER",
    "NVL",
    "PCIE",
    "LAPTOP",
    "MAXQ",
    "MOBILE",
    "MIG",
    "QUADRO",
    "SFF",
    "V2",
    "CNX",
    "3E",
}
_SHOW = {
    "QUADRO": "Quadro",
    "TI": "Ti",
    "SUPER": "SUPER",
    "PCIE": "PCIe",
    "LAPTOP": "Laptop",
    "MAXQ": "Max-Q",
    "MOBILE": "Mobile",
    "V2": "v2",
    "3E": "3e",
}
# such a word written joined to the number in orders: 4090D, 3090Ti, 4080Super, H100NVL
# (an ASCII boundary: Chinese text glued after it, `4090D涡轮版`, `24G显存`, is no letter of it)
_JOINED_SUFFIX = re.compile(r"(?<=\d)(D|TI|SUPER|NVL)(?![A-Z0-9])")
# a word of three letters or more written joined after the model number, as marketplaces list
# names: 'RTX 6000Ada', 'RTX 4000Ada' (Vast.ai's spelling of 'RTX 6000 Ada Generation'),
# 'A100SXM4', 'H100PCIe': the number and the word are two words (not a memory unit: '80GB' and
# '80GIB' are read as sizes, and 'GB...' is left to them)
_JOINED_WORD = re.compile(r"(?<=\d)(?!GI?B|[KMTP]I?B)([A-Z]{3,})")
# a revision written joined to its marker or number: 5090DV2, 'D v2' written 'Dv2'
_JOINED_REVISION = re.compile(r"(?<=[0-9D])(V2)(?![A-Z0-9])")
# a GeForce SUPER written short, as vendors list it: 4080S, 2070S, 1660S (not L40S, V100S: other cards)
_SHORT_SUPER = re.compile(r"(?<![0-9])(\d{2}[5-9]0)S(?![A-Z0-9])")
# a memory type an order's model may name from the datasheet (H200 141GB HBM3e, L40S 48GB GDDR6):
# nvidia-smi prints none (but 'NVIDIA H100 80GB HBM3', where the delivered name keeps it)
_MEMORY_KIND = re.compile(r"^(?:HBM\d[EX]?|GDDR\d[EX]?|LPDDR\d[EX]?)$")
# words of an order's model that nvidia-smi never prints: interconnects ("A100 80GB NVLink"; the
# `interconnect` rule judges them) and platforms: HGX/DGX (an SXM baseboard or system: 'HGX H200'
# is 8 x NVIDIA H200; they rule out the PCIe cards, `_platform_problem`) and rack- or board-scale
# NVLink domains 'NVL72' ('GB200 NVL72'; not the PCIe-card marker of 'H100 NVL', a word alone)
_INTERCONNECT = re.compile(r"^(NVLINK|NVSWITCH)\d*$")
_PLATFORM = re.compile(r"^(?:(?:HGX|DGX)\d*|NVL\d+)$")
_SXM_PLATFORM = lazy_re(r"^(?:HGX|DGX)\d*$")
# a GPU count in an order's model, as vendor quotes write it: "8x A100 80G", "A100*8", "A100 x8",
# "HGX H100 8-GPU", and with a Chinese measure word for cards: "8卡 H200", "H200*8卡", "4090 8张"
_MEASURE = "\u5361\u5f20\u5757\u7247"  # 卡 张 块 片
_TIMES = "*\u00d7\uff0a"  # * × ＊
_COUNTS = (  # (a count is short: '4090*8张' is 8 x 4090, '4090显卡' a card, '(8卡)' a count)
    re.compile(
        rf"^\s*(\d{{1,3}})\s*(?:[xX{_TIMES}]|[{_MEASURE}]\s*[xX{_TIMES}]?|-?\s*GPUS?\b)\s*(?=\S)", re.I
    ),
    re.compile(rf"[{_MEASURE}]?(?:\s+[xX\u00d7]\s*|\s*[{_TIMES}]\s*)(?<!\d)(\d{{1,3}})\s*[{_MEASURE}]?\s*$"),
    re.compile(rf"\s*[(\uff08]?\s*(?<![A-Za-z0-9.])(\d{{1,3}})\s*[{_MEASURE}]\s*[)\uff09]?\s*$"),
    re.compile(r"[\s-]+(\d{1,3})\s*-?\s*GPUS?\s*$", re.I),
)
# words that name a form and never join the number after them: 'SXM 8卡' is SXM and a count
_FORM_WORDS = {"SXM", "PCIE", "HBM"}
# an ordered bare number this short is no model number ('4090', '8000' are): a count or a size
# written without its unit ('H100 8', 'A100 80'): not demanded of the name, warned
_BARE_COUNT = re.compile(r"^\d{1,2}$")
_MEMORY = re.compile(r"^(\d+)GB$")
_SXM = re.compile(r"^SXM\d*$")
# Grace superchips (GH200, GB200, GB300, the GB10 of a DGX Spark), whose name may carry CPU + GPU
# memory ("NVIDIA GH200 480GB": 97871 MiB of VRAM): an ordered size is checked against the VRAM
# (or that name's number, when ordered so); no SXM card either, so 'DGX' asks no SXM of them
_SUPERCHIP = re.compile(r"^G[BH]\d+$")
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


# the word an order may add to a vGPU profile's name: 'vGPU A100-4C'
_VGPU_WORD = re.compile(r"\bV-?GPU\b", re.IGNORECASE)


@dataclass(frozen=True)
class _Name:
    """A GPU name split into normalised words."""

    tokens: tuple[str, ...]
    joined: frozenset[str]  # words joined from a letters word and the number after it: RTX4090
    cut: bool  # nvidia-smi's table cut the name with '...'
    fragment: str  # the visible start of the word the cut fell in ('GENE'); '' at a word boundary


def split_count(model: str) -> tuple[str, int | None]:
    """An order's model without a GPU count written into it: '8x A100 80G' -> ('A100 80G', 8),
    '8卡 H200 141G' and 'H200 141G*8卡' -> ('H200 141G', 8), 'HGX H100 8-GPU' -> ('HGX H100', 8)."""
    for pattern in _COUNTS:
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
    upper = _TENSOR_CORE.sub(" ", upper)
    upper = re.sub(r"\bPCI[- ]?E(?![A-Z])", "PCIE", upper)
    upper = re.sub(r"\b(HBM|GDDR|LPDDR)\s*(\d)\s*([EX]?)(?![A-Z0-9])", r"\1\2\3", upper)  # ('HBM 3e')
    upper = _SHORT_SUPER.sub(r"\1 SUPER", upper)
    upper = _JOINED_REVISION.sub(r" \1", upper)
    upper = _JOINED_SUFFIX.sub(r" \1", upper)
    # a size glued to its memory type, as marketplaces list it: '24GDDR6X' is 24 GB of GDDR6X
    upper = re.sub(r"(?<![A-Z0-9.])(\d+)(?=(?:HBM|GDDR|LPDDR)\d)", r"\1GB ", upper)
    upper = _JOINED_WORD.sub(r" \1", upper)
    upper = re.sub(r"(?<![A-Z0-9])(\d+)\s*G(?:I?B)?(?![A-Z0-9])", r"\1GB", upper)  # (not A10G)
    raw = [t for t in re.split(r"[^A-Z0-9]+", upper) if t and t not in _VENDOR_WORDS]
    tokens: list[str] = []
    joined: set[str] = set()
    for t in raw:
        # a letters-only word followed by a number is one model name: RTX 4090 == RTX4090 (not
        # a form word: 'SXM 8' is SXM and a number, 'SXM8' is written so)
        if (
            tokens
            and t.isdecimal()
            and tokens[-1].isalpha()
            and tokens[-1] not in _OTHER_PRODUCT
            and tokens[-1] not in _FORM_WORDS
        ):
            tokens[-1] += t
            joined.add(tokens[-1])
        else:
            tokens.append(t)
    if {GRACE, "HOPPER"} <= set(tokens) and not _model_words(tokens):  # ('Grace Hopper 96GB')
        tokens.insert(tokens.index(GRACE), _GRACE_HOPPER)
    fragment = ""
    if cut and not at_boundary and tokens and not _MEMORY.match(tokens[-1]):
        fragment = tokens.pop()  # the last word was cut: 'Gene...' of 'Generation'
    return _Name(tuple(tokens), frozenset(joined), cut, fragment)


def model_tokens(name: str) -> set[str]:
    """Normalised tokens of a GPU name: 'NVIDIA A100-SXM4-80GB' -> {A100, SXM4, SXM, 80GB}. An
    NVLink domain ('NVL16' of 'NVIDIA H20 NVL16', device 230E) is a word of its own, as the
    order's 'NVL72' is a platform (`_PLATFORM`): never the 'NVL' of a PCIe card ('H100 NVL')."""
    tokens = set(_name_tokens(name).tokens)
    for t in list(tokens):
        family = re.match(r"^(SXM|PCIE|HBM)\d+[A-Z]?$", t)
        if family:
            tokens.add(family.group(1))
    return tokens


# words of a name that say its form or edition, never which model it is
_EDITION_WORDS = {"WORKSTATION", "SERVER", "EDITION", "GENERATION"}


def _is_model_word(token: str) -> bool:
    """Whether an ordered word (normalised) can name a model: not a memory size, a bare count, a
    form word (SXM4, PCIe, HBM3), a memory type, a product marker (Ti, NVL, Max-Q) or an edition
    word (Workstation, Server): 'Hopper 80GB' and 'Ampere SXM' name none ('H100', 'TITAN V' do)."""
    return not (
        _MEMORY.match(token)
        or _BARE_COUNT.match(token)
        or re.match(r"^(?:SXM|PCIE|HBM)\d*[A-Z]?$", token)
        or _MEMORY_KIND.match(token)
        or token in _OTHER_PRODUCT
        or token in _EDITION_WORDS
    )


def no_model_said(model: str) -> str:
    """The `fail` of an order whose model names no model (only a maker, an architecture, a size,
    a form or a platform: 'Hopper 80GB', 'HGX', 'SXM')."""
    return (
        f"no GPU model in the order ('{model.strip()}' names no model, only its maker, architecture,"
        " size, form or platform: write the model, as 'H100 80GB')"
    )


def names_a_model(model: str) -> bool:
    """Whether an order's model names a model: a word left when its GPU count, maker, interconnect,
    platform (HGX, NVL72), memory type and architecture words ('Hopper', 'Grace') are set aside
    that is not a size, form, product-marker or edition word ('Hopper 80GB', 'NVIDIA', 'HGX',
    'SXM' name none, nor 'Grace Blackwell' (a GB200, GB300 or GB10); 'H100', 'TITAN V', 'GB200
    Grace Blackwell' and 'Grace Hopper', the only one of which is the GH200, do)."""
    return bool(_model_words(_name_tokens(split_count(model)[0]).tokens))


def _model_words(words: Iterable[str]) -> list[str]:
    """The normalised words that can name a model, set aside the interconnect, platform,
    architecture and Grace words (names_a_model)."""
    return [
        t
        for t in words
        if _is_model_word(t)
        and not (_INTERCONNECT.match(t) or _PLATFORM.match(t) or t in family_words() or t == GRACE)
    ]


# a cloud's instance type written where a GPU model goes: the GPU and its count are the
# provider's to say, not words of any name a driver prints (so it would fail every box, the
# ordered card included). Each form as the provider spells its names: AWS EC2 `p5.48xlarge`,
# `g4dn.metal`; Azure `Standard_ND96isr_H100_v5`, `NC24ads_A100_v4`, a series `NC A100 v4`;
# Google Cloud `a3-highgpu-8g`, `g2-standard-4`; Lambda's API `gpu_8x_h100_sxm5`; Hetzner `GEX44`
_INSTANCE_TYPES = (
    (
        "an AWS EC2 instance type",
        re.compile(r"[a-z]{1,3}\d+[a-z-]*\.(?:\d*xlarge|large|metal(?:-\d+xl)?)", re.I),
    ),
    (
        "an Azure VM size",
        re.compile(r"(?:Standard[_ ])?N[A-Z]{0,2}\d+[a-z]*(?:[_ ][A-Za-z0-9]+)*[_ ]v\d+", re.I),
    ),
    ("an Azure VM series", re.compile(r"N[CDVG][A-Z]?(?:\s+[A-Z0-9]+)+\s+v\d+")),
    (
        "a Google Cloud machine type",
        re.compile(r"[agn]\d+x?-(?:high|mega|ultra|edge)?(?:gpu|standard)-\d+g?", re.I),
    ),
    ("a Lambda instance type", re.compile(r"gpu_(\d+)x_([a-z0-9_]+)", re.I)),
    ("a Hetzner server type", re.compile(r"GEX\d+", re.I)),
)


def instance_type_problem(model: str) -> str | None:
    """Why an order's model is a cloud instance type, not a GPU model (`p5.48xlarge`,
    `Standard_ND96isr_H100_v5`, `gpu_8x_h100_sxm5`), naming what to write; None for a model.
    Lambda's API names hold the GPU and its count: those are said back spelled as an order."""
    text = model.strip()
    for kind, pattern in _INSTANCE_TYPES:
        m = pattern.fullmatch(text)
        if m is None:
            continue
        if kind.startswith("a Lambda"):
            gpu = m.group(2).replace("_", " ").upper()
            example = f"gpu_model: '{gpu}' and gpu_count: {int(m.group(1))}"  # (the name's own words)
        else:
            # (the GPU word an Azure size holds, `H100` of `ND96isr_H100_v5`; not its size or version)
            said = [w.upper() for w in re.split(r"[_\s]+", text)[1:] if _is_gpu_word(w.upper())]
            gpu = f"the {said[0]} model with its memory and form" if said else "its GPU model"
            example = f"gpu_model: {gpu} and gpu_count: their number"
        return (
            f"is {kind} ({text!r}), not a GPU model: write the GPU it holds and their number, as"
            f" {example} (the provider's page for {text} names them)"
        )
    return None


def _is_gpu_word(token: str) -> bool:
    """A GPU model word inside an instance type's name ('H100' of `ND96isr_H100_v5`)."""
    return bool(re.fullmatch(r"(?:[ABHLT]\d{1,3}[A-Z]?|V100S?|GH\d+|GB\d+|MI\d+X?)", token))
