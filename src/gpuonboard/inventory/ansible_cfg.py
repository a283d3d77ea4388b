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

import os
import re
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from gpuonboard.errors import InventoryError
from gpuonboard.yamlload import LineDict, read_bounded

if TYPE_CHECKING:
    # (configparser and decimal are imported where a config file is read: a check of a native
    # inventory reads none, and their import was ~4 ms of CPU a run)
    import configparser

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
    ("ansible_connection", (("defaults", "transport"),), ("ANSIBLE_TRANSPORT",)),
    ("ansible_ssh_args", (("ssh_connection", "ssh_args"),), ("ANSIBLE_SSH_ARGS",)),
    ("ansible_ssh_common_args", (("ssh_connection", "ssh_common_args"),), ("ANSIBLE_SSH_COMMON_ARGS",)),
    ("ansible_ssh_extra_args", (("ssh_connection", "ssh_extra_args"),), ("ANSIBLE_SSH_EXTRA_ARGS",)),
)
# Ansible's ssh adds these only when they are not empty (an empty ANSIBLE_REMOTE_USER sets none)
_SKIP_EMPTY = frozenset({"ansible_user", "ansible_port", "ansible_private_key_file", "ansible_connection"})
CONFIG_LAYER = "the Ansible config"
# the most of a config file read: far above any real one (DeepOps' is 2 kB, Ansible's example
# with every setting 25 kB), a bound only against a path naming a device or a dump
MAX_CONFIG_BYTES = 16 << 20
# Ansible reads a config file only with one of these extensions (its get_config_type)
CONFIG_EXTENSIONS = (".cfg", ".ini")
# the words Ansible's non-strict boolean reads as true (anything else is false)
TRUE_WORDS = frozenset({"y", "yes", "on", "1", "true", "t"})
ENV_SOURCE = "environment variable "  # (where a setting from the environment is said to be written)


_WHOLE, _NUMBER = "a whole number", "a number"
# Ansible's own settings (not a plugin's) that it checks as it starts, whatever it then runs
# (`ansible-inventory --list` too): a value that is no whole number, no number, or none of a few
# words stops it before any host is read (ansible-core 2.19, lib/ansible/config/base.yml; the
# list-valued ones, display_traceback and ignore_signature_status_codes, are not checked here).
CHECKED: tuple[tuple[str, str, str, str | tuple[str, ...]], ...] = (
    ("defaults", "fact_caching_timeout", "ANSIBLE_CACHE_PLUGIN_TIMEOUT", _WHOLE),
    ("defaults", "log_verbosity", "ANSIBLE_LOG_VERBOSITY", _WHOLE),
    ("defaults", "forks", "ANSIBLE_FORKS", _WHOLE),
    ("defaults", "poll_interval", "ANSIBLE_POLL_INTERVAL", _WHOLE),
    ("defaults", "remote_port", "ANSIBLE_REMOTE_PORT", _WHOLE),
    ("defaults", "timeout", "ANSIBLE_TIMEOUT", _WHOLE),
    ("defaults", "verbosity", "ANSIBLE_VERBOSITY", _WHOLE),
    ("defaults", "max_diff_size", "ANSIBLE_MAX_DIFF_SIZE", _WHOLE),
    ("defaults", "task_timeout", "ANSIBLE_TASK_TIMEOUT", _WHOLE),
    ("defaults", "win_async_startup_timeout", "ANSIBLE_WIN_ASYNC_STARTUP_TIMEOUT", _WHOLE),
    ("diff", "context", "ANSIBLE_DIFF_CONTEXT", _WHOLE),
    ("galaxy", "server_timeout", "ANSIBLE_GALAXY_SERVER_TIMEOUT", _WHOLE),
    ("persistent_connection", "connect_timeout", "ANSIBLE_PERSISTENT_CONNECT_TIMEOUT", _WHOLE),
    ("persistent_connection", "connect_retry_timeout", "ANSIBLE_PERSISTENT_CONNECT_RETRY_TIMEOUT", _WHOLE),
    ("persistent_connection", "command_timeout", "ANSIBLE_PERSISTENT_COMMAND_TIMEOUT", _WHOLE),
    ("connection", "ssh_agent_key_lifetime", "ANSIBLE_SSH_AGENT_KEY_LIFETIME", _WHOLE),
    ("defaults", "internal_poll_interval", "", _NUMBER),
    ("", "", "ANSIBLE_WORKER_SHUTDOWN_POLL_COUNT", _WHOLE),
    ("", "", "ANSIBLE_WORKER_SHUTDOWN_POLL_DELAY", _NUMBER),
    ("", "", "ANSIBLE_GALAXY_COLLECTION_IMPORT_POLL_INTERVAL", _NUMBER),
    ("", "", "ANSIBLE_GALAXY_COLLECTION_IMPORT_POLL_FACTOR", _NUMBER),
    (
        "defaults",
        "collections_on_ansible_version_mismatch",
        "ANSIBLE_COLLECTIONS_ON_ANSIBLE_VERSION_MISMATCH",
        ("error", "warning", "ignore"),
    ),
    ("defaults", "gathering", "ANSIBLE_GATHERING", ("implicit", "explicit", "smart")),
    ("defaults", "hash_behaviour", "ANSIBLE_HASH_BEHAVIOUR", ("replace", "merge")),
    ("defaults", "duplicate_dict_key", "ANSIBLE_DUPLICATE_YAML_DICT_KEY", ("error", "warn", "ignore")),
    (
        "defaults",
        "force_valid_group_names",
        "ANSIBLE_TRANSFORM_INVALID_GROUP_CHARS",
        ("always", "never", "ignore", "silently"),
    ),
    ("defaults", "playbook_vars_root", "ANSIBLE_PLAYBOOK_VARS_ROOT", ("top", "bottom", "all")),
    ("defaults", "run_vars_plugins", "ANSIBLE_RUN_VARS_PLUGINS", ("demand", "start")),
    ("inventory", "host_pattern_mismatch", "ANSIBLE_HOST_PATTERN_MISMATCH", ("error", "warning", "ignore")),
)


