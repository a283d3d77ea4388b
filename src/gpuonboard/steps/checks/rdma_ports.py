"""The `rdma_ports` acceptance rule: the order's `rdma` ("8x400G") against the RDMA ports the
host lists (facts/infiniband.py), InfiniBand or RoCE, ACTIVE at the ordered rate or faster.

A port counts once: an SR-IOV virtual function whose adapter's physical function is listed too
is a share of that function's link (ACTIVE at its parent's rate), not a port of its own, and is
named apart as not counted (infiniband.shared_ports). Absence of evidence is never a pass: an
unreadable listing, or one not whole with too few good ports, is `unverified`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from gpuonboard.facts import infiniband, rdma_merge
from gpuonboard.facts.infiniband import MAYBE_SOFTWARE, NO_LINK_LAYER, SOFTWARE, IbPort
from gpuonboard.facts.probe import ProbeOutput
from gpuonboard.inventory.rdma_order import ETHERNET, INFINIBAND
from gpuonboard.once import lazy_re
from gpuonboard.steps.base import Check

if TYPE_CHECKING:
    from gpuonboard.connection.gather import Facts
    from gpuonboard.inventory import OrderSpec

__all__ = ["rdma_check", "rule_rdma"]


def _rdma_disagree(expected: str, actual: str, disagree: str) -> Check:
    """The `rdma_ports` row where listings merged disagree about ports that could make up the order."""
    return Check(
        "rdma_ports",
        expected,
        f"{actual} (the listings disagree: {disagree}; each such port is neither counted up nor called down)",
        "unverified",
        "the saved RDMA port listings were taken at two times and a port changed between them:"
        " save `ibv_devinfo -v` (or ibstat and ibstatus one after the other) on the box and"
        " judge it again.",
    )


def _rdma_not_whole(expected: str, actual: str, cut: str | None) -> Check:
    """The `rdma_ports` row of a listing that is not whole and has too few good ports: the ports
    it does not list are not known to be down (cut short where `cut` says; else stopped early)."""
    if cut is not None and NO_LINK_LAYER in cut:
        return Check(
            "rdma_ports",
            expected,
            f"{actual} (incomplete probe: {cut}; the ports it does not list are not known to be down)",
            "unverified",
            (
                "every RDMA device it lists is software RDMA, no RDMA adapter: if the listing is whole, the"
                " box has none. "
                if f"on {SOFTWARE} (" in actual
                else ""
            )
            + "This ibv_devinfo prints no port's link layer, so the listing may be whole (an old"
            " libibverbs) or cut after a port: save `ibv_devinfo -v` of a current rdma-core (or the"
            " /sys/class/infiniband/*/ports/* listing) on the box and judge it again.",
        )
    if cut is not None:
        return Check(
            "rdma_ports",
            expected,
            f"{actual} (incomplete probe: {cut}; the ports it does not list are not known to be down)",
            "unverified",
            "the RDMA port listing is not whole (cut short by a dropped session, a scroll-back limit"
            " or a paste, or limited to some ports with `ibv_devinfo -d` / `-i`): save the whole"
            " output of `ibv_devinfo -v` (or the /sys/class/infiniband/*/ports/* listing) on the"
            " box and judge it again.",
        )
    return Check(
        "rdma_ports",
        expected,
        actual + " (the listing stopped early: the ports after it are not listed)",
        "unverified",
        "the RDMA port listing stopped before its end (ibstat stops at a device it cannot"
        " open); list /sys/class/infiniband/*/ports/* or run `ibv_devinfo -v` on the box.",
    )


def _show(p: IbPort) -> str:
    """`mlx5_3/1 DOWN (Disabled) Ethernet`, `mlx5_2/1 ACTIVE 200 Gb/s Ethernet`."""
    # (a port not up has no rate of its own: mlx5 reports a RoCE port without link as 40 Gb/s)
    rate = f"{p.rate_gbps:g} Gb/s" if p.rate_gbps is not None else "rate ?"
    state = f"{p.state} ({p.phys_state})" if p.phys_state and not p.active else p.state
    return " ".join(filter(None, (f"{p.device}/{p.port}", state, rate if p.active else "", p.link_layer)))


def shared_said(shared: Sequence[IbPort]) -> str:
    """The SR-IOV virtual function ports left out of the count, named (the active ones with
    their rate)."""
    if not shared:
        return ""
    names = ", ".join(_show(p) if p.active else f"{p.device}/{p.port}" for p in shared)
    return (
        f"; not counted: {len(shared)} SR-IOV virtual function port(s) of adapters whose physical"
        f" function is listed (shares of its link, not ports of their own): {names}"
    )


def _too_few(
    gbit: float, ports: Sequence[IbPort], good: Sequence[IbPort], shared: Sequence[IbPort]
) -> tuple[str, str]:
    """What a whole listing with too few good ports says (the ports down or slower, named), and
    the advice."""
    others = [p for p in ports if p not in good]
    down = [p for p in others if not p.active]
    slower = [p for p in others if p.active]  # (up at a lower rate: another NIC, not counted)
    said = f"; down: {', '.join(map(_show, down))}" if down else ""
    said += f"; up below {gbit:g} Gb/s, not counted: {', '.join(map(_show, slower))}" if slower else ""
    linked = [p for p in down if (p.phys_state or "").lower() == "linkup"]
    advice = (
        "fewer RDMA ports are up at the ordered rate than ordered: ask the vendor to check cables, switch"
        " ports and NIC firmware, and show `ibv_devinfo -v` with every port PORT_ACTIVE"
        " at the ordered speed."
    )
    if linked:  # (a link up, the port not brought to Active: no LID from a subnet manager, a VF)
        advice += (
            f" {', '.join(f'{p.device}/{p.port}' for p in linked)}: the physical link is up but the port"
            " is not Active: no subnet manager gave it a LID (opensm, the switch's SM), or an SR-IOV"
            " virtual function is not set up; not a cable."
        )
    if any(p.active for p in shared):
        advice += (
            " The SR-IOV virtual functions listed beside their physical function share its link:"
            " they are not more ports; ask for the ordered number of physical ports."
        )
    return said + shared_said(shared), advice


def rule_rdma(
    order_rdma: tuple[int, float] | None,
    ports: Sequence[IbPort] | None,
    complete: bool = True,
    cut: str | None = None,
    disagree: str | None = None,
    unopened: frozenset[tuple[str, int]] = frozenset(),
    layer: str | None = None,
    nic: str = "",
    generation: str | None = None,
) -> Check | None:
    """Ordered RDMA (`rdma: "8x400G"` -> (8, 400.0)) vs ACTIVE ports (InfiniBand or RoCE) at that
    rate or more, each physical link once (the VF ports of a listed physical function are not
    counted: infiniband.shared_ports): fewer = fail naming the ports down or slow; no port data =
    unverified; an active port whose rate is not reported (ibv_devinfo without -v) cannot count:
    unverified; a listing that stopped early (`complete` False: ibstat's `ibpanic:` line) or ends
    mid-record (`cut` says where: IbReport.cut) with too few good ports = unverified (the ports
    not listed are not known to be down); listings merged that disagree about a port's state or
    rate (`disagree`, taken at two times: that port is neither up nor down) with too few good
    ports = unverified, naming the disagreement, unless even counting each such port up misses
    the order (fail). "No RDMA device found" needs a whole listing
    with no port. Ports a sysfs listing lists that the whole ibv_devinfo beside it does not
    (`unopened`: rdma_merge.unopened_ports) are there but the verbs library cannot open them: they
    make up no pass; where they would, warn. `layer` (the order's fabric: "InfiniBand", or
    "Ethernet" for RoCE) counts only ports of that link layer: a port of the other is real but the
    wrong fabric (named; too few = fail naming both), one whose link layer was not read is
    neither (unverified where it could make up the order). A `generation` ordered (FDR10 and
    later: 64b/66b) is not met by a port whose printed generation is an older one at the same
    rate (`40 Gb/sec (4X QDR)`, 8b/10b: less data; named), nor known met where the listing prints
    none and the rate is one an older generation runs at too (unverified where it could make up
    the order). None when the order asks for no RDMA."""
    if order_rdma is None:
        return None
    count, gbit = order_rdma
    expected = _rdma_expected(order_rdma, layer, nic)
    if ports is None:
        return _unreadable(expected)
    shared = infiniband.shared_ports(ports)
    ports = [p for p in ports if p not in shared]
    listed = bool(ports)
    wrong, fabric_unread = _by_fabric(ports, layer)
    ports = [p for p in ports if p not in wrong]
    up = [p for p in ports if p.active and p.rate_gbps is not None and p.rate_gbps >= gbit]
    older, untold = _by_generation(up, generation)
    ports = [p for p in ports if p not in older]
    up = [p for p in up if p not in older]
    maybe = [p for p in up if p.transport == MAYBE_SOFTWARE]
    good = [p for p in up if p not in fabric_unread and p not in untold and p not in maybe]
    # (a port whose state file the probe could not read, blank: not known to be down)
    unread = [p for p in ports if not p.state.strip()]
    unknown = [p for p in ports if p.active and p.rate_gbps is None] + unread
    unknown += [p for p in up if p not in good and p not in unknown]
    # (the ports of an older generation are of the fabric ordered: counted among those listed)
    actual = _counted(len(good), len(ports) + len(older), gbit, layer) if listed else "no port listed"
    actual += _wrong_said(wrong, layer, fabric_unread) + _generation_said(older, untold, generation)
    actual += _maybe_said(maybe)
    if len(good) >= count:
        if len([p for p in good if (p.device, p.port) not in unopened]) < count:
            return _rdma_unopened(expected, actual + shared_said(shared), unopened)
        return Check("rdma_ports", expected, actual + shared_said(shared), "pass")
    if disagree is not None and len(good) + len(unknown) >= count:
        return _rdma_disagree(expected, actual + shared_said(shared), disagree)
    if not complete or cut is not None:
        # (the ports read whole above the cut that are down or slow: named, as a whole one's are)
        down = [p for p in ports if p not in good and p not in unknown and p not in fabric_unread]
        named = f"; read down or slow: {', '.join(map(_show, down))}" if down else ""
        return _rdma_not_whole(expected, actual + named + shared_said(shared), cut)
    if len(good) + len(unknown) >= count:
        return _rdma_unknown(expected, actual + shared_said(shared), unknown, unread, fabric_unread)
    if not listed:
        return _no_device(expected)
    return _rdma_too_few(
        order_rdma, expected, actual, (ports, good, unknown, unread, wrong, shared), layer, disagree
    )


def _rdma_too_few(
    order_rdma: tuple[int, float],
    expected: str,
    actual: str,
    counted: tuple[list[IbPort], list[IbPort], list[IbPort], list[IbPort], list[IbPort], Sequence[IbPort]],
    layer: str | None,
    disagree: str | None,
) -> Check:
    """rule_rdma's fail where too few ports are ACTIVE at the rate (`counted`: the ports counted,
    those good, those not known, those whose state was not read, those of the other fabric and
    the VF ports left out), naming them; a bond device that could make up the order warns."""
    count, gbit = order_rdma
    ports, good, unknown, unread, wrong, shared = counted
    said, advice = _too_few(gbit, [p for p in ports if p not in unknown], good, shared)
    bonds = [p for p in good if _is_bond(p)]
    if bonds and len(good) + len(bonds) * (BOND_MAX - 1) >= count:
        return _rdma_bond(expected, actual + said, bonds)
    if bonds:  # (even each bond standing for BOND_MAX ports, too few)
        said += f"; {_bond_named(bonds)} (too few even counting each as {BOND_MAX} ports)"
    if layer and (flipped := _set_to_other(count, gbit, ports, good, wrong)):
        advice = _wrong_fabric_advice(layer, len(flipped)) + " " + advice[0].upper() + advice[1:]
    if other := [p for p in wrong if p.active and _fabric(p) not in (INFINIBAND, ETHERNET)]:
        ordered = f"the {_fabric_shown(layer)}" if layer else "the RDMA"
        advice += (
            f" {', '.join(f'{p.device}/{p.port}' for p in other)}: RDMA of another transport"
            f" ({', '.join(dict.fromkeys(str(_fabric(p)) for p in other))}), neither InfiniBand nor"
            f" RoCE: it does not make up {ordered} ordered; fix the order if it was sold."
        )
    if disagree is not None:  # (each port they disagree on counted up, still too few)
        said += f"; the listings disagree: {disagree} (too few even counting each such port up)"
    elif unread:
        said += f"; {_state_unread(unread)}"
    return Check("rdma_ports", expected, actual + said, "fail", advice)


# an RDMA device of a bond (mlx5's RoCE LAG `mlx5_bond_0`: one device for the bonded ports of one
# card, tests/fixtures/real/ib-sysfs__h100-8x-ndr400-ib_plus_bond-roce200__gpud.txt)
_BOND = lazy_re(r"bond", re.IGNORECASE)
# the most ports one bond device stands for: an mlx5 LAG bonds the ports of one card, 2 (the
# kernel's "net/mlx5: Implement RoCE LAG feature", dual-port cards only) or 4 since MLX5_MAX_PORTS
# was raised to 4 ("net/mlx5: Lag, ... NICs with 4 ports", Mark Bloch, netdev 2022)
BOND_MAX = 4


def _is_bond(port: IbPort) -> bool:
    """The port is a bond's: a link aggregation of two or more ports listed as one."""
    return bool(_BOND.search(port.device))


