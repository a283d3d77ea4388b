"""Loading an inventory: finding the one hosts file of a directory (and refusing what would be
ignored beside it), telling our YAML from Ansible's YAML or INI, and `build`: the native-shaped
mapping validated, its groups, vendors and hosts resolved, jump chains made flat, into an
`Inventory`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gpuonboard.errors import InventoryError
from gpuonboard.inventory import ansible as ansible_inventory
from gpuonboard.inventory import ansible_cfg, ansible_dir, ansible_list
from gpuonboard.inventory.ansible_vars import BELOW_VENDOR
from gpuonboard.inventory.fields import (
    GROUP_KEYS,
    TOP_KEYS,
    as_mapping,
    check_host_keys,
    check_keys,
    host_name_problem,
)
from gpuonboard.inventory.jumphosts import config_jump_hosts, jump_origin
from gpuonboard.inventory.jumps import flat_jumps
from gpuonboard.inventory.limit import ANSIBLE_ORDER
from gpuonboard.inventory.model import Host, Inventory
from gpuonboard.inventory.resolve import resolve_host
from gpuonboard.inventory.rules import MAX_HOSTS, name_problem
from gpuonboard.inventory.sshargs import host_ssh_args, whose
from gpuonboard.inventory.sshlookup import (
    config_alias,
    host_ssh_config,
    prefetch_addresses,
    user_ssh_config,
)
from gpuonboard.inventory.vendors import load_vendors
from gpuonboard.yamlload import LineDict, did_you_mean, parse_yaml, read_text, where


def load(path: Path | str = "inventory", ssh_config: Path | None = None) -> Inventory:
    """Load an inventory directory or file (native YAML, Ansible YAML or Ansible INI), or
    `ansible-inventory:SOURCE`: what `ansible-inventory -i SOURCE --list` prints (any source
    Ansible reads: dynamic inventories, plugins)."""
    if str(path).startswith(ansible_list.PREFIX):
        source = str(path)[len(ansible_list.PREFIX) :]
        data = ansible_list.ansible_inventory_json(source)
        listed = ansible_list.load_from_list(data, source, Path(str(path)))
        _refuse_no_ansible_hosts(listed, Path(str(path)), "YAML")
        return build(listed, Path(source), ssh_config, name_is_address=True)
    path = Path(path)
    if path.is_dir():
        hosts_file = _hosts_file_in(path)
    elif path.exists():
        hosts_file = path
    elif "," in path.name:  # (Ansible's `-i gpu1,gpu2,`: its host_list plugin reads the hosts)
        raise InventoryError(
            f"{path}: inventory not found; a comma-separated host list, as Ansible's -i takes it, is"
            f" read with --inventory ansible-inventory:{path.name} (or write the hosts into an"
            " inventory file)."
        )
    else:
        raise InventoryError(f"{path}: inventory not found; pass --inventory PATH (default ./inventory).")
    raw: dict[str, Any]
    ansible = True  # an Ansible inventory: a host without ansible_host is reached by its name
    text = read_text(hosts_file, InventoryError, "inventory")  # (bounded: `/dev/zero` is refused)
    if ansible_dir.is_script(hosts_file, text):
        raise InventoryError(
            f"{hosts_file}: this inventory is an executable script (it starts with #!), which Ansible"
            " runs to list its hosts while gpuonboard never runs one; pass --inventory"
            f" ansible-inventory:{hosts_file} to read what Ansible reads from it."
        )
    if ansible_inventory.looks_like_ini(hosts_file, text):
        from gpuonboard.inventory import ansible_ini  # (an INI inventory's reader, imported for one)

        _refuse_unread(hosts_file, ini=True)
        if path.is_dir():
            _refuse_second_source(path, hosts_file)
        raw = ansible_ini.load_ini(hosts_file, text)
        _refuse_no_ansible_hosts(raw, hosts_file, "INI")
    else:
        data = parse_yaml(text, hosts_file, InventoryError)
        if data is None:
            raise InventoryError(
                f"{hosts_file}: the inventory is empty; define at least one host under 'hosts:'."
            )
        if not isinstance(data, dict):
            raise InventoryError(
                f"{hosts_file}, line 1: the inventory must be a mapping with a 'hosts:' key."
            )
        if (plugin := ansible_dir.plugin_named(text)) and hosts_file.suffix in (".yml", ".yaml"):
            raise InventoryError(
                f"{hosts_file}: this file configures Ansible's inventory plugin {plugin}, which Ansible"
                " runs to list the hosts (from a cloud's API or another source) while gpuonboard never"
                f" runs a plugin; pass --inventory ansible-inventory:{hosts_file} to read the hosts it"
                " lists."
            )
        meta = data.get("_meta")
        if isinstance(meta, dict) and "hostvars" in meta:
            raise InventoryError(
                f"{hosts_file}: this is what `ansible-inventory --list` prints (its _meta.hostvars), which"
                " Ansible does not read back as an inventory; pass --inventory ansible-inventory:SOURCE"
                " with the inventory it was listed from, or that inventory itself."
            )
        ansible = not ansible_inventory.is_native(data)
        if not ansible:
            _check_no_ansible_vars_dirs(hosts_file.parent)
        else:
            _refuse_unread(hosts_file, ini=False)
            if path.is_dir():
                _refuse_second_source(path, hosts_file)
        raw = ansible_inventory.from_yaml(data, hosts_file) if ansible else data
        if ansible:
            _refuse_no_ansible_hosts(raw, hosts_file, "YAML")
    assert isinstance(raw, dict)
    return build(raw, hosts_file, ssh_config, name_is_address=ansible)


def locate(project: Path, given: str) -> Path | str:
    """The inventory `--inventory` names, a relative path taken from the project folder (`~`
    expanded). `ansible-inventory:SOURCE` keeps its prefix and only SOURCE is resolved (a host
    list like `gpu1,gpu2,` is Ansible's, left as it is), so `load` still sees the prefix. The
    default: the one Ansible's config names (`_config_inventory`), an explicit choice that a
    default does not override; where ./inventory exists too, apart from it, one sentence naming
    both (./inventory had silently won), unless that config is a user-wide one
    (~/.ansible.cfg, /etc/ansible/ansible.cfg: ./inventory, the project's own, is read)."""
    if given.startswith(ansible_list.PREFIX):
        source = given[len(ansible_list.PREFIX) :]
        if source and "," not in source:
            source = str(_under(project, source))
        return ansible_list.PREFIX + source
    if given != DEFAULT_INVENTORY:
        return _under(project, given)
    default = _under(project, given)
    if not default.exists():
        return _config_inventory() or default
    if ansible_cfg.user_wide():
        return default  # (the project's own folder beats a config every project shares: unread)
    named = ansible_cfg.config_inventory()
    if named is None:
        return default
    sources, at = named
    if len(sources) > 1 or _within(sources[0], default):
        return _config_inventory() or default  # (several refused; ./inventory or a file in it read)
    raise InventoryError(
        f"{at}: the Ansible config names the inventory {sources[0]} while gpuonboard's default"
        f" inventory {default} exists too; pass --inventory ./inventory or --inventory {sources[0]}"
        " to say which one to read."
    )


def _within(path: Path, folder: Path) -> bool:
    """`path` is `folder` or lies inside it (both made absolute, `..` and links resolved)."""
    try:
        path.resolve().relative_to(folder.resolve())
    except (OSError, ValueError):
        return False
    return True


DEFAULT_INVENTORY = "inventory"  # (--inventory's default: the project's ./inventory)


def _config_inventory() -> Path | None:
    """The one inventory Ansible's config names (`[defaults]
    inventory`, or ANSIBLE_INVENTORY), as `ansible-playbook` with no `-i` reads it; several
    sources, or one that is not there, is one sentence naming where the config says so."""
    named = ansible_cfg.config_inventory()
    if named is None:
        return None
    sources, at = named
    if len(sources) > 1:
        raise InventoryError(
            f"{at}: the Ansible config names {len(sources)} inventories ({', '.join(map(str, sources))}),"
            " which Ansible reads together while gpuonboard reads one; pass --inventory with the one to use."
        )
    if not sources[0].exists():
        raise InventoryError(
            f"{at}: the inventory the Ansible config names, {sources[0]}, does not exist; fix that"
            " setting, or pass --inventory PATH."
        )
    return sources[0]


def _under(project: Path, given: str) -> Path:
    path = Path(os.path.expanduser(given))
    return path if path.is_absolute() else project / path


HOSTS_FILE_NAMES = ("hosts.yml", "hosts.yaml", "hosts.ini", "hosts")
INVENTORY_SUFFIXES = ansible_dir.INVENTORY_SUFFIXES


def _hosts_file_in(directory: Path) -> Path:
    """The one hosts file of an inventory directory. Only that file is read, so a second hosts
    file or another inventory-looking file beside it (`gpus.yml`, `hosts.ini`) is refused: its
    hosts, groups and order specs would be ignored without a word."""
    try:
        return _one_hosts_file(directory)
    except PermissionError as exc:
        raise InventoryError(
            f"{directory}: cannot read this inventory directory ({exc.strerror}); fix its permissions,"
            " or pass --inventory FILE."
        ) from None


def _one_hosts_file(directory: Path) -> Path:
    found = [directory / n for n in HOSTS_FILE_NAMES if (directory / n).is_file()]
    # a hosts file's name that is a folder (made by a copy or unpacking gone wrong, or given
    # itself): said so, not "no hosts.yml" beside a hosts.yml
    folder = next((directory / n for n in HOSTS_FILE_NAMES if (directory / n).is_dir()), None)
    if folder is None and directory.name in HOSTS_FILE_NAMES:
        folder = directory
    if not found and folder is not None:
        raise InventoryError(
            f"{folder}: this inventory file is a directory, not a file; write the hosts, groups and"
            " orders into a file of that name (see inventory/ in the repository for an example), or"
            " pass --inventory FILE."
        )
    if not found and (others := _inventory_files(directory)):
        # (kubespray's inventory/sample/inventory.ini: Ansible reads any file of a directory)
        more = f" (and {len(others) - 1} more)" if len(others) > 1 else ""
        raise InventoryError(
            f"{directory}: no hosts file (hosts.yml, hosts.yaml, hosts.ini or hosts) in this inventory"
            f" directory, which holds {others[0].relative_to(directory)}{more}; pass --inventory"
            f" {others[0]} to read that file, or --inventory ansible-inventory:{directory} to read the"
            " directory as Ansible does."
        )
    if not found:
        raise InventoryError(
            f"{directory}: no hosts.yml in this inventory directory; create one (see inventory/ in the"
            " repository for an example) or pass --inventory FILE."
        )
    if len(found) > 1:
        raise InventoryError(
            f"{directory}: this inventory directory holds both {found[0].name} and {found[1].name},"
            f" and gpuonboard reads only one; merge them into {found[0].name} and remove the other,"
            " or pass --inventory FILE."
        )
    extra = sorted(
        p.name
        for p in directory.iterdir()
        if p.suffix in INVENTORY_SUFFIXES
        and not p.name.startswith(".")
        and p.is_file()
        and p != found[0]
        and not ansible_dir.skipped_by_config(p, _text_or_empty(p), found[0])  # (Ansible reads nothing)
    )
    if extra and (plugin := ansible_dir.plugin_named(_text_or_empty(directory / extra[0]))):
        raise InventoryError(
            f"{directory / extra[0]}: this file configures Ansible's inventory plugin {plugin}, which"
            f" Ansible runs to list hosts beside those of {found[0].name} while gpuonboard reads only"
            f" {found[0].name} and never runs a plugin; pass --inventory ansible-inventory:{directory}"
            " to read the directory as Ansible does."
        )
    if extra:
        raise InventoryError(
            f"{directory / extra[0]}: gpuonboard reads only {found[0].name} of an inventory directory,"
            f" so the hosts and settings in {extra[0]} would be ignored; move them into {found[0].name},"
            f" or pass --inventory {directory / extra[0]} to use that file instead."
        )
    return found[0]


def _text_or_empty(path: Path) -> str:
    """A file's text, bounded like every input; empty where it cannot be read."""
    try:
        return read_text(path, InventoryError, "inventory")
    except InventoryError:
        return ""


def _inventory_files(directory: Path, depth: int = 1) -> list[Path]:
    """The files of a directory named like an inventory (`inventory.ini`, `cluster.yml`,
    `hosts.json`, a hosts file), sorted, else those of its subfolders (`inventory/mycluster/`, as
    kubespray lays one out: Ansible reads subfolders too), one level down; none for a directory
    that cannot be listed."""
    suffixes = (*INVENTORY_SUFFIXES, ".json", ".toml")
    try:
        entries = sorted(p for p in directory.iterdir() if not p.name.startswith("."))
        found = [p for p in entries if (p.suffix in suffixes or p.name == "hosts") and p.is_file()]
        folders = [p for p in entries if p.name not in ("group_vars", "host_vars") and p.is_dir()]
    except OSError:
        return []
    if found or depth == 0:
        return found
    return [f for sub in folders[:100] for f in _inventory_files(sub, 0)]


def _refuse_unread(hosts_file: Path, ini: bool) -> None:
    """An Ansible hosts file no inventory plugin of the Ansible config reads
    (`ansible_dir.hosts_file_unread`): Ansible reads no host from it, so neither does gpuonboard."""
    if why := ansible_dir.hosts_file_unread(hosts_file, ini):
        raise InventoryError(
            f"{hosts_file}: Ansible reads no host from this {'INI' if ini else 'YAML'} inventory, as {why};"
            " fix the config, or pass --inventory ansible-inventory:SOURCE to read what Ansible reads."
        )


def _refuse_second_source(directory: Path, hosts_file: Path) -> None:
    """An Ansible inventory directory's entry beside the hosts file that Ansible reads too
    (`ansible_dir.second_source`): one sentence naming it, not ignored (a script never run)."""
    if second := ansible_dir.second_source(directory, hosts_file):
        path, kind = second
        where = "" if path.parent == directory else " (it reads the directory's subfolders as well)"
        if kind == ansible_dir.SCRIPT:
            raise InventoryError(
                f"{path}: Ansible reads this file too{where}, {kind}, while gpuonboard reads only"
                f" {hosts_file.name} and never runs a script; pass --inventory ansible-inventory:{directory}"
                " to read the directory as Ansible does, or move the script out of the directory."
            )
        raise InventoryError(
            f"{path}: Ansible reads this file too{where}, {kind}, while gpuonboard reads"
            f" only {hosts_file.name}; move what it defines into {hosts_file.name}, or pass --inventory"
            f" ansible-inventory:{directory} to read the directory as Ansible does."
        )


def _refuse_no_ansible_hosts(raw: Mapping[str, Any], hosts_file: Path, kind: str) -> None:
    """An Ansible inventory with no host (empty, or every host line commented out): the advice
    is Ansible's own way to write a host, not our format's `hosts:`."""
    if raw.get("hosts"):
        return
    how = (
        "a host line like `gpu-1 ansible_host=10.0.0.1` under a [group] section"
        if kind == "INI"
        else "a host under a group's 'hosts:' (all: {hosts: {gpu-1: {ansible_host: 10.0.0.1}}})"
    )
    raise InventoryError(
        f"{hosts_file}: this Ansible {kind} inventory defines no hosts (only comments, empty groups"
        f" or nothing); add {how}."
    )


def _check_no_ansible_vars_dirs(directory: Path) -> None:
    """Our own format does not read Ansible's group_vars/ and host_vars/ (an Ansible inventory
    does): a user, port, key or order spec in them would be silently ignored beside our own
    hosts.yml, so their presence is an input error there."""
    for sub in ("group_vars", "host_vars"):
        if (directory / sub).is_dir():
            raise InventoryError(
                f"{directory / sub}: gpuonboard does not read Ansible's {sub}/ directories, so the"
                f" settings in it would be ignored; move them into the inventory file (a group's or"
                " host's vars), or move the directory away."
            )


def _vendors_dir(raw: Mapping[str, Any], hosts_file: Path) -> Path:
    vd = raw.get("vendors_dir", "vendors")
    return (hosts_file.parent / str(vd)).resolve()


def build(
    raw: dict[str, Any], hosts_file: Path, ssh_config: Path | None = None, name_is_address: bool = False
) -> Inventory:
    """Validate a native-shaped mapping and resolve every host.

    `name_is_address` (an Ansible inventory): a host with no address and no SSH config Host
    entry is reached at its own name, as Ansible does (`10.0.0.7`, `gpu1.example.com`); in our
    own format that host is an error, so a typo in a name never becomes a DNS lookup.
    """
    check_keys(raw, TOP_KEYS, hosts_file, "the inventory")
    defaults = as_mapping(raw.get("defaults") or LineDict(), hosts_file, raw, "defaults")
    check_host_keys(defaults, hosts_file, "'defaults'")
    hosts_raw = _hosts_mapping(raw, hosts_file)
    groups_raw = as_mapping(raw.get("groups") or LineDict(), hosts_file, raw, "groups")
    for gname in groups_raw:
        if problem := name_problem("group", gname):
            raise InventoryError(f"{where(hosts_file, groups_raw, gname)}: {problem}")
    vendors_dir = _vendors_dir(raw, hosts_file)
    vendors = load_vendors(vendors_dir)
    groups, group_vars = _groups(groups_raw, hosts_raw, hosts_file)
    ssh_cfg, ssh_cfg_path = user_ssh_config(ssh_config, raw, defaults, hosts_file)
    hosts: dict[str, Host] = {}
    key_file_origins: dict[str, tuple[str, str]] = {}
    jump_origins: dict[str, str] = {}
    every: dict[str, tuple[tuple[str, ...], list[tuple[Mapping[str, Any], str]], Any]] = {}
    opened: dict[str, Any] = {}  # (the configs an Ansible host's `-F` names, by path)
    for hname, hdef in hosts_raw.items():
        hdef = as_mapping(hdef or LineDict(), hosts_file, hosts_raw, hname, f"host {hname!r}")
        check_host_keys(hdef, hosts_file, f"host {hname!r}")
        member_of = tuple(g for g, ms in groups.items() if hname in ms)
        layers: list[tuple[Mapping[str, Any], str]] = [(_own_defaults(defaults, hdef), "defaults")]
        layers += [(group_vars[g], f"group {g!r}") for g in member_of]
        layers.append((hdef, f"host {hname!r}"))
        # (Ansible's ssh reads the config its args' `-F` names, else ~/.ssh/config)
        # (a host Ansible reaches without ssh, `local`, reads no `-F` of its ssh args)
        ssh = name_is_address and _over_ssh(layers)
        own = host_ssh_config(hname, layers, ssh_cfg, hosts_file, opened) if ssh else ssh_cfg
        every[hname] = (member_of, layers, own)
    if name_is_address:  # (Ansible's ssh applies the config to the address it dials)
        prefetch_addresses((own, layers) for _, layers, own in every.values())
    for hname, (member_of, layers, own) in every.items():
        hosts[hname] = resolve_host(
            hname,
            layers,
            member_of,
            vendors,
            hosts_file,
            own,
            vendors_dir,
            where(hosts_file, hosts_raw, hname),
            name_is_address,
        )
        own_path = getattr(own, "path", None) if own is not ssh_cfg else ssh_cfg_path
        origin = _key_file_origin(hname, layers, hosts[hname], hosts_file, (own, own_path), name_is_address)
        if origin is not None:
            key_file_origins[hname] = origin
        host, ansible = hosts[hname], name_is_address
        if host.jump and (at := jump_origin(hname, layers, host.vendor, hosts_file, own, ansible)):
            jump_origins[hname] = at
    config_hops: dict[str, Host] = {}
    by_config: dict[int, tuple[Any, list[str]]] = {}  # (the hosts of each SSH config read)
    for hname, (_, _, own) in every.items():
        by_config.setdefault(id(own), (own, []))[1].append(hname)
    for own, names in by_config.values():
        own_path = getattr(own, "path", None) if own is not ssh_cfg else ssh_cfg_path
        for spec, hop in config_jump_hosts(hosts, own, defaults, hosts_file, vendors_dir, names).items():
            config_hops.setdefault(spec, hop)
            if hop.key_file and own_path is not None:
                key_file_origins.setdefault(spec, (str(own_path), "ssh_config"))
    hosts = flat_jumps(hosts, hosts_file, hosts_raw, config_hops, jump_origins, ssh_cfg_path)
    return Inventory(
        source=hosts_file,
        hosts=hosts,
        groups=groups,
        vendors=vendors,
        key_file_origins=key_file_origins,
        ansible_order=getattr(raw, ANSIBLE_ORDER, None) or {},
        jump_hosts=config_hops,
    )


def _over_ssh(layers: list[tuple[Mapping[str, Any], str]]) -> bool:
    """Whether the host of these layers is reached over ssh (its last `connection` set, else ssh)."""
    found = (layer["connection"] for layer, _ in reversed(layers) if "connection" in layer)
    return next(found, "ssh") == "ssh"


def _own_defaults(defaults: LineDict, hdef: LineDict) -> LineDict:
    """The defaults of one host: an Ansible host's keys from its `all` vars or the Ansible config
    (ansible_vars.BELOW_VENDOR) over the inventory's, each keeping its origin and layer."""
    low = getattr(hdef, BELOW_VENDOR, None)
    if not low:
        return defaults
    own = LineDict({**defaults, **low})
    own.key_lines = {**getattr(defaults, "key_lines", {}), **getattr(low, "key_lines", {})}
    own.key_sources = {**getattr(defaults, "key_sources", {}), **getattr(low, "key_sources", {})}
    for key in low:
        if key not in getattr(low, "key_sources", {}):
            own.key_sources.pop(key, None)
    own.key_layers = {**getattr(defaults, "key_layers", {}), **getattr(low, "key_layers", {})}  # type: ignore[attr-defined]
    own.line = defaults.line
    return own


def _hosts_mapping(raw: Mapping[str, Any], hosts_file: Path) -> LineDict:
    """The inventory's `hosts:` mapping: present, at most MAX_HOSTS, every name usable."""
    hosts_raw = raw.get("hosts")
    if not hosts_raw:
        raise InventoryError(f"{where(hosts_file, raw, 'hosts')}: no hosts defined; add a 'hosts:' mapping.")
    hosts_raw = as_mapping(hosts_raw, hosts_file, raw, "hosts")
    if len(hosts_raw) > MAX_HOSTS:
        raise InventoryError(
            f"{where(hosts_file, raw, 'hosts')}: the inventory defines {len(hosts_raw):,} hosts, more"
            f" than the {MAX_HOSTS:,} hosts an inventory may hold; split it."
        )
    for hname in hosts_raw:
        if problem := name_problem("host", hname) or host_name_problem(str(hname)):
            raise InventoryError(f"{where(hosts_file, hosts_raw, hname)}: {problem}")
    return hosts_raw


def _groups(
    groups_raw: LineDict, hosts_raw: Mapping[str, Any], hosts_file: Path
) -> tuple[dict[str, tuple[str, ...]], dict[str, Mapping[str, Any]]]:
    """Each group's member hosts and vars, in file order; a member that is no host, or a group
    named like a host it does not hold, is an InventoryError."""
    groups: dict[str, tuple[str, ...]] = {}
    group_vars: dict[str, Mapping[str, Any]] = {}
    for gname, gdef in groups_raw.items():
        gdef = as_mapping(gdef or LineDict(), hosts_file, groups_raw, gname, f"group {gname!r}")
        check_keys(gdef, GROUP_KEYS, hosts_file, f"group {gname!r}")
        members = gdef.get("hosts") or []
        if not isinstance(members, list) or not all(isinstance(m, str) for m in members):
            raise InventoryError(
                f"{where(hosts_file, gdef, 'hosts')}: group {gname!r} 'hosts' must be a list of host names."
            )
        for m in members:
            if m not in hosts_raw:
                raise InventoryError(
                    f"{where(hosts_file, gdef, 'hosts')}: group {gname!r} lists unknown host {m!r};"
                    f" define it under 'hosts:' or remove it from the group"
                    f"{did_you_mean(m, hosts_raw) or '.'}"
                )
        gvars = as_mapping(gdef.get("vars") or LineDict(), hosts_file, gdef, "vars", f"group {gname!r} vars")
        check_host_keys(gvars, hosts_file, f"group {gname!r} vars")
        groups[gname] = tuple(members)
        group_vars[gname] = gvars
        if gname in hosts_raw and gname not in members and members:
            raise InventoryError(
                f"{where(hosts_file, groups_raw, gname)}: group {gname!r} has the name of a host that is"
                f" not in it, so --limit {gname} would take that host and the group's hosts"
                f" ({', '.join(members)}) alike; rename the group or the host."
            )
    return groups, group_vars


def _key_file_origin(
    name: str,
    layers: list[tuple[Mapping[str, Any], str]],
    host: Host,
    path: Path,
    config: tuple[Any, Path | None],
    ansible: bool,
) -> tuple[str, str] | None:
    """Where host's key_file was set, as `pick` chose it: a host or group layer (in an Ansible
    inventory, its `all` vars too), else the SSH config's IdentityFile of its Host entry (of its
    address, in an Ansible inventory), else the vendor profile or defaults."""
    ssh_cfg, ssh_cfg_path = config
    if not host.key_file:
        return None
    found: tuple[Mapping[str, Any], str] | None = None
    for layer, label in layers:
        if "key_file" in layer:
            found = (layer, label)
    # (an Ansible host's ssh tries ansible_ssh_args' files, its key file, then the other args')
    args = host_ssh_args(name, layers, path) if ansible and host.connection == "ssh" else None
    for at, label in _args_key(name, args, True, host.key_file):
        return at, label
    if found is not None and found[1].startswith(("host ", "group ", *(("defaults",) if ansible else ()))):
        return where(path, found[0], "key_file"), found[1]
    for at, label in _args_key(name, args, False, host.key_file):
        return at, label
    alias = config_alias(name, layers, ssh_cfg, ansible)
    if alias is not None and "identityfile" in ssh_cfg.lookup(alias):
        return str(ssh_cfg_path), "ssh_config"
    vendor = host.vendor
    if vendor is not None and "key_file" in vendor.host_defaults:
        return where(Path(vendor.source), vendor.host_defaults, "key_file"), f"vendor {vendor.id!r}"
    if found is not None:
        return where(path, found[0], "key_file"), found[1]
    return None


def _args_key(name: str, args: Any, before: bool, key_file: str) -> list[tuple[str, str]]:
    """Where ssh args (`before`: ansible_ssh_args, else the common and extra args) name the
    key file `key_file`: [(`file, line N`, `` `-i KEY` from its ansible_ssh_common_args ``)]."""
    files = args.key_files(before) if args is not None else ()
    return [
        (at, f"`{written}` from {whose(name, label)}") for f, written, (at, label) in files if f == key_file
    ]
