"""Read an existing Ansible inventory (YAML or INI) as it is, into the native inventory shape.

Ansible variables map to ours: `ansible_host` -> address, `ansible_port` -> port,
`ansible_user` -> user, `ansible_ssh_private_key_file` -> key_file, `ansible_connection`
local/ssh, `-J`/`ProxyJump` in `ansible_ssh_common_args` -> jump. Our own settings may be
given plainly (`vendor`, `order`) or prefixed (`gpuonboard_vendor`); every other variable
is kept under `vars` for playbooks, so a team's inventory needs no edit.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .errors import InventoryError
from .yamlload import LineDict, did_you_mean, parse_yaml, where

_NATIVE_TOP = {"defaults", "groups", "hosts", "vendors_dir", "ssh_config"}
_GROUP_KEYS = {"hosts", "children", "vars"}
_ANSIBLE_MAP = {
    "ansible_host": "address",
    "ansible_ssh_host": "address",
    "ansible_port": "port",
    "ansible_ssh_port": "port",
    "ansible_user": "user",
    "ansible_ssh_user": "user",
    "ansible_ssh_private_key_file": "key_file",
    "ansible_private_key_file": "key_file",
}
_OUR_KEYS = {
    "address",
    "port",
    "user",
    "key_file",
    "use_agent",
    "jump",
    "host_key",
    "vendor",
    "order",
    "connection",
    "data_dir",
    "connect_timeout",
}


def looks_like_ini(path: Path) -> bool:
    """An INI inventory: `.ini` suffix, or a first meaningful line that is not YAML-shaped
    (a `[section]`, or an ungrouped host line like `gpu-1 ansible_host=10.0.0.1`)."""
    if path.suffix == ".ini":
        return True
    if path.suffix in (".yml", ".yaml"):
        return False
    try:
        for line in path.read_text(encoding="utf-8").splitlines():
            s = line.strip()
            if s and not s.startswith(("#", ";")):
                if re.match(r"^\[[^\]]+\]$", s):
                    return True
                yaml_shaped = s.startswith(("---", "- ", "{", "%")) or s == "-"
                return not (yaml_shaped or re.match(r"^[^\s=]+:(\s|$)", s))
    except (OSError, UnicodeDecodeError):
        return False
    return False


def is_native(data: Mapping[str, Any]) -> bool:
    """True for our own layout; False when the YAML has Ansible's `all:`/group shape."""
    if "all" in data:
        return False
    for key, value in data.items():
        if key in _NATIVE_TOP:
            continue
        if isinstance(value, Mapping) and value and set(value) <= _GROUP_KEYS:
            return False
    return True


def convert_vars(raw: Mapping[str, Any]) -> LineDict:
    """Ansible host/group variables -> our host keys, other variables under `vars`."""
    out = LineDict()
    out.key_lines = {}
    extra: dict[str, Any] = {}
    lines = getattr(raw, "key_lines", {})
    for key, value in raw.items():
        ours = _ANSIBLE_MAP.get(key)
        if ours is None and key.startswith("gpuonboard_") and key[11:] in _OUR_KEYS:
            ours = key[11:]
        if ours is None and key in _OUR_KEYS:
            ours = key
        if key == "ansible_connection":
            ours, value = "connection", ("local" if value == "local" else "ssh")
        if key == "ansible_ssh_common_args" and isinstance(value, str):
            jump = _proxy_jump(value)
            if jump:
                ours, value = "jump", jump
        if ours is None:
            extra[key] = value
            continue
        out[ours] = value
        if key in lines:
            out.key_lines[ours] = lines[key]
    if extra:
        out["vars"] = extra
    out.line = getattr(raw, "line", None)
    return out


def _proxy_jump(args: str) -> str | None:
    try:
        words = shlex.split(args)
    except ValueError:
        return None
    for i, w in enumerate(words):
        if w == "-J" and i + 1 < len(words):
            return words[i + 1]
        m = re.match(r"^(?:-o)?ProxyJump[= ](.+)$", w, re.I)
        if m:
            return m.group(1)
        if w == "-o" and i + 1 < len(words):
            m = re.match(r"^ProxyJump[= ](.+)$", words[i + 1], re.I)
            if m:
                return m.group(1)
    return None


