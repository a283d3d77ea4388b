"""Step `acceptance`: does the delivered box match the order? Pure rules over facts.

Each rule yields expected / actual / verdict. `warn` means it works but is below what was
ordered or expected (reported as degraded, never silently passed); any `fail` fails the host.

Tolerances (documented in README): memory sizes are compared after allowing for the usual
reporting gap, because the kernel and firmware reserve part of RAM (free shows ~1-3 % less
than installed), nvidia-smi reports VRAM minus a reserved region, and a filesystem shows
less than the raw disk. Defaults: RAM 3 % + 256 MiB (RAM orders read in binary units),
VRAM 3 %, data disk 5 %; overridable per step.
"""

from __future__ import annotations

import contextlib
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gpuonboard.connection.gather import NVIDIA_SMI_TIMEOUT, TIMED_OUT, Facts, memo
from gpuonboard.facts import disks, topo
from gpuonboard.facts.nvidia_smi_failure import (
    HUNG_ADVICE,
    NOT_FOUND_ADVICE,
    UNKNOWN_CAUSE_ADVICE,
    nvidia_smi_failure,
)
from gpuonboard.inventory import OrderSpec
from gpuonboard.steps.base import Check, Plan, Step, StepArgsError, StepContext, Verdict, last_line
from gpuonboard.steps.checks import ngc
from gpuonboard.units import format_bytes

if TYPE_CHECKING:
    from gpuonboard.facts.nvidia_smi import GpuInfo

DEFAULT_TOLERANCE = {"ram": 0.03, "vram": 0.03, "disk": 0.05}
_NOT_DISKS = {"tmpfs", "overlay", "devtmpfs", "ramfs", "none", "shm"}
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


def match_model(ordered: str, delivered: str, vram_mib: int | None = None) -> ModelMatch:
    """Compare a delivered GPU name with the ordered model (rules in `model_matches`)."""
    want_name = _name_tokens(split_count(ordered)[0])
    want = [t for t in want_name.tokens if not _INTERCONNECT.match(t)]
    name = _name_tokens(delivered)
    if not want:
        return ModelMatch("fail", "no GPU model in the order")
    if not name.tokens and not name.cut:
        return ModelMatch("fail", "the GPU has no name")
    have = model_tokens(" ".join(name.tokens))
    frag = name.fragment
    frag_known = False
    if _SXM.match(frag):  # 'NVIDIA A100-SXM...' (old tables): the part is SXM
        have |= {frag, "SXM"}
        frag_known = True
    elif len(frag) >= 3 and "PCIE".startswith(frag):  # 'NVIDIA A100-PCI...'
        have.add("PCIE")
        frag_known = True
    sxm = _is_sxm(have)
    said_sxm = sorted(t for t in have if _SXM.match(t) and t != "SXM")
    named = [int(m.group(1)) for t in have if (m := _MEMORY.match(t))]
    superchip = bool(have & _SUPERCHIPS)
    problems: list[str] = []
    unseen: list[str] = []  # ordered words the cut-off tail of the name may hold
    for token in want:
        show = _show(token, want_name.joined)
        memory = _MEMORY.match(token)
        if memory:
            size = int(memory.group(1))
            if size in named:
                continue
            if named and not superchip:
                problems.append(
                    f"'{show}' ordered, the name says {', '.join(f'{n}GB' for n in sorted(named))}"
                )
            elif vram_mib is not None:
                if not _VRAM_CLASS[0] <= vram_mib / (size * 1024) <= _VRAM_CLASS[1]:
                    problems.append(f"'{show}' ordered, the GPU has {vram_mib} MiB")
            elif named:
                problems.append(
                    f"'{show}' ordered, the name says {named[0]}GB (CPU and GPU memory); VRAM unknown"
                )
        elif _SXM.match(token):
            if sxm:
                if said_sxm and token != "SXM" and token not in said_sxm:
                    problems.append(f"'{token}' ordered, the name says {'/'.join(said_sxm)}")
            elif "PCIE" in have or "NVL" in have:
                problems.append(f"'{token}' ordered, the name says {'PCIe' if 'PCIE' in have else 'NVL'}")
            elif name.cut:
                unseen.append(token)
            else:
                problems.append(f"'{token}' ordered, the name does not say SXM and is no SXM-only model")
        elif token == "PCIE":
            if sxm:
                problems.append(
                    "'PCIe' ordered, this is an SXM part" + (f" ({'/'.join(said_sxm)})" if said_sxm else "")
                )
            elif name.cut and "PCIE" not in have:
                unseen.append(token)
        elif token in have:
            continue
        elif token.isdecimal() and any(j.endswith(token) and j[: -len(token)].isalpha() for j in name.joined):
            continue  # a bare number: '4090' is the RTX 4090
        elif frag and token.startswith(frag):
            continue  # 'Gene...' of 'Generation'
        elif name.cut and token not in _LEADING:
            unseen.append(token)
        else:
            problems.append(f"'{show}' not in the name")
    if unseen:
        # the cut tail may hold them, unless a visible model number is another than ordered
        covered = set(want) | {j for j in name.joined if any(j.endswith(w) for w in want if w.isdecimal())}
        models = [
            t
            for t in name.tokens
            if any(c.isdecimal() for c in t)
            and not _MEMORY.match(t)
            and not re.match(r"^(SXM|PCIE|HBM)\d*", t)
        ]
        others = [t for t in models if t not in covered]
        if others:
            says = ", ".join(_show(o, name.joined) for o in others)
            problems += [f"'{_show(t, want_name.joined)}' not in the name (it says {says})" for t in unseen]
            unseen = []
    extra = sorted((have & _OTHER_PRODUCT) - set(want))
    problems += [f"'{_show(t)}' in the name marks another product (not ordered)" for t in extra]
    vague = ""
    if frag and not frag_known and not any(t.startswith(frag) for t in want):
        markers = sorted(_show(w) for w in _OTHER_PRODUCT if w.startswith(frag))
        if markers and len(frag) > 1:
            problems.append(f"the cut word '{frag.title()}...' marks another product ({', '.join(markers)})")
        elif markers:
            vague = f"the cut word '{frag.title()}...' may be {' or '.join(markers)}"
    if problems:
        return ModelMatch("fail", "; ".join(problems))
    if name.cut and (unseen or not frag or vague):
        note = "name cut by nvidia-smi's table"
        if unseen:
            note += f"; not shown: {', '.join(_show(t, want_name.joined) for t in unseen)}"
        elif vague:
            note += f"; {vague}"
        else:
            note += "; the words after the cut are not shown"
        return ModelMatch("warn", note + " (`nvidia-smi -L` prints the whole name)")
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


