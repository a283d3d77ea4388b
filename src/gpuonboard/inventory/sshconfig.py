"""The user's OpenSSH client config (~/.ssh/config, --ssh-config, the inventory's ssh_config),
read with paramiko's parser but never running anything from it.

paramiko evaluates `Match exec "COMMAND"` by running COMMAND through a shell on this machine,
takes a Match criterion it does not know (`localnetwork`, `tagged`, a typo) as matching every
host, and its get_hostnames() fails with KeyError on a config that has any Match block at all
(which the CLI reported as an internal error, exit 70). Here:

- `Match exec` and `Match localnetwork` (which needs this machine's interfaces) are not
  evaluated. When the block's other criteria already rule a host out, it does not apply, as
  in OpenSSH (which skips the command when an earlier criterion failed); when they do not,
  looking that host up is an input error naming the file and line: what such a block would
  set (a ProxyJump, a User, a key) decides where the connection goes, and guessing "it does
  not match" would connect somewhere other than `ssh HOST` does.
- `Match tagged` is evaluated against the config's own `Tag` (gpuonboard passes no -P).
- An unknown criterion is the same input error (OpenSSH refuses the whole file for it).
"""

from __future__ import annotations

import fnmatch
import os
import re
import stat
from pathlib import Path
from typing import Any

import paramiko

from gpuonboard.errors import InventoryError
from gpuonboard.inventory.sshresolve import MAX_CONFIG_BYTES

# wildcard blocks: a real config has a few; each host lookup matches its name against every one
# (1,000 hosts x 8,000 blocks of 10 patterns ran for minutes); plain `Host name` blocks are indexed
MAX_WILD_BLOCKS = 2000
# criteria paramiko evaluates as OpenSSH does (without running anything)
EVALUATED = frozenset({"all", "canonical", "final", "host", "originalhost", "user", "localuser"})
NOT_EVALUATED = {
    "exec": "gpuonboard never runs commands from an SSH config",
    "localnetwork": "gpuonboard does not read this machine's network interfaces for it",
}


_BASE: Any = paramiko.SSHConfig  # (its private helpers, which the type stubs do not declare)


