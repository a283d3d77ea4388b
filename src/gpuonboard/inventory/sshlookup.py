"""The user's SSH config as the loader consults it: which file (load()'s ssh_config argument, the inventory's
`ssh_config`, $GPUONBOARD_SSH_CONFIG or ~/.ssh/config), read by whom (OpenSSH itself, `ssh -G`,
whenever `ssh` is installed: `sshresolve`; else the own bounded reader: `sshconfig`), which
hosts take their settings from it, and those settings made followable (a `ssh -W`
ProxyCommand as the ProxyJump it means, another ProxyCommand carried to the connection; what
the own reader cannot follow refused in one sentence naming the file and line).
"""

from __future__ import annotations

import os
import pwd
import re
import shlex
import socket
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from gpuonboard.errors import InventoryError
from gpuonboard.inventory.sshargs import ANSIBLE_SSH_ARGS, whose
from gpuonboard.inventory.sshresolve import (
    CONNECTION_KEYS,
    MAX_CONFIG_BYTES,
    PROXY_COMMAND_TOKENS,
    OpenSSHConfig,
    bad_token,
    expand_tokens,
    ssh_program,
)
from gpuonboard.once import lazy_re
from gpuonboard.yamlload import read_bounded, read_text, where

# the lines of an SSH config that make `ssh -G` run a command, and those that read other files
_MATCH_EXEC = lazy_re(r"^[ \t]*match\b.*\bexec\b", re.IGNORECASE | re.MULTILINE)
_INCLUDE = lazy_re(r"^[ \t]*include[ \t]*(?:=[ \t]*|[ \t])(.+)$", re.IGNORECASE | re.MULTILINE)


def _include_problem(text: str, path: Path, limit: int, trail: tuple[str, ...] = ()) -> str | None:
    """Why `ssh -G` must not read this config (a sentence naming the file and line), or None: an
    Include of a file with a `Match exec` (the command would run), or of what cannot be read as
    OpenSSH reads it (relative paths under ~/.ssh, globs): a file that loops back, one past
    `limit`, a FIFO or device (read without blocking), Includes nested past OpenSSH's 16 levels."""
    import glob
    import shlex

    trail = (*trail, os.path.realpath(path))
    for match in _INCLUDE.finditer(text):
        at = f"{path}, line {text.count(chr(10), 0, match.start()) + 1}"
        try:
            patterns = shlex.split(match.group(1), comments=True)
        except ValueError:
            return f"{at}: the Include line has an unbalanced quote; fix it."
        for pattern in patterns:
            name = os.path.expanduser(pattern)
            name = name if os.path.isabs(name) else os.path.join(os.path.expanduser("~/.ssh"), name)
            for found in sorted(glob.glob(name))[:256]:
                if os.path.realpath(found) in trail:
                    loop = "this file" if os.path.realpath(found) == trail[-1] else found
                    return f"{at}: Include loops back to {loop}; remove it."
                if len(trail) > 16:
                    return f"{at}: Includes nest more than 16 levels deep (OpenSSH's limit); flatten them."
                shown = pattern if pattern == found else f"{pattern} ({found})"
                try:  # (without blocking, regular files only, at most `limit` bytes)
                    data = read_bounded(Path(found), InventoryError, "SSH config", limit)
                except InventoryError as exc:
                    return f"{at}: Include {shown} cannot be read: {exc.message.removeprefix(f'{found}: ')}"
                included = data.decode("utf-8", "replace")
                if exec_line := _MATCH_EXEC.search(included):
                    line = included.count("\n", 0, exec_line.start()) + 1
                    return (
                        f"{at}: Include {shown} brings a `Match exec` (its line {line}):"
                        " gpuonboard runs no command from an inventory's own SSH config; remove it, or"
                        " give the hosts their address (and user, key_file, jump) in the inventory."
                    )
                if problem := _include_problem(included, Path(found), limit, trail):
                    return problem
    return None


