"""GPU model matching for the `acceptance` step: is a delivered GPU name the ordered model?

Reads names and orders as words (gpuonboard/model_names.py: the normalisation of GPU names,
the GPU count an order's model may carry, whether an order names a model), and owns the data
tables of name markers, the comparison of the vGPU profiles a guest's driver prints (read by
steps/checks/vgpu_name.py), and `match_model` / `model_matches`, which `rule_gpu_model` applies
to each delivered GPU.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass

from gpuonboard.model_names import (
    _BARE_COUNT,
    _INTERCONNECT,
    _LEADING,
    _MEMORY,
    _MEMORY_KIND,
    _OTHER_PRODUCT,
    _PLATFORM,
    _SHOW,
    _SUPERCHIP,
    _SXM,
    _SXM_PLATFORM,
    _VENDOR_WORDS,
    _VGPU_WORD,
    _VRAM_CLASS,
    _Name,
    _name_tokens,
    names_a_model,
    no_model_said,
)
from gpuonboard.model_names import is_placeholder_name as is_placeholder_name
from gpuonboard.model_names import model_tokens as model_tokens
from gpuonboard.model_names import split_count as split_count
from gpuonboard.steps.base import Verdict
from gpuonboard.steps.checks.cut_names import cut_name_problems
from gpuonboard.steps.checks.gpu_arch import GRACE, architecture_problem, family_words, name_family
from gpuonboard.steps.checks.gpu_markers import (
    abbreviations,
    marked_tails,
    marker_siblings,
    marker_sizes,
    memory_kinds,
    nvl_pcie_cards,
    sold_memory,
    sxm_only,
)
from gpuonboard.steps.checks.model_forms import forms_judged, is_form_of
from gpuonboard.steps.checks.product_variants import data_variant_words, vocabulary
from gpuonboard.steps.checks.shared_names import shared_name_judged
from gpuonboard.steps.checks.vgpu_name import VgpuProfile as VgpuProfile
from gpuonboard.steps.checks.vgpu_name import is_vgpu as is_vgpu
from gpuonboard.steps.checks.vgpu_name import vgpu_profile as vgpu_profile


def _implied_markers(want: list[str], have: frozenset[str], vram_gib: float | None = None) -> set[str]:
    """The product-marker words an order names by a memory size only that product is sold with,
    not by the word: 'RTX 6000 (24 GB)' (Lambda's name) is the Quadro RTX 6000, as the RTX 6000
    Ada has 48 GB; so is 'RTX 6000' with `vram: 24GB` (`vram_gib`, the size written apart). Every
    ordered size must be one of the marked product's; none ordered implies none."""
    sizes = {int(m.group(1)) for t in want if (m := _MEMORY.match(t))}
    if vram_gib is not None and abs(vram_gib - round(vram_gib)) < 0.01:
        sizes.add(round(vram_gib))
    return {
        word
        for word, rows in marker_sizes().items()
        if sizes and any(model <= have and model <= set(want) and sizes <= only for model, only in rows)
    }


def _as_ordered(words: list[str], model: str) -> list[str]:
    """Ordered words as the order wrote them: the words a marketplace's short word was spelled
    out to (`_spelled_out`: 'SERVER', 'EDITION' of 'S') are that short word again, once."""
    ordered = _name_tokens(model).tokens
    out: list[str] = []
    for w in words:
        short = next(
            (
                word
                for m, word, means in abbreviations()
                if w in means and word in ordered and m <= set(ordered)
            ),
            w,
        )
        if short not in out:
            out.append(short)
    return out


def _spelled_out(name: _Name) -> _Name:
    """An order's model with a marketplace's short word for words of the name spelled out, where
    the order names that word's model ('RTX PRO 6000 WS' -> '... WORKSTATION EDITION')."""
    tokens = name.tokens
    for model, word, means in abbreviations():
        if word in tokens and model <= set(tokens):
            at = tokens.index(word)
            tokens = tokens[:at] + means + tokens[at + 1 :]
    return name if tokens == name.tokens else dataclasses.replace(name, tokens=tokens)


# a GPU shared by a layer that caps each container's memory (HAMi, and vGPU schedulers like it,
# hook NVML in the pod: nvidia-smi there prints the cap, `18472MiB /  20000MiB` on a 24 GB RTX
# 3090, Project-HAMi/HAMi#700), whose total is no card's
SHARED_CAP = (
    "a share of the GPU whose memory a GPU-sharing layer caps (HAMi's or another vGPU memory limit"
    " on a container or pod: nvidia-smi there shows the cap as the total)"
)


def _in_class(vram_mib: int, size_gb: float) -> bool:
    """Whether nvidia-smi's total is that many GB of GPU memory (reserved and ECC regions off)."""
    return _VRAM_CLASS[0] <= vram_mib / (size_gb * 1024) <= _VRAM_CLASS[1]


def _reworked(want: list[str], got: _Delivered, vram_mib: int | None, vram_gib: float | None) -> str | None:
    """Why a GPU named as a model of data/gpu_name_markers.yml `sold_memory` has memory NVIDIA
    does not sell it with (an RTX 4090 with 49140 MiB: a board reworked to 48 GB), unless the
    order names that size (in its model, or as its `vram`: `vram_gib`); None otherwise."""
    if vram_mib is None or got.name.cut:
        return None
    ordered = [float(m[1]) for t in want if (m := _MEMORY.match(t))] + ([vram_gib] if vram_gib else [])
    if any(_in_class(vram_mib, n) for n in ordered):
        return None
    # (the name's memory and form words are no model words: 'NVIDIA H100 80GB HBM3' is the H100)
    model = frozenset(t for t in got.have if not (_MEMORY.match(t) or _SXM.match(t) or _MEMORY_KIND.match(t)))
    model -= _VENDOR_WORDS | {"HBM"}
    for words, sizes in sold_memory():
        if words == model and not any(_in_class(vram_mib, n) for n in sizes):
            show = " ".join(_show(w) for w in got.name.tokens if w in words)
            sold = " or ".join(f"{n} GB" for n in sizes)
            if all(vram_mib < n * 1024 * _VRAM_CLASS[0] for n in sizes):
                # (less than it is sold with: a board is reworked to more memory, never less; a
                # GPU-sharing layer in a pod, HAMi's, has nvidia-smi there show its cap as the total)
                return (
                    f"{vram_mib} MiB, and NVIDIA sells the {show} with {sold} only: less, so most"
                    f" likely {SHARED_CAP}, or a board whose memory was changed after sale; if such"
                    f" a share or card was ordered, name its size in gpu_model ('{show}"
                    f" {round(vram_mib / 1024)}GB') or in vram ('vram: {round(vram_mib / 1024)}GB')"
                )
            return (
                f"{vram_mib} MiB, and NVIDIA sells the {show} with {sold} only: the name and the memory"
                " disagree (a board whose memory was changed after sale, or a name that is not the"
                " card's); if such a card was ordered, name its"
                f" size in gpu_model ('{show} {round(vram_mib / 1024)}GB') or in vram"
                f" ('vram: {round(vram_mib / 1024)}GB')"
            )
    return None


def _kind_problem(kinds: list[str], got: _Delivered) -> tuple[list[str], str | None]:
    """Ordered memory types against the delivered name: the problems (a type the name says
    otherwise, or one its model is not sold with), and why an ordered type cannot be told (a
    model sold with several types under one name: 'RTX 3060 Ti', GDDR6 or GDDR6X)."""
    said = sorted(t for t in got.have if _MEMORY_KIND.match(t))
    if said:
        return [f"'{t}' ordered, the name says {', '.join(said)}" for t in kinds if t not in said], None
    model = got.have - _VENDOR_WORDS
    for words, sold in memory_kinds():
        if kinds and words == model:
            show = " ".join(_show(w) for w in got.name.tokens if w in words)
            wrong = [
                f"'{t}' ordered, the {show} is sold with {' and '.join(sold)}" for t in kinds if t not in sold
            ]
            return wrong, (
                None
                if wrong
                else f"the {show} is sold with {' and '.join(sold)} under one name, and nvidia-smi"
                " prints no memory type: the ordered one cannot be told"
            )
    return [], None  # (a type the name does not say, of a model sold with one: not demanded)


def _tail_marker(name: _Name, want: list[str], power_cap_w: float | None = None) -> str | None:
    """The marker word a known name continues a cut name with, after the cut word ('MAXQ' for
    'RTX PRO 6000 Blac...'), where the order does not name it; None when no known name does, or
    the GPU's power cap (`power_cap_w`) is above what that product draws (a 600 W cap: no 300 W
    Max-Q card)."""
    seen, frag = list(name.tokens), name.fragment
    for words, max_w in marked_tails():
        cut = len(seen)
        if max_w is not None and power_cap_w is not None and power_cap_w > max_w:
            continue
        if len(words) > cut and list(words[:cut]) == seen and words[cut].startswith(frag):
            marker = next((w for w in words[cut + 1 :] if w in _OTHER_PRODUCT and w not in want), None)
            if marker is not None:
                return marker
    return None


@functools.lru_cache(maxsize=256)  # (pure over the shipped tables, its value immutable: ~50 calls a host)
def variant_words(name: str) -> frozenset[str]:
    """The words of a GPU name that always make it a variant of a model that exists without
    them (D, Ti, SUPER, NVL, CNX, SFF, Laptop, Max-Q, Mobile, MIG; and the words the driver's
    names add to another device's name, steps/checks/product_variants.py: NVL16, Embedded),
    normalised as `match_model` reads names: 'NVIDIA GeForce RTX 4090 D' -> {'D'}, 'NVIDIA H200
    MIG 1g.18gb' -> {'MIG'}. PCIe and Quadro are left out: they mark another product only for
    some models (data/gpu_name_markers.yml). The prove steps' reference tables use it: a row for
    the base model does not judge a variant."""
    model_dependent = marker_siblings()
    words = _name_tokens(name)
    data = data_variant_words(frozenset(model_tokens(name))) if not words.cut else frozenset()
    return frozenset(t for t in words.tokens if t in _OTHER_PRODUCT and t not in model_dependent) | data


def show_word(token: str) -> str:
    """A normalised word as people write it ('TI' -> 'Ti', 'MAXQ' -> 'Max-Q')."""
    return _show(token)


def _marks_another_product(word: str, have: frozenset[str]) -> bool:
    """Whether a product-marker word in a delivered name makes it another product than an order
    without it: always for a variant word (D, Ti, Laptop, MIG...); for a word of
    data/gpu_name_markers.yml (PCIe, Quadro) only where the name's model is listed as sold
    without it too ('Tesla V100S-PCIE-32GB' is the only V100S, 'Quadro RTX 8000' the only RTX 8000)."""
    siblings = marker_siblings().get(word)
    return siblings is None or any(model <= have for model in siblings)


def _is_sxm(tokens: set[str], cut: bool) -> bool:
    """An SXM part: its name says SXM, or it is the whole name of an SXM-only model with no
    product-marker word (PCIe, NVL, CNX ...: another card of the model). A name nvidia-smi's
    table cut ('NVIDIA H100 P...', 'NVIDIA H100 ...') is not read whole: its tail may hold such a
    word, so only a visible SXM word makes it one."""
    if any(_SXM.match(t) for t in tokens):
        return True
    return not cut and not tokens & _OTHER_PRODUCT and any(known <= tokens for known in sxm_only())


def stated_form(name: str) -> str | None:
    """The form factor a whole GPU name states: 'SXM' (an SXM word, or an SXM-only model's name:
    'NVIDIA H100 80GB HBM3', 'NVIDIA H20'), 'PCIE' (a PCIe word), else None (it does not say)."""
    got = _delivered(_name_tokens(name))
    return "SXM" if got.sxm else "PCIE" if "PCIE" in got.have else None


def form_unread(name: str) -> bool:
    """Whether nvidia-smi's table cut a GPU name before it says an SXM form: 'NVIDIA H100 P...'
    and 'NVIDIA H100 ...' may be the H100 PCIe or NVL; 'NVIDIA A100-SXM...' says SXM."""
    words = _name_tokens(name)
    return words.cut and not _delivered(words).sxm


def _show(token: str, joined: Iterable[str] = ()) -> str:
    """A normalised word as people write it: 'RTX4090' -> 'RTX 4090', 'TI' -> 'Ti' ('GH200' stays)."""
    if token in joined or (
        re.fullmatch(r"[A-Z]{2,}\d+", token) and not _SUPERCHIP.match(token) and token not in vocabulary()
    ):
        token = re.sub(r"^([A-Z]+)(\d+)$", r"\1 \2", token)
    return _SHOW.get(token, token)


@dataclass(frozen=True)
class ModelMatch:
    """How a delivered GPU name compares with the ordered model: `pass`; `warn` when nvidia-smi's
    table cut the name where the words left to check may be; `unverified` when an ordered memory
    size has nothing to be checked against; `fail`, `why` naming the word(s)."""

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
        sxm=_is_sxm(have, name.cut),
        said_sxm=tuple(sorted(t for t in have if _SXM.match(t) and t != "SXM")),
        named=tuple(int(m.group(1)) for t in have if (m := _MEMORY.match(t))),
        superchip=any(_SUPERCHIP.match(t) for t in have),
    )


