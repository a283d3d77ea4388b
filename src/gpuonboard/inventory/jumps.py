"""Jump hosts: a host's `jump` setting parsed into hops, each hop checked (an inventory host,
or `[user@]host[:port]`), and the flat chain in front of a host, as OpenSSH's ProxyJump
follows a bastion's own jump, with loops and over-long chains refused.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from gpuonboard.errors import InventoryError
from gpuonboard.inventory.fields import bad_host_char
from gpuonboard.inventory.model import Host
from gpuonboard.inventory.rules import is_digits, name_problem
from gpuonboard.yamlload import did_you_mean, where


def flat_jumps(
    hosts: Mapping[str, Host],
    path: Path,
    hosts_raw: Mapping[str, Any],
    config_hops: Mapping[str, Host] | None = None,
    origins: Mapping[str, str] | None = None,
    config: Path | None = None,
) -> dict[str, Host]:
    """The hosts with each hop of their `jump` checked (no host its own jump host, every hop an
    inventory host, a Host of the SSH config (`config_hops`, resolved through it) or
    `[user@]host[:port]`) and their `jump` made the flat chain in front of them (jump_chain).
    An error names where the jump was written (`origins`: the host's line, the SSH config)."""
    known = {**(config_hops or {}), **hosts}
    for host in known.values():
        at = (origins or {}).get(host.name) or (
            str(config) if host.name not in hosts and config else where(path, hosts_raw, host.name)
        )
        if host.name in host.jump:
            raise InventoryError(
                f"{at}: host {host.name!r} lists itself as its own jump host; remove it from"
                f" {'its ProxyJump' if config and at.startswith(str(config)) else repr('jump')}."
            )
        for hop in host.jump:
            if problem := name_problem("jump host", hop):
                raise InventoryError(f"{at}: host {host.name!r} {problem}")
            problem = jump_problem(hop, known, config)
            if problem:
                raise InventoryError(f"{at}: host {host.name!r} jump host {hop!r} {problem}")
    chains = {name: jump_chain(name, known, path, hosts_raw) for name in hosts}
    return {name: replace(h, jump=chains[name]) for name, h in hosts.items()}


# jump hosts in front of one host: one ssh per hop; real chains are one or two bastions
MAX_JUMP_HOPS = 16


def jump_chain(
    name: str,
    hosts: Mapping[str, Host],
    path: Path,
    hosts_raw: Mapping[str, Any],
    trail: tuple[str, ...] = (),
) -> tuple[str, ...]:
    """Every hop in front of `name`, first hop first. A first hop that is an inventory host with
    a jump of its own is reached through that jump too, as OpenSSH's ProxyJump does (the
    connection opens the flat chain: without this, the bastion's own jump host was skipped and
    its private address dialled directly). A chain that comes back to a host is refused."""
    trail = (*trail, name)
    hops = hosts[name].jump
    if not hops:
        return ()
    if len(trail) + len(hops) > MAX_JUMP_HOPS + 1:  # (before recursing: 1,200 hops crashed it)
        raise InventoryError(
            f"{where(path, hosts_raw, trail[0])}: host {trail[0]!r} is reached through more than"
            f" {MAX_JUMP_HOPS} jump hosts (its 'jump', their own 'jump' ...); shorten the chain."
        )
    first = hops[0]
    if first in trail:
        loop = " -> ".join((*trail[trail.index(first) :], first))
        raise InventoryError(
            f"{where(path, hosts_raw, name)}: host {name!r} field 'jump' makes a loop of jump hosts"
            f" ({loop}); one of them must be reachable without the others: fix its 'jump'."
        )
    before = jump_chain(first, hosts, path, hosts_raw, trail) if first in hosts else ()
    literal = next((h for h in before if h not in hosts), None)
    if literal is not None:  # (a `user@host:port` hop takes the key of the host it is a hop of:
        # in front of `name`, that would be name's key, not the jump host's own)
        raise InventoryError(
            f"{where(path, hosts_raw, name)}: host {name!r} jumps through {first!r}, whose own jump"
            f" {literal!r} is not an inventory host, so it would be reached with {name!r}'s key and user;"
            f" add {literal!r} as an inventory host (with its address, user and key_file) and name it"
            f" in {first!r}'s jump."
        )
    chain = (*before, *hops)
    if name in chain or len(set(chain)) < len(chain):
        raise InventoryError(
            f"{where(path, hosts_raw, name)}: host {name!r} field 'jump' makes a loop of jump hosts"
            f" ({' -> '.join((*chain, name))}); one of them must be reachable without the others: fix"
            " its 'jump'."
        )
    return chain


def jump_problem(hop: str, hosts: Mapping[str, Host], config: Path | None = None) -> str | None:
    """Why a jump spec cannot work (None when fine): an inventory host (or a Host of the SSH
    config `config`, resolved into `hosts`), or [user@]host[:port]."""
    if hop in hosts:
        return None
    _, _, rest = hop.rpartition("@")
    addr, port = rest, "22"
    if rest.startswith("["):
        addr, _, tail = rest[1:].partition("]")
        port = tail[1:] if tail.startswith(":") else "22"
    elif rest.count(":") == 1:
        addr, port = rest.split(":")
    if not is_digits(port) or not 1 <= int(port) <= 65535:
        return f"has a bad port {port!r}; write user@host:port with a number from 1 to 65535."
    if not addr:
        return "has no host name."
    user = hop.rpartition("@")[0]
    if addr.startswith("-") or user.startswith("-"):  # (an ssh option, not a host)
        return "starts with '-'; write user@host:port, a host never starts with '-'."
    if (bad := bad_host_char(addr) or (bad_host_char(user) if user else None)) is not None or "@" in addr:
        return f"holds {bad or '@'!r}, which no user or host name holds; write user@host:port."
    if "@" not in hop and ":" not in hop and "." not in addr:
        if config is not None:
            return (
                f"is neither an inventory host, a Host of the SSH config {config}, nor an address"
                f"{did_you_mean(addr, hosts) or ''}; name an inventory host, add a Host {addr} block"
                " with its HostName to that config, or write user@host:port."
            )
        return (
            f"is neither an inventory host nor an address{did_you_mean(addr, hosts) or ''};"
            " name an inventory host or write user@host:port."
        )
    return None


def parse_jump(value: Any, err: Any) -> tuple[str, ...]:
    """A `jump` setting (a hop, comma-separated hops or a list; none: `none` or empty) as hops."""
    if value is None or value == "" or value == "none":
        return ()
    if isinstance(value, str):
        hops = [h.strip() for h in value.split(",") if h.strip()]
    elif isinstance(value, list) and all(isinstance(h, str) and h.strip() for h in value):
        hops = [h.strip() for h in value]
    else:
        raise err("jump", "must be a host name, user@host:port, or a list of them.")
    return tuple(hops)
