"""Jump hosts named by a Host of the SSH config (`ProxyJump bastion`, `ssh -W %h:%p bastion`,
Ansible's `-J bastion`): resolved through the same config, as OpenSSH applies a config's
options to a jump host (HostName, User, Port, IdentityFile, its own ProxyJump), into the
`Host` the connection logs in to; and where each host's `jump` was written (the file an
error about a hop names).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from gpuonboard.inventory.ansible_cfg import CONFIG_LAYER
from gpuonboard.inventory.fields import bad_host_char
from gpuonboard.inventory.model import Host, Vendor
from gpuonboard.inventory.resolve import resolve_host
from gpuonboard.inventory.rules import is_digits
from gpuonboard.inventory.sshargs import host_ssh_args
from gpuonboard.inventory.sshlookup import config_alias, uses_ssh_config_entry
from gpuonboard.inventory.sshresolve import OpenSSHConfig
from gpuonboard.yamlload import LineDict, where

# the inventory's defaults a jump host of the SSH config takes where the config sets nothing
# (as a host of the inventory that only names its SSH config entry): not its jump or order
HOP_DEFAULTS = ("user", "key_file", "use_agent", "connect_timeout")
MAX_CONFIG_HOPS = 256  # distinct hops looked up in the config (each an `ssh -G`)


def split_hop(spec: str) -> tuple[str, str, str | None]:
    """`[user@]host[:port]` (`[addr]:port` for IPv6) as (user, host, port or None)."""
    user, _, rest = spec.rpartition("@")
    if rest.startswith("["):
        addr, _, tail = rest[1:].partition("]")
        return user, addr, tail[1:] if tail.startswith(":") else None
    if rest.count(":") == 1:
        addr, port = rest.split(":")
        return user, addr, port
    return user, rest, None


def config_jump_hosts(
    hosts: Mapping[str, Host],
    ssh_cfg: Any,
    defaults: Mapping[str, Any],
    path: Path,
    vendors_dir: Path,
    of: Collection[str] | None = None,
) -> dict[str, Host]:
    """Each hop in front of a host (of those named in `of`, else every one) that is no inventory
    host but a Host of the SSH config (the config sets a connection setting of its name),
    resolved through that config (ssh hands its -F config to the jump's ssh); the hops such a
    jump host names in its own ProxyJump too. Other hops are left as they are."""
    if ssh_cfg is None:
        return {}
    layer = LineDict({k: v for k, v in defaults.items() if k in HOP_DEFAULTS})
    pending = [hop for n, h in hosts.items() if of is None or n in of for hop in h.jump if hop not in hosts]
    if isinstance(ssh_cfg, OpenSSHConfig):  # (the `ssh -G` calls run concurrently)
        ssh_cfg.prefetch(a for a in (_alias(h) for h in pending[:MAX_CONFIG_HOPS]) if a)
    out: dict[str, Host] = {}
    seen: set[str] = set()
    while pending and len(seen) < MAX_CONFIG_HOPS:
        spec = pending.pop(0)
        if spec in seen or spec in hosts:
            continue
        seen.add(spec)
        hop = _config_hop(spec, ssh_cfg, layer, path, vendors_dir)
        if hop is not None:
            out[spec] = hop
            pending += [j for j in hop.jump if j not in hosts]
    return out


def _alias(spec: str) -> str | None:
    """The host name of a hop that could be a Host of the SSH config, else None."""
    _, addr, port = split_hop(spec)
    if not addr or addr.startswith("-") or bad_host_char(addr) is not None or ":" in addr:
        return None
    return addr if port is None or is_digits(port) else None


def _config_hop(spec: str, ssh_cfg: Any, defaults: LineDict, path: Path, vendors_dir: Path) -> Host | None:
    """The hop as the SSH config's Host entry of its name makes it (a user or port written in
    the hop beats the config's, as `ProxyJump user@bastion:2222` does), or None when the
    config does not cover it."""
    alias = _alias(spec)
    if alias is None:
        return None
    layers: list[tuple[Mapping[str, Any], str]] = [(defaults, "defaults"), (LineDict(), f"host {alias!r}")]
    if not uses_ssh_config_entry(alias, layers, ssh_cfg):
        return None
    cfg_path = getattr(ssh_cfg, "path", None) or path
    vendors: dict[str, Vendor] = {}
    hop = resolve_host(alias, layers, (), vendors, Path(cfg_path), ssh_cfg, vendors_dir, str(cfg_path))
    user, _, port = split_hop(spec)
    return replace(hop, name=spec, user=user or hop.user, port=int(port) if port else hop.port)


def jump_origin(
    name: str,
    layers: list[tuple[Mapping[str, Any], str]],
    vendor: Vendor | None,
    path: Path,
    ssh_cfg: Any,
    ansible: bool = False,
) -> str | None:
    """Where host `name`'s jump was written (`file, line N`) when not in its own entry (None):
    a group's `jump` (in an Ansible inventory, its `all` vars' too), else its SSH config entry's
    ProxyJump or ProxyCommand (`config_alias`), else the vendor profile or defaults."""
    found: tuple[Mapping[str, Any], str] | None = None
    for layer, label in layers:
        if "jump" in layer:
            found = (layer, label)
    if found is not None and found[1].startswith("host "):
        if ansible and _set_elsewhere(found[0], "jump"):  # (Ansible merged a group's into the host)
            return where(path, found[0], "jump")
        return None  # (the host's own line, as for its other fields)
    args = host_ssh_args(name, layers, path) if ansible and found is None else None
    key = next((k for k in ("proxyjump", "proxycommand") if args is not None and k in args.source), None)
    vendor_way = vendor is not None and bool({"jump", "proxy_command"} & set(vendor.host_defaults))
    if args is not None and key is not None:  # (the ssh args' -J or ProxyCommand: resolve._way)
        at, label = args.source[key]
        if not (vendor_way and label.endswith(f" of {CONFIG_LAYER}")):  # (the config's: below the vendor)
            return None if label.endswith(f" of host {name!r}") else at
    if found is not None and found[1].startswith(("group ", *(("defaults",) if ansible else ()))):
        return where(path, found[0], "jump")
    alias = config_alias(name, layers, ssh_cfg, ansible)
    if alias is not None and {"proxyjump", "proxycommand"} & set(ssh_cfg.lookup(alias)):
        return str(getattr(ssh_cfg, "path", None) or path)
    if vendor is not None and "jump" in vendor.host_defaults:
        return where(Path(vendor.source), vendor.host_defaults, "jump")
    return where(path, found[0], "jump") if found is not None else str(path)


def _set_elsewhere(entry: Mapping[str, Any], key: str) -> bool:
    """Whether an Ansible host's `key` was written elsewhere than on the host's own line: in a
    [group:vars] line, a group's YAML vars, or a group_vars/ or host_vars/ file."""
    line = getattr(entry, "key_lines", {}).get(key)
    own = getattr(entry, "line", None)
    return key in getattr(entry, "key_sources", {}) or (line is not None and line != own)
