"""One host resolved: its settings merged from the defaults, its vendor profile, its groups
and its own entry (host > group > vendor > defaults; a null that would drop an inherited
value refused), its SSH config Host entry where it has no address, and every field checked
into a `Host`.
"""

from __future__ import annotations

import os
import pwd
import re
from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from gpuonboard.errors import InventoryError
from gpuonboard.inventory.ansible import AnsibleKeyPath
from gpuonboard.inventory.ansible_cfg import CONFIG_LAYER, ENV_SOURCE
from gpuonboard.inventory.fields import (
    CONNECT_TIMEOUT_RANGE,
    CONNECTIONS,
    PORT_RANGE,
    bad_host_char,
    data_dir_problem,
    normal_remote_path,
    split_address,
)
from gpuonboard.inventory.host_key import host_key_note, pinned_host_key
from gpuonboard.inventory.jumps import parse_jump
from gpuonboard.inventory.layers import deep_merge, refuse_dropping_null
from gpuonboard.inventory.model import Host, OrderSpec, Vendor
from gpuonboard.inventory.order import parse_order
from gpuonboard.inventory.rules import is_digits
from gpuonboard.inventory.settings import BELOW_VENDOR_ARGS, HostSettings
from gpuonboard.inventory.sshargs import (
    SSHArgs,
    host_ssh_args,
    local_path,
    route,
    whose,
)
from gpuonboard.inventory.sshlookup import (
    config_alias,
    config_extras,
    followable,
    refuse_include_problem,
    ssh_config_aliases,
)
from gpuonboard.inventory.sshresolve import (
    CONNECTION_KEYS,
    PROXY_COMMAND_TOKENS,
    bad_token,
    ssh_program,
)
from gpuonboard.yamlload import LineDict, did_you_mean, where


def _vendor_suggestion(word: str, vendors: Iterable[str]) -> str:
    """`; did you mean 'x'?` for an unknown vendor, also across case (`Wuhan-IDC`)."""
    vendors = list(vendors)
    same = [v for v in vendors if v.casefold() == word.casefold()]
    return f"; did you mean {same[0]!r}?" if same else did_you_mean(word, vendors)


# `$HOME/.ssh/id` or `${KEYS}/id` in a key_file
_ENV_VAR = re.compile(r"\$(\w+|\{[^}]*\})")


def _expand_path(value: str) -> tuple[str, str | None]:
    """`~` and `$VAR`/`${VAR}` expanded, as Ansible does for a key file; and the name of a
    variable that is not set (then the path is not used), else None."""
    for match in _ENV_VAR.finditer(value):
        name = match.group(1).strip("{}")
        if name not in os.environ:
            return value, name
    return os.path.expanduser(os.path.expandvars(value)), None


def resolve_host(
    name: str,
    layers: list[tuple[Mapping[str, Any], str]],
    groups: tuple[str, ...],
    vendors: dict[str, Vendor],
    path: Path,
    ssh_cfg: Any,
    vendors_dir: Path,
    host_where: str,
    name_is_address: bool = False,
) -> Host:
    """One host from its layers (defaults, its groups in file order, its own entry: `layers`),
    its vendor profile and its SSH config entry, every field checked in a fixed order (the first
    bad one is the error)."""
    vendor = _host_vendor(layers, vendors, path, vendors_dir)
    s = _merge_layers(name, layers, vendor, path, ssh_cfg, name_is_address)
    connection = s.merged.get("connection", "ssh")
    if isinstance(connection, str) and connection not in CONNECTIONS and s.ansible:
        return _not_used(s, connection, groups)
    if connection not in CONNECTIONS:
        raise s.err("connection", f"must be one of {', '.join(CONNECTIONS)}, not {connection!r}.")
    address = _address(s, connection, ssh_cfg, host_where, name_is_address)
    port = s.pick("port", "port", 22)
    if isinstance(port, str) and is_digits(port):
        port = int(port)
    elif s.ansible and isinstance(port, (str, float)):
        port = ansible_integer(port)
    if problem := PORT_RANGE.problem(port):
        raise s.err("port", problem)
    user = s.pick("user", "user", "root")
    if user == "" and s.ansible:  # (an empty ansible_user: Ansible's ssh passes no User)
        user = _ssh_default_user(s)
    if not isinstance(user, str) or not user:
        raise s.err("user", "must be a user name string.")
    key_file = _key_file(s)
    use_agent = s.merged.get("use_agent", True)
    if not isinstance(use_agent, bool):
        raise s.err("use_agent", "must be true or false.")
    jump, extras = _way(s)
    if s.ansible:  # (every identity file ssh would try, in its order)
        files = _ssh_keys(s)
        key_file, extras["extra_key_files"] = (files[0] if files else None), tuple(files[1:])
    host_key = pinned_host_key(s)
    timeout = s.pick("connect_timeout", "connecttimeout", 10)
    if problem := CONNECT_TIMEOUT_RANGE.problem(timeout):
        raise s.err("connect_timeout", problem)
    data_dir = _data_dir(s)
    hvars = s.merged.get("vars", {})
    if not isinstance(hvars, Mapping):
        raise s.err("vars", "must be a mapping of name: value.")
    return Host(
        name=name,
        address=address,
        port=port,
        user=user,
        key_file=key_file,
        use_agent=use_agent,
        jump=jump,
        host_key=host_key,
        vendor=vendor,
        order=_order(s),
        connection=connection,
        data_dir=data_dir,
        connect_timeout=float(timeout),
        groups=groups,
        vars=dict(hvars),
        host_key_note=host_key_note(s, ssh_cfg),
        **extras,
    )