def _memory_problem(size: int, show: str, got: _Delivered, vram_mib: int | None) -> str | None:
    """Why an ordered memory size ('80GB') is not met: by the size in the name, else the VRAM."""
    named = list(got.named)
    if size in named:
        return None
    if named and not got.superchip:
        return f"'{show}' ordered, the name says {', '.join(f'{n}GB' for n in sorted(named))}"
    if vram_mib is not None:
        if not _in_class(vram_mib, size):
            return f"'{show}' ordered, the GPU has {vram_mib} MiB"
        return None
    return None  # (a Grace superchip's size is CPU + GPU memory: unknown VRAM is unverified)


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
    if any(j.startswith(token) and j[len(token) :].isdecimal() for j in name.joined):
        # the series word the name joined to its number: the 'RTX' of 'RTX 6000', seen whole in a
        # cut name too ('NVIDIA RTX 6000 Ada Gene...' shows it)
        return None
    if name.cut and token not in _LEADING:
        return ""
    if is_form_of(token, have):
        return None  # a form of the ordered model: the 'Tesla K40m' is a K40 (data: `forms`)
    longer = sorted(w for w in have if token in w and w != token)
    if longer:  # ('B200' inside 'GB200': the letters are there, the model is another)
        return f"'{show}' ordered, the name says '{longer[0]}', another model"
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
    others = [t for t in models if t not in covered]
    # the cut word where the model number stands ('RTX 207...': no ordered model is in sight)
    # is one too when no ordered word starts so ('RTX 2080' ordered: it cannot be)
    numbered = [w for w in want if any(c.isdecimal() for c in w) and not _MEMORY.match(w)]
    frag = name.fragment
    if (
        frag
        and any(c.isdecimal() for c in frag)
        and numbered
        and not set(numbered) & (set(name.tokens) | covered - set(want))
        and not any(w.startswith(frag) for w in want)
    ):
        others.append(_show(frag) + "...")
    return others