def _gpu_not_given(facts: Facts) -> bool:
    """No nvidia-smi output of any format was given (`invoke facts` without one)."""
    from gpuonboard.facts.gpu_merge import GPU_PROBES

    return not any(facts.given(name) for name in GPU_PROBES)


def _not_judged(name: str, expected: str, what: str, command: str) -> Check:
    """A rule whose input was not among the saved outputs: unverified, not a hardware failure."""
    return Check(
        name,
        expected,
        f"not judged: no {what} output was given",
        "unverified",
        f"add the saved `{command}` output to judge it",
    )


def _unjudged_verdict(facts: Facts) -> Verdict:
    """The verdict of a GPU rule without GPU facts: unverified. Its cause (no driver, a hung or
    broken one) fails the nvidia_driver rule; this rule's fact could not be read."""
    return "unverified"


def _refused(facts: Facts) -> str:
    """'the host refuses nvidia-smi -q -x: ERROR: ...; ...' for the formats refused on purpose."""
    ev = facts.gpu_evidence
    return "; ".join(r.sentence() for r in ev.refusals) if ev else ""


def _incomplete(facts: Facts) -> str:
    """'nvidia-smi says 8 GPUs attached but its output lists 1 (cut off)' when no format listed
    every GPU nvidia-smi says is there: an incomplete probe to rerun, never missing hardware."""
    if facts.gpu is None or (facts.gpu.complete and not _attached_gap(facts)):
        return ""
    gap = _attached_gap(facts) or f"nvidia-smi's output lists {len(facts.gpu.gpus)} GPU(s) and was cut off"
    return f"incomplete probe: {gap}"


RERUN_ADVICE = (
    "an output cut short (a dropped session, a capture cut off, a GPU left out of a listing) is"
    " no evidence about the hardware: rerun `invoke check`; if it stays so, run `nvidia-smi -L`"
    " on the host and check `dmesg` for NVIDIA Xid errors"
)


# What to do about a GPU nvidia-smi lists but cannot read (GpuInfo.faults); a hung driver: HUNG_ADVICE
def fault_advice(indexes: Iterable[int]) -> str:
    """One sentence: what to ask the vendor about the unreadable GPUs numbered `indexes`."""
    return (
        "nvidia-smi cannot read the GPU(s) named (fallen off the bus, needing a reset, or a hung"
        " driver/GSP), so no other check covers them; ask the vendor to check `dmesg` for NVIDIA Xid"
        " errors (79: fallen off the bus; 119/120: GSP timeout), to reset the GPU"
        f" (`sudo nvidia-smi -i N -r`, N in {', '.join(str(i) for i in indexes)}) or reboot, and to"
        " replace it if it stays so"
    )


def _no_gpu_actual(facts: Facts) -> str | None:
    if _gpu_not_given(facts) and facts.gpu is None:
        return "not judged: no nvidia-smi output was given"
    if not facts.nvidia_smi_present:
        return "unknown: nvidia-smi not found"
    if facts.gpu is None or not facts.gpu.gpus:
        raw = facts.gpu_raw
        if raw.exit_code == TIMED_OUT:
            return f"unknown: nvidia-smi did not answer within {NVIDIA_SMI_TIMEOUT} s (stopped)"
        line, advice = nvidia_smi_failure(raw.stdout, raw.stderr)
        failed_words = bool(advice) or "NVIDIA-SMI has failed" in raw.stdout
        if raw.exit_code == 0 and facts.gpu is not None and not failed_words:
            # it answered, but no GPU could be read from what it printed
            why = "; ".join(facts.gpu.warnings[:2])
            return "unknown: nvidia-smi answered but listed no GPU" + (f" ({why[:160]})" if why else "")
        return "unknown: nvidia-smi failed" + (f" ({line[:160]})" if line else "")
    return None