def _host_vendor(
    layers: list[tuple[Mapping[str, Any], str]], vendors: dict[str, Vendor], path: Path, vendors_dir: Path
) -> Vendor | None:
    """The vendor profile the last layer naming one names; an unknown one is an InventoryError."""
    vendor_id: str | None = None
    vendor_src: tuple[Mapping[str, Any], str] | None = None
    for layer, label in layers:
        if "vendor" in layer:
            vendor_id, vendor_src = layer["vendor"], (layer, label)
    if vendor_id is None:
        return None
    assert vendor_src is not None
    if not isinstance(vendor_id, str) or vendor_id not in vendors:
        raise InventoryError(
            f"{where(path, vendor_src[0], 'vendor')}: {vendor_src[1]} names unknown vendor"
            f" {vendor_id!r}; vendor profiles are the files <name>.yml in {vendors_dir}"
            f"{_vendor_suggestion(str(vendor_id), vendors) or '.'}"
        )
    return vendors[vendor_id]


def _merge_layers(
    name: str,
    layers: list[tuple[Mapping[str, Any], str]],
    vendor: Vendor | None,
    path: Path,
    ssh_cfg: Any,
    ansible: bool = False,
) -> HostSettings:
    """The layers merged in precedence order (defaults < vendor < groups < host), a null that
    would drop an earlier layer's value refused; with the host's SSH config entry (in an Ansible
    inventory, that of the address it gives: `config_alias`)."""
    vendor_layer: Mapping[str, Any] = vendor.host_defaults if vendor is not None else {}
    vendor_id = vendor.id if vendor is not None else None
    ordered = [layers[0], (vendor_layer, f"vendor {vendor_id!r}"), *layers[1:]]
    s = HostSettings(name, path, vendor, ordered, {}, {}, {})
    merged: dict[str, Any] = {}
    set_by: dict[tuple[str, ...], str] = {}  # which layer set each value a null could drop
    for layer, label in ordered:
        refuse_dropping_null(layer, label, set_by, s.file_of(label))
        merged = deep_merge(merged, layer)
        for k in layer:
            s.origin[k] = (layer, label)
    # only an explicit `Host <name>` entry applies: a `Host *` block would otherwise override
    # the vendor profile and defaults for every host
    alias = config_alias(name, layers, ssh_cfg, ansible)
    sshc = ssh_cfg.lookup(alias) if alias is not None else {}
    # (a host Ansible reaches without SSH: its plugin reads `ansible_ssh_extra_args` its own way,
    # `lxc_ssh` as the container's name, `local` not at all; ssh's reading of them refused the
    # whole inventory. ssh, smart, paramiko and their FQCNs are "ssh" here: ansible.connection_kind)
    over_ssh = merged.get("connection", "ssh") == "ssh"
    args = host_ssh_args(name, s.ordered, path) if ansible and over_ssh else SSHArgs()
    options = _resolving_args(args)
    if options and hasattr(ssh_cfg, "resolution_with"):
        alias, sshc = _with_args(str(merged.get("address") or name), alias, options, ssh_cfg)
    command = sshc.get("proxycommand")
    if str(sshc.get("proxyjump", "none")).lower() != "none" or str(command).strip().lower() == "none":
        command = None  # (the config's own ProxyJump: `-J none` drops it)
    elif command is not None and hasattr(ssh_cfg, "unexpanded") and not options:
        command = ssh_cfg.unexpanded(alias, "proxycommand")
    if sshc and alias is not None:
        sshc = followable(alias, sshc, ssh_cfg)
    return replace(
        s,
        merged=merged,
        sshc=sshc,
        looked_up=alias,
        ansible=ansible,
        args=args,
        config_command=None if command is None else str(command),
    )