def _cut_word(want: list[str], got: _Delivered) -> tuple[str | None, str]:
    """What the word nvidia-smi's table cut ('Lap...') may be when no ordered word starts so:
    (a problem when it can only mark another product, a vague note when it may)."""
    frag = got.name.fragment
    if frag and not got.frag_known and not any(t.startswith(frag) for t in want):
        # (a marker of some models only, the H20's 3e, where the name is of one: not the V100's '3...')
        markers = sorted(
            _show(w) for w in _OTHER_PRODUCT if w.startswith(frag) and _marks_another_product(w, got.have)
        )
        if markers and len(frag) > 1:
            return f"the cut word '{frag.title()}...' marks another product ({', '.join(markers)})", ""
        if markers:
            return None, f"the cut word '{frag.title()}...' may be {' or '.join(markers)}"
    return None, ""


def _not_in_part_shown(unseen: list[str], joined: Iterable[str]) -> str:
    """ "the ordered 'Ti' and 'SUPER' not in the part shown": words a cut name may hide."""
    words = [f"'{_show(t, joined)}'" for t in unseen]
    said = " and ".join([", ".join(words[:-1]), words[-1]] if len(words) > 1 else words)
    return f"the ordered {said} not in the part shown"


def _cut_note(unseen: list[str], vague: str, joined: Iterable[str]) -> str:
    """The warning for a name cut by nvidia-smi's table: what the cut may hide."""
    note = "name cut by nvidia-smi's table"
    if unseen:
        note += f"; {_not_in_part_shown(unseen, joined)}"
    if vague:
        note += f"; {vague}"
    if not unseen and not vague:
        note += "; the words after the cut are not shown"
    return note + " (`nvidia-smi -L` prints the whole name)"