def rule_driver(facts: Facts) -> Check:
    """The NVIDIA driver answers: nvidia-smi exists and reports GPUs. A format the provider
    refuses is said, never taken for a broken driver; a cut-off output is unverified."""
    expected = "nvidia-smi reports the GPUs"
    if _gpu_not_given(facts) and facts.gpu is None:
        return _not_judged("nvidia_driver", expected, "nvidia-smi", "nvidia-smi -q -x")
    if not facts.nvidia_smi_present:
        return Check(
            "nvidia_driver",
            "NVIDIA driver installed (nvidia-smi)",
            "nvidia-smi not found",
            "fail",
            NOT_FOUND_ADVICE,
        )
    refused = _refused(facts)
    problem = _no_gpu_actual(facts)
    unread = facts.unread_not_a_fault() if problem else ""
    if unread and refused:
        return Check(
            "nvidia_driver",
            expected,
            f"{(problem or '').removeprefix('unknown: ')}; {refused}",
            "unverified",
            "the provider blocks the nvidia-smi formats that list the GPUs (a policy, not a broken"
            " driver): ask the provider which format they allow, or for the GPU list they delivered",
        )
    if unread:
        # an output cut short, or text that is no nvidia-smi listing: no evidence either way
        actual = (problem or "").removeprefix("unknown: ")
        actual += "" if "incomplete probe" in actual else f" ({unread})"
        return Check("nvidia_driver", expected, actual, "unverified", RERUN_ADVICE)
    if problem:
        raw = facts.gpu_raw
        advice = nvidia_smi_failure(raw.stdout, raw.stderr)[1]
        if raw.exit_code == TIMED_OUT:
            advice = HUNG_ADVICE
        elif not advice and problem.startswith("unknown: nvidia-smi failed"):
            advice = UNKNOWN_CAUSE_ADVICE  # a failure of no cause named: never a bare "fail"
        return Check("nvidia_driver", expected, problem.removeprefix("unknown: "), "fail", advice)
    assert facts.gpu is not None
    actual = f"driver {facts.gpu.driver_version or 'unknown'}, CUDA {facts.gpu.cuda_version or 'unknown'}"
    notes = [refused] if refused else []
    incomplete = _incomplete(facts)
    if incomplete:
        return Check(
            "nvidia_driver",
            expected,
            f"{actual}; {incomplete}",
            "unverified",
            "; ".join([RERUN_ADVICE, *notes]),
        )
    if refused:
        notes.append(
            "the provider blocks these formats by policy; the facts come from the formats that"
            f" answered ({', '.join(facts.gpu_evidence.answered) if facts.gpu_evidence else '-'})"
        )
    verdict: Verdict = "pass" if facts.gpu.driver_version else "unverified"
    return Check("nvidia_driver", expected, actual, verdict, "; ".join(notes))


def _attached_gap(facts: Facts) -> str:
    """'nvidia-smi says 4 attached but lists 1' when its attached count differs from the GPUs
    its output describes; '' otherwise."""
    if facts.gpu is None or facts.gpu.attached_gpus is None:
        return ""
    n = len(facts.gpu.gpus)
    return (
        f"nvidia-smi says {facts.gpu.attached_gpus} attached but lists {n}"
        if facts.gpu.attached_gpus != n
        else ""
    )


def _unreadable(g: GpuInfo) -> str:
    """'GPU 4 unreadable (nvidia-smi reads ERR!)': a GPU nvidia-smi lists but cannot read."""
    return f"GPU {g.index} unreadable (nvidia-smi reads {' / '.join(g.faults)})"


def rule_gpu_model(order: OrderSpec, facts: Facts) -> Check:
    """Every GPU is the ordered model (names normalised); a failure names the word(s) that did
    not match or that mark another product; a name nvidia-smi's table cut warns. A GPU count
    written into the model ('8x A100 80G') is checked against the GPUs delivered."""
    expected = order.gpu_model or ""
    problem = _no_gpu_actual(facts)
    if problem:
        return Check("gpu_model", expected, problem, _unjudged_verdict(facts))
    assert facts.gpu is not None
    # a GPU nvidia-smi cannot read is a fault, never a wrong model: its name may read "ERR!"
    # a GPU whose name was not read (an output cut inside its record) is unread, not another model
    read = [g for g in facts.gpu.gpus if not g.faults and g.name.strip()]
    faulty = [g for g in facts.gpu.gpus if g.faults]
    nameless = len(facts.gpu.gpus) - len(read) - len(faulty)
    names = [g.name for g in read]
    actual = ", ".join(filter(None, [_count_names(names), *map(_unreadable, faulty)])) or "no GPU"
    model, count = split_count(expected)
    fails: dict[str, list[str]] = {}
    warns: dict[str, list[str]] = {}
    for g in read:
        result = match_model(model, g.name, g.memory_total_mib)
        into = fails if result.verdict == "fail" else warns if result.verdict == "warn" else None
        if into is not None and result.why not in into.setdefault(g.name, []):
            into[g.name].append(result.why)
    notes = [f"{n}: {'; '.join(w)}" for n, w in fails.items()]
    if faulty:
        notes.append("a GPU fault, not another model: " + fault_advice(g.index for g in faulty))
    verdict: Verdict = "fail" if fails or faulty or not names else "warn" if warns else "pass"
    incomplete = _incomplete(facts) or (f"the name of {nameless} GPU(s) was not read" if nameless else "")
    if incomplete and (verdict != "fail" or (nameless and not fails and not faulty)):
        # the GPUs read are the ordered model; those the output left out could not be judged
        return Check("gpu_model", expected, f"{actual}; {incomplete}", "unverified", RERUN_ADVICE)
    if count is not None and len(facts.gpu.gpus) < count:
        notes.append(f"the order's model says {count} x, {len(facts.gpu.gpus)} delivered")
        verdict = "fail"
    elif count is not None and order.gpu_count is not None and order.gpu_count != count:
        notes.append(
            f"the order's model says {count} x but gpu_count is {order.gpu_count}: correct the order"
        )
        verdict = "warn" if verdict == "pass" else verdict
    if verdict != "fail":
        notes += [f"{n}: {'; '.join(w)}" for n, w in warns.items()]
    return Check("gpu_model", expected, actual, verdict, "; ".join(notes))