def own_reader_reason() -> str:
    """Why gpuonboard reads an SSH config itself (`without OpenSSH's ssh on PATH`, or, with
    ssh installed, because the inventory's own config holds a `Match exec`)."""
    if ssh_program() is None:
        return "without OpenSSH's `ssh` on PATH"
    return "as this inventory's own SSH config has a `Match exec` (never run), so `ssh` does not read it,"


def user_ssh_config(
    explicit: Path | None, raw: Mapping[str, Any], defaults: Mapping[str, Any], hosts_file: Path
) -> tuple[Any, Path | None]:
    """The SSH config (and its path) from load()'s ssh_config argument, the inventory's ssh_config key,
    $GPUONBOARD_SSH_CONFIG (one of these that is no file: an InventoryError; /dev/null: none) or
    ~/.ssh/config, as OpenSSH reads it (an OpenSSHConfig, the hosts without an address in `raw`
    resolved at once) where `ssh` is installed, else as the own reader does (a UserSSHConfig);
    (None, None) when there is none."""
    candidate = explicit
    if candidate is None and raw.get("ssh_config"):
        candidate = (hosts_file.parent / os.path.expanduser(str(raw["ssh_config"]))).resolve()
        if not candidate.is_file():
            raise InventoryError(f"{where(hosts_file, raw, 'ssh_config')}: SSH config {candidate} not found.")
    named = "the ssh_config argument" if candidate is not None else None
    if candidate is None and (env := os.environ.get("GPUONBOARD_SSH_CONFIG")):
        candidate, named = Path(os.path.expanduser(env)), "$GPUONBOARD_SSH_CONFIG"  # (`~/...` quoted)
    if candidate is None:
        candidate = Path.home() / ".ssh" / "config"
    if named is not None and str(candidate) not in NO_CONFIG and not candidate.is_file():
        # (a typo here read no config at all: hosts dialled without the jump host, user and
        # key their Host blocks give, as `ssh -F FILE` would never do: it refuses the file)
        what = "a directory" if candidate.is_dir() else "not a file" if candidate.exists() else "not there"
        raise InventoryError(
            f"{named} names the SSH config {candidate}, which is {what}; fix the path, or name"
            " /dev/null to read no SSH config."
        )
    if not candidate.is_file():
        return None, None
    named_by_inventory = explicit is None and bool(raw.get("ssh_config"))
    return config_at(candidate, named_by_inventory, _addressless(raw)), candidate


def config_at(candidate: Path, named_by_inventory: bool, prefetch: Iterable[str] = ()) -> Any:
    """The SSH config at `candidate` as OpenSSH reads it (an OpenSSHConfig, the hosts of
    `prefetch` resolved at once), else as the own reader does (a UserSSHConfig)."""
    text = read_text(candidate, InventoryError, "SSH config", MAX_CONFIG_BYTES)  # (bounded)
    program = ssh_program()
    # an inventory's own ssh_config (a project file, perhaps someone else's; or the file an
    # Ansible host's `-F` names) reaches `ssh -G` only when it can run nothing there: a `Match
    # exec` in it, or an Include that could bring one or cannot be read (a FIFO, a loop, past
    # the limit), sends it to the own reader, which runs nothing and refuses that line in one
    # sentence only for a host that takes its settings from the config (never at load: the
    # hosts given an address need nothing from it)
    problem = None
    if named_by_inventory and program is not None and not _MATCH_EXEC.search(text):
        problem = _include_problem(text, candidate, MAX_CONFIG_BYTES)
    if named_by_inventory and (problem or _MATCH_EXEC.search(text)):
        program = None
    if program is not None:
        config = OpenSSHConfig(candidate, program)
        config.prefetch(prefetch)
        return config
    # (paramiko's parser, made to run nothing: imported only here, where no `ssh` reads it)
    from gpuonboard.inventory.sshconfig import UserSSHConfig

    try:
        own = UserSSHConfig.from_text_at(text, candidate)
    except Exception as exc:  # paramiko raises plain exceptions on bad lines
        raise InventoryError(f"{candidate}: cannot parse this SSH config ({exc}).") from None
    own.include_problem = problem
    return own


