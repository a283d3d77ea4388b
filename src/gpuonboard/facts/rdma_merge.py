"""The RDMA port listings of one box in several formats (facts/infiniband.py's parsers) merged
into one report: each port's fields from every listing that read it, a field two listings read
otherwise not known (:func:`merge_listings`), listings of two boxes or times named
(:func:`listings_disagree`), and the ports sysfs lists that verbs cannot open
(:func:`unopened_ports`)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TypeVar

from gpuonboard.facts.infiniband import IbPort, IbReport

__all__ = ["listings_disagree", "merge_listings", "named_ports", "unopened_ports"]

_T = TypeVar("_T")


def merge_listings(reports: Sequence[IbReport]) -> IbReport:
    """One report of several listings of one box's RDMA ports in different formats, each of
    which answers other questions (`ibv_devinfo` without -v says each port's state and no rate,
    `ibstat` its rate; a whole `ibv_devinfo -v` lists the ports after the device an `ibstat`
    stopped at). A port is its listings' fields together; where two say different states, rates
    or link layers (taken at two times, the port flapped between them) that field is not known (a
    blank state: neither up nor down; no rate; no link layer: neither fabric) and the report says
    so in `disagree`. Listings that are
    not of one box at one time (`rivals`: a GUID each, a whole listing without ports another
    lists) are merged for show only. The ports are all known when a whole listing (`complete`, no
    `cut`: the caller marks one narrowed by its command as not whole) lists every port listed."""
    if len(reports) == 1:
        return reports[0]
    copies: dict[tuple[str, int], list[IbPort]] = {}
    for report in reports:
        for p in report.ports:
            copies.setdefault((p.device, p.port), []).append(p)
    ports: list[IbPort] = []
    clash: list[str] = []
    for (device, number), seen in copies.items():
        port, why = _merged_port(seen)
        ports.append(port)
        clash += [f"{device} port {number} {why}"] if why else []
    whole = any(r.complete and r.cut is None and set(copies) <= _keys(r) for r in reports)
    cut = None if whole else next((r.cut for r in reports if r.cut), None)
    warnings = tuple(w for r in reports for w in r.warnings) + tuple(clash)
    tools = "+".join(dict.fromkeys(r.tool for r in reports if r.tool))
    unopened = unopened_ports(reports)
    return IbReport(
        tuple(ports),
        warnings,
        whole,
        cut,
        tools,
        "; ".join(clash) or None,
        listings_disagree(reports, unopened),
        unopened,
    )


_SYSFS_TOOLS = frozenset({"ibstat", "ibstatus", "sysfs"})  # (read /sys/class/infiniband)


def unopened_ports(reports: Sequence[IbReport]) -> frozenset[tuple[str, int]]:
    """The ports a sysfs listing (ibstat, ibstatus, the /sys/class/infiniband listing) lists that
    a whole verbs listing (ibv_devinfo, which opens each device through ib_uverbs) beside it does
    not: one box gives this where ib_uverbs is not loaded or /dev/infiniband (or some of its
    uverbs devices) is not passed to the container, so these ports are there but not usable for
    RDMA from that login. Empty where no whole ibv_devinfo listing sits beside a sysfs one."""
    sysfs = set().union(*(_keys(r) for r in reports if r.tool in _SYSFS_TOOLS))
    verbs = [r for r in reports if r.tool == "ibv_devinfo" and r.complete and r.cut is None]
    return frozenset(k for r in verbs for k in sysfs - _keys(r))


def _keys(report: IbReport) -> set[tuple[str, int]]:
    return {(p.device, p.port) for p in report.ports}


def named_ports(keys: Iterable[tuple[str, int]]) -> str:
    """'mlx5_10/1, mlx5_11/1' (the first three, then how many more)."""
    shown = [f"{d}/{n}" for d, n in sorted(keys)]
    return ", ".join(shown[:3]) + (f" and {len(shown) - 3} more" if len(shown) > 3 else "")


def listings_disagree(
    reports: Sequence[IbReport], unopened: frozenset[tuple[str, int]] = frozenset()
) -> str | None:
    """Why listings of RDMA ports in several formats are not of one box at one time (two boxes'
    outputs in one folder, or a box whose devices changed between them): a device whose system
    image GUID, or a port whose GUID, reads otherwise in two of them; a whole listing that does
    not list a port another lists (a cut or narrowed listing may list fewer; a verbs listing
    that lacks ports a sysfs one lists, `unopened`, is one box whose verbs cannot open them, not
    two boxes). None where nothing says so; one sentence otherwise."""
    said: list[str] = []
    for what, of in (("system image GUID", lambda p: p.adapter), ("port GUID", lambda p: p.guid)):
        read: dict[str, dict[str, set[str]]] = {}
        for r in reports:
            for p in r.ports:
                if (value := of(p)) is not None:
                    name = p.device if what.startswith("system") else f"{p.device}/{p.port}"
                    read.setdefault(name, {}).setdefault(value, set()).add(p.source)
        said += [
            f"{name}'s {what} reads "
            + ", ".join(f"0x{v} in {'+'.join(sorted(src))}" for v, src in values.items())
            for name, values in read.items()
            if len(values) > 1
        ]
    listed = set().union(*(_keys(r) for r in reports))
    for r in reports:
        missing = listed - _keys(r) - (unopened if r.tool == "ibv_devinfo" else frozenset())
        if r.complete and r.cut is None and missing:
            said.append(f"the whole {r.tool or 'listing'} does not list {named_ports(missing)}")
    if not said:
        return None
    shown = "; ".join(said[:3]) + (f"; {len(said) - 3} more" if len(said) > 3 else "")
    return (
        f"the RDMA port listings disagree: {shown} (two boxes' outputs, or a box whose devices"
        " changed between them)"
    )


def _first(values: Iterable[_T | None]) -> _T | None:
    """The first value that is not None (None: none is)."""
    return next((v for v in values if v is not None), None)


def _said_layer(port: IbPort) -> str | None:
    """A copy's link layer as it bears on the merge: ibv_devinfo's `InfiniBand` of a device whose
    transport is not InfiniBand nor iWARP (AWS EFA's `unspecified (4)`: rdma-core prints an
    unspecified link layer as InfiniBand, where sysfs says `Unknown`) is "Unknown", so it
    overrules no other listing's."""
    transport = (port.transport or "infiniband").strip().lower()
    if port.link_layer == "InfiniBand" and transport not in ("infiniband", "iwarp"):
        return "Unknown"
    return port.link_layer


