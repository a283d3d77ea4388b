"""Read an existing Ansible inventory (YAML or INI) as it is, into the native inventory shape.

Ansible variables map to ours: `ansible_host` -> address (without it, as in Ansible, the
host name is the address unless the SSH config has a Host entry for it), `ansible_port` -> port,
`ansible_user` -> user, `ansible_ssh_private_key_file` -> key_file, `ansible_connection`
local/ssh; the ssh args (`-J`, `-o ProxyCommand=`, `-p`, `-i` ...) are read where the host
is resolved (sshargs, resolve). Our own settings may be
given plainly (`vendor`, `order`) or prefixed (`gpuonboard_vendor`); every other variable
is kept under `vars` for playbooks, so a team's inventory needs no edit.
"""

from __future__ import annotations

import ipaddress
import itertools
import math
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from gpuonboard.errors import InventoryError
from gpuonboard.inventory.ansible_cfg import CONFIG_LAYER, ENV_SOURCE, OPTIONS, config_vars
from gpuonboard.inventory.ansible_vars import (
    AnsibleGroups,
    VarsFiles,
    group_depths,
    host_vars,
    memberships,
    native_shape,
    sorted_groups,
)
from gpuonboard.inventory.limit import ANSIBLE_ORDER, ansible_group_hosts
from gpuonboard.inventory.rules import MAX_HOSTS, is_digits, name_problem
from gpuonboard.jinjatext import is_template
from gpuonboard.once import lazy_re
from gpuonboard.yamlload import LineDict, did_you_mean, parse_yaml, read_text, where

_NATIVE_TOP = {"defaults", "groups", "hosts", "vendors_dir", "ssh_config"}
_GROUP_KEYS = {"hosts", "children", "vars"}
# passwords an Ansible inventory may hold: never imported (gpuonboard logs in with keys and asks
# for sudo with -n), so they cannot reach a template, a log or a report
_PASSWORD_VARS = frozenset(
    {
        "ansible_password",
        "ansible_ssh_pass",
        "ansible_ssh_password",
        "ansible_become_pass",
        "ansible_become_password",
        "ansible_sudo_pass",
        "ansible_sudo_password",
    }
)
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


class AnsibleKeyPath(str):
    """A key file set by Ansible's own variable (`ansible_ssh_private_key_file`,
    `ansible_private_key_file`): Ansible hands it to ssh as written, so a relative one is read
    from the directory gpuonboard runs in; gpuonboard's own `key_file` (`gpuonboard_key_file`)
    stays relative to the inventory file (resolve._key_base tells them apart by this type)."""

    __slots__ = ()


# Ansible's ssh connection reads each of these settings from the host's merged variables in this
# order, the last one set winning whichever layer set each (ssh.py's option `vars` lists, read by
# ConfigManager._loop_entries): a group's `ansible_ssh_host` beats the host's own `ansible_host`
_LOSES_TO = {
    "ansible_host": "ansible_ssh_host",
    "ansible_port": "ansible_ssh_port",
    "ansible_user": "ansible_ssh_user",
    "ansible_private_key_file": "ansible_ssh_private_key_file",
}
_BOOL_TEXT = {
    "true": True,
    "yes": True,
    "on": True,
    "1": True,
    "false": False,
    "no": False,
    "off": False,
    "0": False,
}
_OUR_KEYS = {
    "address",
    "port",
    "user",
    "key_file",
    "use_agent",
    "jump",
    "proxy_command",
    "host_key",
    "vendor",
    "order",
    "connection",
    "data_dir",
    "connect_timeout",
}