_SSH_VALUE_OPTS = set("BbcDEeFIiJLlmOoPpQRSWw")  # (ssh(1) options that take a value)
NO_CONFIG = ("none", "/dev/null")  # (`ssh -F none`: no config file is read; /dev/null is empty)


# an Ansible template, which Ansible renders before ssh reads the words (`{{ playbook_dir }}`)
_TEMPLATE = lazy_re(r"\{\{.*?\}\}|\{%.*?%\}", re.S)


def config_file_arg(args: str) -> str | None:
    """The file `-F FILE` names in ssh's arguments ('-F ./ssh_config -o X=y' -> './ssh_config';
    of several, the last, as ssh takes it), or None. A template in them is one word with what
    is around it (`-F {{ playbook_dir }}/ssh_config`), as Ansible renders it to one."""
    templates = _TEMPLATE.findall(args)
    numbers = iter(range(len(templates)))
    marked = _TEMPLATE.sub(lambda _: f"\0{next(numbers)}\0", args)
    try:
        words = iter(shlex.split(marked))  # (a blank inside `{{ ... }}` splits no word)
    except ValueError:
        return None
    found = _file_arg(words)
    return None if found is None else re.sub(r"\0(\d+)\0", lambda m: templates[int(m.group(1))], found)


def unrendered(file: str) -> bool:
    """Whether an `-F` file is an Ansible template not rendered (`{{ playbook_dir }}/ssh_config`)."""
    return _TEMPLATE.search(file) is not None


def _file_arg(words: Iterator[str]) -> str | None:
    """config_file_arg of ssh's argument words."""
    found = None
    for word in words:
        if word == "--":
            break
        if not word.startswith("-") or word == "-":
            continue
        for i, letter in enumerate(word[1:], 2):
            if letter in _SSH_VALUE_OPTS:  # ('-F file', '-Ffile', '-qF file')
                value = word[i:] or next(words, None)
                found = value if letter == "F" and value else found
                break
    return found


def ansible_config_file(
    layers: Iterable[tuple[Mapping[str, Any], str]], path: Path
) -> tuple[str, str, str] | None:
    """The SSH config Ansible's ssh reads for a host whose ssh args name one with `-F`, where
    it is named and the file and line that say it: ('./ssh_config', "ansible_ssh_common_args of
    group 'all'", "inv.ini, line 4"); the group, host or Ansible config that set the args (a
    merged Ansible host's vars know it). Each of ansible_ssh_common_args and
    ansible_ssh_extra_args is the last layer's (a host's replaces its groups' whole), and ssh
    takes the last -F of the common args, then the extra args; None where none names one."""
    args: dict[str, tuple[str, str, str]] = {}
    for layer, label in layers:
        given = layer.get("vars")
        for key in ANSIBLE_SSH_ARGS:
            if isinstance(given, Mapping) and isinstance(given.get(key), str):
                who = getattr(given, "key_layers", {}).get(key, (label,))[0]
                args[key] = (given[key], who, where(path, given, key))
    found = None
    for key in (k for k in ANSIBLE_SSH_ARGS if k in args):
        value, label, at = args[key]
        if (file := config_file_arg(value)) is not None:
            found = (file, f"{key} of {label}", at)
    return found


def host_ssh_config(
    name: str, layers: Iterable[tuple[Mapping[str, Any], str]], cfg: Any, path: Path, opened: dict[str, Any]
) -> Any:
    """The SSH config Ansible's ssh reads for this host of an Ansible inventory: the file `-F`
    names in its ssh args (`ssh -G -F FILE`; none for `-F /dev/null` or `-F none`), else `cfg`
    (~/.ssh/config, or the one given). A relative FILE is read from the current directory, as
    ssh reads it where Ansible runs; one that is no file is an InventoryError naming the host
    and the file and line of the args. `opened`: the configs read so far, by path (one per
    file, its lookups cached)."""
    found = ansible_config_file(layers, path)
    if found is None:
        return cfg
    file, label, written_at = found
    origin = whose(name, label)
    if file in NO_CONFIG:
        return None
    if unrendered(file):
        raise InventoryError(
            f"{written_at}: host {name!r} has `-F {file}` in {origin}, an Ansible template that"
            " Ansible renders only when a play connects (`ansible-inventory` keeps it as written),"
            " so the SSH config its ssh reads is not known: write that config's path there instead"
            " (`-F ./ssh_config` is read from the directory gpuonboard runs in)."
        )
    at = Path(os.path.expanduser(file)).absolute()
    if str(at) not in opened:
        if not at.is_file():
            raise InventoryError(
                f"{written_at}: host {name!r} has `-F {file}` in {origin}, and {at} is no file"
                " (ssh reads a relative path from the directory it runs in); run gpuonboard where"
                " Ansible runs, or write the config's full path."
            )
        opened[str(at)] = config_at(at, named_by_inventory=True)
    return opened[str(at)]


