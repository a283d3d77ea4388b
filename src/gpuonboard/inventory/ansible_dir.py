"""What Ansible reads from an inventory directory besides its hosts file: each entry, in sorted
order, tried with its default plugins in turn (`script` for an executable file, `auto` for a
`.yml`/`.yaml` naming a `plugin:`, `yaml` for no extension, `.yml`, `.yaml` or `.json`, `ini`
for any file, `toml` for `.toml`), and each subfolder read the same way (all but `group_vars`,
`host_vars` and `vars_plugins`), as `ansible-inventory -i DIR` does. Pure reading: nothing is
ever run.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from gpuonboard.errors import InventoryError
from gpuonboard.inventory import ansible as ansible_inventory
from gpuonboard.inventory import ansible_cfg

# (the extensions of files an inventory directory holds that `_one_hosts_file` already refuses
# beside the hosts file; in a subfolder they are judged like the rest)
INVENTORY_SUFFIXES = (".yml", ".yaml", ".ini")
# Ansible's IGNORED_ALWAYS (ansible/inventory/manager.py), beside hidden names
_NEVER_SOURCES = ("group_vars", "host_vars", "vars_plugins")
MAX_SIBLING_BYTES = 1 << 20  # (a file beside the hosts file is read this far)
# a subfolder is walked this far (entries, bytes read, levels); past it, refused: Ansible reads it all
MAX_WALKED_ENTRIES = 2_000
MAX_WALKED_BYTES = 32 << 20
MAX_WALKED_DEPTH = 8

SCRIPT = "an inventory script Ansible runs (an executable file starting with #!)"


def second_source(directory: Path, hosts_file: Path) -> tuple[Path, str] | None:
    """The first entry beside the hosts file that Ansible reads hosts, groups' children or vars
    from (`groups` beside `hosts`, as StackHPC's Slurm appliance lays an environment out; a file
    whose first line is a host; a JSON or extensionless YAML inventory; an executable script; a
    subfolder holding any of them), and what Ansible reads it as: not the hosts file itself (a
    link to it, or it a link to this), not a name the config's ignore lists skip."""
    walk = _Walk(directory, hosts_file)
    for p in walk.entries(directory):
        if p.suffix in INVENTORY_SUFFIXES and not p.is_dir():
            continue  # (refused by name already, whatever it holds)
        if found := walk.judge(p, p.name):
            return found
    return None


class _Walk:
    """One look over an inventory directory: the config's ignore lists, the hosts file, and what
    was read so far (bounded)."""

    def __init__(self, directory: Path, hosts_file: Path) -> None:
        self.directory = directory
        self.hosts_file = hosts_file
        self.same = _resolved(hosts_file)
        self.skips = _skips()
        self.plugins = Plugins.of_config()  # (read once a walk)
        self.seen: set[Path] = set()
        self.walked = 0
        self.read = 0

    def entries(self, folder: Path) -> list[Path]:
        """`folder`'s entries Ansible tries, in its (sorted) order."""
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            return []
        self.walked += len(names)
        if self.walked > MAX_WALKED_ENTRIES:
            self._too_much(folder, f"more than {MAX_WALKED_ENTRIES:,} entries")
        return [
            folder / n
            for n in names
            if not n.startswith(".")
            and n not in _NEVER_SOURCES
            and not self.skips.search(n)
            and folder / n != self.hosts_file
            and _resolved(folder / n) != self.same
        ]

    def judge(self, p: Path, top: str, depth: int = 0) -> tuple[Path, str] | None:
        """What Ansible reads from entry `p` (a file, or a folder walked), `top` the name of the
        directory's entry it lies in (Ansible's order against the hosts file)."""
        if p.is_dir():
            real = _resolved(p)
            if real is None or real in self.seen:
                return None  # (a link back into the walk: read once)
            self.seen.add(real)
            if depth >= MAX_WALKED_DEPTH:
                self._too_much(p, f"folders nested more than {MAX_WALKED_DEPTH} deep")
            for q in self.entries(p):
                if found := self.judge(q, top, depth + 1):
                    return found
            return None
        text = _sibling_text(p)
        if text is None:
            return None
        self.read += len(text)
        if self.read > MAX_WALKED_BYTES:
            self._too_much(self.directory, f"more than {MAX_WALKED_BYTES >> 20} MiB of files")
        kind = read_as(p, text, self.hosts_file, top, in_subfolder=depth > 0, plugins=self.plugins)
        return (p, kind) if kind else None

    def _too_much(self, where: Path, what: str) -> None:
        raise InventoryError(
            f"{self.directory}: this Ansible inventory directory holds {what} beside its hosts file"
            f" (the last in {where}), all of which Ansible reads as inventories, too many to judge here;"
            " move the other files out, or"
            f" pass --inventory ansible-inventory:{self.directory} to read the directory as Ansible does."
        )