def looks_like_ini(path: Path, text: str | None = None) -> bool:
    """An INI inventory: `.ini` suffix, or a first meaningful line that is not YAML-shaped
    (a `[section]`, or an ungrouped host line like `gpu-1 ansible_host=10.0.0.1`). `text` is
    the file's text when the caller has read it (else it is read, bounded like every input)."""
    if path.suffix == ".ini":
        return True
    if path.suffix in (".yml", ".yaml"):
        return False
    if text is None:
        try:
            text = read_text(path, InventoryError, "inventory")
        except InventoryError:
            return False
    for line in text.splitlines():
        s = line.strip()
        if s and not s.startswith(("#", ";")):
            if re.match(r"^\[[^\]]+\]$", s):
                return True
            yaml_shaped = s.startswith(("---", "- ", "{", "%")) or s == "-"
            return not (yaml_shaped or re.match(r"^[^\s=]+:(\s|$)", s))
    return False


def is_native(data: Mapping[str, Any]) -> bool:
    """True for our own layout; False when the YAML has Ansible's shape: `all:`, a group at the
    top (kubespray's and k3s-ansible's samples: `kube-master: {hosts: ...}`), or only groups at
    the top, each a mapping of hosts/children/vars or empty (`calico-rr:`)."""
    if "all" in data:
        return False

    def group_shaped(value: Any) -> bool:
        return value is None or (isinstance(value, Mapping) and set(value) <= _GROUP_KEYS)

    if any(k not in _NATIVE_TOP and v and group_shaped(v) for k, v in data.items()):
        return False
    return not (data and all(k not in _NATIVE_TOP and group_shaped(v) for k, v in data.items()))


# Ansible's connection plugins gpuonboard can stand in for, by their short names (a name may be
# written as its FQCN, `ansible.builtin.local`, or `ansible.legacy.ssh`): on this machine, or
# over SSH to the same address, port, user and key (paramiko and `smart` are SSH too). Any other
# (`community.docker.docker`, `winrm`, `network_cli`) reaches the host some other way.
_CONNECTION_KINDS = {"local": "local", "ssh": "ssh", "smart": "ssh", "paramiko": "ssh", "paramiko_ssh": "ssh"}
_BUILTIN_PREFIXES = ("ansible.builtin.", "ansible.legacy.")


def connection_kind(value: Any) -> Any:
    """`ansible_connection` (or the config's `transport`) as ours: `local` or `ssh`, else the
    plugin's name as written (refused where the host is resolved: gpuonboard cannot use it)."""
    if not isinstance(value, str):
        return value
    name = value.strip()
    for prefix in _BUILTIN_PREFIXES:
        name = name.removeprefix(prefix)
    return _CONNECTION_KINDS.get(name, value)


# a host variable the Ansible config sets -> its setting's name there (`remote_user`)
_CONFIG_NAMES = {var: entries[0][1] for var, entries, _ in OPTIONS}