def _vgpu_match(model: str, delivered: str) -> ModelMatch | None:
    """A vGPU profile delivered or ordered: the two profiles compared (a profile is a share of a
    board, another product than the board, as a MIG device is); None when neither is one."""
    got = vgpu_profile(delivered)
    want = vgpu_profile(_VGPU_WORD.sub(" ", model).strip())
    if got is None and want is None:
        return None
    if got is None:
        assert want is not None
        return ModelMatch(
            "fail", f"the vGPU profile {want.profile} was ordered and this is no vGPU: ask the vendor for it"
        )
    if want is None:
        return ModelMatch(
            "fail",
            f"{got.describe()}, not the whole GPU: ask the vendor for the ordered GPU, or name the"
            f" profile ({got.profile}) in gpu_model if a vGPU was ordered",
        )
    if want.profile.upper() != got.profile.upper():
        return ModelMatch("fail", f"{got.describe()}, not the ordered vGPU profile {want.profile}")
    return ModelMatch("pass")


def _platform_problem(platforms: list[str], want: list[str], got: _Delivered) -> str | None:
    """Why an ordered HGX/DGX (SXM GPUs on a baseboard) is not met: the name says a PCIe card
    (PCIe, NVL) or is no SXM part; None when met or not ordered (or an SXM/PCIe word ordered
    says more; or a Grace superchip, no SXM card), '' when the cut tail of the name may say it."""
    word = next((p for p in platforms if _SXM_PLATFORM.match(p)), None)
    if word is None or got.superchip or any(_SXM.match(t) or t == "PCIE" for t in want):
        return None
    problem = _sxm_problem("SXM", got)
    return problem.replace("'SXM' ordered", f"'{word}' ordered (SXM GPUs)") if problem else problem