def refuse_include_problem(cfg: Any) -> None:
    """Raise the sentence saying why an Include of the inventory's own SSH config kept it from
    `ssh -G` (a `Match exec`, a FIFO, a loop...), where a host would need what it Includes."""
    if problem := getattr(cfg, "include_problem", None):
        raise InventoryError(problem)


def _addressless(raw: Mapping[str, Any]) -> list[str]:
    """The hosts of a native-shaped inventory whose own entry gives no address: those that
    may take their settings from the SSH config (resolved together, concurrently)."""
    hosts = raw.get("hosts")
    if not isinstance(hosts, Mapping):
        return []
    return [
        str(name) for name, entry in hosts.items() if not (isinstance(entry, Mapping) and "address" in entry)
    ]


def prefetch_addresses(hosts: Iterable[tuple[Any, list[tuple[Mapping[str, Any], str]]]]) -> None:
    """Resolve together, concurrently, the addresses an Ansible inventory's hosts give, each in
    the SSH config its ssh reads (`config_alias` looks each one up there, one `ssh -G` each):
    `hosts`, each host's config and settings layers."""
    by_config: dict[int, tuple[OpenSSHConfig, list[str]]] = {}
    for cfg, layers in hosts:
        address = next((layer["address"] for layer, _ in reversed(layers) if "address" in layer), None)
        if isinstance(cfg, OpenSSHConfig) and isinstance(address, str) and address.strip():
            by_config.setdefault(id(cfg), (cfg, []))[1].append(
                address.strip().removeprefix("[").removesuffix("]")
            )
    for cfg, addresses in by_config.values():
        cfg.prefetch(addresses)


def followable(name: str, sshc: Mapping[str, Any], cfg: Any) -> dict[str, Any]:
    """The SSH config settings of a host that takes them from there, with a ProxyCommand of the
    form `ssh -W %h:%p [user@]bastion` as the ProxyJump it means and any other carried (a
    token OpenSSH does not expand in it refused). From the own reader: the hostname in lower
    case as OpenSSH writes it; an Include (not followed: its Host blocks would be silently
    missed) or a token in HostName other than %h is an InventoryError naming the file."""
    cfg_path = getattr(cfg, "path", None) or "the SSH config"
    out = {k: v for k, v in sshc.items() if not (k in ("proxyjump", "proxycommand") and v == "none")}
    if not isinstance(cfg, OpenSSHConfig):
        _own_reader_limits(name, out, cfg, cfg_path)
    if "include" in out:
        refuse_include_problem(cfg)
        line = getattr(cfg, "include_lines", {}).get(str(out["include"]).strip())
        raise InventoryError(
            f"{cfg_path}{f', line {line}' if line else ''}: host {name!r} takes its settings from this"
            f" SSH config, and {own_reader_reason()} gpuonboard does not follow Include:"
            f"{' install the OpenSSH client,' if ssh_program() is None else ''} copy the Host block"
            f" into {cfg_path}, or give the host an address in the inventory."
        )
    command = out.pop("proxycommand", None)
    if command is not None and command != "none" and "proxyjump" not in out:
        from gpuonboard.inventory.sshargs import jump_of_proxy_command

        raw = cfg.unexpanded(name, "proxycommand") if hasattr(cfg, "unexpanded") else command
        try:
            out["proxyjump"] = jump_of_proxy_command(str(raw))
        except ValueError:
            bad = bad_token(str(raw), PROXY_COMMAND_TOKENS)
            if bad is not None:
                raise InventoryError(
                    f"{cfg_path}: host {name!r} takes the ProxyCommand {str(raw)!r} from this SSH"
                    f" config, whose token {bad} OpenSSH does not expand there (it knows %h, %n, %p,"
                    " %r and %%); fix the ProxyCommand, or give the host its address and jump in the"
                    " inventory."
                ) from None
            out["proxycommand"] = str(raw)
    if isinstance(out.get("connecttimeout"), str) and out["connecttimeout"].isdigit():
        out["connecttimeout"] = int(out["connecttimeout"])
    return out