def convert_vars(raw: Mapping[str, Any], path: Path | None = None, templates: bool = False) -> LineDict:
    """Ansible host/group variables -> our host keys, other variables under `vars`.

    A Jinja2 template in one of our settings (`ansible_host: "{{ ip }}"`) is an error unless
    `templates` (kept as written). The ssh args stay under `vars` as written: the host's
    resolution reads them all together, as ssh does (sshargs)."""
    out = LineDict()
    out.key_lines, out.key_sources = {}, {}
    extra = LineDict()
    extra.key_lines, extra.key_sources = {}, {}
    lines, files = getattr(raw, "key_lines", {}), getattr(raw, "key_sources", {})
    # (in a merged Ansible host: the group or host that set each key, and its rank)
    layers: dict[str, tuple[str, int]] = getattr(raw, "key_layers", {})
    out.key_layers, extra.key_layers = {}, {}  # type: ignore[attr-defined]
    for key, value in raw.items():
        if key in _PASSWORD_VARS or (key in _LOSES_TO and raw.get(_LOSES_TO[key]) is not None):
            continue
        if value is None and key in _LOSES_TO.values():  # (a null one is not set, for Ansible)
            partner = next(k for k, v in _LOSES_TO.items() if v == key)
            if raw.get(partner) is not None:
                continue
        ours = _ANSIBLE_MAP.get(key)
        if ours is None and key.startswith("gpuonboard_") and key[11:] in _OUR_KEYS:
            ours = key[11:]
        if ours is None and key in _OUR_KEYS:
            ours = key
        if key == "ansible_connection":
            ours, value = "connection", connection_kind(value)
        if ours == "use_agent" and isinstance(value, str) and value.lower() in _BOOL_TEXT:
            value = _BOOL_TEXT[value.lower()]  # (INI keeps `false` as text; Ansible reads it as a boolean)
        if ours is None:
            extra[key] = value
            _keep_origin(extra, key, key, lines, files)
            if key in layers:
                extra.key_layers[key] = layers[key]  # type: ignore[attr-defined]
            continue
        if isinstance(value, str) and is_template(value) and not templates:
            at = where(path or Path("inventory"), raw, key)
            setting = _CONFIG_NAMES.get(key, key) if layers.get(key, ("",))[0] == CONFIG_LAYER else key
            setting = "its value" if at.startswith(ENV_SOURCE) else setting
            raise InventoryError(
                f"{at}: {setting} is a Jinja2 template ({value[:80]!r}), which Ansible renders only"
                " when it connects; gpuonboard does not render templates: write the value itself there."
            )
        if ours == "key_file" and key in _ANSIBLE_MAP and isinstance(value, str):
            value = AnsibleKeyPath(value)
        out[ours] = value
        _keep_origin(out, ours, key, lines, files)
        if key in layers:
            out.key_layers[ours] = layers[key]  # type: ignore[attr-defined]
    if extra:
        out["vars"] = extra
    out.line = getattr(raw, "line", None)
    return out


def _keep_origin(
    out: LineDict, ours: str, key: str, lines: Mapping[str, int], files: Mapping[str, Path]
) -> None:
    """`out[ours]` keeps the line (and, from a vars file, the file) Ansible's `key` was set at."""
    if key in lines:
        out.key_lines[ours] = lines[key]
    if key in files:
        out.key_sources[ours] = files[key]


def _check_name(path: Path, line: int | None, kind: str, name: Any) -> None:
    """A host or group name with a control character or line break: one sentence naming the line."""
    if problem := name_problem(kind, name):
        raise InventoryError(f"{path}, line {line}: {problem}" if line else f"{path}: {problem}")


# Bounds on a file's host patterns, checked from the ranges' bounds before anything is
# expanded: `gpu-[0:99999999]` held 7.1 GB before a limit applied to the expanded list, and
# three ranges of 100 in one name (a million hosts) ran for 300 s.
MAX_RANGES_PER_NAME = 16  # `rack[1:4]-node[01:16]-gpu[0:7]` is three
MAX_PATTERN_NAMES = 100_000  # names all patterns of a file expand to (a host in several groups
# is listed once per group, so this is a multiple of the hosts an inventory may hold)
MAX_GROUP_DEPTH = 64  # groups inside groups ([g:children] chains), like YAML's nesting bound
MAX_MEMBERSHIPS = 1_000_000  # host-in-group pairs, all groups together


class TooManyHosts(ValueError):
    """A host pattern that names more hosts than allowed; `count` is how many it names."""

    def __init__(self, count: int) -> None:
        super().__init__(f"names {count:,} hosts")
        self.count = count


def expand_host_pattern(pattern: str, limit: int = MAX_HOSTS) -> tuple[list[str], int | None]:
    """Ansible host patterns: `gpu-[01:08]` (zero-padded), `node[a:c]`, `[1:9:2]` (a stride),
    several ranges in one name, and a `:PORT` suffix (`10.0.0.5:2222`) -> names and port.
    ValueError (the reason) for a malformed range; TooManyHosts, before expanding anything,
    for a pattern that names more than `limit` hosts."""
    port: int | None = None
    if _bracketed_ipv6(pattern):  # `[2001:db8::7]:2222`, as Ansible writes it
        host, _, port_text = pattern[1:].rpartition("]:")
        return _expand_ranges(host, limit), int(port_text)
    m = re.fullmatch(r"(.+):([0-9]+)", pattern)
    if m and ":" not in re.sub(r"\[[^\]]*\]", "", m.group(1)):  # not an IPv6 address
        pattern, port = m.group(1), int(m.group(2))
    return _expand_ranges(pattern, limit), port