def match_model(
    ordered: str,
    delivered: str,
    vram_mib: int | None = None,
    vram_gib: float | None = None,
    family: str | None = None,
    power_cap_w: float | None = None,
) -> ModelMatch:
    """Compare a delivered GPU name with the ordered model (rules in `model_matches`); `vram_gib`:
    the memory the order states apart from the model (its `vram`), which a reworked board meets;
    `family`: the GPU's architecture as the box said it (`-q`), else the one its name tells;
    `power_cap_w`: the highest power limit read of the GPU (a cut name's marker that draws less
    is ruled out)."""
    model = split_count(ordered)[0]
    vgpu = _vgpu_match(model, delivered)
    if vgpu is not None:
        return vgpu
    want_name = _spelled_out(_name_tokens(model))
    # (an NVLink domain word the driver prints in a device's name, 'NVL16' of 'NVIDIA H20 NVL16',
    # is that device's word, demanded as any other: not the platform 'NVL72' of 'GB200 NVL72')
    platforms = [t for t in want_name.tokens if _PLATFORM.match(t) and t not in vocabulary()]
    kinds = [t for t in want_name.tokens if _MEMORY_KIND.match(t)]  # (judged against the name's below)
    name = _name_tokens(delivered)
    got = _delivered(name)
    # an architecture word the name does not hold is judged by the GPU's family (below)
    archs = [
        t
        for t in want_name.tokens
        if (t in family_words() or t == GRACE)
        and t not in got.have
        and not (name.fragment and t.startswith(name.fragment))
    ]
    want = [
        t
        for t in want_name.tokens
        if not _INTERCONNECT.match(t) and t not in platforms and t not in kinds and t not in archs
    ]
    if not names_a_model(model):
        return ModelMatch("fail", no_model_said(model))
    if not name.tokens and not name.cut:
        return ModelMatch("fail", "the GPU has no name")
    shared = shared_name_judged(model, want, got.have)  # ('Orin (nvgpu)': every Orin module's name)
    if shared is not None:
        return ModelMatch(*shared)
    forms = forms_judged(want, got.have)  # ('K40m' ordered: the name's 'K40c' is another form)
    want = forms.want
    arch_problems, arch_unseen, arch_untold = _architecture_judged(archs, family, delivered, got, name)
    problems, unseen, bare = _words_judged(want, want_name, got, vram_mib, _as_written(model))
    problems += forms.problems
    platform = _platform_problem(platforms, want, got)
    if platform == "":
        unseen.append("SXM")
    elif platform is not None:
        problems.append(platform)
    problems += arch_problems
    unseen += arch_unseen
    if unseen:
        # the cut tail may hold them, unless a visible model number is another than ordered
        others = _other_models(want, name)
        if others:
            says = ", ".join(_show(o, name.joined) for o in others)
            # (the ordered model number is another than the one shown; a word the cut may hide,
            # 'Ti' of an ordered 'RTX 4060 Ti' against 'RTX 4070 ...', is only not in the part shown)
            numbered = [t for t in unseen if any(c.isdecimal() for c in t) and not _MEMORY.match(t)]
            hidden = [t for t in unseen if t not in numbered] if numbered else []
            said = [t for t in unseen if t not in hidden]
            problems += [f"'{_show(t, want_name.joined)}' not in the name (it says {says})" for t in said]
            if hidden:
                problems.append(_not_in_part_shown(hidden, want_name.joined))
            unseen = []
    if name.cut and (cut := cut_name_problems(model, want, delivered, vram_mib, sold_memory())):
        problems += cut  # ('NVIDIA GeForce ...' with 4096MiB: no A100 is a GeForce, none has 4 GB)
        unseen = []
    # a memory type ordered where the name says one: they must agree ('H100 80GB HBM2e', the PCIe
    # card's, against 'NVIDIA H100 80GB HBM3'); where the name says none it is not demanded, but
    # of a model sold with several under one name it cannot be told
    kind_problems, untold = _kind_problem(kinds, got)
    problems += kind_problems
    named = set(want) | _implied_markers(want, got.have, vram_gib)
    if "PCIE" in want and any(m <= got.have for m in nvl_pcie_cards()):
        named.add("NVL")
    extra = sorted(t for t in (got.have & _OTHER_PRODUCT) - named if _marks_another_product(t, got.have))
    problems += [f"'{_show(t)}' in the name marks another product (not ordered)" for t in extra]
    problems += _data_variants(delivered, got, named | set(platforms))
    cut_problem, vague = _cut_word(want, got)
    if cut_problem:
        problems.append(cut_problem)
    if problems:
        return ModelMatch("fail", "; ".join(problems))
    unknown = untold or forms.untold or arch_untold or _size_untold(want, want_name, got, vram_mib)
    if unknown:
        return ModelMatch("unverified", unknown)
    return _passed_or_warned(
        model, want, want_name, name, got, unseen, vague, bare, vram_mib, vram_gib, power_cap_w
    )


