"""Ansible's variable precedence for one static inventory: the group_vars/ and host_vars/ files
next to it, the order groups apply in (depth, then `ansible_group_priority`, then name), and
each host's variables merged as `ansible-inventory --list` merges them; then the native-shaped
mapping the loader validates (`native_shape`), also used for `ansible-inventory --list` output.

Precedence, lowest first (Ansible's VARIABLE_PRECEDENCE default, below it what Ansible's config
gives every host: ansible_cfg): the inventory's `all` vars,
its groups' vars (sorted), group_vars/all, group_vars/<group> (sorted), the host's own
inventory vars, host_vars/<host>. A later value replaces an earlier one whole (no deep merge).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpuonboard.errors import InventoryError
from gpuonboard.inventory.ansible_cfg import CONFIG_LAYER
from gpuonboard.yamlload import LineDict, from_file, parse_yaml, read_text

# Ansible's host_group_vars plugin: `NAME`, `NAME.yml`, `NAME.yaml` or `NAME.json` (the first that
# exists), or a directory `NAME/` whose files (recursively, sorted) are read in order
VARS_EXTENSIONS = ("", ".yml", ".yaml", ".json")
MAX_VARS_FILES = 1_000  # files under group_vars/ and host_vars/ together

# the inventory's own `all` vars (`[all:vars]`, `all: vars:`), as errors name them
ALL_VARS = "the `all` vars"


@dataclass
class AnsibleGroups:
    """A static inventory as Ansible holds it: each host's own vars (in the order hosts were
    first seen), each group's own vars, the hosts it lists itself and its child groups; `all`
    and `ungrouped` included. `lines`: where each host was first named (for messages)."""

    hosts: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    group_vars: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    direct: dict[str, list[str]] = field(default_factory=dict)
    children: dict[str, list[str]] = field(default_factory=dict)
    lines: dict[str, int] = field(default_factory=dict)
    group_lines: dict[str, int] = field(default_factory=dict)

    def groups(self) -> list[str]:
        """Every group named, in the order first seen."""
        seen = dict.fromkeys([*self.group_vars, *self.direct, *self.children])
        for kids in self.children.values():
            seen.update(dict.fromkeys(kids))
        return list(seen)


def group_depths(inv: AnsibleGroups, path: Path, max_depth: int) -> dict[str, int]:
    """Ansible's group depth: `all` 0, a group 1 + its deepest parent's (cycles refused)."""
    parents: dict[str, list[str]] = {}
    for parent, kids in inv.children.items():
        for kid in kids:
            parents.setdefault(kid, []).append(parent)
    memo: dict[str, int] = {"all": 0}

    def depth(g: str, trail: tuple[str, ...]) -> int:
        if g in trail:
            raise InventoryError(f"{path}: group {g!r} is its own child; remove the cycle.")
        if g not in memo:
            if len(trail) >= max_depth:
                raise InventoryError(
                    f"{path}: the groups nest more than {max_depth} levels deep (group {g!r} among"
                    " them); flatten the groups' children."
                )
            ups = [p for p in parents.get(g, []) if p != "all"]
            memo[g] = 1 + max((depth(p, (*trail, g)) for p in ups), default=0)
        return memo[g]

    return {g: depth(g, ()) for g in ["all", *inv.groups()]}


def group_priority(gvars: Mapping[str, Any]) -> int:
    """`ansible_group_priority` (default 1), as Ansible reads it (an int, or text of one)."""
    value = gvars.get("ansible_group_priority", 1)
    try:
        return int(value)
    except (TypeError, ValueError):
        return 1


def vars_files(base: Path, sub: str, name: str) -> list[Path]:
    """The files Ansible's host_group_vars plugin reads for `name` under `base/sub/`, in order."""
    root = base / sub
    for ext in VARS_EXTENSIONS:
        candidate = root / f"{name}{ext}"
        if candidate.is_dir():
            return _dir_files(candidate)
        if candidate.is_file():
            return [candidate]
    return []


def _dir_files(directory: Path) -> list[Path]:
    """A vars directory's files as Ansible lists them: sorted names, hidden and `~` backups
    skipped, subdirectories followed, only files without an extension or with a YAML/JSON one."""
    out: list[Path] = []
    for entry in sorted(os.listdir(directory)):
        if entry.startswith(".") or entry.endswith("~"):
            continue
        full = directory / entry
        if full.is_dir():
            out += _dir_files(full)
        elif os.path.splitext(entry)[1] in VARS_EXTENSIONS:
            out.append(full)
    return out