def _bracketed_ipv6(word: str) -> bool:
    """`[IPv6]:PORT`, the one host pattern that starts with a bracket (Ansible's form)."""
    m = re.fullmatch(r"\[(.+)\]:([0-9]+)", word)
    return m is not None and _is_ipv6(m.group(1))


def _is_ipv6(text: str) -> bool:
    """An IPv6 address, where each range in it (`2001:db8::[1:9]`) stands for a number."""
    try:
        return isinstance(ipaddress.ip_address(re.sub(r"\[[^\]]*\]", "0", text)), ipaddress.IPv6Address)
    except ValueError:
        return False


_RANGE = lazy_re(r"\[([^\]]*)\]")


def _range_values(body: str) -> tuple[range, Callable[[int], str]]:
    """One range's numbers and how each is written: `01:08` -> 1..8 zero-padded, `a:c` -> the
    letters' code points; ValueError (the reason) for a malformed one. Nothing is listed yet."""
    parts = body.split(":")
    if len(parts) not in (2, 3):
        raise ValueError(f"range [{body}] must be written [start:end] or [start:end:step]")
    beg, end = parts[0] or "0", parts[1]
    step_text = parts[2] if len(parts) == 3 else "1"
    if not end or not is_digits(step_text) or int(step_text) < 1 or len(step_text) > 18:
        raise ValueError(f"range [{body}] needs an end and a positive whole step")
    step = int(step_text)
    if is_digits(beg) and is_digits(end) and len(beg) <= 18 and len(end) <= 18:
        width = len(beg) if beg.startswith("0") and len(beg) > 1 else 0
        if width and len(end) != width:
            raise ValueError(f"range [{body}] must give start and end with the same number of digits")
        numbers, spell = range(int(beg), int(end) + 1, step), lambda n: str(n).zfill(width)
    elif (
        len(beg) == 1
        and len(end) == 1
        and beg.isalpha()
        and end.isalpha()
        and beg.isascii()
        and end.isascii()
    ):
        numbers, spell = range(ord(beg), ord(end) + 1, step), chr
    else:
        raise ValueError(f"range [{body}] must run between two numbers or two letters")
    if not numbers:
        raise ValueError(f"range [{body}] is empty: its start is after its end")
    return numbers, spell


def _expand_ranges(name: str, limit: int = MAX_HOSTS) -> list[str]:
    """Every name a pattern stands for, in Ansible's order (the last range varies fastest); the
    count is the product of the ranges' lengths, known from their bounds before any is listed."""
    found = list(_RANGE.finditer(name))
    if not found:
        return [name]
    if len(found) > MAX_RANGES_PER_NAME:
        raise ValueError(f"has more than {MAX_RANGES_PER_NAME} ranges in one name")
    ranges = [_range_values(m.group(1)) for m in found]
    count = math.prod(len(numbers) for numbers, _ in ranges)
    if count > limit:
        raise TooManyHosts(count)
    literals = [name[: found[0].start()]]
    literals += [name[a.end() : b.start()] for a, b in zip(found, found[1:], strict=False)]
    literals.append(name[found[-1].end() :])
    spelt = [[spell(n) for n in numbers] for numbers, spell in ranges]
    out = []
    for values in itertools.product(*spelt):
        out.append(literals[0] + "".join(v + lit for v, lit in zip(values, literals[1:], strict=True)))
    return out