def _skips() -> re.Pattern[str]:
    exts, patterns = ansible_cfg.inventory_ignores()
    try:
        return re.compile("|".join([*patterns, *(re.escape(e) + "$" for e in exts)]) or "(?!)")
    except re.error as exc:
        raise InventoryError(
            f"the Ansible config's inventory_ignore_patterns holds a pattern that is no regular"
            f" expression ({exc}); fix it."
        ) from None


def _resolved(path: Path) -> Path | None:
    try:
        return path.resolve()
    except (OSError, RuntimeError):
        return None


def _sibling_text(path: Path) -> str | None:
    """A file's text, read this far (None: no regular file, or unreadable)."""
    try:
        if not path.is_file() or path.stat().st_size > MAX_SIBLING_BYTES:
            return None
        with path.open(encoding="utf-8", errors="replace") as f:
            return f.read(MAX_SIBLING_BYTES)
    except OSError:
        return None


def is_script(path: Path, text: str) -> bool:
    """Whether Ansible's `script` plugin runs `path`: it is executable and the kernel runs it
    (a `#!` line, an ELF binary); an executable text file without one fails to run (an INI file
    on a filesystem that marks every file executable) and is read by the next plugins."""
    return text.startswith(("#!", "\x7fELF")) and os.access(path, os.X_OK)


@dataclass(frozen=True)
class Plugins:
    """The inventory plugins the Ansible config enables, in its order, and the name endings its
    yaml plugin reads (ansible_cfg.inventory_plugins, ansible_cfg.yaml_extensions)."""

    names: tuple[str, ...]
    yaml_extensions: tuple[str, ...]

    @classmethod
    def of_config(cls) -> Plugins:
        return cls(ansible_cfg.inventory_plugins()[0], ansible_cfg.yaml_extensions())


def read_as(
    path: Path,
    text: str,
    hosts_file: Path,
    top: str,
    in_subfolder: bool = False,
    plugins: Plugins | None = None,
) -> str | None:
    """What Ansible's plugins read a host, a group's vars or children from `path` as (None:
    nothing), trying the config's enabled plugins in its order (ansible_cfg.inventory_plugins;
    by default: an executable script, run, so whatever it prints; an `auto` plugin's config; the
    yaml plugin, for no extension or one of the config's yaml_valid_extensions: a group's
    `hosts`, `vars` or `children`, what it added before a group it fails on staying; the ini
    plugin line by line, ansible_ini.adds_anything; the toml plugin for `.toml`). A
    vault-encrypted file is decrypted first where a vault password is set."""
    if text.startswith("$ANSIBLE_VAULT;"):  # (with a vault password, what it holds is unknown here)
        encrypted = "an inventory of the directory encrypted with Ansible Vault"
        encrypted += ", decrypted with the vault password set"
        return encrypted if ansible_cfg.vault_password_set() else None
    enabled = plugins or Plugins.of_config()
    for plugin in enabled.names:
        if found := _plugin_reads(
            plugin, path, text, (hosts_file, top, in_subfolder), enabled.yaml_extensions
        ):
            return found
    return None


def _plugin_reads(
    plugin: str, path: Path, text: str, where: tuple[Path, str, bool], yaml_extensions: tuple[str, ...]
) -> str | None:
    """What one inventory plugin reads from `path` (None: it skips the file or reads nothing);
    a plugin of a collection (`amazon.aws.aws_ec2`) reads its own `.yml`/`.yaml` configuration,
    as `auto` runs it. `where`: the hosts file, the directory's entry `path` lies in, and
    whether that is a subfolder (read_as)."""
    from gpuonboard.inventory import ansible_ini

    hosts_file, top, in_subfolder = where

    if plugin == "host_list":  # (a comma-separated list given as -i, never a file)
        return None
    if plugin == "script":
        return SCRIPT if is_script(path, text) else None
    if plugin == "toml":
        return _toml_adds(text) if path.suffix == ".toml" else None
    if plugin == "yaml":
        if path.suffix and path.suffix not in yaml_extensions:
            return None
        return _yaml_reads(text, auto=False)
    if plugin != "ini":  # (`auto`, or a collection's plugin)
        return _yaml_reads(text, auto=True, groups=False) if path.suffix in (".yml", ".yaml") else None
    if path.suffix == ".toml":
        return None
    known: frozenset[str] | None = frozenset()
    if in_subfolder or top > hosts_file.name:  # (Ansible reads a directory's entries in sorted order)
        hosts_text = _sibling_text(hosts_file) or ""
        ini = ansible_inventory.looks_like_ini(hosts_file, hosts_text)
        known = ansible_ini.section_names(hosts_text) if ini else None
    if ansible_ini.adds_anything(text, known):
        return "an INI inventory of the directory (its hosts, groups, their children and vars)"
    return None