def _count_names(names: Iterable[str]) -> str:
    counts: dict[str, int] = {}
    for n in names:
        counts[n] = counts.get(n, 0) + 1
    return ", ".join(f"{c} x {n}" for n, c in counts.items())


def rule_gpu_count(order: OrderSpec, facts: Facts) -> Check:
    """As many GPUs as ordered (more is reported, not failed)."""
    expected = str(order.gpu_count)
    problem = _no_gpu_actual(facts)
    if problem:
        return Check("gpu_count", expected, problem, _unjudged_verdict(facts))
    assert facts.gpu is not None and order.gpu_count is not None
    n = len(facts.gpu.gpus)
    detail = _attached_gap(facts)
    faulty = [g for g in facts.gpu.gpus if g.faults]
    if faulty and n >= order.gpu_count:
        # listed, but not all usable: a GPU nvidia-smi cannot read is no delivered GPU
        usable = n - len(faulty)
        unread = "; ".join(map(_unreadable, faulty))
        return Check(
            "gpu_count",
            expected,
            f"{n} ({len(faulty)} unreadable)",
            "fail" if usable < order.gpu_count else "pass",
            f"{unread}: {usable} of the {n} listed GPUs can be read"
            + (f", {order.gpu_count} ordered (see gpu_model)" if usable < order.gpu_count else ""),
        )
    incomplete = _incomplete(facts)
    if incomplete and n < order.gpu_count:
        return Check("gpu_count", expected, f"{n} listed; {incomplete}", "unverified", RERUN_ADVICE)
    verdict: Verdict = "fail" if n < order.gpu_count else "pass"
    if n > order.gpu_count:
        detail = detail or "more GPUs than ordered"
    elif n < order.gpu_count:
        missing = f"{order.gpu_count - n} of the {order.gpu_count} ordered GPUs missing"
        detail = (
            missing
            + (f" ({detail})" if detail else "")
            + "; ask the vendor to install them or for the box that was ordered"
        )
    return Check("gpu_count", expected, str(n), verdict, detail)


def rule_vram(order: OrderSpec, facts: Facts, tolerance: float) -> Check:
    """Each GPU has at least the ordered memory (minus the reserved-region gap)."""
    assert order.vram_bytes is not None
    expected = f">= {format_bytes(order.vram_bytes, binary=False)} per GPU"
    problem = _no_gpu_actual(facts)
    if problem:
        return Check("vram", expected, problem, _unjudged_verdict(facts))
    assert facts.gpu is not None
    # a GPU nvidia-smi cannot read gives no data, even where a memory size is printed for it
    faulty = [g for g in facts.gpu.gpus if g.faults]
    unread = "; ".join(map(_unreadable, faulty))
    sizes = [g.memory_total_mib for g in facts.gpu.gpus if not g.faults]
    if not sizes:
        return Check("vram", expected, f"unknown: no GPU could be read: {unread}", "fail")
    read = [s for s in sizes if s is not None]
    if not read:
        refused = _refused(facts)
        return Check(
            "vram",
            expected,
            "unknown: no nvidia-smi format that answered reports GPU memory"
            + (f" ({refused})" if refused else ""),
            "unverified",
            "the memory of the GPUs could not be read: run `nvidia-smi --query-gpu=name,memory.total"
            " --format=csv` on the host, or ask the provider to allow it",
        )
    smallest = min(read) * 1024 * 1024
    actual = f"{min(s for s in sizes if s is not None)} MiB ({format_bytes(smallest, binary=False)}) smallest"
    if faulty:
        actual += f" of the {len(sizes)} GPUs read; {unread}"
    ok = smallest >= order.vram_bytes * (1 - tolerance)
    unread_sizes = len(sizes) - len(read)
    incomplete = _incomplete(facts) or (
        f"the memory of {unread_sizes} GPU(s) was not reported" if unread_sizes else ""
    )
    if ok and incomplete:
        return Check("vram", expected, f"{actual} of the GPUs read; {incomplete}", "unverified", RERUN_ADVICE)
    if ok:
        return Check("vram", expected, actual, "pass")
    return Check(
        "vram",
        expected,
        actual,
        "fail",
        "GPU memory below what was ordered: a smaller model of the card (a 40 GB A100 for an 80 GB"
        " one), or MIG slices given as GPUs; ask the vendor for the cards that were ordered",
    )


