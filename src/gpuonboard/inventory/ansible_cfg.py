"""The Ansible configuration (ansible.cfg and the ANSIBLE_* environment) where it decides how
an Ansible inventory's hosts are reached, found and read as ansible-core reads it.

The file: $ANSIBLE_CONFIG (a directory means its ansible.cfg), ./ansible.cfg (unless the
current directory is world-writable), ~/.ansible.cfg, /etc/ansible/ansible.cfg; the first that
exists and can be read is read whole, the others never. Read are the settings of Ansible's ssh
connection that say where and as whom it connects: [defaults] remote_user, remote_port,
private_key_file (a relative path from the file's directory) and host_key_checking,
[ssh_connection] ssh_args, ssh_common_args, ssh_extra_args (and host_key_checking); each
setting's environment variable beats the file. They become the host variables that say the
same (`ansible_user`, `ansible_port`, ...), below every inventory variable: Ansible takes a
host's variable before its config.
"""

from __future__ import annotations

import configparser
import os
import re
import stat
from collections.abc import Mapping
from pathlib import Path

from gpuonboard.errors import InventoryError
from gpuonboard.yamlload import LineDict, read_text

# host variable <- the file's (section, key) entries and the environment variables, each list in
# Ansible's order (a later one found wins, as Ansible loops them)
OPTIONS: tuple[tuple[str, tuple[tuple[str, str], ...], tuple[str, ...]], ...] = (
    ("ansible_user", (("defaults", "remote_user"),), ("ANSIBLE_REMOTE_USER",)),
    ("ansible_port", (("defaults", "remote_port"),), ("ANSIBLE_REMOTE_PORT",)),
    ("ansible_private_key_file", (("defaults", "private_key_file"),), ("ANSIBLE_PRIVATE_KEY_FILE",)),
    (
        "ansible_host_key_checking",
        (("defaults", "host_key_checking"), ("ssh_connection", "host_key_checking")),
        ("ANSIBLE_HOST_KEY_CHECKING", "ANSIBLE_SSH_HOST_KEY_CHECKING"),
    ),
    ("ansible_ssh_args", (("ssh_connection", "ssh_args"),), ("ANSIBLE_SSH_ARGS",)),
    ("ansible_ssh_common_args", (("ssh_connection", "ssh_common_args"),), ("ANSIBLE_SSH_COMMON_ARGS",)),
    ("ansible_ssh_extra_args", (("ssh_connection", "ssh_extra_args"),), ("ANSIBLE_SSH_EXTRA_ARGS",)),
)
# Ansible's ssh adds these only when they are not empty (an empty ANSIBLE_REMOTE_USER sets none)
_SKIP_EMPTY = frozenset({"ansible_user", "ansible_port", "ansible_private_key_file"})
CONFIG_LAYER = "the Ansible config"
ENV_SOURCE = "environment variable "  # (where a setting from the environment is said to be written)


def find_config(
    environ: Mapping[str, str] | None = None, cwd: Path | None = None, home: Path | None = None
) -> Path | None:
    """The one config file Ansible reads (its find_ini_config_file), or None."""
    environ = os.environ if environ is None else environ
    candidates: list[Path] = []
    if "ANSIBLE_CONFIG" in environ:
        given = Path(os.path.abspath(os.path.expandvars(os.path.expanduser(environ["ANSIBLE_CONFIG"]))))
        candidates.append(given / "ansible.cfg" if given.is_dir() else given)
    try:
        here = cwd or Path.cwd()
        if not here.stat().st_mode & stat.S_IWOTH:  # (a world-writable directory's is skipped)
            candidates.append(here / "ansible.cfg")
    except OSError:
        pass
    candidates.append((home or Path.home()) / ".ansible.cfg")
    candidates.append(Path("/etc/ansible/ansible.cfg"))
    return next((p for p in candidates if p.exists() and os.access(p, os.R_OK)), None)


def _option_lines(text: str) -> dict[tuple[str, str], int]:
    """The line each (section, key) is written at (configparser keeps none)."""
    lines: dict[tuple[str, str], int] = {}
    section = ""
    for lineno, line in enumerate(text.splitlines(), 1):
        if m := re.match(r"\[([^\]]+)\]", line.strip()):
            section = m.group(1)
        elif m := re.match(r"([^\s;#\[][^=:]*?)\s*[=:]", line):
            lines.setdefault((section, m.group(1).strip().lower()), lineno)
    return lines


def _parse(path: Path) -> tuple[configparser.ConfigParser, dict[tuple[str, str], int]]:
    """The config file parsed as Ansible parses it; one sentence naming the line where Ansible
    would refuse it."""
    text = read_text(path, InventoryError, "Ansible config")
    parser = configparser.ConfigParser(inline_comment_prefixes=(";",), interpolation=None)
    try:
        parser.read_string(text, str(path))
    except configparser.Error as exc:
        line = getattr(exc, "lineno", None)
        if line is None and isinstance(exc, configparser.ParsingError) and exc.errors:
            line = exc.errors[0][0]
        reason = exc.message.splitlines()[0] if isinstance(exc, configparser.ParsingError) else str(exc)
        reason = reason.replace(f"While reading from {str(path)!r}", "").strip(" :[]")
        at = f"{path}, line {line}" if line else str(path)
        raise InventoryError(
            f"{at}: Ansible cannot read this config file ({reason.splitlines()[0][:120]}), so neither"
            " can gpuonboard; fix the line, or point ANSIBLE_CONFIG at another file."
        ) from None
    return parser, _option_lines(text)


def _unquote(value: str) -> str:
    """Ansible's unquote of a value from the file: one pair of matching quotes around it."""
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'" and value[-2] != "\\":
        return value[1:-1]
    return value


def config_vars(environ: Mapping[str, str] | None = None, path: Path | None = None) -> LineDict:
    """The host variables Ansible's config gives every host (`path`: the file, else the one
    find_config finds), each with the file and line (or the environment variable) it came from."""
    environ = os.environ if environ is None else environ
    path = find_config(environ) if path is None else path
    parser, lines = _parse(path) if path is not None else (None, {})
    out = LineDict()
    out.key_lines, out.key_sources = {}, {}
    for var, entries, env_names in OPTIONS:
        value, source, line, label = None, None, None, ""
        for name in env_names:
            if name in environ:
                value, source, line = environ[name], Path(f"{ENV_SOURCE}{name}"), None
        if value is None and parser is not None and path is not None:
            for section, key in entries:
                if (found := parser.get(section, key, raw=True, fallback=None)) is not None:
                    value, source, line = _unquote(found), path, lines.get((section, key))
                    label = f"[{section}] {key}"
        if value is None or (var in _SKIP_EMPTY and not value.strip()):
            continue
        assert source is not None
        where_at = f"{source}, line {line}" if line else str(source)
        out[var] = _typed(var, value, where_at, source, label)
        out.key_sources[var] = source
        if line is not None:
            out.key_lines[var] = line
    return out


def _typed(var: str, value: str, at: str, source: Path, label: str) -> str | int:
    """`value` as Ansible types it: a port a whole number (else Ansible refuses the config), a
    relative key file from the config file's directory."""
    if var == "ansible_port":
        if not re.fullmatch(r"[0-9]+", value) or not 0 < int(value) < 65536:
            raise InventoryError(
                f"{at}: {label or 'the port'} {value!r} is no port number (1-65535), and Ansible"
                " refuses the config for it; fix it."
            )
        return int(value)
    if var == "ansible_private_key_file" and label and "{{" not in value:
        return os.path.join(source.parent, os.path.expanduser(value))
    return value