class UserSSHConfig(paramiko.SSHConfig):
    """paramiko's SSHConfig that runs nothing and knows the line of each Host/Match block."""

    def __init__(self, path: Path | None = None) -> None:
        super().__init__()
        self.path = path
        self._match_lines: dict[int, int] = {}  # id(a Match block's criteria) -> its line
        self.include_lines: dict[str, int] = {}  # an Include's argument -> its line (not followed)
        self.include_problem: str | None = None  # why ssh -G does not read it (an Include's)

    @classmethod
    def read(cls, path: Path) -> UserSSHConfig:
        """Parse the file at `path` (a regular file of at most MAX_CONFIG_BYTES, checked before
        reading); a line paramiko cannot parse is a ConfigParseError naming its number."""
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode):
            raise paramiko.ConfigParseError("it is not a regular file")
        if info.st_size > MAX_CONFIG_BYTES:
            raise paramiko.ConfigParseError(
                f"it is {info.st_size:,} bytes, more than an SSH config's limit of {MAX_CONFIG_BYTES:,}"
            )
        with open(path, encoding="utf-8", errors="surrogateescape") as f:
            return cls.from_text_at(f.read(MAX_CONFIG_BYTES + 1), path)

    @classmethod
    def from_text_at(cls, text: str, path: Path | None) -> UserSSHConfig:
        """Parse `text`, read from `path` (named in errors); a line paramiko cannot parse is a
        ConfigParseError naming its number."""
        lines = text.splitlines()
        config: Any = cls(path)
        blocks = [0]  # the line of each block paramiko makes (the first: before any Host)
        certificates: dict[int, list[str]] = {}  # block index -> its CertificateFiles in order
        wild = 0  # Match blocks and Host blocks with a pattern (a plain name is looked up by index)
        for number, raw in enumerate(lines, 1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            match = re.match(cls.SETTINGS_REGEX, line)
            if match is None:
                raise paramiko.ConfigParseError(f"line {number}: cannot read {line!r}")
            if match.group(1).lower() in ("host", "match"):
                blocks.append(number)
                key, value = match.group(1).lower(), match.group(2)
                wild += key == "match" or any(c in value for c in "*?!")
                if wild > MAX_WILD_BLOCKS:  # (each lookup reads every such block)
                    raise paramiko.ConfigParseError(
                        f"line {number}: more than {MAX_WILD_BLOCKS:,} Match blocks and Host blocks"
                        " with wildcards, the most gpuonboard reads"
                    )
            elif match.group(1).lower() == "include":
                config.include_lines.setdefault(match.group(2).strip(), number)
            elif match.group(1).lower() == "certificatefile":  # (paramiko keeps one; ssh all)
                certificates.setdefault(len(blocks) - 1, []).append(_unquoted(match.group(2)))
        try:
            config.parse(lines)
        except paramiko.ConfigParseError as exc:
            number = blocks[min(len(config._config), len(blocks) - 1)]
            raise paramiko.ConfigParseError(f"line {number}: {exc}") from None
        for context, number in zip(config._config, blocks, strict=False):
            if "matches" in context:
                config._match_lines[id(context["matches"])] = number
        for index, files in certificates.items():
            if index < len(config._config):
                config._config[index]["config"]["certificatefile"] = files
        return config

    def _lookup(
        self, hostname: str, options: Any = None, canonical: bool = False, final: bool = False
    ) -> Any:
        """paramiko's, trying only the blocks that can apply to `hostname`: a `Host` line of
        plain names (no pattern, no `!`) applies to those names alone, so it is found through an
        index instead of reading every block for every host (1,000 hosts x 8,000 blocks)."""
        entries: list[dict[str, Any]] = getattr(self, "_config")  # noqa: B009
        index = self.__dict__.get("_plain_index")
        if index is None or index[0] != len(entries):
            by_name: dict[str, list[int]] = {}
            others: list[int] = []
            for i, entry in enumerate(entries):
                hosts = entry.get("host", [])
                if "matches" in entry or not hosts or any(c in h for h in hosts for c in "*?[!"):
                    others.append(i)
                else:
                    for h in hosts:
                        by_name.setdefault(h, []).append(i)
            index = (len(entries), by_name, others)
            self.__dict__["_plain_index"] = index
        if options is None:
            options = paramiko.SSHConfigDict()
        for i in sorted({*index[2], *index[1].get(hostname, ())}):  # (the rest: paramiko's loop)
            context = entries[i]
            if not (
                self._pattern_matches(context.get("host", []), hostname)
                or self._does_match(context.get("matches", []), hostname, canonical, final, options)
            ):
                continue
            for key, value in context["config"].items():
                if key not in options:
                    options[key] = value[:] if value is not None else value
                elif key in ("identityfile", "certificatefile"):
                    options[key].extend(x for x in value if x not in options[key])
        if final:
            options = _BASE._expand_variables(self, options, hostname)
        return options

    def unexpanded(self, hostname: str, key: str) -> Any:
        """The setting `key` for `hostname` as written (lookup() replaces %h, %p ... in a
        ProxyCommand with this host's values), or None."""
        return self._lookup(hostname).get(key)

    def get_hostnames(self) -> set[str]:
        """The Host patterns (paramiko's own raised KeyError on a Match block)."""
        entries: list[dict[str, Any]] = getattr(self, "_config")  # noqa: B009
        return {h for entry in entries for h in entry.get("host", ())}

    def _pattern_matches(self, patterns: Any, target: str) -> bool:
        """paramiko's (a `Host` line's patterns, `!` negating), with a plain name compared as
        text: each lookup tries every Host line, and fnmatch on each made 1,000 hosts over 8,000
        Host lines take minutes."""
        if isinstance(patterns, str):
            patterns = patterns.split(",")
        match = False
        for pattern in patterns:
            negated = pattern.startswith("!")
            bare = pattern[1:] if negated else pattern
            glob = "*" in bare or "?" in bare or "[" in bare
            hit = fnmatch.fnmatch(target, bare) if glob else bare == target
            if hit and negated:
                return False
            match = match or hit
        return match

    def _does_match(
        self,
        match_list: list[dict[str, Any]],
        target_hostname: str,
        canonical: bool,
        final: bool,
        options: Any,
    ) -> Any:
        """Whether a Match block applies, as OpenSSH decides it, without running anything."""
        if not match_list:  # (a Host block: paramiko's asked the OS for the user name each time)
            return []
        undecided = []
        for candidate in match_list:
            kind = candidate["type"]
            if kind in EVALUATED:
                if candidate["type"] == "all":
                    continue
                if not _BASE._does_match(self, [candidate], target_hostname, canonical, final, options):
                    return False
            elif kind == "tagged":
                tagged = _BASE._pattern_matches(self, candidate["param"] or "", options.get("tag") or "")
                if _BASE._should_fail(self, tagged, candidate):
                    return False
            else:
                undecided.append(candidate)
        if undecided:
            raise InventoryError(self._undecided(undecided[0], target_hostname, match_list))
        return match_list

    def _undecided(self, candidate: dict[str, Any], host: str, match_list: list[dict[str, Any]]) -> str:
        """The sentence for a Match block whose criterion `candidate` gpuonboard cannot decide."""
        kind = candidate["type"]
        line = self._match_lines.get(id(match_list))
        where = f"{self.path}, line {line}" if line else str(self.path or "SSH config")
        why = NOT_EVALUATED.get(kind, "OpenSSH does not know it either, or gpuonboard does not yet")
        return (
            f"{where}: `Match {kind}` would decide the settings of host {host!r}, and it is not"
            f" supported ({why}); give {host!r} its address (and user, key_file, jump) in the"
            " inventory, or match it with `Host` or `Match host` there."
        )


def _unquoted(value: str) -> str:
    """A config value without the double quotes around it (OpenSSH's own reading)."""
    value = value.strip()
    return value[1:-1] if len(value) >= 2 and value[0] == value[-1] == '"' else value