def _resolving_args(args: SSHArgs) -> tuple[str, ...]:
    """What an Ansible host's ssh args set that changes how ssh reads its config (`-o
    HostName=`, `-J none` / `-o ProxyJump=none`), as `ssh -o` options; ssh sets them first."""
    options = []
    if (given := args.first("hostname")) is not None:
        options.append(f"HostName={given}")
    jump = args.first("proxyjump")
    if jump is not None and jump.strip().lower() == "none" and "proxycommand" not in args.values:
        options.append("ProxyJump=none")
    return tuple(options)


def _with_args(
    address: str, alias: str | None, options: tuple[str, ...], ssh_cfg: Any
) -> tuple[str | None, Mapping[str, Any]]:
    """The config's settings for an Ansible host whose ssh args change how ssh reads it
    (`_resolving_args`), as `ssh -G` of Ansible's command line shows them: with `-o HostName=`
    a `Match host HOSTNAME` block applies; with `-J none` a config's ProxyJump yields, so its
    later ProxyCommand applies. The address is still what `Host` patterns test."""
    target = alias if alias is not None else address.strip().removeprefix("[").removesuffix("]")
    found = ssh_cfg.resolution_with(target, options)
    if not found.set_keys & CONNECTION_KEYS - {"hostname"}:
        return None, {}  # (a `Match host ADDRESS` block no longer applies)
    return target, found.lookup()


def _way(s: HostSettings) -> tuple[tuple[str, ...], dict[str, Any]]:
    """The jump hops and the Host fields the SSH config and ssh args add (a ProxyCommand, more
    key and certificate files). An Ansible host's ssh args naming a ProxyJump or ProxyCommand
    decide as ssh does (the first of them in ansible_ssh_args, common then extra args wins,
    before the config's); else the inventory's own jump or proxy_command, else the config's."""
    extras = config_extras(s.sshc, s.from_inventory("key_file"), s.from_inventory("jump"))
    extras.update(s.args.extra_certificates(extras))
    own = next((k for k in ("jump", "proxy_command") if s.from_inventory(k)), None)
    config = {"proxycommand": s.config_command} if s.config_command is not None else {}
    way = route(s.args, config)
    key = "proxyjump" if "proxyjump" in s.args.source else "proxycommand"
    if way is not None and any(s.vendor_beats_args(k, key) for k in ("jump", "proxy_command")):
        way = None  # (the Ansible config's `-J` sits below the vendor profile's jump)
    if way is not None and own is not None:
        key = "proxyjump" if "proxyjump" in s.args.source else "proxycommand"
        at, label = s.args.source[key]
        args_layer, own_layer = _layer_rank(s, label.partition(" of ")[2]), _layer_rank(s, s.origin[own][1])
        if s.ansible:  # (merged Ansible vars: the group or host that set each, in Ansible's order)
            (args_who, args_layer), (own_who, own_layer) = _ansible_rank(s, label), _ansible_rank(s, own)
            args_layer = own_layer if args_who == own_who else args_layer
        if args_layer == own_layer:  # (one host or group says both: which it meant is not known)
            raise s.err(
                own,
                f"and `{s.args.written[key]}` in the {label} ({at}) both say how to reach the host (ssh"
                " follows only the args); keep one of them.",
            )
        if own_layer > args_layer:  # (the more specific layer wins, as a host's args beat `all`'s jump)
            way = None
    if way is not None:
        extras.pop("proxy_command", None)
        kind, value = way
        if kind == "proxy_command":
            extras["proxy_command"] = _args_proxy_command(s, value)
        return (parse_jump(value, s.err) if kind == "jump" else ()), extras
    jump = parse_jump(s.pick("jump", "proxyjump", None), s.err)
    if (proxy := _proxy_command(s)) is not None:  # (the inventory's beats the SSH config's)
        extras["proxy_command"] = proxy
    if "proxy_command" in extras:  # (a ProxyCommand beats a vendor's or default jump)
        jump = ()
        if extras["proxy_command"].strip().lower() == "none":  # (`-o ProxyCommand=none`: dial it)
            del extras["proxy_command"]
    return jump, extras


