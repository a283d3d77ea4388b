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

import os
import re
import stat
from pathlib import Path
from typing import Any

import paramiko

from .errors import InventoryError

MAX_CONFIG_BYTES = 1 << 20  # an ssh_config is a few KiB; 1 MiB is far past any real one
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
        for number, raw in enumerate(lines, 1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            match = re.match(cls.SETTINGS_REGEX, line)
            if match is None:
                raise paramiko.ConfigParseError(f"line {number}: cannot read {line!r}")
            if match.group(1).lower() in ("host", "match"):
                blocks.append(number)
        try:
            config.parse(lines)
        except paramiko.ConfigParseError as exc:
            number = blocks[min(len(config._config), len(blocks) - 1)]
            raise paramiko.ConfigParseError(f"line {number}: {exc}") from None
        for context, number in zip(config._config, blocks, strict=False):
            if "matches" in context:
                config._match_lines[id(context["matches"])] = number
        return config

    def get_hostnames(self) -> set[str]:
        """The Host patterns (paramiko's own raised KeyError on a Match block)."""
        entries: list[dict[str, Any]] = getattr(self, "_config")  # noqa: B009
        return {h for entry in entries for h in entry.get("host", ())}

    def _does_match(
        self,
        match_list: list[dict[str, Any]],
        target_hostname: str,
        canonical: bool,
        final: bool,
        options: Any,
    ) -> Any:
        """Whether a Match block applies, as OpenSSH decides it, without running anything."""
        if not match_list:
            return _BASE._does_match(self, match_list, target_hostname, canonical, final, options)
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