class VarsFiles:
    """The group_vars/ and host_vars/ files beside an inventory, read once each (bounded)."""

    def __init__(self, base: Path | None) -> None:
        self.base = base
        self.read = 0
        self.cache: dict[tuple[str, str], Mapping[str, Any]] = {}

    def present(self) -> bool:
        return self.base is not None and any((self.base / s).is_dir() for s in ("group_vars", "host_vars"))

    def get(self, sub: str, name: str) -> Mapping[str, Any]:
        """The merged vars of `sub/name` (files later in order replace earlier keys)."""
        if self.base is None:
            return {}
        if (sub, name) not in self.cache:
            merged = LineDict()
            merged.key_lines, merged.key_sources = {}, {}
            for f in vars_files(self.base, sub, name):
                self.read += 1
                if self.read > MAX_VARS_FILES:
                    raise InventoryError(
                        f"{self.base / sub}: more than {MAX_VARS_FILES:,} vars files beside the"
                        " inventory; merge some."
                    )
                text = read_text(f, InventoryError, "vars file")
                if text.startswith("$ANSIBLE_VAULT;"):  # (`ansible-vault encrypt`: the whole file)
                    raise InventoryError(
                        f"{f}: this vars file is encrypted with Ansible Vault, which gpuonboard does not"
                        " decrypt; pass the inventory as `--inventory ansible-inventory:FILE` (Ansible"
                        " decrypts it with your vault password)."
                    )
                data = parse_yaml(text, f, InventoryError)
                if data is None:
                    continue
                if not isinstance(data, Mapping):
                    raise InventoryError(f"{f}: an Ansible vars file must be a mapping of name: value.")
                merged.update(from_file(data, f))
                for key in data:  # (an error about a key names this file and its line)
                    merged.take_origin(key, data, f)
            self.cache[(sub, name)] = merged
        return self.cache[(sub, name)]


@dataclass
class HostVars:
    """One host's merged Ansible vars and, for each key, the layer that set it last."""

    values: LineDict  # (key_sources, key_lines: the vars file and line of each key set by one)
    origin: dict[str, str]  # "all" (the inventory's all vars), "inventory", or a vars file's label
    # the group or host (or the Ansible config) that set each key, and that layer's rank in
    # Ansible's precedence (higher beats lower): which of two settings Ansible would take
    layers: dict[str, tuple[str, int]] = field(default_factory=dict)


def sorted_groups(inv: AnsibleGroups, depths: Mapping[str, int]) -> list[str]:
    """All groups in Ansible's order: depth, then ansible_group_priority, then name."""
    return sorted(depths, key=lambda g: (depths[g], group_priority(inv.group_vars.get(g, {})), g))


def memberships(inv: AnsibleGroups, order: Sequence[str]) -> dict[str, list[str]]:
    """Each host's groups (transitively, `all` and `ungrouped` included), in `order`."""
    kids = inv.children
    member_of: dict[str, set[str]] = {h: {"all"} for h in inv.hosts}
    for g in order:
        stack, seen = [g], set()
        while stack:
            cur = stack.pop()
            if cur in seen:
                continue
            seen.add(cur)
            for h in inv.direct.get(cur, []):
                member_of.setdefault(h, {"all"}).add(g)
            stack += kids.get(cur, [])
    for groups in member_of.values():
        if groups == {"all"}:
            groups.add("ungrouped")
    rank = {g: i for i, g in enumerate(order)}
    return {h: sorted(gs, key=lambda g: rank.get(g, -1)) for h, gs in member_of.items()}


def host_vars(
    inv: AnsibleGroups,
    host: str,
    groups: Sequence[str],
    files: VarsFiles,
    config: Mapping[str, Any] | None = None,
) -> HostVars:
    """`host`'s vars merged in Ansible's precedence (`groups`: its groups in Ansible's order),
    above what Ansible's config (`config`: ansible_cfg.config_vars) gives every host."""
    values = LineDict()
    values.key_lines, values.key_sources = {}, {}
    origin: dict[str, str] = {}
    layers: dict[str, tuple[str, int]] = {}
    rank = 0

    def layer(vs: Mapping[str, Any], label: str, who: str) -> None:
        nonlocal rank
        rank += 1
        for k, v in vs.items():
            values[k] = v
            origin[k] = label
            layers[k] = (who, rank)
            # the vars file a key was last set in (and its line there), for the errors about it;
            # else its line in the inventory (a [group:vars] line, not the host's)
            values.take_origin(k, vs)
            if k not in values.key_sources and (line := getattr(vs, "key_lines", {}).get(k)) is not None:
                values.key_lines[k] = line

    layer(config or {}, CONFIG_LAYER, CONFIG_LAYER)
    layer(inv.group_vars.get("all", {}), "all", ALL_VARS)
    for g in groups:
        if g != "all":
            layer(inv.group_vars.get(g, {}), "inventory", f"group {g!r}")
    for g in groups:
        layer(files.get("group_vars", g), f"group_vars/{g}", f"group {g!r}")
    layer(inv.hosts.get(host, {}), "inventory", f"host {host!r}")
    layer(files.get("host_vars", host), f"host_vars/{host}", f"host {host!r}")
    values.key_layers = layers  # type: ignore[attr-defined]  # (read by convert_vars)
    return HostVars(values, origin, layers)