def _bond_named(bonds: Sequence[IbPort]) -> str:
    """'mlx5_bond_0/1 is a bond (a link aggregation of 2 to 4 ports of one card, listed as one
    port: how many is not listed)'."""
    names = ", ".join(f"{p.device}/{p.port}" for p in bonds)
    return (
        f"{names} is a bond (a link aggregation of 2 to {BOND_MAX} ports of one card, listed as one"
        " port: how many is not listed)"
    )


def _rdma_bond(expected: str, actual: str, bonds: Sequence[IbPort]) -> Check:
    """The `rdma_ports` row where too few ports are up but a bond is among them and the ports it
    may stand for (at most BOND_MAX each) would make up the order: no listing says how many, so
    never a fail claiming fewer ports (the ports down or slower still named in `actual`)."""
    return Check(
        "rdma_ports",
        expected,
        f"{actual}; {_bond_named(bonds)}, so the ports it stands for may make up the order",
        "unverified",
        "a bonded RDMA device (RoCE LAG) lists its ports as one: show its members on the box"
        " (`cat /proc/net/bonding/bond0`, or `ip -d link show` of each port) with their speed.",
    )


def _counted(good: int, ports: int, gbit: float, layer: str | None) -> str:
    """'7 of 8 port(s) ACTIVE at >= 400 Gb/s on InfiniBand'; 'no InfiniBand port listed' where
    every port listed is of the other fabric."""
    if not ports:  # (every port listed was of another fabric, or software RDMA)
        return f"no {_fabric_shown(layer)} port listed" if layer else "no RDMA adapter's port listed"
    on = f" on {_fabric_shown(layer)}" if layer else ""
    return f"{good} of {ports} port(s) ACTIVE at >= {gbit:g} Gb/s{on}"