def _empty_address_var(s: HostSettings) -> str:
    """The group or host whose empty `ansible_ssh_host` / `ansible_host` gave a host its empty
    address (`ansible_ssh_host` beats `ansible_host` when set, even empty)."""
    layer = s.origin.get("address", ({}, ""))[0]
    return str(getattr(layer, "key_layers", {}).get("address", (f"host {s.name!r}",))[0])


def _ssh_default_user(s: HostSettings) -> str:
    """The user ssh logs in as where Ansible passes it no User (an empty `ansible_user`, which
    beats a group's `ansible_user=ops`): the ssh args' `-l` / `-o User=`, else the SSH config's
    User for the host, else the local login name, as OpenSSH picks it."""
    given = s.args.first("user") or s.sshc.get("user")
    return str(given) if given else pwd.getpwuid(os.getuid()).pw_name  # (ssh's, not $USER)


def _not_used(s: HostSettings, connection: str, groups: tuple[str, ...]) -> Host:
    """An Ansible host reached by a connection that is not SSH (`winrm`, `network_cli`,
    `community.docker.docker`): listed, with its connection and the sentence that refuses it
    when a selection that connects includes it (Ansible runs only the hosts selected, so the
    rest of a mixed inventory stays usable). Its SSH fields are not read: Ansible's plugin
    reads them its own way."""
    src, label = s.origin.get("connection", (LineDict(), f"host {s.name!r}"))
    at = where(s.file_of(label), src, "connection")
    who = getattr(src, "key_layers", {}).get("connection", (label,))[0]
    if at.startswith(ENV_SOURCE):
        at, by = at.removeprefix(ENV_SOURCE), f"{at.removeprefix(ENV_SOURCE)}={connection} in the environment"
        fix = f"set {at}=ssh"
    elif who == CONFIG_LAYER:
        by, fix = "the Ansible config's `transport`", "set `transport = ssh` in that config"
    else:
        by, fix = f"ansible_connection of {who}", "set ansible_connection=ssh for it"
    note = (
        f"{at}: host {s.name!r} is reached by Ansible's {connection!r} connection ({by}), which does"
        " not run over SSH, while gpuonboard reaches a host only over SSH or on this machine; leave it"
        f" out of the selection (--limit '!{s.name}'), or, where SSH reaches it, {fix}."
    )
    address = s.merged.get("address")
    port = s.merged.get("port")
    user = s.merged.get("user")
    return Host(
        name=s.name,
        address=address if isinstance(address, str) and address else s.name,
        port=port if isinstance(port, int) and not PORT_RANGE.problem(port) else 22,
        user=user if isinstance(user, str) and user else "root",
        vendor=s.vendor,
        order=_order(s),
        connection=connection,
        groups=groups,
        vars=dict(hvars) if isinstance(hvars := s.merged.get("vars", {}), Mapping) else {},
        not_used=note,
        not_used_parts=(at, by, fix),
    )


def _ansible_rank(s: HostSettings, key: str) -> tuple[str, int]:
    """The group or host (or the Ansible config) that set an Ansible host's `key` (one of ours,
    or `ansible_ssh_common_args of ...`: an ssh args variable) and its rank in Ansible's
    precedence (higher beats lower); a key from the inventory's defaults ranks lowest."""
    var = key.partition(" of ")[0]
    layer, label = s.origin.get("vars" if var.startswith("ansible_") else var, s.ordered[-1])
    given = layer.get("vars") if var.startswith("ansible_") else layer
    found = getattr(given, "key_layers", {}).get(var)
    return (found[0], found[1]) if found else (label, 0 if label == "defaults" else 1 << 20)


def _layer_rank(s: HostSettings, label: str) -> int:
    """Where the layer `label` ("host 'gpu2'", "group 'gpus'", "defaults") stands in the host's
    precedence (higher beats lower); -1 where it is none of them."""
    return next((i for i, (_, lab) in enumerate(s.ordered) if lab == label), -1)


def _args_proxy_command(s: HostSettings, command: str) -> str:
    """A ProxyCommand of the ssh args (or of the config, after the args' `ProxyJump none`),
    checked: one line, no token OpenSSH leaves unexpanded there."""
    bad = "a line break" if "\n" in command else bad_token(command, PROXY_COMMAND_TOKENS)
    if bad is None:
        return command
    key = "proxycommand" if "proxycommand" in s.args.source else "proxyjump"
    at, label = s.args.source[key]
    raise InventoryError(
        f"{at}: host {s.name!r} takes the ProxyCommand {command!r} (by {whose(s.name, label)}), which"
        f" holds {bad}, which OpenSSH does not expand there (it knows %h, %n, %p, %r and %%); fix it."
    )