def _own_reader_limits(name: str, out: dict[str, Any], cfg: Any, cfg_path: Any) -> None:
    """What the own reader (no `ssh` installed) cannot follow, refused in one sentence naming
    the file (and line): an Include, a token other than %h and %% in HostName (OpenSSH refuses
    it too). The hostname is written in lower case, as OpenSSH does."""
    if "include" in out:
        return  # (followable's own sentence, naming the line)
    raw = cfg.unexpanded(name, "hostname") if hasattr(cfg, "unexpanded") else None
    if isinstance(raw, str):
        bad = bad_token(raw, "%h")
        if bad is not None:
            raise InventoryError(
                f"{cfg_path}: host {name!r} takes the HostName {raw!r} from this SSH config, whose token"
                f" {bad} OpenSSH does not expand in a HostName (only %h and %%); fix the HostName, or"
                " give the host its address in the inventory."
            )
    if isinstance(out.get("hostname"), str):
        out["hostname"] = out["hostname"].lower()
    if isinstance(out.get("proxyjump"), str):  # (ProxyJump takes ssh:// URIs too)
        out["proxyjump"] = ",".join(h.removeprefix("ssh://").rstrip("/") for h in out["proxyjump"].split(","))
    tokens = _path_tokens(name, out)
    for key, allowed in (("identityfile", "%dhlur"), ("certificatefile", "%dhlnpru")):
        written = cfg.unexpanded(name, key) if hasattr(cfg, "unexpanded") else None
        if not written:
            continue
        files = []
        for value in [written] if isinstance(written, str) else written:
            text, bad = expand_tokens(str(value), tokens, allowed)
            if bad is not None:
                raise InventoryError(
                    f"{cfg_path}: host {name!r} takes the {key} {value!r} from this SSH config, whose"
                    f" token {bad} gpuonboard's own reader does not expand (without OpenSSH's `ssh` on"
                    " PATH); write the path out, or set key_file for the host in the inventory."
                )
            files.append(tokens["d"] + text[1:] if text == "~" or text.startswith("~/") else text)
        out[key] = files


def _path_tokens(name: str, out: Mapping[str, Any]) -> dict[str, str]:
    """The values of the tokens of an IdentityFile or CertificateFile path (as OpenSSH's)."""
    entry = pwd.getpwuid(os.getuid())
    return {
        "%": "%",
        "d": entry.pw_dir,
        "h": str(out.get("hostname") or name.lower()),
        "l": socket.gethostname(),
        "n": name,
        "p": str(out.get("port") or 22),
        "r": str(out.get("user") or entry.pw_name),
        "u": entry.pw_name,
    }


def uses_ssh_config_entry(name: str, layers: Iterable[tuple[Mapping[str, Any], str]], cfg: Any) -> bool:
    """Whether the SSH config's `Host <name>` entry supplies this host's settings: only for a
    host whose address the inventory does not give. With an address (`ansible_host`), that entry
    may describe another machine (an old rental of the same name); as in Ansible, which then
    looks the address up, its Port and User must not be mixed into the inventory's host."""
    if any("address" in layer for layer, _ in layers):
        return False
    if isinstance(cfg, OpenSSHConfig):
        return cfg.resolution(name).covered
    if name in ssh_config_aliases(cfg):
        return True
    # (a host matched only by a pattern or a Match block: covered when it sets a connection
    # setting, as under OpenSSH)
    found = cfg.lookup(name) if cfg is not None else {}
    hostname = found.get("hostname", name.lower())
    if not (set(found) & (CONNECTION_KEYS - {"hostname"}) or hostname not in (name, name.lower())):
        return False
    cfg._gpuonboard_aliases = ssh_config_aliases(cfg) | {name}  # (then reached at this name)
    return True