def _unreadable(expected: str) -> Check:
    """The `rdma_ports` row where the port listing could not be read."""
    return Check(
        "rdma_ports",
        expected,
        "RDMA ports not readable",
        "unverified",
        "the RDMA port listing could not be read; run `ibv_devinfo -v` or list"
        " /sys/class/infiniband on the box.",
    )


def _by_fabric(ports: Sequence[IbPort], layer: str | None) -> tuple[list[IbPort], list[IbPort]]:
    """(the ports of the other fabric than `layer`: real but not the one ordered, the ports whose
    link layer was not read: neither counted nor called the wrong fabric). Without a layer, the
    ports of software RDMA only (Soft-RoCE rxe, soft-iWARP siw: a plain NIC made up as RDMA by
    `rdma link add`, no RDMA adapter whatever fabric is ordered)."""
    if layer is None:
        return [p for p in ports if _fabric(p) == SOFTWARE], []
    return [p for p in ports if _fabric(p) not in (layer, None)], [p for p in ports if _fabric(p) is None]


def _no_device(expected: str) -> Check:
    """The `rdma_ports` row of a whole listing with no port at all."""
    return Check(
        "rdma_ports",
        expected,
        "no RDMA device found",
        "fail",
        "no InfiniBand/RoCE device is visible (driver not loaded, or no NIC): ask the"
        " vendor for the ordered"
        " RDMA NICs with their driver (MLNX_OFED / DOCA-OFED) loaded.",
    )