def _config_given(value: str) -> Path:
    """The file ANSIBLE_CONFIG names (a directory means its ansible.cfg)."""
    given = Path(os.path.abspath(os.path.expandvars(os.path.expanduser(value))))
    return given / "ansible.cfg" if given.is_dir() else given


def find_config(
    environ: Mapping[str, str] | None = None, cwd: Path | None = None, home: Path | None = None
) -> Path | None:
    """The one config file Ansible reads (its find_ini_config_file), or None."""
    environ = os.environ if environ is None else environ
    candidates: list[Path] = []
    if "ANSIBLE_CONFIG" in environ:
        candidates.append(_config_given(environ["ANSIBLE_CONFIG"]))
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


def _read(path: Path) -> str:
    """The config file's text as Ansible reads it: UTF-8, a byte that is not kept as a lone
    surrogate (Ansible's surrogate_or_strict; refused only where a value read holds one)."""
    if os.path.splitext(str(path))[1] not in CONFIG_EXTENSIONS:
        raise InventoryError(
            f"{path}: Ansible reads a config file only when its name ends in .cfg or .ini, and"
            " refuses to run with this one (named by ANSIBLE_CONFIG); rename it, or point"
            " ANSIBLE_CONFIG at an ansible.cfg."
        )
    data = read_bounded(path, InventoryError, "Ansible config", MAX_CONFIG_BYTES)
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise InventoryError(
            f"{path}: the Ansible config file is UTF-16 text (as Windows PowerShell's `>` writes"
            " it), which Ansible cannot read; save it as UTF-8."
        )
    return data.decode("utf-8", "surrogateescape").removeprefix("\ufeff")


def _parse_problem(exc: configparser.Error, text: str) -> tuple[int | None, str]:
    """The line configparser stopped at and what is wrong there, in words (`text`: the file's)."""
    import configparser

    if isinstance(exc, configparser.DuplicateOptionError):
        return exc.lineno, f"the option {exc.option!r} is set a second time in section [{exc.section}]"
    if isinstance(exc, configparser.DuplicateSectionError):
        return exc.lineno, f"the section [{exc.section}] is opened a second time"
    if isinstance(exc, configparser.MissingSectionHeaderError):
        return exc.lineno, "a setting comes before any [section] header"
    if isinstance(exc, configparser.ParsingError) and exc.errors:
        line = exc.errors[0][0]
        written = text.splitlines()[line - 1].strip() if 0 < line <= len(text.splitlines()) else ""
        return line, f"{written[:80]!r} is no `key = value` line"
    return None, str(exc).splitlines()[0][:120]


