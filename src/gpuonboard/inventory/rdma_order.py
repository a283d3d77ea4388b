"""An order's `rdma` field as vendors write it: ports x rate (`8x400G`), with the fabric named or
told by a word (`8x400G InfiniBand`, `8x ConnectX-7 400Gb/s NDR`, `2x100G RoCE v2`, `8x200GbE`):
InfiniBand (IB, or an InfiniBand speed generation: SDR, DDR, QDR, FDR10, FDR, EDR, HDR, NDR, XDR;
the rate must be one a port of that generation runs at: `8x400G EDR` is refused) or Ethernet (RoCE,
RoCEv2, Ethernet, GbE). A NIC model word (ConnectX-7) is kept, said as not checked. A rate with
no port count (`3.2 Tbps InfiniBand`, `RoCE v2 100G`) is refused: a total of the box's ports or
one port's cannot be told.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from gpuonboard.inventory.fields import RDMA_GBITS_RANGE, RDMA_PORTS_RANGE
from gpuonboard.once import lazy_re
from gpuonboard.yamlload import shown

__all__ = ["ETHERNET", "INFINIBAND", "RdmaOrder", "fabric_named", "parse_rdma_order"]

# the link layers as the RDMA tools print them (sysfs link_layer, ibstat, ibv_devinfo)
INFINIBAND = "InfiniBand"
ETHERNET = "Ethernet"

# (bits only: `G`, `Gb`, `Gbit`, `Gbps`, `Gb/s`, Ethernet's `GbE`, and `T...` for Tb/s; a
# capital-B `GB`, `GB/s` is bytes: 50 GB/s is 400 Gb/s)
_UNIT = r"([GgTt])(?:bit|bps|b/s|bE|b)?(?![A-Za-z/])"
_RATE = rf"(\d+(?:\.\d+)?)\s*{_UNIT}"
_RDMA = lazy_re(rf"(\d+)\s*[xX×*]\s*{_RATE}", re.ASCII)
_RATE_ONLY = lazy_re(_RATE, re.ASCII)
_RDMA_BYTES = lazy_re(r"(\d+)\s*[xX×*]\s*(\d+(?:\.\d+)?)\s*(GB/s|GBps|GB)(?![A-Za-z/])", re.ASCII)
_GBE = lazy_re(r"\d\s*GbE\b", re.ASCII)
# words naming the fabric; an InfiniBand speed generation names InfiniBand (`NDR400`: its rate too)
_IB_WORD = lazy_re(r"\b(?:InfiniBand|IB)\b", re.IGNORECASE | re.ASCII)
_ETH_WORD = lazy_re(r"\b(?:RoCE(?:\s*v[12])?|Ethernet)\b", re.IGNORECASE | re.ASCII)
_WORDS = r"SDR|DDR|QDR|FDR10|FDR|EDR|HDR|NDR|XDR"  # (FDR10, Mellanox's 10 Gb/s lane, before FDR)
# (a generation's number is a port rate of two digits or more, `HDR100`, `NDR200`, `FDR10`; a word
# with one digit is another thing's, `DDR5` / `DDR4` host memory: not a generation)
_GENERATION = lazy_re(rf"\b({_WORDS})(\d{{2,}})?\b", re.IGNORECASE | re.ASCII)
# InfiniBand's link width before its generation (`8x400G (4X NDR)`): not a count, where the
# text holds ports x rate besides (`4x HDR200` alone is refused: a count or the width)
_WIDTH = lazy_re(rf"\b(?:1|2|4|8|12)[xX]\s+(?=(?:{_WORDS})\b)", re.IGNORECASE | re.ASCII)
# each generation's rate of one lane in Gb/s, as the kernel's sysfs `rate` file computes a port's
# (drivers/infiniband/core/sysfs.c rate_show: lane x width, `400 Gb/sec (4X NDR)`, `40 Gb/sec (4X
# FDR10)`: FDR10 a 10 Gb/s lane, FDR 14); a port is 1X, 2X, 4X, 8X or 12X wide (mlx5 reports
# NDR at 1X, 2X and 4X: 100, 200 and 400 Gb/s), so a generation allows those multiples only
_LANE_GBIT = {
    "SDR": 2.5, "DDR": 5.0, "QDR": 10.0, "FDR10": 10.0, "FDR": 14.0,
    "EDR": 25.0, "HDR": 50.0, "NDR": 100.0, "XDR": 200.0,
}  # fmt: skip
_WIDTHS = (1, 2, 4, 8, 12)
# each generation's rate of a 4X port, for the example an error gives (ibstat prints `400 Gb/sec
# (4X NDR)`: tests/fixtures/real/ibstat__h100-8x-ndr400__some-down__gpud.txt)
_GENERATION_GBIT = {word: 4 * lane for word, lane in _LANE_GBIT.items()}
# a NIC model (not checked: the rule reads ports, states, rates and link layers)
_NIC = lazy_re(
    r"\b(?:(?:NVIDIA|Mellanox)\s+)?(?:ConnectX|CX)-?\d+(?:\s*(?:Dx|Lx|VPI))?\b", re.IGNORECASE | re.ASCII
)


@dataclass(frozen=True)
class RdmaOrder:
    """What `rdma` ordered: ports, Gb/s each, the fabric (None: either) and a NIC model word
    that is not checked ('' where none)."""

    ports: int
    gbit: float
    layer: str | None = None
    nic: str = ""
    # the InfiniBand speed generation named ("FDR10"; None: none)
    generation: str | None = field(default=None, compare=False)


def _gbit(number: str, unit: str) -> float:
    """A rate in Gb/s from its number and unit letter (G or T)."""
    return float(number) * (1000 if unit.upper() == "T" else 1)


def _layer(text: str) -> tuple[str | None, str]:
    """(the fabric the words name, the text without those words); ValueError where they name
    both fabrics."""
    ib = _IB_WORD.search(text) or _GENERATION.search(text)
    eth = _ETH_WORD.search(text) or _GBE.search(text)
    if ib and eth:
        raise ValueError(
            f"is {text!r}: it names InfiniBand ({ib.group(0).strip()!r}) and Ethernet"
            f' ({eth.group(0).strip()!r}) both; write one fabric, like "8x400G InfiniBand" or'
            ' "8x400G RoCE"'
        )
    rest = _GENERATION.sub(" ", _ETH_WORD.sub(" ", _IB_WORD.sub(" ", text)))
    return (INFINIBAND if ib else ETHERNET if eth else None), rest


def fabric_named(text: str) -> str | None:
    """The RDMA fabric a text names (`RoCE v2`, `100GbE`, `Infiniband NDR`: INFINIBAND or
    ETHERNET), as `rdma` reads it; None where it names none, or both."""
    try:
        return _layer(re.sub(r"[(),;]", " ", text))[0]
    except ValueError:
        return None


def _generation_rate(text: str, value: str) -> float | None:
    """The rate a generation word with its number names (`NDR200`: 200), checked to be one of the
    generation's (ValueError otherwise); None where the word has no number."""
    generation = _GENERATION.search(text)
    if generation is None or not generation.group(2):
        return None
    rate = float(generation.group(2))
    _check_generation(value, generation.group(1), rate, generation.group(0))
    return rate