IWARP = "iWARP"  # (an Ethernet port of iWARP transport: RDMA over TCP, neither RoCE nor InfiniBand)


def _fabric(port: IbPort) -> str | None:
    """A port's fabric as an order names it ("InfiniBand", "Ethernet" for RoCE) by its link layer
    where its transport is InfiniBand or not said (sysfs, ibstat, ibstatus); else the transport
    ibv_devinfo names ("iWARP", "usNIC", "unspecified": AWS EFA, whose link layer rdma-core
    prints as InfiniBand), neither fabric; None: not read."""
    transport = (port.transport or "").strip()
    # (a port that may be software or an adapter naming no firmware: of its link layer's fabric,
    # not counted up: `_maybe_software`)
    if transport and transport.lower() != "infiniband" and transport != MAYBE_SOFTWARE:
        return IWARP if transport.lower() == "iwarp" else transport
    text = (port.link_layer or "").strip().lower()
    return INFINIBAND if text == "infiniband" else ETHERNET if text == "ethernet" else None


def _fabric_shown(layer: str | None) -> str:
    """'InfiniBand', 'Ethernet (RoCE)', 'iWARP (RDMA over TCP, not RoCE)', 'unspecified transport
    (not InfiniBand nor RoCE)'."""
    if layer in (None, INFINIBAND):
        return str(layer)
    if layer == ETHERNET:
        return f"{ETHERNET} (RoCE)"
    if layer == IWARP:
        return f"{IWARP} (RDMA over TCP, not RoCE)"
    if layer == SOFTWARE:
        return f"{SOFTWARE} (Soft-RoCE rxe or soft-iWARP siw, the kernel's over a plain NIC: no RDMA adapter)"
    return f"{layer} transport (not InfiniBand nor RoCE)"