def _or_unknown(n: int | None) -> str:
    return "?" if n is None else str(n)


def _usable_cpus(facts: Facts) -> tuple[int | None, str]:
    """CPUs a process of this login may use: the online CPUs (lscpu's CPU(s) less its Off-line
    CPU(s) list), nproc (the affinity mask) and the cgroup's CPU quota, whichever is smallest,
    with what limited it; (None, "") when none is known."""
    usable, why = None, ""
    cpu = facts.cpu
    if cpu is not None and cpu.offline_cpus and cpu.logical_cpus is not None:
        usable, why = max(0, cpu.logical_cpus - cpu.offline_cpus), "offline"
    # nproc counts only online CPUs: no lower than the online count, offline is the reason
    if facts.nproc is not None and (usable is None or facts.nproc < usable):
        usable, why = facts.nproc, "affinity/cgroup"
    if facts.cgroup_cpus is not None:
        quota = max(1, math.floor(facts.cgroup_cpus + 1e-9))
        if usable is None or quota < usable:
            usable, why = quota, "cgroup CPU quota"
    return usable, why


def _limited_detail(usable: int, why: str, logical: int, offline: int | None) -> str:
    """Why fewer CPUs than the host has may be used, and what to do."""
    if why == "offline":
        return (
            f"only {usable} of {logical} CPUs online ({offline} offline: lscpu's Off-line CPU(s) list);"
            " ask the vendor to bring them online (`chcpu -e`, or a kernel `maxcpus=`/`nr_cpus=` limit"
            " removed) or for the box that was ordered"
        )
    return (
        f"only {usable} CPU{'s' if usable != 1 else ''} usable ({why}) of {logical};"
        " the host has more than this login may use"
    )


def rule_cpu(order: OrderSpec, facts: Facts) -> Check:
    """Physical cores >= ordered; only hyperthreads reaching it is a warning; fewer CPUs usable
    by this login (offline CPUs, affinity, cgroup quota: a container rental) than ordered fails,
    and a CPU set of an SMT host that may be hyperthreads of fewer cores than ordered warns."""
    assert order.cpu_cores is not None
    expected = f">= {order.cpu_cores} cores"
    usable, why = _usable_cpus(facts)
    if facts.cpu is None:
        if usable is None and not facts.given("lscpu"):
            return _not_judged("cpu_cores", expected, "lscpu", "lscpu")
        if usable:
            verdict: Verdict = "warn" if usable >= order.cpu_cores else "fail"
            return Check("cpu_cores", expected, f"{usable} logical CPUs (lscpu unavailable)", verdict)
        return Check("cpu_cores", expected, "unknown: lscpu not available", "fail")
    physical, logical = facts.cpu.physical_cores, facts.cpu.logical_cpus
    actual = f"{_or_unknown(physical)} cores / {_or_unknown(logical)} threads"
    if facts.cpu.model_name:
        actual += f" ({facts.cpu.model_name})"
    threads = facts.cpu.threads_per_core or 1
    if usable is not None and logical is not None and usable < logical:
        actual += f", {usable} usable ({why})" if why != "offline" else f", {usable} online"
        if usable < order.cpu_cores:
            return Check(
                "cpu_cores",
                expected,
                actual,
                "fail",
                _limited_detail(usable, why, logical, facts.cpu.offline_cpus),
            )
        if why == "affinity/cgroup" and threads > 1 and usable < order.cpu_cores * threads:
            # a CPU set (cpuset, taskset) of an SMT host may hold both threads of each core
            return Check(
                "cpu_cores",
                expected,
                actual,
                "warn",
                f"the {usable} usable CPUs may be hyperthreads ({threads} per core) of as few as"
                f" {math.ceil(usable / threads)} cores; the order is met for certain only by"
                f" {order.cpu_cores * threads} usable CPUs",
            )
    if physical is not None and physical >= order.cpu_cores:
        return Check("cpu_cores", expected, actual, "pass")
    if logical is not None and logical >= order.cpu_cores:
        return Check("cpu_cores", expected, actual, "warn", "the order is met only by counting hyperthreads")
    return Check(
        "cpu_cores",
        expected,
        actual,
        "fail",
        "fewer CPUs than ordered, hyperthreads included: a smaller CPU model or fewer sockets;"
        " ask the vendor for the box that was ordered",
    )


# The kernel and firmware keep part of RAM out of `free`'s total: about 1.7 % on the real
# 1 x H200 VM capture (125.9 GiB of 128 GiB), plus a fixed share that weighs on small boxes
# (the real 2 GiB Ubuntu VM shows 1.92 GiB, 3.8 % less). Allowed gap: RAM_TOLERANCE of the
# order plus RAM_RESERVE_BYTES.
RAM_RESERVE_BYTES = 256 << 20