class _Builder:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.hosts: LineDict = LineDict()
        self.hosts.key_lines = {}
        self.groups: LineDict = LineDict()
        self.groups.key_lines = {}
        self.defaults: LineDict = LineDict()
        self.children: dict[str, list[str]] = {}

    def add_host(self, name: str, hvars: Mapping[str, Any], line: int | None) -> None:
        converted = convert_vars(hvars)
        if name in self.hosts:
            merged = LineDict({**self.hosts[name], **converted})
            merged.key_lines = {**self.hosts[name].key_lines, **converted.key_lines}
            merged.line = self.hosts[name].line
            self.hosts[name] = merged
        else:
            converted.line = line
            self.hosts[name] = converted
            if line:
                self.hosts.key_lines[name] = line

    def add_group(self, name: str, gvars: Mapping[str, Any], members: list[str], line: int | None) -> None:
        entry = self.groups.get(name)
        if entry is None:
            entry = LineDict({"vars": convert_vars(gvars), "hosts": []})
            entry.key_lines = {}
            entry.line = line
            self.groups[name] = entry
            if line:
                self.groups.key_lines[name] = line
        elif gvars:
            entry["vars"] = LineDict({**entry["vars"], **convert_vars(gvars)})
        for m in members:
            if m not in entry["hosts"]:
                entry["hosts"].append(m)

    def add_child(self, parent: str, child: str) -> None:
        self.children.setdefault(parent, [])
        if child not in self.children[parent]:
            self.children[parent].append(child)

    def _depth(self, group: str, parents: Mapping[str, list[str]], seen: frozenset[str]) -> int:
        if group in seen:
            raise InventoryError(f"{self.path}: group {group!r} is its own child; remove the cycle.")
        ups = [p for p in parents.get(group, []) if p != "all"]
        return 1 + max((self._depth(p, parents, seen | {group}) for p in ups), default=0)

    def result(self) -> LineDict:
        # Ansible's precedence: a child group's vars override its parent's. Later groups win
        # in our resolution, so order groups parents-first (by depth), file order otherwise.
        parents: dict[str, list[str]] = {}
        for parent, kids in self.children.items():
            for kid in kids:
                parents.setdefault(kid, []).append(parent)
        depth = {g: self._depth(g, parents, frozenset()) for g in self.groups}
        ordered = LineDict({g: self.groups[g] for g in sorted(self.groups, key=lambda g: depth[g])})
        ordered.key_lines = self.groups.key_lines
        self.groups = ordered
        out = LineDict({"defaults": self.defaults, "hosts": self.hosts, "groups": self.groups})
        out.key_lines = {}
        return out


def from_yaml(data: Mapping[str, Any], path: Path) -> LineDict:
    """Convert Ansible's YAML inventory (`all:` with hosts/children/vars) to our shape."""
    b = _Builder(path)
    top = data.get("all", data) if "all" in data else {"children": data}
    if not isinstance(top, Mapping):
        raise InventoryError(f"{where(path, data, 'all')}: Ansible 'all' must be a mapping.")
    _walk_group(b, "all", top, path)
    b.defaults = convert_vars(top.get("vars") or {})
    b.groups.pop("all", None)
    return b.result()