def _toml_adds(text: str) -> str | None:
    import tomllib

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return None
    keys = ("hosts", "vars", "children")
    found = any(isinstance(v, dict) and any(v.get(k) for k in keys) for v in data.values())
    return "a TOML inventory of the directory (its hosts, groups, their children and vars)" if found else None


YAML_KIND = "a YAML inventory of the directory (its hosts, groups, their children and vars)"


def _yaml_reads(text: str, auto: bool, groups: bool = True) -> str | None:
    """What Ansible's `auto` and `yaml` plugins read from `text`: a plugin's config (`plugin:
    NAME`, run by `auto` for a `.yml`/`.yaml`), or (`groups`: the yaml plugin's reading) a
    mapping of groups one of which has `hosts`, `vars` or `children` before a group the plugin
    fails on (a section that is no mapping). Read as nodes, never built: an alias is the node
    it names, nothing expands."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except (yaml.YAMLError, RecursionError):
        return None  # (no YAML: the yaml plugin fails, the ini plugin reads it)
    if not isinstance(root, yaml.MappingNode) or not root.value:
        return None
    plugin = _scalar_value(root, "plugin")
    if plugin:
        return f"an inventory plugin's configuration (plugin: {plugin}), which Ansible runs" if auto else None
    if not groups:
        return None
    for _, group in root.value:
        if not isinstance(group, yaml.MappingNode):
            continue  # (Ansible skips it with a warning)
        sections = {k.value: v for k, v in group.value if isinstance(k, yaml.ScalarNode)}
        given = [sections[n] for n in ("vars", "children", "hosts") if n in sections]
        if any(isinstance(node, yaml.SequenceNode) for node in given):
            return None  # (Ansible fails here, 'requires a dictionary': nothing of this group added)
        for node in given:  # (a text is a mapping of one key: `hosts: gpu1` is the host gpu1)
            if isinstance(node, yaml.ScalarNode) and node.value and not node.tag.endswith(":null"):
                return YAML_KIND
            if isinstance(node, yaml.MappingNode) and node.value:
                return YAML_KIND
    return None


def plugin_named(text: str) -> str | None:
    """The inventory plugin a YAML file configures (`plugin: amazon.aws.aws_ec2`: Ansible's `auto`
    plugin runs that plugin for a `.yml`/`.yaml`, which lists the hosts of a cloud's API or a
    CMDB), or None."""
    if "plugin" not in text and "\\" not in text:
        return None  # (no key can read `plugin` but one written so or escaped: no parse of the text)
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except (yaml.YAMLError, RecursionError):
        return None
    return _scalar_value(root, "plugin") if isinstance(root, yaml.MappingNode) else None


def _scalar_value(mapping: yaml.MappingNode, key: str) -> str | None:
    for k, v in mapping.value:
        if isinstance(k, yaml.ScalarNode) and k.value == key and isinstance(v, yaml.ScalarNode):
            return str(v.value) or None
    return None


def hosts_file_unread(hosts_file: Path, ini: bool) -> str | None:
    """Why no inventory plugin the Ansible config enables reads the hosts file (an INI one: the
    ini plugin; a YAML one: the yaml plugin, for no extension or one of yaml_valid_extensions,
    while the ini plugin fails on YAML), so that Ansible reads no host from it; None where one does."""
    plugins, at = ansible_cfg.inventory_plugins()
    exts = ansible_cfg.yaml_extensions()
    if ini and "ini" in plugins:
        return None
    if not ini and "yaml" in plugins and (not hosts_file.suffix or hosts_file.suffix in exts):
        return None
    where = f" ({at})" if at else ""
    if ini or "yaml" not in plugins:
        enabled, wanted = ", ".join(plugins), "ini" if ini else "yaml"
        return f"the Ansible config enables the inventory plugins {enabled}{where}, not {wanted}"
    ends = ", ".join(exts)
    return f"the Ansible config's yaml plugin reads only files ending in {ends} (yaml_valid_extensions)"


def skipped_by_config(path: Path, text: str, hosts_file: Path) -> bool:
    """Whether the Ansible config's own inventory plugins or yaml_valid_extensions (set, not
    Ansible's defaults) make Ansible read nothing from `path` (a plugin's configuration where no
    enabled plugin runs one; a `.json` the yaml plugin no longer reads)."""
    if (
        not ansible_cfg.inventory_plugins()[1]
        and ansible_cfg.yaml_extensions() == ansible_cfg.DEFAULT_YAML_EXTENSIONS
    ):
        return False
    return read_as(path, text, hosts_file, path.name) is None