class _Builder:
    """A static Ansible inventory as read (hosts, groups, their own vars: not yet merged)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.inv = AnsibleGroups()
        self.expanded = 0  # names all host patterns expanded to so far

    def add_pattern(self, pattern: str, hvars: Mapping[str, Any], line: int | None) -> list[str]:
        """Add the hosts an Ansible host pattern names (`gpu-[01:04]`, `name:2222`); their names.
        Counts are checked before the pattern is expanded: the pattern's own, the names all
        patterns of the file expand to, and the hosts the inventory then holds."""
        _check_name(self.path, line, "host", pattern)
        at = f"{self.path}, line {line}" if line else str(self.path)
        try:
            names, port = expand_host_pattern(str(pattern), min(MAX_HOSTS, MAX_PATTERN_NAMES - self.expanded))
        except TooManyHosts as exc:
            if exc.count > MAX_HOSTS:
                raise InventoryError(
                    f"{at}: host pattern {pattern!r} names {exc.count:,} hosts, more than the"
                    f" {MAX_HOSTS:,} an inventory may hold; narrow the range."
                ) from None
            raise InventoryError(
                f"{at}: with host pattern {pattern!r} the host patterns of this file name more than"
                f" {MAX_PATTERN_NAMES:,} hosts in all (a host counted once per group that lists it);"
                " list fewer, or put the hosts in one group and the others in [group:children]."
            ) from None
        except ValueError as exc:
            raise InventoryError(f"{at}: host pattern {pattern!r}: {exc}.") from None
        self.expanded += len(names)
        if port is not None:  # (Ansible: the pattern's port, unless the host's vars give one)
            with_port = LineDict({"ansible_port": port, **hvars})
            with_port.key_lines = dict(getattr(hvars, "key_lines", {}))
            with_port.line = getattr(hvars, "line", None)
            hvars = with_port
        for name in names:
            self.add_host(name, hvars, line)
        if len(self.inv.hosts) > MAX_HOSTS:
            raise InventoryError(
                f"{at}: with host pattern {pattern!r} the inventory holds more than the {MAX_HOSTS:,}"
                " hosts an inventory may hold; split it."
            )
        return names

    def add_host(self, name: str, hvars: Mapping[str, Any], line: int | None) -> None:
        """A host's own vars; a host named again adds to them (later values win, as in Ansible)."""
        old = self.inv.hosts.get(name)
        merged = LineDict({**(old or {}), **hvars})
        merged.key_lines = {**getattr(old, "key_lines", {}), **getattr(hvars, "key_lines", {})}
        self.inv.hosts[name] = merged
        if line and name not in self.inv.lines:
            self.inv.lines[name] = line

    def add_group(self, name: str, gvars: Mapping[str, Any], members: list[str], line: int | None) -> None:
        """A group's own vars (added to any given before) and the hosts it lists itself."""
        old = self.inv.group_vars.get(name)
        if old is None or gvars:
            merged = LineDict({**(old or {}), **gvars})
            merged.key_lines = {**getattr(old, "key_lines", {}), **getattr(gvars, "key_lines", {})}
            self.inv.group_vars[name] = merged
        if line and name not in self.inv.group_lines:
            self.inv.group_lines[name] = line
        direct = self.inv.direct.setdefault(name, [])
        direct += [m for m in dict.fromkeys(members) if m not in direct]

    def add_child(self, parent: str, child: str) -> None:
        kids = self.inv.children.setdefault(parent, [])
        if child not in kids:
            kids.append(child)

    def result(self, base: Path | None = None) -> LineDict:
        """Our inventory shape, each host's vars merged as Ansible merges them (with the
        group_vars/ and host_vars/ files in `base`, the inventory's directory)."""
        return merged_shape(self.inv, self.path, VarsFiles(base))