def _walk_group(b: _Builder, name: str, group: Any, path: Path) -> list[str]:
    if group is None:
        group = {}
    if not isinstance(group, Mapping):
        raise InventoryError(f"{path}: Ansible group {name!r} must be a mapping with hosts/children/vars.")
    for key in group:
        if key not in _GROUP_KEYS:
            raise InventoryError(
                f"{where(path, group, key)}: Ansible group {name!r} has an unknown key {key!r}"
                f"{did_you_mean(key, _GROUP_KEYS) or '; allowed: hosts, children, vars.'}"
            )
    if not isinstance(group.get("vars") or {}, Mapping):
        raise InventoryError(
            f"{where(path, group, 'vars')}: Ansible group {name!r} 'vars' must be a mapping of name: value."
        )
    members: list[str] = []
    hosts = group.get("hosts") or {}
    if not isinstance(hosts, Mapping):
        raise InventoryError(
            f"{where(path, group, 'hosts')}: Ansible group {name!r} 'hosts' must be a mapping."
        )
    for hname, hvars in hosts.items():
        hvars = hvars or {}
        if not isinstance(hvars, Mapping):
            raise InventoryError(
                f"{where(path, hosts, hname)}: Ansible host {hname!r} vars must be a mapping."
            )
        b.add_host(hname, hvars, getattr(hosts, "key_lines", {}).get(hname))
        members.append(hname)
    children = group.get("children") or {}
    if not isinstance(children, Mapping):
        raise InventoryError(
            f"{where(path, group, 'children')}: Ansible group {name!r} 'children' must be a mapping."
        )
    gvars = (group.get("vars") or {}) if name != "all" else {}
    b.add_group(name, gvars, [], getattr(group, "line", None))
    for cname, cdef in children.items():
        b.add_child(name, cname)
        members += _walk_group(b, cname, cdef, path)
    b.add_group(name, {}, members, None)
    return members


def load_ini(path: Path) -> LineDict:
    """Parse Ansible's INI inventory: [group], [group:vars], [group:children], host k=v lines."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InventoryError(f"{path}: cannot read the inventory ({exc}).") from None
    b = _Builder(path)
    group_vars: dict[str, dict[str, Any]] = {}
    children: dict[str, list[str]] = {}
    direct: dict[str, list[str]] = {}
    section, kind = "ungrouped", "hosts"
    for lineno, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if not s or s.startswith(("#", ";")):
            continue
        m = re.match(r"^\[([^\]:]+)(?::(vars|children))?\]$", s)
        if m:
            section, kind = m.group(1), m.group(2) or "hosts"
            direct.setdefault(section, [])
            continue
        if s.startswith("["):
            raise InventoryError(
                f"{path}, line {lineno}: malformed section header {s!r}; write [group],"
                " [group:vars] or [group:children]."
            )
        try:
            words = shlex.split(s, comments=True)
        except ValueError as exc:
            raise InventoryError(f"{path}, line {lineno}: cannot parse this line ({exc}).") from None
        if kind == "vars":
            key, _, value = s.partition("=")
            if not _:
                raise InventoryError(
                    f"{path}, line {lineno}: expected name=value in [{section}:vars], not {s!r}."
                )
            group_vars.setdefault(section, {})[key.strip()] = _ini_value(value.strip())
        elif kind == "children":
            children.setdefault(section, []).append(words[0])
        else:
            hvars: dict[str, Any] = {}
            for w in words[1:]:
                key, eq, value = w.partition("=")
                if not eq:
                    raise InventoryError(
                        f"{path}, line {lineno}: host {words[0]!r} variable {w!r} must be written"
                        " name=value, with no spaces around '='."
                    )
                hvars[key] = _ini_value(value)
            b.add_host(words[0], hvars, lineno)
            direct.setdefault(section, []).append(words[0])

    def members(g: str, seen: frozenset[str] = frozenset()) -> list[str]:
        if g in seen:
            raise InventoryError(f"{path}: group {g!r} is its own child; remove the cycle.")
        out = list(direct.get(g, []))
        for c in children.get(g, []):
            out += members(c, seen | {g})
        return out

    for g in list(direct) + [c for c in children if c not in direct]:
        if g in ("all", "ungrouped"):
            continue
        b.add_group(g, group_vars.get(g, {}), members(g), None)
        for c in children.get(g, []):
            b.add_child(g, c)
    b.defaults = convert_vars(group_vars.get("all", {}))
    return b.result()


def _ini_value(value: str) -> Any:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    if re.fullmatch(r"-?\d+", value):
        return int(value)
    if value.lower() in ("true", "false"):
        return value.lower() == "true"
    return value


def parse_text(text: str, path: Path) -> Any:
    """Parse inventory YAML text (exposed for tests)."""
    return parse_yaml(text, path, InventoryError)