def config_alias(
    name: str, layers: Iterable[tuple[Mapping[str, Any], str]], cfg: Any, by_address: bool
) -> str | None:
    """The name this host's settings are looked up at in the SSH config, or None (it takes none
    from it): its own name where the inventory gives no address (a Host alias); in an Ansible
    inventory (`by_address`), else the address the inventory gives (`ansible_host`), where the
    config sets a connection setting for it: Ansible runs `ssh ADDRESS`, which applies the
    config's `Host ADDRESS` / `Host 10.20.*` block (its HostName, User, Port, IdentityFile,
    ProxyJump) to what the inventory leaves unset."""
    layers = list(layers)
    if uses_ssh_config_entry(name, layers, cfg):
        return name
    address = next((layer["address"] for layer, _ in reversed(layers) if "address" in layer), None)
    if not by_address or cfg is None or not isinstance(address, str):
        return None
    from gpuonboard.inventory.fields import bad_host_char

    address = address.strip()
    if address.startswith("[") and address.endswith("]"):  # ([2001:db8::7], as the inventory allows)
        address = address[1:-1]
    if not address or address.startswith("-") or bad_host_char(address) is not None:
        return None  # (refused as an address later, naming its line)
    try:
        return address if uses_ssh_config_entry(address, (), cfg) else None
    except InventoryError as exc:  # (`ssh -G` refuses the config: name the host, not only its address)
        raise InventoryError(_address_refused(exc.message, name, address)) from None


def _address_refused(message: str, name: str, address: str) -> str:
    """The sentence of a config `ssh -G` refuses for an Ansible host's address, naming the host
    and its ansible_host, and with advice for a host that has its address already."""
    message = message.replace(f"host {address!r}", f"host {address!r} (the ansible_host of host {name!r})", 1)
    return re.sub(
        r", or give .* its address in the inventory\.$",
        ", which Ansible's ssh reads for that host too, or name another config with `-F FILE` in its"
        " ansible_ssh_common_args (`-F /dev/null` for none).",
        message,
    )


def ssh_config_aliases(cfg: Any) -> frozenset[str]:
    """The plain host names (no pattern) of the SSH config's Host lines, worked out once per
    config (per host, 1,000 hosts x 8,000 Host lines took over 30 s)."""
    if cfg is None:
        return frozenset()
    if isinstance(cfg, OpenSSHConfig):  # (the aliases resolved so far that the config covers)
        return frozenset(cfg.get_hostnames())
    aliases: frozenset[str] | None = getattr(cfg, "_gpuonboard_aliases", None)
    if aliases is None:
        aliases = frozenset(h for h in cfg.get_hostnames() if not any(c in h for c in "*?!"))
        cfg._gpuonboard_aliases = aliases
    return aliases


def config_extras(sshc: Mapping[str, Any], inventory_key_file: bool, inventory_jump: bool) -> dict[str, Any]:
    """The Host fields the SSH config adds beyond address, port, user, key_file and jump: the
    IdentityFiles after the first and the CertificateFiles (unless the inventory's host or group
    names the key_file), and a ProxyCommand (unless it names the jump)."""
    out: dict[str, Any] = {}
    if not inventory_key_file:
        files = [str(f) for f in sshc.get("identityfile") or ()]
        if len(files) > 1:
            out["extra_key_files"] = tuple(os.path.abspath(os.path.expanduser(f)) for f in files[1:])
        certs = [str(f) for f in sshc.get("certificatefile") or ()]
        if certs:
            out["certificate_files"] = tuple(os.path.abspath(os.path.expanduser(f)) for f in certs)
    command = sshc.get("proxycommand")
    if not inventory_jump and isinstance(command, str) and command and command != "none":
        out["proxy_command"] = command
    return out