def _merged_port(seen: Sequence[IbPort]) -> tuple[IbPort, str | None]:
    """One port's copies from several listings as one, and why a field of it is not known (two
    listings disagree: `reads ACTIVE in ibstat, DOWN in ibv_devinfo`, `reads Ethernet in ibstat,
    InfiniBand in sysfs`: its state, rate or link layer None); None when they agree. A
    copy its own listing ends inside (`Rate: 2` of `Rate: 200`) gives no port field where a
    whole copy is read (its device's GUID and part number, read before the port, still count)."""
    voters = [p for p in seen if p.whole] or list(seen)
    states = {p.state for p in voters if p.state.strip()}
    rates = {p.rate_gbps for p in voters if p.active and p.rate_gbps is not None}
    said = [_said_layer(p) for p in voters]
    layers = {layer for layer in said if layer not in (None, "Unknown")}
    whys = []
    if len(states) > 1:
        whys.append(", ".join(f"{p.state} in {p.source}" for p in voters))
    elif len(rates) > 1:
        whys.append(", ".join(f"{p.rate_gbps:g} Gb/s in {p.source}" for p in voters if p.rate_gbps))
    if len(layers) > 1:  # (not known: neither fabric is counted, nor called the wrong one)
        whys.append(", ".join(f"{p.link_layer} in {p.source}" for p in voters if p.link_layer))
    state = next(iter(states)) if len(states) == 1 else ""
    port = IbPort(
        seen[0].device,
        seen[0].port,
        state,
        next(iter(rates)) if len(rates) == 1 else None,
        next(iter(layers)) if len(layers) == 1 else None if layers else _first(said),
        _first(p.phys_state for p in voters),
        "+".join(dict.fromkeys(p.source for p in seen)),
        _first(p.adapter for p in seen),
        _first(p.vf for p in seen),
        _first(p.guid for p in seen),
        voters[0].whole,
        _first(p.transport for p in seen),
        _first(p.generation for p in voters),
    )
    return port, ("reads " + "; and ".join(whys)) if whys else None