def rule_ram(order: OrderSpec, facts: Facts, tolerance: float) -> Check:
    """Installed RAM >= ordered (the inventory reads GB/TB as GiB/TiB), allowing the kernel's
    reserved share; a cgroup memory limit below it (a container rental) is what counts."""
    assert order.ram_bytes is not None
    wanted = order.ram_bytes
    expected = f">= {format_bytes(wanted)}"
    if facts.memory is None and not facts.given("free"):
        return _not_judged("ram", expected, "free", "free -k")
    if facts.memory is None or facts.memory.total_bytes is None:
        return Check("ram", expected, "unknown: free not available", "fail")
    total = facts.memory.total_bytes
    actual = f"{format_bytes(total)} ({format_bytes(total, binary=False)})"
    floor = wanted * (1 - tolerance) - RAM_RESERVE_BYTES
    limit = facts.memory_limit_bytes
    if limit is not None and limit < total:
        actual += f", {format_bytes(limit)} usable (cgroup memory limit)"
        if limit < floor:
            return Check(
                "ram",
                expected,
                actual,
                "fail",
                f"only {format_bytes(limit)} usable (cgroup memory limit) of {format_bytes(total)}",
            )
    if total >= floor:
        return Check("ram", expected, actual, "pass")
    return Check(
        "ram",
        expected,
        actual,
        "fail",
        f"{format_bytes(wanted - total)} less than ordered, more than the {tolerance:.0%} + 256 MiB the"
        " kernel and firmware keep; a missing or failed DIMM, or a smaller box: ask the vendor",
    )


def _separate_mounts(root: disks.Mount, facts: Facts) -> list[disks.Mount]:
    """Mounts df lists on a known other physical disk than /'s (not tmpfs/overlay, not under
    /boot), largest first: where a vendor may have mounted the data disk instead."""
    found: list[disks.Mount] = []
    for mount in facts.mounts:
        if mount.device in _NOT_DISKS or (mount.fstype or "") in _NOT_DISKS or mount is root:
            continue
        if mount.mountpoint == "/boot" or mount.mountpoint.startswith("/boot/"):
            continue
        shared = disks.shares_disk(root, mount, facts.block_devices, facts.mounts, facts.loop_backing)
        if shared is False and all(m.device != mount.device for m in found):
            found.append(mount)
    return sorted(found, key=lambda m: -(m.size_bytes or 0))


def _no_mount_detail(path: str, root: disks.Mount | None, facts: Facts) -> str:
    """What to do when nothing is mounted at the ordered path: name the disks lsblk shows with
    nothing mounted (a data disk delivered but not formatted/mounted), when lsblk sees this
    system's mounts (it resolves /; in a container it may not)."""
    # only an lsblk that shows / mounted sees this system's mounts (one run in a container
    # shows the host's system disk with nothing mounted); a disk under any mount df lists
    # (/ included) is never offered
    sees_root = any("/" in d.mountpoints for d in facts.block_devices)
    in_use: set[str] = set()
    for mount in facts.mounts:
        in_use |= disks.physical_disks(mount, facts.block_devices, facts.mounts, facts.loop_backing) or set()
    idle = [
        d
        for d in (disks.unmounted_disks(facts.block_devices) if sees_root and root is not None else [])
        if disks.short_name(d.name) not in in_use
    ]
    elsewhere = _separate_mounts(root, facts) if root is not None else []
    if elsewhere:
        shown = ", ".join(
            f"{m.mountpoint} ({m.device}, {format_bytes(m.size_bytes, binary=False)})" for m in elsewhere[:3]
        )
        more = f" and {len(elsewhere) - 3} more" if len(elsewhere) > 3 else ""
        return (
            f"another disk than / is mounted elsewhere: {shown}{more}; if one is the ordered data"
            f" disk, set the order's data_disk mount to its path, or mount it at {path}"
        )
    if idle:
        names = ", ".join(f"{d.name} ({format_bytes(d.size_bytes, binary=False)})" for d in idle)
        one = len(idle) == 1
        return (
            f"lsblk shows {'a disk' if one else 'disks'} with nothing mounted: {names}; if"
            f" {'it is' if one else 'one is'} the ordered data disk, format it and mount it at {path}"
            " (or ask the vendor to)"
        )
    return f"no disk is mounted there: ask the vendor to attach the ordered data disk and mount it at {path}"