def _maybe_said(maybe: Sequence[IbPort]) -> str:
    """The ports up at the rate that may be software RDMA (infiniband.MAYBE_SOFTWARE), named."""
    if not maybe:
        return ""
    named = ", ".join(_show(p) for p in maybe)
    return (
        f"; not known to be an RDMA adapter's: {named} (ibstat names no CA type, firmware nor"
        " hardware version: Soft-RoCE rxe prints the same, as do Azure MANA and Alibaba eRDMA)"
    )


def _wrong_said(wrong: Sequence[IbPort], layer: str | None, fabric_unread: Sequence[IbPort]) -> str:
    """The ports of another fabric than ordered (each fabric apart), and those whose link layer is
    not known (not read, or read otherwise by two listings), named."""
    said = ""
    for other in dict.fromkeys(_fabric(p) for p in wrong):
        ports = ", ".join(_show(p) for p in wrong if _fabric(p) == other)
        ordered = f", not the {_fabric_shown(layer)} ordered" if layer else ""
        said += f"; on {_fabric_shown(other)}{ordered}: {ports}"
    if unread := [p for p in fabric_unread if p.whole]:
        said += f"; link layer not known: {', '.join(f'{p.device}/{p.port}' for p in unread)}"
    if cut := [p for p in fabric_unread if not p.whole]:  # (the listing ends inside its record)
        said += f"; cut inside its record (incomplete probe): {', '.join(_cut_port(p) for p in cut)}"
    return said


def _cut_port(port: IbPort) -> str:
    """A port whose record the listing ends inside, with the state read above the cut."""
    return f"{port.device}/{port.port} ({port.state.lower() or 'state not read'}, link layer not read)"


# the InfiniBand generations of 8b/10b encoding (SDR, DDR, QDR: 8 data bits in 10), whose ports
# carry less than a 64b/66b one's (FDR10 on) at the same printed rate: a 40 Gb/s QDR port is not
# an FDR10 one (drivers/infiniband/core/sysfs.c prints both `40 Gb/sec (4X ...)`)
_OLDER = {"SDR": 2.5, "DDR": 5.0, "QDR": 10.0}
_OLDER_RATES = frozenset(lane * width for lane in _OLDER.values() for width in (1, 2, 4, 8, 12))


def _by_generation(up: Sequence[IbPort], generation: str | None) -> tuple[list[IbPort], list[IbPort]]:
    """(the ports up whose printed generation is an 8b/10b one where a later one was ordered: not
    counted, the ports whose generation is not printed at a rate an 8b/10b one runs at too: not
    known); none where no generation, or an 8b/10b one, was ordered."""
    if generation is None or generation in _OLDER:
        return [], []
    older = [p for p in up if p.generation in _OLDER]
    untold = [p for p in up if p.generation is None and p.rate_gbps in _OLDER_RATES]
    return older, untold