def _data_variants(delivered: str, got: _Delivered, named: set[str]) -> list[str]:
    """The words of a whole delivered name that the driver's names say make another product,
    not ordered (steps/checks/product_variants.py: 'NVL16' of 'NVIDIA H20 NVL16'), as written."""
    if got.name.cut:
        return []
    words = _as_written(delivered)
    return [
        f"'{words.get(t, t)}' in the name marks another product (not ordered)"
        for t in sorted(data_variant_words(got.have) - named)
    ]


def _as_written(text: str) -> dict[str, str]:
    """A name's or order's words, normalised -> as written ('NVL16', 'Embedded')."""
    return {w.upper(): w for w in re.findall(r"[A-Za-z0-9]+", text)}


def _passed_or_warned(
    model: str,
    want: list[str],
    want_name: _Name,
    name: _Name,
    got: _Delivered,
    unseen: list[str],
    vague: str,
    bare: list[str],
    vram_mib: int | None,
    vram_gib: float | None,
    power_cap_w: float | None = None,
) -> ModelMatch:
    """The verdict of a name that fails no ordered word: a warning where the name's cut may hide
    a word, the board was reworked, or a bare number ordered is not in the name; else a pass."""
    # a cut inside a number ('RTX 207...' of an RTX 2070, 'RTX 3050 4...' of '4GB Laptop GPU')
    # hides the words after it, which may mark another product (SUPER, Laptop, Max-Q); a card's
    # form word in sight (SXM, PCIe: 'A100-SXM4-40...') says a data-centre name, which has none;
    # a cut inside a word that a known name continues with a marker ('RTX PRO 6000 Blac...' of
    # '... Blackwell Max-Q Workstation Edition', data/gpu_name_markers.yml `tails`) hides it too
    frag = name.fragment
    hides_tail = any(c.isdigit() for c in frag) and not (got.sxm or "PCIE" in got.have)
    if name.cut and frag and not vague and (marker := _tail_marker(name, want, power_cap_w)) is not None:
        vague = f"the words after the cut word '{frag.title()}...' may be {_show(marker)}"
    if name.cut and (unseen or not frag or vague or hides_tail):
        return ModelMatch("warn", _cut_note(_as_ordered(unseen, model), vague, want_name.joined))
    reworked = _reworked(want, got, vram_mib, vram_gib)
    if reworked:
        return ModelMatch("warn", reworked + (f"; {_bare_note(bare)}" if bare else ""))
    if bare:
        return ModelMatch("warn", _bare_note(bare))
    return ModelMatch("pass")