# the attribute of a host entry holding what it takes from the `all` vars or the Ansible config:
# its own `defaults`, below a vendor profile
BELOW_VENDOR = "below_vendor"
# our host keys a vendor profile may also give: from the inventory's `all` vars they stay below
# the vendor profile (`defaults`), as before group_vars/ were read
_DEFAULT_KEYS = ("address", "port", "user", "key_file", "use_agent", "jump", "connection", "vendor")


def _set_by_all(
    hv: HostVars, mine: Mapping[str, Any], convert: Callable[[Mapping[str, Any], str], LineDict]
) -> LineDict:
    """The host's scalar connection keys it takes from the inventory's `all` vars or the Ansible
    config (those stay below a vendor profile), each with its origin and layer: decided by
    where the host's own key came from, never by what other hosts take."""
    from_all = {k for k, lab in hv.origin.items() if lab in ("all", CONFIG_LAYER)}
    only_all = convert({k: v for k, v in hv.values.items() if k in from_all}, "all")
    low = LineDict()
    low.key_lines, low.key_sources = {}, {}
    layers = getattr(mine, "key_layers", {})
    low.key_layers = {}  # type: ignore[attr-defined]
    for k in _DEFAULT_KEYS:
        if k in only_all and k in mine and mine[k] == only_all[k]:
            low[k] = mine[k]
            _keep_origin(low, k, mine)
            if k in layers:
                low.key_layers[k] = layers[k]  # type: ignore[attr-defined]
    return low


def _keep_origin(to: LineDict, key: str, src: Mapping[str, Any]) -> None:
    """`key`, taken from `src`, keeps where it was written: its file and line there, or (set in
    the inventory itself: an `[all:vars]` line, YAML `all: vars:`) its line in the inventory."""
    to.take_origin(key, src)
    if key not in to.key_sources and (line := getattr(src, "key_lines", {}).get(key)) is not None:
        to.key_lines[key] = line


def native_shape(
    per_host: Mapping[str, HostVars],
    groups_of: Mapping[str, Sequence[str]],
    group_order: Sequence[str],
    convert: Callable[[Mapping[str, Any], str], LineDict],
    path: Path,
    lines: Mapping[str, int] | None = None,
) -> LineDict:
    """Our inventory shape from each host's merged Ansible vars: each host's converted vars on
    the host itself (one layer: Ansible already merged them); our scalar connection keys set
    only by the inventory's `all` vars in `defaults` (below a vendor profile, as before); groups
    hold members only. `convert(vars, label)` turns Ansible vars into ours."""
    hosts = LineDict()
    hosts.key_lines = dict(lines or {})
    defaults = LineDict()
    defaults.key_lines, defaults.key_sources = {}, {}
    converted = {name: convert(hv.values, name) for name, hv in per_host.items()}
    low = {name: _set_by_all(per_host[name], conv, convert) for name, conv in converted.items()}
    # (what every host takes alike also goes to `defaults`, read for the SSH config's jump hosts)
    shared = [dict(v) for v in low.values()]
    common = (
        {k: v for k, v in shared[0].items() if all(o.get(k, object()) == v for o in shared)} if shared else {}
    )
    defaults.update(common)
    defaults.key_layers = {}  # type: ignore[attr-defined]
    first = next(iter(low.values()), LineDict())
    for key in common:  # (set in ansible.cfg: an error about it names that file and line)
        _keep_origin(defaults, key, first)
        if key in getattr(first, "key_layers", {}):
            defaults.key_layers[key] = first.key_layers[key]  # type: ignore[attr-defined]
    for name, conv in converted.items():
        mine = LineDict({k: v for k, v in conv.items() if k not in low[name]})
        mine.key_lines = dict(getattr(conv, "key_lines", {}))
        mine.key_sources = dict(getattr(conv, "key_sources", {}))
        mine.key_layers = dict(getattr(conv, "key_layers", {}))  # type: ignore[attr-defined]
        mine.line = (lines or {}).get(name)
        setattr(mine, BELOW_VENDOR, low[name])  # (the loader puts these under the vendor profile)
        hosts[name] = mine
    groups = LineDict()
    groups.key_lines = {}
    for g in group_order:
        if g in ("all", "ungrouped"):
            continue
        members = [h for h in per_host if g in groups_of.get(h, ())]
        entry = LineDict({"hosts": members})
        entry.key_lines = {}
        groups[g] = entry
    out = LineDict({"defaults": defaults, "hosts": hosts, "groups": groups})
    out.key_lines = {}
    return out