def _parse(path: Path) -> tuple[configparser.ConfigParser, dict[tuple[str, str], int]]:
    """The config file parsed as Ansible parses it; one sentence naming the line where Ansible
    would refuse it."""
    import configparser

    text = _read(path)
    parser = configparser.ConfigParser(inline_comment_prefixes=(";",), interpolation=None)
    try:
        parser.read_string(text, str(path))
    except configparser.Error as exc:
        line, problem = _parse_problem(exc, text)
        at = f"{path}, line {line}" if line else str(path)
        raise InventoryError(
            f"{at}: {problem}, so Ansible refuses this config file and gpuonboard does too; fix the"
            " line, or point ANSIBLE_CONFIG at another file."
        ) from None
    return parser, _option_lines(text)


def _unquote(value: str) -> str:
    """Ansible's unquote of a value from the file: one pair of matching quotes around it."""
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'" and value[-2] != "\\":
        return value[1:-1]
    return value


def _refused(value: str, kind: str | tuple[str, ...], from_env: bool = False) -> bool:
    """Whether Ansible's ensure_type (and its choices) refuse `value` as written in the file or
    (`from_env`) the environment: a number is read unquoted; a word from the file after one pair
    of quotes is taken off, one from the environment as it is (`'smart'` there is refused)."""
    if isinstance(kind, tuple):
        return (value if from_env else _unquote(value)) not in kind
    import decimal

    try:
        if kind == _NUMBER:
            float(value)
            return False
        number = decimal.Decimal(value)
        return number != int(number)
    except (ArithmeticError, ValueError):
        return True


def check_settings(
    parser: configparser.ConfigParser | None,
    lines: Mapping[tuple[str, str], int],
    path: Path | None,
    environ: Mapping[str, str],
) -> None:
    """One sentence naming the file and line (or the environment variable) of the first of
    Ansible's own settings (CHECKED) whose value Ansible refuses as it starts."""
    for section, key, env, kind in CHECKED:
        if env and env in environ:  # (set, even empty: the file's value is not read)
            if environ[env] == "" and isinstance(kind, str):
                continue  # (an empty number fails Ansible's typing, which then takes the default)
            value, at, label = environ[env], f"{ENV_SOURCE}{env}", "its value"
        elif (
            key
            and parser is not None
            and (found := parser.get(section, key, raw=True, fallback=None)) is not None
        ):
            line = lines.get((section, key))
            value, at, label = found, f"{path}, line {line}" if line else str(path), f"[{section}] {key}"
        else:
            continue
        if _refused(value, kind, at.startswith(ENV_SOURCE)):
            want = kind if isinstance(kind, str) else "one of " + ", ".join(kind)
            raise InventoryError(
                f"{at}: {label} {value!r} is not {want}, so Ansible refuses this config as it starts"
                f" (before it reads any host) and gpuonboard does too; write {want} there, or remove it."
            )


def config_vars(environ: Mapping[str, str] | None = None, path: Path | None = None) -> LineDict:
    """The host variables Ansible's config gives every host (`path`: the file, else the one
    find_config finds), each with the file and line (or the environment variable) it came from."""
    environ = os.environ if environ is None else environ
    path = find_config(environ) if path is None else path
    parser, lines = _parse(path) if path is not None else (None, {})
    check_settings(parser, lines, path, environ)
    out = LineDict()
    out.key_lines, out.key_sources = {}, {}
    for var, entries, env_names in OPTIONS:
        value, source, line, label = None, None, None, ""
        for name in env_names:
            if name in environ:
                value, source, line, label = environ[name], Path(f"{ENV_SOURCE}{name}"), None, "its value"
        if value is None and parser is not None and path is not None:
            for section, key in entries:
                if (found := parser.get(section, key, raw=True, fallback=None)) is not None:
                    value, source, line = _unquote(found), path, lines.get((section, key))
                    label = f"[{section}] {key}"
        if value is None or (var in _SKIP_EMPTY and not value.strip()):
            continue
        assert source is not None
        where_at = f"{source}, line {line}" if line else str(source)
        if re.search("[\udc80-\udcff]", value):
            raise InventoryError(
                f"{where_at}: {label} holds a byte that is not UTF-8 text (the file saved in another"
                " encoding, such as Latin-1 or GBK?); write it in UTF-8."
            )
        out[var] = _typed(var, value, where_at, source, label)
        out.key_sources[var] = source
        if line is not None:
            out.key_lines[var] = line
    return out