def _generation_said(older: Sequence[IbPort], untold: Sequence[IbPort], generation: str | None) -> str:
    """'; up on QDR, not the FDR10 ordered: mlx4_0/1 ...'; '; generation not printed: ...'."""
    said = ""
    if older:
        said += f"; up on {older[0].generation}, not the {generation} ordered: {', '.join(map(_show, older))}"
    if untold:
        names = ", ".join(f"{p.device}/{p.port}" for p in untold)
        said += (
            f"; generation not printed (a {untold[0].rate_gbps:g} Gb/s port may be {generation} or an"
            f" older one, QDR and before): {names}"
        )
    return said


def _set_to_other(
    count: int, gbit: float, ports: Sequence[IbPort], good: Sequence[IbPort], wrong: Sequence[IbPort]
) -> list[IbPort]:
    """The ports up on the other fabric (InfiniBand for a RoCE order, RoCE for an InfiniBand one)
    that may be VPI ports set to it: all of them where no port of the fabric ordered is listed;
    else those up at the ordered rate where they would make up the shortfall, and those of an
    adapter (system image GUID) with a port of the fabric ordered (a dual-port card, one port of
    each). None where they cannot explain it (slower ports of another card)."""
    up = [p for p in wrong if p.active and _fabric(p) in (INFINIBAND, ETHERNET)]
    if not ports:
        return up
    fast = [p for p in up if p.rate_gbps is not None and p.rate_gbps >= gbit]
    cards = {p.adapter for p in ports if p.adapter}
    return [p for p in up if (p in fast and len(good) + len(fast) >= count) or p.adapter in cards]


def _wrong_fabric_advice(layer: str, up: int) -> str:
    """The advice where `up` ports of the other fabric than ordered are up: the NICs are there, on
    the wrong fabric (an InfiniBand order is not met by RoCE ports, nor a RoCE order by InfiniBand)."""
    other = ETHERNET if layer == INFINIBAND else INFINIBAND
    return (
        f"{layer} was ordered and {up} port(s) up are {_fabric_shown(other)}: the wrong fabric"
        f" (a VPI adapter's port type is set in its firmware, `mlxconfig LINK_TYPE_P1`); ask the"
        f" vendor for {_fabric_shown(layer)} ports, or fix the order if {other} was sold."
    )


def _rdma_unopened(expected: str, actual: str, unopened: frozenset[tuple[str, int]]) -> Check:
    """The `rdma_ports` row where the ports are up at the ordered rate in sysfs (ibstat, ibstatus)
    but the whole ibv_devinfo beside it does not list enough of them: the verbs library cannot open
    them from that login, so NCCL cannot use them for RDMA (no pass; the hardware is there)."""
    return Check(
        "rdma_ports",
        expected,
        f"{actual} in sysfs, but ibv_devinfo (verbs) does not list {rdma_merge.named_ports(unopened)}:"
        " the ports are there, the verbs library cannot open them from this login",
        "warn",
        "RDMA is not usable from this login on those ports (NCCL falls back to TCP): load ib_uverbs"
        " (`modprobe ib_uverbs`) or pass /dev/infiniband (every uverbs device) to the container or"
        " pod, then show `ibv_devinfo -v` listing every port PORT_ACTIVE.",
    )


# the listing a port's rate was not read from, named (IbPort.source)
_NO_RATE = {"ibv_devinfo": "ibv_devinfo without -v", "sysfs": "the sysfs listing read no rate file"}


def _untold_advice(unknown: Sequence[IbPort], fabric_unread: Sequence[IbPort]) -> str:
    """What to read where the ports not known to count were read up at the rate: their link
    layer, whether they are software RDMA, or their speed generation."""
    if fabric_unread:
        return (
            "the ports' link layer (InfiniBand or Ethernet) was not reported: read"
            " /sys/class/infiniband/*/ports/*/link_layer, or `ibv_devinfo -v`."
        )
    if any(p.transport == MAYBE_SOFTWARE for p in unknown):
        return (
            "whether these are an RDMA adapter's ports or software RDMA over a plain NIC was not"
            " told: `rdma link show` (type rxe or siw) or `ibv_devinfo -v` (rxe: fw_ver 0.0.0,"
            " hw_ver 0x0, vendor_part_id 0) tells them apart."
        )
    return (
        "the ports' speed generation was not printed (`Rate: 40` is QDR or FDR10): read"
        " /sys/class/infiniband/*/ports/*/rate (`40 Gb/sec (4X FDR10)`), or `ibstatus`."
    )