def rule_data_disk(order: OrderSpec, facts: Facts, tolerance: float) -> Check:
    """A data disk is mounted at the ordered path, on another physical disk than /, big enough."""
    spec = order.data_disk
    assert spec is not None
    expected = f"separate disk at {spec.mount}"
    if spec.min_size_bytes:
        expected += f", >= {format_bytes(spec.min_size_bytes, binary=False)}"
    if not facts.mounts and not facts.given("df"):
        return _not_judged("data_disk", expected, "df", "df -P -k")
    if not facts.mounts:
        return Check("data_disk", expected, "unknown: df not available", "fail")
    root = disks.mount_for(facts.mounts, "/")
    mount = disks.mount_for(facts.mounts, spec.mount)
    if mount is None or mount.mountpoint == "/":
        return Check(
            "data_disk",
            expected,
            f"{spec.mount} is not a mount point; it lives on the system disk /",
            "fail",
            _no_mount_detail(spec.mount, root, facts),
        )
    actual = f"{mount.device} at {mount.mountpoint}, {format_bytes(mount.size_bytes, binary=False)}"
    if mount.device in _NOT_DISKS or (mount.fstype or "") in _NOT_DISKS:
        return Check(
            "data_disk",
            expected,
            actual + " (memory or overlay filesystem, not a disk)",
            "fail",
            "data on tmpfs or an overlay is lost at reboot; ask the vendor for the ordered disk",
        )
    shared = (
        disks.shares_disk(root, mount, facts.block_devices, facts.mounts, facts.loop_backing)
        if root is not None
        else None
    )
    cache_only = ""
    if shared:
        assert root is not None
        under = disks.physical_disks(root, facts.block_devices, facts.mounts, facts.loop_backing)
        on = f" {', '.join(sorted(under))}" if under else f" {root.device}"
        backing = disks.shares_disk(
            root, mount, facts.block_devices, facts.mounts, facts.loop_backing, cache=False
        )
        if backing is not False:
            return Check("data_disk", expected, actual + f" (same disk as / on{on})", "fail")
        # bcache: the data lives on its backing device; only the cache shares /'s disk
        cache_only = f"its cache device shares the system disk ({on.strip()}) with /"
    if spec.min_size_bytes and mount.size_bytes is None:
        return Check(
            "data_disk",
            expected,
            actual,
            "warn",
            f"the size of {mount.mountpoint} could not be read from the df output; save `df -P -B1`"
            " or `df -P -k` to judge it",
        )
    if spec.min_size_bytes and (mount.size_bytes or 0) < spec.min_size_bytes * (1 - tolerance):
        return Check("data_disk", expected, actual, "fail")
    if cache_only:
        return Check("data_disk", expected, actual, "warn", cache_only)
    if shared is None:
        return Check(
            "data_disk",
            expected,
            actual,
            "warn",
            f"could not tell whether {mount.device} is on another physical disk than /"
            f" ({root.device if root else 'no / in df'}): lsblk does not show both",
        )
    if mount.mountpoint != spec.mount:
        return Check(
            "data_disk", expected, actual, "warn", f"{spec.mount} lies inside the mount {mount.mountpoint}"
        )
    return Check("data_disk", expected, actual, "pass")


def rule_interconnect(order: OrderSpec, facts: Facts) -> Check:
    """NVLink between every GPU pair when NVLink was ordered (from nvidia-smi topo -m)."""
    expected = order.interconnect or ""
    if facts.topology is None:
        if not facts.given("nvidia_topo"):
            return _not_judged("interconnect", expected, "nvidia-smi topo -m", "nvidia-smi topo -m")
        problem = _no_gpu_actual(facts) or "unknown: " + _topo_failure(facts)
        # no matrix is no evidence: neither NVLink's absence (a fail) nor PCIe's presence (a pass)
        return Check(
            "interconnect",
            expected,
            problem,
            "unverified",
            "the GPU topology could not be read: run `nvidia-smi topo -m` on the host and save its"
            " output; `invoke facts FILE` judges it",
        )
    kind = topo.interconnect(facts.topology)
    listed = len(facts.gpu.gpus) if facts.gpu else 0
    if kind == "unknown" or len(facts.topology.gpus) < listed:
        seen = len(facts.topology.gpus)
        return Check(
            "interconnect",
            expected,
            f"unknown: nvidia-smi topo -m shows {seen} of the {listed or '?'} GPUs",
            "unverified",
            "the GPU matrix of `nvidia-smi topo -m` is missing or cut short: rerun `invoke check`",
        )
    weakest = topo.weakest_link(facts.topology)
    actual = kind + (f" (weakest GPU link {weakest})" if weakest else "")
    orphans = topo.nvlink_orphans(facts.topology) if kind == "mixed" else []
    verdict: Verdict
    if order.interconnect == "pcie" or kind == "nvlink" or kind == "single":
        verdict = "pass"
    elif kind == "mixed" and not orphans:
        verdict = "warn"
    else:
        verdict = "fail"
    detail = "only some GPU pairs are on NVLink" if kind == "mixed" else ""
    if verdict == "fail" and not orphans:
        detail = (
            "NVLink was ordered, but the GPUs reach each other only over PCIe"
            + (f" (the weakest pair through {weakest})" if weakest else "")
            + ": GPU-to-GPU traffic (all-reduce) is many times slower than over NVLink;"
            " ask the vendor for the NVLink (SXM/NVSwitch or bridged) box that was ordered"
        )
    if orphans and verdict == "fail":
        detail = (
            f"{', '.join(orphans)} {'has' if len(orphans) == 1 else 'have'} NVLink to no other GPU while"
            " the others have it: a dead NVLink or a missing bridge; ask the vendor to fix or swap the board"
        )
    return Check("interconnect", expected, actual, verdict, detail)


def _topo_failure(facts: Facts) -> str:
    """Why `nvidia-smi topo -m` gave no matrix, in a few words."""
    out = facts.raw.get("nvidia_topo")
    if out is None or out.absent:
        return "nvidia-smi topo -m was not run"
    from gpuonboard.facts.gpu_merge import refusal_line

    line = refusal_line(out)
    if line:
        return f"the host refuses nvidia-smi topo -m ({line[:160]})"
    if out.exit_code != 0:
        line = last_line(out.stderr or out.stdout, out.exit_code)[:160]
        return f"nvidia-smi topo -m failed (exit {out.exit_code}: {line})"
    return "nvidia-smi topo -m printed no GPU matrix that could be read"