def ansible_boolean(value: object) -> bool:
    """A setting as Ansible's non-strict boolean reads it: true only for a true word (`yes`,
    `on`, `1`, `true`, `t`, `y`, any case) or value, anything else false."""
    if isinstance(value, (bool, int, float)):
        return value in (1, True)
    return isinstance(value, str) and value.strip().lower() in TRUE_WORDS


def _typed(var: str, value: str, at: str, source: Path, label: str) -> str | int:
    """`value` as Ansible types it: a port a whole number (`2299.0` and ` 2222` too; else Ansible
    refuses the setting), a key file `~` and `$VAR` expanded, then, if still relative, from the
    config file's directory (from the environment: the current directory), as its unfrackpath."""
    if var == "ansible_port":
        import decimal

        try:
            number = decimal.Decimal(value)
            port = int(number) if number == int(number) else None
        except (ArithmeticError, ValueError):
            port = None
        if port is None:
            raise InventoryError(
                f"{at}: {label} {value!r} is not a whole number, so Ansible refuses the setting and"
                " gpuonboard does too; write the port number (1-65535)."
            )
        if not 0 < port < 65536:
            raise InventoryError(f"{at}: {label} {value!r} is no port number (1-65535); fix it.")
        return port
    if var == "ansible_private_key_file" and "{{" not in value:
        expanded = os.path.expanduser(os.path.expandvars(value))
        base = os.getcwd() if str(source).startswith(ENV_SOURCE) else str(source.parent)
        return os.path.normpath(os.path.join(base, expanded))
    return value


def user_wide(environ: Mapping[str, str] | None = None, home: Path | None = None) -> bool:
    """The config Ansible reads is a user-wide one (~/.ansible.cfg, /etc/ansible/ansible.cfg)
    that neither ANSIBLE_CONFIG nor ANSIBLE_INVENTORY chose: a default for every project, not
    this project's choice."""
    environ = os.environ if environ is None else environ
    if environ.get("ANSIBLE_INVENTORY", "").strip():
        return False
    found = find_config(environ, home=home)
    if found is None or ("ANSIBLE_CONFIG" in environ and found == _config_given(environ["ANSIBLE_CONFIG"])):
        return False  # (ANSIBLE_CONFIG chose it; an empty or missing one chooses nothing)
    return found in ((home or Path.home()) / ".ansible.cfg", Path("/etc/ansible/ansible.cfg"))


def config_inventory(environ: Mapping[str, str] | None = None) -> tuple[list[Path], str] | None:
    """The inventory sources Ansible's config names (`[defaults] inventory`, a comma-separated
    list, each relative path from the config file's directory; ANSIBLE_INVENTORY's from the
    current directory, beating the file) and where that is written; None where none is named."""
    environ = os.environ if environ is None else environ
    if environ.get("ANSIBLE_INVENTORY", "").strip():
        value, base, at = environ["ANSIBLE_INVENTORY"], Path.cwd(), f"{ENV_SOURCE}ANSIBLE_INVENTORY"
    else:
        path = find_config(environ)
        if path is None:
            return None
        parser, lines = _parse(path)
        found = parser.get("defaults", "inventory", raw=True, fallback=None)
        if found is None or not found.strip():
            return None
        line = lines.get(("defaults", "inventory"))
        value, base, at = found, path.parent, f"{path}, line {line}" if line else str(path)
    sources = [_unquote(x.strip()) for x in value.split(",") if x.strip()]
    return [base / os.path.expanduser(os.path.expandvars(s)) for s in sources], at


# the names Ansible skips in an inventory directory by default: INVENTORY_IGNORE_EXTS (its
# REJECT_EXTS and .orig, .cfg, .retry); INVENTORY_IGNORE_PATTERNS is empty
DEFAULT_IGNORE_EXTS = (
    ".pyc",
    ".pyo",
    ".swp",
    ".bak",
    "~",
    ".rpm",
    ".md",
    ".txt",
    ".rst",
    ".orig",
    ".cfg",
    ".retry",
)