def _ssh_keys(s: HostSettings) -> list[str]:
    """An Ansible host's identity files in the order its ssh tries them, each once: those of
    ansible_ssh_args, the inventory's key file, those of the common and extra args, the SSH
    config's IdentityFiles; else the vendor profile's key_file."""
    inventory = [_key_path(s, s.merged["key_file"])] if s.from_inventory("key_file") else []
    config = [local_path(str(f)) for f in s.sshc.get("identityfile") or ()]
    below = s.origin.get("key_file", ({}, ""))[1].startswith("vendor ")  # (the config's `-i`: below it)
    found: list[str | None] = [
        f for f, _, (_, by) in s.args.key_files(True) if not (below and by.endswith(BELOW_VENDOR_ARGS))
    ]
    found += inventory
    found += [
        f for f, _, (_, by) in s.args.key_files(False) if not (below and by.endswith(BELOW_VENDOR_ARGS))
    ]
    found += config
    files = [f for f in dict.fromkeys(found) if f]
    if not files and (fallback := _key_path(s, s.merged.get("key_file"))):
        files = [fallback]
    return files


def _proxy_command(s: HostSettings) -> str | None:
    """The inventory's `proxy_command` (an Ansible ProxyCommand that is more than `ssh -W
    %h:%p bastion`, or written as is), checked; None when it sets none."""
    proxy = s.merged.get("proxy_command")
    if proxy is None:
        return None
    if not isinstance(proxy, str) or not proxy.strip() or "\n" in proxy:
        raise s.err("proxy_command", "must be one command line, like 'ssh -W %h:%p -i KEY user@bastion'.")
    if (bad := bad_token(proxy, PROXY_COMMAND_TOKENS)) is not None:
        raise s.err(
            "proxy_command",
            f"holds the token {bad}, which OpenSSH does not expand in a ProxyCommand (it knows %h, %n,"
            " %p, %r and %%).",
        )
    if s.from_inventory("jump") and s.from_inventory("proxy_command"):
        raise s.err("proxy_command", "and 'jump' both say how to reach the host; keep one of them.")
    return proxy


def _address(s: HostSettings, connection: str, ssh_cfg: Any, host_where: str, name_is_address: bool) -> str:
    """The address to dial: the inventory's, else the SSH config entry's HostName (or its alias),
    else, in an Ansible inventory, the host's name; checked and without brackets."""
    name = s.name
    address = s.merged.get("address")
    if address is not None and s.looked_up is not None and s.sshc.get("hostname"):
        address = s.sshc["hostname"]  # (`ansible_host=test1` with `Host test1` / `HostName 172.2.0.10`)
    if (given := s.args.first("hostname")) is not None:  # (`-o HostName=` beats the destination)
        original = s.merged.get("address") or name  # (%h: the name ssh was given, not the config's HostName)
        address = given.replace("%h", str(original)).replace("%%", "%")
    if address is None:
        hostname = s.sshc.get("hostname")
        if connection == "local":
            address = "localhost"
        elif hostname and hostname != name or name in ssh_config_aliases(ssh_cfg):
            address = hostname or name
        elif name_is_address:  # Ansible: inventory_hostname is the address without ansible_host
            address = name
        elif includes := getattr(ssh_cfg, "include_lines", None):  # (the own reader: not followed)
            refuse_include_problem(ssh_cfg)
            pattern, line = next(iter(includes.items()))
            install = "install the OpenSSH client, " if ssh_program() is None else ""
            raise InventoryError(
                f"{host_where}: host {name!r} has no 'address' and no Host entry in the part of"
                f" {getattr(ssh_cfg, 'path', 'the SSH config')} gpuonboard could read: its Include"
                f" {pattern} (line {line}) is followed only by OpenSSH's `ssh`, used when it is on"
                f" PATH and the config runs no `Match exec`; {install}copy the Host block into that"
                " file, or add address: <IP or DNS name>."
            )
        else:
            raise InventoryError(
                f"{host_where}: host {name!r} has no 'address' and no Host entry in the SSH"
                " config; add address: <IP or DNS name>."
            )
    if s.ansible and isinstance(address, str) and not address.strip():
        raise s.err(
            "address",
            f"is empty (an empty ansible_ssh_host or ansible_host of {_empty_address_var(s)}), which"
            " Ansible's ssh dials as it is (ssh:"
            ' "Could not resolve hostname"), never falling back to another address; remove it, or'
            " write the host's address there.",
        )
    if not isinstance(address, str) or not address.strip():
        raise s.err("address", "must be a host name or IP address string.")
    if (bad := bad_host_char(address.strip())) is not None:
        raise s.err(
            "address",
            f"{address!r} is not a host name or IP address (it holds {bad!r}); write only the host"
            " name or IP address.",
        )
    if s.ansible and address.strip().startswith("[") and address != name:
        inner = address.strip()[1:].partition("]")[0]
        var = "ansible_host" if s.args.first("hostname") is None else "-o HostName= of its ssh args"
        raise s.err(
            "address",
            f"{address!r} ({var}) holds an IPv6 address in brackets, which Ansible's ssh dials as"
            f' written and refuses (ssh: "hostname contains invalid characters"); write it without the'
            f" brackets: {inner}.",
        )
    address, problem = split_address(address.strip())
    if problem:
        raise s.err("address", problem)
    return address