def _architecture_judged(
    archs: list[str], family: str | None, delivered: str, got: _Delivered, name: _Name
) -> tuple[list[str], list[str], str | None]:
    """(problems, words the cut tail may hold, why it cannot be told) of the architecture words
    an order names that the GPU's name does not hold, judged by the family `-q` gives (`family`)
    or the one the name tells."""
    told = name_family(delivered)
    problems, unseen, untold = architecture_problem(archs, family or told, got.superchip, name.cut)
    ordered_families = {family_words()[a] for a in archs if a != GRACE}
    if ordered_families & {family, told} and family and told and family != told:
        # (-q's Product Architecture and the name's family disagree, one of them the ordered one:
        # neither is taken; an ordered family that is neither fails on both)
        problems, unseen = [a for a in problems if a.startswith("'Grace'")], []
        words = " ".join(a.title() for a in archs if a != GRACE)
        untold = (
            f"'{words}' ordered, and the output says the GPU's architecture is {family},"
            f" its name that it is {told}: they disagree"
        )
    return problems, unseen, untold


def _words_judged(
    want: list[str], want_name: _Name, got: _Delivered, vram_mib: int | None, written: dict[str, str]
) -> tuple[list[str], list[str], list[str]]:
    """(problems, ordered words the cut-off tail of the name may hold, ordered short bare numbers
    the name does not hold: not demanded) of the ordered model's words against the name's; a word
    of the driver's names (steps/checks/product_variants.py: NVL16, Embedded) shown as ordered."""
    problems: list[str] = []
    unseen: list[str] = []
    bare: list[str] = []
    learned = vocabulary()
    for token in want:
        show = written.get(token, token) if token in learned else _show(token, want_name.joined)
        problem = _word_problem(token, show, got, vram_mib)
        if problem and _BARE_COUNT.match(token):
            bare.append(token)
        elif problem == "":
            unseen.append(token)
        elif problem is not None:
            problems.append(problem)
    return problems, unseen, bare