def merged_shape(inv: AnsibleGroups, path: Path, files: VarsFiles) -> LineDict:
    """Our inventory shape from an inventory as Ansible holds it: its groups sorted as Ansible
    sorts them, each host's vars merged in Ansible's precedence, then converted to ours."""
    depths = group_depths(inv, path, MAX_GROUP_DEPTH)
    order = sorted_groups(inv, depths)
    groups_of = memberships(inv, order)
    pairs = sum(len(gs) for gs in groups_of.values())
    if pairs > MAX_MEMBERSHIPS:
        raise InventoryError(
            f"{path}: the groups of this inventory list more than {MAX_MEMBERSHIPS:,} hosts in all;"
            " list fewer hosts per group."
        )
    config = config_vars()  # (ansible.cfg and ANSIBLE_* where Ansible finds them)
    per_host = {h: host_vars(inv, h, groups_of[h], files, config) for h in inv.hosts}

    def convert(values: Mapping[str, Any], name: str) -> LineDict:
        shown = LineDict(values)
        # each key's line in the inventory: the host's line, or the group vars line that set it
        shown.key_lines = dict(getattr(values, "key_lines", {}))
        # a key set in a group_vars/ or host_vars/ file: that file and its line there
        shown.key_sources = {}
        for key in getattr(values, "key_sources", {}):
            shown.take_origin(key, values)
        shown.line = inv.lines.get(name)
        shown.key_layers = getattr(values, "key_layers", {})  # type: ignore[attr-defined]
        return convert_vars(shown, path)

    shape = native_shape(per_host, groups_of, order, convert, path, inv.lines)
    # (each group's hosts in Ansible's order: what a --limit subscript indexes)
    order_of = ansible_group_hosts(list(inv.hosts), inv.direct, inv.children, inv.groups())
    setattr(shape, ANSIBLE_ORDER, order_of)
    return shape


def from_yaml(data: Mapping[str, Any], path: Path) -> LineDict:
    """Convert Ansible's YAML inventory (`all:` with hosts/children/vars, or groups at the top)
    to our shape, with the group_vars/ and host_vars/ beside it."""
    b = _Builder(path)
    top = data.get("all", data) if "all" in data else {"children": data}
    if not isinstance(top, Mapping):
        raise InventoryError(f"{where(path, data, 'all')}: Ansible 'all' must be a mapping.")
    _walk_group(b, "all", top, path, ())
    return b.result(path.parent)


def _walk_group(b: _Builder, name: str, group: Any, path: Path, trail: tuple[str, ...]) -> None:
    if group is None:
        group = {}
    if not isinstance(group, Mapping):
        raise InventoryError(f"{path}: Ansible group {name!r} must be a mapping with hosts/children/vars.")
    if len(trail) >= MAX_GROUP_DEPTH:
        raise group_depth_error(path, name)
    for key in group:
        if key not in _GROUP_KEYS:
            raise InventoryError(
                f"{where(path, group, key)}: Ansible group {name!r} has an unknown key {key!r}"
                f"{did_you_mean(key, _GROUP_KEYS) or '; allowed: hosts, children, vars.'}"
            )
    gvars = group.get("vars") or {}
    if not isinstance(gvars, Mapping):
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
        members += b.add_pattern(hname, hvars, getattr(hosts, "key_lines", {}).get(hname))
    children = group.get("children") or {}
    if not isinstance(children, Mapping):
        raise InventoryError(
            f"{where(path, group, 'children')}: Ansible group {name!r} 'children' must be a mapping."
        )
    b.add_group(name, gvars, members, getattr(group, "line", None))
    for cname, cdef in children.items():
        _check_name(path, getattr(children, "key_lines", {}).get(cname), "group", cname)
        if cname in (*trail, name):
            raise InventoryError(f"{path}: group {cname!r} is its own child; remove the cycle.")
        b.add_child(name, cname)
        _walk_group(b, cname, cdef, path, (*trail, name))


def group_depth_error(path: Path, group: str) -> InventoryError:
    """The sentence for groups nested past MAX_GROUP_DEPTH (Python's recursion ran out first)."""
    return InventoryError(
        f"{path}: the groups nest more than {MAX_GROUP_DEPTH} levels deep (group {group!r} among"
        " them); flatten the groups' children."
    )


def parse_text(text: str, path: Path) -> Any:
    """Parse inventory YAML text (exposed for tests)."""
    return parse_yaml(text, path, InventoryError)