def inventory_ignores(environ: Mapping[str, str] | None = None) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The name endings and patterns of files Ansible skips in an inventory directory
    (INVENTORY_IGNORE_EXTS, INVENTORY_IGNORE_PATTERNS): the config's lists, each replacing the
    default (kubespray's ansible.cfg adds `.ini`, `.creds`), their environment variables first."""
    environ = os.environ if environ is None else environ
    settings = (
        (
            "ANSIBLE_INVENTORY_IGNORE",
            ("inventory_ignore_extensions", "ignore_extensions"),
            DEFAULT_IGNORE_EXTS,
        ),
        ("ANSIBLE_INVENTORY_IGNORE_REGEX", ("inventory_ignore_patterns", "ignore_patterns"), ()),
    )
    path = find_config(environ)
    parser = _parse(path)[0] if path is not None else None
    found: list[tuple[str, ...]] = []
    for env, (in_defaults, in_inventory), default in settings:
        value = environ.get(env)
        if value is None and parser is not None:
            value = parser.get("defaults", in_defaults, raw=True, fallback=None)
            value = parser.get("inventory", in_inventory, raw=True, fallback=value)  # (Ansible's later)
        found.append(default if value is None else tuple(_unquote(x.strip()) for x in value.split(",")))
    return found[0], found[1]


def vault_password_set(environ: Mapping[str, str] | None = None) -> bool:
    """Whether Ansible has a vault password without asking (ANSIBLE_VAULT_PASSWORD_FILE,
    ANSIBLE_VAULT_IDENTITY_LIST or their [defaults] settings): it decrypts a vault-encrypted file
    of an inventory directory and reads it; without one it reads nothing of that file."""
    environ = os.environ if environ is None else environ
    if any(
        environ.get(v, "").strip() for v in ("ANSIBLE_VAULT_PASSWORD_FILE", "ANSIBLE_VAULT_IDENTITY_LIST")
    ):
        return True
    path = find_config(environ)
    if path is None:
        return False
    parser = _parse(path)[0]
    return any(
        parser.get("defaults", k, raw=True, fallback="").strip()
        for k in ("vault_password_file", "vault_identity_list")
    )


# Ansible's INVENTORY_ENABLED default: the plugins tried on each inventory source, in this order
DEFAULT_INVENTORY_PLUGINS = ("host_list", "script", "auto", "yaml", "ini", "toml")
# the yaml inventory plugin's yaml_extensions default (a file with no extension it reads too)
DEFAULT_YAML_EXTENSIONS = (".yaml", ".yml", ".json")


def _list_setting(
    envs: tuple[str, ...],
    keys: tuple[tuple[str, str], ...],
    default: tuple[str, ...],
    environ: Mapping[str, str] | None,
) -> tuple[tuple[str, ...], str]:
    """A list setting as Ansible's config reads it (an environment variable beats the file; of
    each, the last one set wins) and where it is written ("" for its default)."""
    environ = os.environ if environ is None else environ
    value, at = None, ""
    for env in envs:
        if env in environ:
            value, at = environ[env], f"{ENV_SOURCE}{env}"
    if value is None and (path := find_config(environ)) is not None:
        parser, lines = _parse(path)
        for section, key in keys:
            if (found := parser.get(section, key, raw=True, fallback=None)) is not None:
                line = lines.get((section, key))
                value, at = found, f"[{section}] {key} at {path}, line {line}" if line else str(path)
    if value is None:
        return default, ""
    return tuple(x for x in (_unquote(v.strip()) for v in value.split(",")) if x), at


def inventory_plugins(environ: Mapping[str, str] | None = None) -> tuple[tuple[str, ...], str]:
    """The inventory plugins Ansible tries on each source, in its order ([inventory]
    enable_plugins, ANSIBLE_INVENTORY_ENABLED; `ansible.builtin.ini` is `ini`), and where that
    is written ("" for Ansible's default)."""
    names, at = _list_setting(
        ("ANSIBLE_INVENTORY_ENABLED",), (("inventory", "enable_plugins"),), DEFAULT_INVENTORY_PLUGINS, environ
    )
    return tuple(n.removeprefix("ansible.builtin.").removeprefix("ansible.legacy.") for n in names), at


def yaml_extensions(environ: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The name endings the yaml inventory plugin reads besides none ([defaults]
    yaml_valid_extensions, [inventory_plugin_yaml] yaml_valid_extensions, ANSIBLE_YAML_FILENAME_EXT,
    ANSIBLE_INVENTORY_PLUGIN_EXTS)."""
    return _list_setting(
        ("ANSIBLE_YAML_FILENAME_EXT", "ANSIBLE_INVENTORY_PLUGIN_EXTS"),
        (("defaults", "yaml_valid_extensions"), ("inventory_plugin_yaml", "yaml_valid_extensions")),
        DEFAULT_YAML_EXTENSIONS,
        environ,
    )[0]