def _size_untold(want: list[str], want_name: _Name, got: _Delivered, vram_mib: int | None) -> str | None:
    """Why an ordered size cannot be told: the name does not say it and no VRAM was given (a
    superchip's size is CPU and GPU memory: only the same words are met by its name)."""
    sizes = [
        _show(t, want_name.joined) for t in want if (m := _MEMORY.match(t)) and int(m[1]) not in got.named
    ]
    if not sizes or vram_mib is not None:
        return None
    said = (
        f"the output gives no GPU memory (the name's {got.named[0]}GB is CPU and GPU memory)"
        if got.named
        else "neither the name nor the output gives the GPU's memory"
    )
    return (
        f"'{sizes[0]}' ordered, and {said} (`nvidia-smi -L` prints none: the table or"
        " `nvidia-smi -q` shows it)"
    )


def _bare_note(bare: list[str]) -> str:
    """The warning for short bare numbers in the order that the name does not hold."""
    said = ", ".join(f"'{b}'" for b in bare)
    return (
        f"{said} in the ordered model is no word of the name, so it was not checked: write a GPU count"
        " as '8x' (or in gpu_count) and a memory size with its unit ('80G')"
    )


def model_matches(ordered: str, delivered: str, vram_mib: int | None = None) -> bool:
    """Whether a delivered GPU name is the ordered model (a `warn` of `match_model` included).

    Every ordered word must be in the name (a name cut with '...' may lack the words its cut-off
    tail held; a bare number is met by the model word holding it: '4090' by 'RTX 4090'; a bare
    number of one or two digits the name does not hold, 'H100 8', is not demanded but warned);
    a memory size ('80GB') is checked against the size in the name, else against the delivered
    VRAM (for GH200/GB200 against the VRAM: their name's size is CPU + GPU memory); 'SXM' is met
    by a name saying SXM or a known SXM-only name, 'PCIe' (also 'PCI-E') by any name that is not
    SXM. A word in the name that marks another product (D, Ti, SUPER, NVL, CNX, SFF, Laptop, Max-Q,
    Mobile, MIG; PCIe and Quadro only for a model sold without them too, data/gpu_name_markers.yml)
    fails unless the order names it. A vGPU profile ('GRID A100-4C') is another product than
    its board: it matches only an order naming that profile. A GPU count ('8x A100', '8卡 H200',
    '8-GPU'), interconnect words ('NVLink') and platform words (HGX, DGX: SXM GPUs, so a PCIe
    card fails; 'NVL72') in the order are left out; an architecture word ('Blackwell') the name
    does not hold is judged by the GPU's family.
    """
    return match_model(ordered, delivered, vram_mib).verdict != "fail"