def _key_file(s: HostSettings) -> str | None:
    """The key file, `~` and environment variables expanded, relative to the inventory file."""
    return _key_path(s, s.pick("key_file", "identityfile", None))


def _key_path(s: HostSettings, key_file: Any) -> str | None:
    """`key_file` (of the inventory or the SSH config) checked, `~` and environment variables
    expanded, relative to the inventory file."""
    if key_file is not None and not isinstance(key_file, str):
        raise s.err("key_file", "must be a path string.")
    if key_file:
        key_file, unset = _expand_path(key_file)
        if unset is not None:
            raise s.err(
                "key_file",
                f"{key_file!r} uses the environment variable {unset!r}, which is not set; set it,"
                " or write the path out.",
            )
        if not os.path.isabs(key_file):
            key_file = str((_key_base(s, key_file) / key_file).resolve())
    return key_file


def ansible_integer(value: str | float) -> int | str | float:
    """`value` as Ansible's ssh connection types its integer port: a number with no fraction
    (`2222.0` from INI, `" 2222"`) is that whole number; anything else is left to be refused."""
    import decimal  # (an Ansible inventory's port alone: ~2 ms of CPU a run to import)

    try:
        number = decimal.Decimal(value.strip() if isinstance(value, str) else value)
        return int(number) if number == int(number) else value
    except (ArithmeticError, ValueError):
        return value


def _key_base(s: HostSettings, key_file: str) -> Path:
    """The folder a relative key file is read from: the inventory file's, but one of Ansible's
    own variables (`ansible_ssh_private_key_file=./keys/id`: an AnsibleKeyPath) from the
    directory gpuonboard runs in, as Ansible passes it to ssh as written and ssh opens it where
    Ansible runs (gpuonboard's own `gpuonboard_key_file` stays the inventory's, as documented)."""
    written = s.merged.get("key_file")
    by = s.origin.get("key_file", ({}, ""))[1]
    if (
        isinstance(written, AnsibleKeyPath)
        and _expand_path(written)[0] == key_file
        and not by.startswith("vendor ")
    ):
        return Path.cwd()
    return s.path.parent


def _data_dir(s: HostSettings) -> str | None:
    """The data dir (the layers', else the vendor profile's), checked and spelt one way."""
    vendor = s.vendor
    data_dir = s.merged.get("data_dir", vendor.data_dir if vendor else None)
    if data_dir is not None and not isinstance(data_dir, str):
        raise s.err("data_dir", "must be a path string.")
    if data_dir is not None:
        if problem := data_dir_problem(data_dir):
            raise s.err("data_dir", problem)
        data_dir = normal_remote_path(data_dir)
    return data_dir


def _order(s: HostSettings) -> OrderSpec:
    """The merged order, each key's errors pointing at the layer that wrote it."""
    order_src = s.origin.get("order", (LineDict(), f"host {s.name!r}"))
    order_origins: dict[str, tuple[Path, Mapping[str, Any], str]] = {}
    for layer, label in s.ordered:
        if isinstance(layer.get("order"), Mapping):
            order_origins.update({k: (s.file_of(label), layer["order"], label) for k in layer["order"]})
    return parse_order(
        s.merged.get("order") or {}, s.file_of(order_src[1]), order_src[0], order_src[1], order_origins
    )
