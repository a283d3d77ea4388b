"""The user's SSH config as the loader consults it: which file (--ssh-config, the inventory's
`ssh_config`, $GPUONBOARD_SSH_CONFIG or ~/.ssh/config), which hosts take their settings from
its `Host` entries, and those settings made followable (a `ssh -W` ProxyCommand as the
ProxyJump it means; an Include or another ProxyCommand refused). The parser itself is
`sshconfig`'s, imported only when there is a config to read.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from gpuonboard.errors import InventoryError
from gpuonboard.yamlload import read_text, where


def user_ssh_config(
    explicit: Path | None, raw: Mapping[str, Any], defaults: Mapping[str, Any], hosts_file: Path
) -> tuple[Any, Path | None]:
    """paramiko.SSHConfig (and its path) from --ssh-config, the inventory's ssh_config key, or
    ~/.ssh/config; (None, None) when there is none."""
    candidate = explicit
    if candidate is None and raw.get("ssh_config"):
        candidate = (hosts_file.parent / os.path.expanduser(str(raw["ssh_config"]))).resolve()
        if not candidate.is_file():
            raise InventoryError(f"{where(hosts_file, raw, 'ssh_config')}: SSH config {candidate} not found.")
    if candidate is None:
        env = os.environ.get("GPUONBOARD_SSH_CONFIG")
        candidate = Path(env) if env else Path.home() / ".ssh" / "config"
    if not candidate.is_file():
        return None, None
    from gpuonboard.inventory.sshconfig import (  # paramiko's, made to run nothing
        MAX_CONFIG_BYTES,
        UserSSHConfig,
    )

    text = read_text(candidate, InventoryError, "SSH config", MAX_CONFIG_BYTES)  # (bounded)
    try:
        return UserSSHConfig.from_text_at(text, candidate), candidate
    except Exception as exc:  # paramiko raises plain exceptions on bad lines
        raise InventoryError(f"{candidate}: cannot parse this SSH config ({exc}).") from None


def followable(name: str, sshc: Mapping[str, Any], cfg: Any) -> dict[str, Any]:
    """The SSH config settings of a host that takes them from there, with a ProxyCommand of the
    form `ssh -W %h:%p [user@]bastion` as the ProxyJump it means; an Include (paramiko does not
    follow it: its Host blocks would be silently missed) or any other ProxyCommand (dropped, it
    connected directly, skipping the bastion) is an InventoryError naming the file and line."""
    cfg_path = getattr(cfg, "path", None) or "the SSH config"
    out = dict(sshc)
    if "include" in out:
        line = getattr(cfg, "include_lines", {}).get(str(out["include"]).strip())
        raise InventoryError(
            f"{cfg_path}{f', line {line}' if line else ''}: host {name!r} takes its settings from this"
            f" SSH config, and gpuonboard does not follow Include: copy the Host block into"
            f" {cfg_path} or give the host an address in the inventory."
        )
    command = out.pop("proxycommand", None)
    if command is not None and "proxyjump" not in out:
        from gpuonboard.inventory.ansible import _jump_of_proxy_command

        raw = cfg.unexpanded(name, "proxycommand") if hasattr(cfg, "unexpanded") else command
        try:
            out["proxyjump"] = _jump_of_proxy_command(str(raw))
        except ValueError as exc:
            raise InventoryError(f"{cfg_path}: Host {name!r} {exc}.") from None
    return out


def uses_ssh_config_entry(name: str, layers: Iterable[tuple[Mapping[str, Any], str]], cfg: Any) -> bool:
    """Whether the SSH config's `Host <name>` entry supplies this host's settings: only for a
    host whose address the inventory does not give. With an address (`ansible_host`), that entry
    may describe another machine (an old rental of the same name); as in Ansible, which then
    looks the address up, its Port and User must not be mixed into the inventory's host."""
    if any("address" in layer for layer, _ in layers):
        return False
    return name in ssh_config_aliases(cfg)


def ssh_config_aliases(cfg: Any) -> frozenset[str]:
    """The plain host names (no pattern) of the SSH config's Host lines, worked out once per
    config (per host, 1,000 hosts x 8,000 Host lines took over 30 s)."""
    if cfg is None:
        return frozenset()
    aliases: frozenset[str] | None = getattr(cfg, "_gpuonboard_aliases", None)
    if aliases is None:
        aliases = frozenset(h for h in cfg.get_hostnames() if not any(c in h for c in "*?!"))
        cfg._gpuonboard_aliases = aliases
    return aliases
