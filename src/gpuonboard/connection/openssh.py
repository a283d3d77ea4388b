"""OpenSSH client settings for tools that open their own transport (rsync -e ssh).

One generated ssh_config per host carries the same key, user, port and jump chain as the
paramiko connection, with host keys checked strictly against OUR known_hosts only. Jump
hosts are aliases in the same file, because options given on ssh's command line apply to
the target alone, not to the hops ProxyJump opens.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from gpuonboard import atomicfile, shell
from gpuonboard.inventory import HOST_CHARS, Host, Inventory, bad_host_char


def _ssh_value(value: str) -> str:
    """Quote a value for an ssh_config line (double quotes; a '"' cannot be represented)."""
    if '"' in value or "\n" in value:
        raise ValueError(
            f"{value!r} holds a double quote or a line break, which OpenSSH's config (used by rsync)"
            " cannot hold; rename that path (or change that inventory field)"
        )
    return f'"{value}"'


def _ssh_path(value: str) -> str:
    """A value for an ssh_config line that ssh %-expands (UserKnownHostsFile, IdentityFile,
    HostName, ControlPath): a `%` in it written as `%%` (a project under `100%done/` read `%d`
    as the home directory, so no host key was ever found there; an IPv6 zone `fe80::1%eth0`
    stopped ssh with "unknown key %e"). Only there: where ssh does not expand (User, Port)
    `%%` would stay two characters."""
    return _ssh_value(value.replace("%", "%%"))


def _ssh_host(hop: Host) -> str:
    """The HostName value for `hop`. OpenSSH puts it into a shell command for a jump chain
    (ProxyJump runs `ssh -W '[%h]:%p' HOP` through sh, and so does our ProxyCommand): an
    address holding a quote and `$(...)` ran that command on this machine, so only the
    characters of a host name or IP address are accepted."""
    if not HOST_CHARS.fullmatch(hop.address):
        bad = bad_host_char(hop.address)
        raise ValueError(
            f"host {hop.name!r}: address {hop.address!r} is not a host name or IP address (it holds"
            f" {bad!r}, which OpenSSH, used by rsync, would pass to a shell); fix its 'address'"
            " in the inventory"
        )
    return _ssh_path(hop.address)


def config_text(host: Host, inventory: Inventory | None, known_hosts: Path) -> tuple[str, str]:
    """An ssh_config text for OpenSSH (used by rsync -e) with the host's settings, and its alias.

    Same key, user, port and jump chain as the paramiko connection; host keys are checked
    strictly against OUR known_hosts only (no ~/.ssh/known_hosts, nothing ever added).
    Jump hosts are aliases in the same file, so ProxyJump's inner ssh sees the same settings.
    """
    from gpuonboard.connection.base import MAX_JUMP_HOPS, connect_timeout

    if len(host.jump) > MAX_JUMP_HOPS:  # (as the paramiko connection: 1,200 nested ssh otherwise)
        raise ValueError(
            f"host {host.name!r}: its jump chain has {len(host.jump):,} hops, and gpuonboard opens at"
            f" most {MAX_JUMP_HOPS}; shorten the host's 'jump' in the inventory"
        )
    chain = [*hop_chain(host, inventory), host]
    lines: list[str] = []
    previous = None
    for i, hop in enumerate(chain):
        alias = f"gpuonboard-hop{i}" if i < len(chain) - 1 else "gpuonboard-target"
        lines += [
            f"Host {alias}",
            f"  HostName {_ssh_host(hop)}",
            f"  Port {int(hop.port)}",
            f"  User {_ssh_value(hop.user)}",
            f"  UserKnownHostsFile {_ssh_path(str(known_hosts.resolve()))}",
            "  GlobalKnownHostsFile /dev/null",
            "  StrictHostKeyChecking yes",
            "  UpdateHostKeys no",
            "  CheckHostIP no",
            "  BatchMode yes",
            f"  ConnectTimeout {max(1, round(connect_timeout(hop)))}",
            "  ServerAliveInterval 15",
            "  ServerAliveCountMax 4",
        ]
        if hop.key_file:
            lines += [f"  IdentityFile {_ssh_path(hop.key_file)}", "  IdentitiesOnly yes"]
        lines += [f"  IdentityFile {_ssh_path(f)}" for f in hop.extra_key_files]
        lines += [f"  CertificateFile {_ssh_path(f)}" for f in hop.certificate_files]
        if previous:
            lines.append(f"  ProxyJump {previous}")
        elif hop.proxy_command:  # (the SSH config's; %n is the host's name, not this file's alias)
            lines.append(f"  ProxyCommand {_proxy_command(hop)}")
        previous = alias
    return "\n".join(lines) + "\n", "gpuonboard-target"


def _proxy_command(hop: Host) -> str:
    """The hop's ProxyCommand for this file: %n written out as the host's name (ssh expands
    the other tokens to the same values here)."""
    from gpuonboard.inventory.sshresolve import PROXY_COMMAND_TOKENS, expand_tokens

    keep = {"%": "%%", "h": "%h", "p": "%p", "r": "%r", "n": hop.name.replace("%", "%%")}
    command, _ = expand_tokens(hop.proxy_command or "", keep, PROXY_COMMAND_TOKENS)
    if "\n" in command or "\r" in command:
        raise ValueError(f"host {hop.name!r}: its ProxyCommand holds a line break")
    return command


def hop_chain(host: Host, inventory: Inventory | None) -> list[Host]:
    """The jump hosts in front of host, resolved like the paramiko connection resolves them."""
    from gpuonboard.connection.login import _hop_host

    return [_hop_host(h, inventory, host) for h in host.jump]


def write_for(
    host: Host, inventory: Inventory | None, known_hosts: Path, project: Path, what: str = "rsync"
) -> tuple[Path, str] | str:
    """The host's config written (config_text + write_config): (its path, the host's alias in
    it); else why it cannot be, one sentence naming `what` it is for: a double quote or a line
    break in a path it names (the project's, the known_hosts file's, a key's), or the file not
    writable. Never raises (it also runs in threads)."""
    try:
        text, alias = config_text(host, inventory, known_hosts)
        return write_config(project, host, text), alias
    except ValueError as exc:
        return str(exc)
    except OSError as exc:
        return (
            f"cannot write the OpenSSH config for {what} in {project / '.gpuonboard' / 'ssh'}"
            f" ({exc.strerror or exc}); make that directory writable (or free space on this machine),"
            " then rerun"
        )


def write_config(project: Path, host: Host, text: str) -> Path:
    """Write the config as `.gpuonboard/ssh/<id>.config`, mode 0600, and return its path.

    The id is a hash of the host's name AND the text: two runs at once for the same host with
    different settings (another `--known-hosts`, key or jump chain) each get their own file (one
    file per host let one run's rsync check host keys against the other run's known_hosts);
    runs with the same settings share one, rewritten with the same bytes."""
    directory = project / ".gpuonboard" / "ssh"
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    digest = hashlib.sha256(f"{host.name}\0{text}".encode("utf-8", "surrogateescape"))
    path = directory / f"{digest.hexdigest()[:16]}.config"
    # a temp file renamed over it: an ssh reading the config meanwhile sees the old or the new;
    # a path that is not UTF-8 (a Latin-1 `caf\xe9/`) is written as its own bytes, as ssh reads it
    text = jumps_for_path(text, path)
    atomicfile.write_text(path, text, mode=0o600, errors="surrogateescape", prefix=".config.")
    return path


def jumps_for_path(text: str, config: Path) -> str:
    """The config text as it is written to `config`: ssh runs a ProxyJump hop as the shell
    command `ssh -F CONFIG -W ...` with CONFIG unquoted and %-expanded, so a project path
    holding a space (`~/My Projects/gpu`), a quote or a `%` broke every transfer through a jump
    host ("Can't open user config file /home/u/My"). There the hops are written as that same
    command, quoted (ssh reads a ProxyCommand line raw, and expands %% to %)."""
    raw = str(config)
    if shell.quote(raw) == raw and "%" not in raw:
        return text
    quoted = shell.quote(raw.replace("%", "%%"))
    return re.sub(
        r"^  ProxyJump (\S+)$",
        lambda m: f"  ProxyCommand ssh -F {quoted} -W '[%h]:%p' {m.group(1)}",
        text,
        flags=re.MULTILINE,
    )