def _rdma_unknown(
    expected: str,
    actual: str,
    unknown: Sequence[IbPort],
    unread: Sequence[IbPort],
    fabric_unread: Sequence[IbPort] = (),
) -> Check:
    """The `rdma_ports` row where the ports whose rate, state or link layer could not be read
    would make up the order: each is not known to be up, nor down, nor of the ordered fabric."""
    no_rate = [p for p in unknown if p not in unread and p.rate_gbps is None]
    rateless = len(no_rate)
    listings = ", ".join(dict.fromkeys(_NO_RATE.get(p.source, p.source) for p in no_rate)) or "no rate read"
    said = [f"{rateless} active with no rate reported"] if rateless else []
    if unread:
        said.append(_state_unread(unread))
    if not said:  # (their link layer not read, their generation not printed, or maybe software)
        return Check("rdma_ports", expected, actual, "unverified", _untold_advice(unknown, fabric_unread))
    advice = (
        "the port state was not reported (a sysfs file the login could not read); read"
        " /sys/class/infiniband/*/ports/*/state and rate as root, or `ibv_devinfo -v`."
        if unread
        else f"the port rate was not reported ({listings}); read /sys/class/infiniband/*/ports/*/rate."
    )
    return Check("rdma_ports", expected, f"{actual}; {'; '.join(said)}", "unverified", advice)


def _state_unread(ports: Sequence[IbPort]) -> str:
    """'state not readable: mlx5_9/1': the ports whose sysfs state the probe could not read."""
    return f"state not readable: {', '.join(f'{p.device}/{p.port}' for p in ports)}"


def _rdma_expected(order_rdma: tuple[int, float], layer: str | None = None, nic: str = "") -> str:
    """'8 RDMA port(s) ACTIVE at >= 400 Gb/s'; with a fabric ordered, '8 InfiniBand port(s) ...';
    a NIC model ordered is said as not checked."""
    kind = _fabric_shown(layer) if layer else "RDMA"
    said = f" ({nic}: the NIC model is not checked)" if nic else ""
    return f"{order_rdma[0]} {kind} port(s) ACTIVE at >= {order_rdma[1]:g} Gb/s{said}"


def rdma_check(facts: Facts, order: OrderSpec | None) -> Check | None:
    """The order's `rdma` against the RDMA ports the host shows (None: no RDMA ordered)."""
    if order is None or order.rdma is None:
        return None
    if not facts.given("rdma_ports"):  # (offline: no saved listing among the files)
        return Check(
            "rdma_ports",
            _rdma_expected(order.rdma, order.rdma_layer, order.rdma_nic),
            "not judged: no ibv_devinfo, ibstat or ibstatus output was given",
            "unverified",
            "add the saved `ibv_devinfo -v` output to judge it",
        )
    if facts.raw["rdma_ports"].exit_code != 0:
        return rule_rdma(order.rdma, None, layer=order.rdma_layer, nic=order.rdma_nic)
    first = facts.raw["rdma_ports"]
    # (offline, the listings in other formats given beside it: ibstat's rates, ibv_devinfo's states)
    report = rdma_merge.merge_listings(
        [_listing(out) for out in (first, *first.beside) if out.exit_code == 0]
    )
    if report.rivals is not None:
        return Check(
            "rdma_ports",
            _rdma_expected(order.rdma, order.rdma_layer, order.rdma_nic),
            f"not judged: {report.rivals}",
            "unverified",
            "the saved RDMA port listings are not of one box at one time: judge each box's"
            " listings apart (one folder per box), or save `ibv_devinfo -v` on the box and judge it"
            " again.",
        )
    return rule_rdma(
        order.rdma,
        report.ports,
        report.complete,
        report.cut,
        report.disagree,
        report.unopened,
        order.rdma_layer,
        order.rdma_nic,
        order.rdma_generation,
    )


def _listing(out: ProbeOutput) -> infiniband.IbReport:
    """One saved or probed RDMA port listing read; one whose copied command narrowed it to some
    devices or ports (`partial`) is not whole: the others are not known to be down."""
    report = infiniband.parse_rdma(out.stdout)
    if not out.partial:
        return report
    # (the narrowing first: it says why the other devices are not listed; a cut beside it)
    return replace(report, complete=False, cut="; ".join(w for w in (out.partial, report.cut) if w))