def rule_min_driver(order: OrderSpec, facts: Facts) -> Check:
    """The driver is at least the ordered minimum version."""
    assert order.min_driver is not None
    expected = f">= {order.min_driver}"
    problem = _no_gpu_actual(facts)
    if problem or facts.gpu is None or not facts.gpu.driver_version:
        return Check(
            "min_driver", expected, problem or "unknown: the driver version was not reported", "unverified"
        )
    try:
        ok = ngc.version_key(facts.gpu.driver_version) >= ngc.version_key(order.min_driver)
    except ValueError:  # a garbled or cut-off version: no evidence that the driver is older
        return Check(
            "min_driver",
            expected,
            f"driver version {facts.gpu.driver_version!r} unreadable",
            "unverified",
            "nvidia-smi did not report a numeric driver version; run nvidia-smi on the host to read it",
        )
    if ok:
        return Check("min_driver", expected, facts.gpu.driver_version, "pass")
    return Check(
        "min_driver",
        expected,
        facts.gpu.driver_version,
        "fail",
        f"the NVIDIA driver is older than the ordered {order.min_driver}: ask the vendor to install a"
        f" {order.min_driver} or newer driver (a driver upgrade needs root and, usually, a reboot)",
    )


def _fraction(key: str, value: object) -> float:
    """A tolerance argument: a number from 0 to 1, or its text (a templated argument renders
    as text: `"{{ vars.tol | default(0.05) }}"`)."""
    number: float | None = None
    if isinstance(value, int | float) and not isinstance(value, bool):
        number = float(value)
    elif isinstance(value, str):
        with contextlib.suppress(ValueError):
            number = float(value.strip())
    if number is None or not 0 <= number < 1:
        raise StepArgsError(f"argument {key!r} must be a fraction from 0 to 1, like 0.05, not {value!r}")
    return number


def evaluated(order: OrderSpec, facts: Facts, tolerance: Mapping[str, float] | None = None) -> list[Check]:
    """evaluate(), computed once per host's facts, order and tolerances (gather.memo)."""
    key = ("acceptance", order, tuple(sorted((tolerance or {}).items())))
    return list(memo(facts, key, lambda: tuple(evaluate(order, facts, dict(tolerance or {})))))


def evaluate(order: OrderSpec, facts: Facts, tolerance: dict[str, float] | None = None) -> list[Check]:
    """Every rule that the order specifies, in a stable order."""
    tol = {**DEFAULT_TOLERANCE, **(tolerance or {})}
    checks = [rule_driver(facts)]
    if order.gpu_model:
        checks.append(rule_gpu_model(order, facts))
    if order.gpu_count is not None:
        checks.append(rule_gpu_count(order, facts))
    if order.vram_bytes is not None:
        checks.append(rule_vram(order, facts, tol["vram"]))
    if order.cpu_cores is not None:
        checks.append(rule_cpu(order, facts))
    if order.ram_bytes is not None:
        checks.append(rule_ram(order, facts, tol["ram"]))
    if order.data_disk is not None:
        checks.append(rule_data_disk(order, facts, tol["disk"]))
    if order.interconnect is not None:
        checks.append(rule_interconnect(order, facts))
    if order.min_driver is not None:
        checks.append(rule_min_driver(order, facts))
    from gpuonboard.steps.checks.fabric_health import rdma_check

    rdma = rdma_check(facts, order)
    return checks + ([rdma] if rdma else [])


class AcceptanceStep(Step):
    """Compare facts with the host's order spec; read-only."""

    name = "acceptance"
    read_only = True
    ARGS = {
        "ram_tolerance": "fraction of ordered RAM that may be missing, besides 256 MiB (default 0.03)",
        "vram_tolerance": "fraction of ordered VRAM that may be missing (default 0.03)",
        "disk_tolerance": "fraction of the data disk size that may be missing (default 0.05)",
    }

    def __init__(self, args: dict[str, object], label: str | None = None) -> None:
        super().__init__(args, label)
        self.tolerance: dict[str, float] = {}
        for key, value in self.args.items():
            self.tolerance[key.removesuffix("_tolerance")] = _fraction(key, value)

    def plan(self, ctx: StepContext) -> Plan:
        """Evaluate every rule; failed when any rule fails."""
        checks = evaluated(ctx.host.order, ctx.facts, self.tolerance)
        fails = [c for c in checks if c.verdict == "fail"]
        warns = [c for c in checks if c.verdict == "warn"]
        unverified = [c.name for c in checks if c.verdict == "unverified"]
        tail = f"; {len(unverified)} unverified: {', '.join(unverified)}" if unverified else ""
        if fails:
            msg = f"{len(fails)} of {len(checks)} acceptance rules failed: " + ", ".join(
                c.name for c in fails
            )
        elif warns:
            msg = f"accepted with {len(warns)} warning(s) (degraded): " + ", ".join(c.name for c in warns)
        elif unverified:
            msg = f"accepted with {len(unverified)} rule(s) unverified: {', '.join(unverified)}"
            tail = ""
        else:
            msg = f"all {len(checks)} acceptance rules passed"
        return Plan(changes=False, msg=msg + tail, checks=checks, failed=bool(fails))