def _check_generation(value: str, word: str, rate: float, shown_as: str) -> None:
    """ValueError where an InfiniBand generation has no port of `rate` Gb/s (`400G EDR`: EDR
    runs 25 Gb/s a lane, 100 Gb/s a 4X port)."""
    lane = _LANE_GBIT[word.upper()]
    rates = [lane * w for w in _WIDTHS]
    if rate not in rates:
        said = ", ".join(f"{r:g}" for r in rates[:-1]) + f" or {rates[-1]:g}"
        raise ValueError(
            f"is {value!r}: {rate:g} Gb/s and {shown_as!r} disagree, as InfiniBand {word.upper()} runs"
            f" {lane:g} Gb/s a lane, {said} Gb/s a port (1X to 12X wide; {4 * lane:g} at 4X); write"
            f' the rate of each port and its generation, like "8x{4 * lane:g}G {word.upper()}"'
        )


def parse_rdma_order(value: object) -> RdmaOrder:
    """An order's `rdma` field (module doc) -> RdmaOrder; ValueError with the reason otherwise."""
    if isinstance(value, str) and (b := _RDMA_BYTES.search(value)):  # (a fabric word may follow)
        bits = float(b.group(2)) * 8
        raise ValueError(
            f"is {value!r}: a rate in bytes ({b.group(3)}); port rates are sold in bits: write"
            f' "{b.group(1)}x{bits:g}G" if {b.group(2)} {b.group(3)} a port was meant, or'
            f' "{b.group(1)}x{b.group(2)}G" for {b.group(2)} Gb/s'
        )
    if not isinstance(value, str):
        raise ValueError(f'must be ports x rate like "8x400G" (8 ports of 400 Gb/s each), not {shown(value)}')
    text = re.sub(r"[(),;]", " ", value).strip()
    if _RDMA.search(without_width := _WIDTH.sub(" ", text)):
        text = without_width
    layer, rest = _layer(text)
    generation_rate = _generation_rate(text, value)
    nics = [" ".join(m.group(0).split()) for m in _NIC.finditer(rest)]
    rest = " ".join(_NIC.sub(" ", rest).split())
    m = _RDMA.fullmatch(rest)
    if m is None and (c := re.fullmatch(r"(\d+)\s*[xX×*]", rest)) and _GENERATION.search(text):
        # (`4x HDR200`, `8x NDR`: InfiniBand writes a port's link width so, `4X NDR`)
        generation = _GENERATION.search(text)
        assert generation is not None
        rate = generation_rate or _GENERATION_GBIT[generation.group(1).upper()]
        raise ValueError(
            f"is {value!r}: '{c.group(0).strip()}' before {generation.group(0).strip()!r} may be the"
            f" port count or the link width (InfiniBand writes `4X NDR`); write ports x the rate of"
            f' each, like "{c.group(1)}x{rate:g}G InfiniBand"'
        )
    if m is None:
        raise ValueError(_unread(value, rest, layer))
    count, rate = int(m.group(1)), _gbit(m.group(2), m.group(3))
    if generation_rate is not None and generation_rate != rate:
        raise ValueError(
            f"is {value!r}: the rate {rate:g} Gb/s and the speed word's {generation_rate:g} Gb/s"
            " disagree; write the rate of each port once"
        )
    if (generation := _GENERATION.search(text)) and generation_rate is None:
        _check_generation(value, generation.group(1), rate, generation.group(0))
    if count < 1 or rate <= 0:
        raise ValueError(f"is {value!r}, which checks nothing; give at least 1 port and a rate above 0")
    for what, rule, number in (("ports", RDMA_PORTS_RANGE, count), ("rate", RDMA_GBITS_RANGE, rate)):
        if problem := rule.problem(number):
            raise ValueError(f"is {shown(value)}: the {what} {problem[:-1]}")
    named = _GENERATION.search(text)
    return RdmaOrder(count, rate, layer, ", ".join(nics), named.group(1).upper() if named else None)


def _unread(value: object, rest: str, layer: str | None) -> str:
    """Why an `rdma` text is not ports x rate: a rate with no port count is named as one."""
    fabric = f" {'RoCE' if layer == ETHERNET else layer}" if layer else ""
    only = _RATE_ONLY.fullmatch(rest)
    if only is None:
        return (
            f'must be ports x rate like "8x400G" (8 ports of 400 Gb/s each; a fabric may follow:'
            f' "8x400G InfiniBand", "2x100G RoCE"), not {shown(value)}'
        )
    total = _gbit(only.group(1), only.group(2))
    example = f"8x{total / 8:g}G{fabric}" if total >= 800 else f"1x{total:g}G{fabric}"
    return (
        f"is {value!r}: one rate ({total:g} Gb/s) and no port count, so whether it is one port's"
        f' or the box\'s total cannot be told; write ports x the rate of each, like "{example}"'
    )
