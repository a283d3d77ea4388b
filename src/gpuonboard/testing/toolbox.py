"""Hardware profiles and the replay toolbox of a test host.

A profile (``profiles/<name>.yml``) says which captured outputs a simulated
GPU server prints for which commands::

    description: One line.
    replay:                  # command -> list of rules, first match wins
      nvidia-smi:
        - args: "-q -x"      # exact match of the joined arguments ("$*"); "*" matches all
          file: derived/nvidia-smi-q-x__a100.xml   # relative to tests/fixtures/
        - args: "--query-gpu=index,name --format=csv,noheader,nounits"
          file: derived/stream.csv
          loop: 8            # optional: the file is a stream of samples of 8 lines each;
                             # with "-l N" / "-lms N" appended it is replayed one sample per
                             # interval, round and round (as `nvidia-smi -l` never ends); with
                             # the args alone, its first sample
    absent: [lspci]          # commands that must not be found on the host's PATH

:func:`render_toolbox` turns a profile into one pure-``sh`` script per command
in ``<host>/bin`` (first on the host's PATH) that ``cat``\\ s a copy of the
right fixture file, so 50 hosts can run it concurrently without starting a
Python interpreter per call.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

PROFILES_DIR = Path(__file__).resolve().parent / "profiles"
DEFAULT_FIXTURES_ROOT = Path(__file__).resolve().parents[3] / "tests" / "fixtures"

MATCH_ANY = "*"
UNMATCHED_EXIT = 2
_COMMAND_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._+-]*$")
_TOP_KEYS = {"description", "replay", "absent"}
_RULE_KEYS = {"args", "file"}
_OPTIONAL_RULE_KEYS = {"loop"}


class ProfileError(ValueError):
    """A profile file is missing, malformed, or cannot be honoured on this machine."""


@dataclass(frozen=True)
class ReplayRule:
    """Print ``file`` when the joined arguments equal ``args`` (``"*"``: any arguments).
    ``loop`` (lines per sample): also answer ``args -l N`` / ``args -lms N`` by replaying the
    file one sample per interval, endlessly; the args alone print its first sample."""

    args: str
    file: PurePosixPath
    loop: int | None = None


@dataclass(frozen=True)
class Profile:
    """A parsed hardware profile."""

    name: str
    path: Path
    description: str
    replay: dict[str, list[ReplayRule]] = field(default_factory=dict)
    absent: list[str] = field(default_factory=list)


def is_profile_file(profile: str) -> bool:
    """Pure: whether `profile` names a profile file (a path, or ``FILE.yml``), not a profile name."""
    return "/" in profile or profile.endswith((".yml", ".yaml"))


def profile_path(profile: str | Path, profiles_dir: Path = PROFILES_DIR) -> Path:
    """Resolve a profile name (``a100-8x``) or a path to a ``.yml`` file."""
    if isinstance(profile, Path) or is_profile_file(profile):
        return Path(profile).resolve()
    return profiles_dir / f"{profile}.yml"


def load_profile(profile: str | Path, profiles_dir: Path = PROFILES_DIR) -> Profile:
    """Load and validate a profile given by name or path."""
    path = profile_path(profile, profiles_dir)
    try:
        data = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise ProfileError(f"cannot read profile {profile!s}: {exc}") from exc
    except yaml.YAMLError as exc:
        raise ProfileError(f"profile {path} is not valid YAML: {exc}") from exc
    return parse_profile(data, name=path.stem, path=path)


def parse_profile(data: Any, name: str, path: Path) -> Profile:
    """Validate the parsed YAML of a profile."""
    if not isinstance(data, dict):
        raise ProfileError(f"profile {path}: top level must be a mapping")
    unknown = set(data) - _TOP_KEYS
    if unknown:
        raise ProfileError(f"profile {path}: unknown keys {sorted(unknown)}")
    description = data.get("description") or ""
    if not isinstance(description, str):
        raise ProfileError(f"profile {path}: description must be a string")
    replay = _parse_replay(data.get("replay") or {}, path)
    absent = _parse_absent(data.get("absent") or [], path)
    clash = sorted(set(absent) & set(replay))
    if clash:
        raise ProfileError(f"profile {path}: commands both replayed and absent: {clash}")
    return Profile(name=name, path=path, description=description, replay=replay, absent=absent)


def _parse_replay(raw: Any, path: Path) -> dict[str, list[ReplayRule]]:
    if not isinstance(raw, dict):
        raise ProfileError(f"profile {path}: replay must map command -> list of rules")
    replay: dict[str, list[ReplayRule]] = {}
    for command, rules in raw.items():
        _check_command(command, path)
        if not isinstance(rules, list) or not rules:
            raise ProfileError(f"profile {path}: replay.{command} must be a non-empty list")
        replay[command] = [_parse_rule(rule, f"{path}: replay.{command}") for rule in rules]
    return replay


def _parse_rule(rule: Any, where: str) -> ReplayRule:
    if not isinstance(rule, dict) or not _RULE_KEYS <= set(rule) <= _RULE_KEYS | _OPTIONAL_RULE_KEYS:
        raise ProfileError(
            f"profile {where}: each rule needs exactly 'args' and 'file' (and may have 'loop')"
        )
    args, file, loop = rule["args"], rule["file"], rule.get("loop")
    if loop is not None and (isinstance(loop, bool) or not isinstance(loop, int) or loop < 1):
        raise ProfileError(f"profile {where}: 'loop' must be the number of lines per sample (1 or more)")
    if loop is not None and args == MATCH_ANY:
        raise ProfileError(f"profile {where}: a 'loop' rule needs the exact arguments, not '*'")
    if not isinstance(args, str) or not isinstance(file, str):
        raise ProfileError(f"profile {where}: 'args' and 'file' must be strings")
    rel = PurePosixPath(file)
    if rel.is_absolute() or ".." in rel.parts or not rel.parts:
        raise ProfileError(f"profile {where}: file {file!r} must be relative to the fixtures root")
    return ReplayRule(args=args, file=rel, loop=loop)


def _parse_absent(raw: Any, path: Path) -> list[str]:
    if not isinstance(raw, list):
        raise ProfileError(f"profile {path}: absent must be a list of command names")
    for command in raw:
        _check_command(command, path)
    return list(raw)


def _check_command(command: Any, path: Path) -> None:
    if not isinstance(command, str) or not _COMMAND_RE.match(command):
        raise ProfileError(f"profile {path}: invalid command name {command!r}")


# (pure sh) `replay_loop FILE LINES INTERVAL UNIT`: one sample (LINES lines) of FILE per
# interval (UNIT s or ms), the file round and round, until a signal ends it (as `-l` does)
LOOP_FUNCTION = r"""replay_loop() {
  f=$1; n=$2; d=$3
  case $d in ''|*[!0-9]*|0) printf 'nvidia-smi: bad loop interval: %s\n' "$d" >&2; exit 2 ;; esac
  [ "$4" = ms ] && d=$(printf '%d.%03d' $((d / 1000)) $((d % 1000)))
  [ -s "$f" ] || exit 2
  s=
  trap '[ -n "$s" ] && kill $s 2>/dev/null; exit 143' TERM HUP INT
  while :; do
    i=0
    while IFS= read -r line; do
      printf '%s\n' "$line" || exit 141
      i=$((i + 1))
      if [ "$i" -ge "$n" ]; then i=0; sleep "$d" & s=$!; wait $s; s=; fi
    done < "$f"
  done
}""".splitlines()


def render_script(command: str, rules: Sequence[ReplayRule], files_dir: Path) -> str:
    """The ``sh`` script replaying ``rules`` for ``command`` from copies under ``files_dir``."""
    lines = [
        "#!/bin/sh",
        f"# {command}: replay of captured outputs (generated by gpuonboard.testing.toolbox)",
        *(LOOP_FUNCTION if any(r.loop for r in rules) else []),
        'case "$*" in',
    ]
    for rule in rules:
        pattern = "*" if rule.args == MATCH_ANY else shlex.quote(rule.args)
        target = shlex.quote(str(files_dir / rule.file))
        if rule.loop:
            lines += [
                f"  {pattern}) exec head -n {rule.loop} -- {target} ;;",
                f"  {pattern}' -l '*) eval 'd=${{'$#}}; replay_loop {target} {rule.loop} \"$d\" s ;;",
                f"  {pattern}' -lms '*) eval 'd=${{'$#}}; replay_loop {target} {rule.loop} \"$d\" ms ;;",
            ]
            continue
        lines.append(f"  {pattern}) exec cat -- {target} ;;")
    message = shlex.quote(f"{command}: this test host replays no capture for arguments: ")
    lines += [
        f"  *) printf '%s%s\\n' {message} \"$*\" >&2; exit {UNMATCHED_EXIT} ;;",
        "esac",
        "",
    ]
    return "\n".join(lines)


def render_toolbox(
    profile: Profile,
    host_dir: Path,
    fixtures_root: Path = DEFAULT_FIXTURES_ROOT,
    system_path: Sequence[str] = (),
) -> Path:
    """Write ``<host_dir>/bin/<command>`` for every replayed command; return the bin dir.

    Fixture files are copied to ``<host_dir>/fixtures/`` so the host does not
    depend on the repository at run time.  Raises :class:`ProfileError` when a
    fixture is missing or an ``absent`` command is found on ``system_path``.
    """
    bin_dir, files_dir = host_dir / "bin", host_dir / "fixtures"
    bin_dir.mkdir(parents=True, exist_ok=True)
    for command, rules in profile.replay.items():
        for rule in rules:
            _copy_fixture(fixtures_root, rule.file, files_dir, profile)
        script = bin_dir / command
        script.write_text(render_script(command, rules, files_dir))
        script.chmod(0o755)
    check_absent(profile, [str(bin_dir), *system_path])
    return bin_dir


def _copy_fixture(root: Path, rel: PurePosixPath, files_dir: Path, profile: Profile) -> None:
    source = root / rel
    if not source.is_file():
        raise ProfileError(f"profile {profile.name}: fixture {source} does not exist")
    target = files_dir / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)


def check_absent(profile: Profile, path_dirs: Sequence[str]) -> None:
    """Raise if a command the profile lists as absent is found in ``path_dirs``."""
    for command in profile.absent:
        for directory in path_dirs:
            candidate = Path(directory) / command
            if candidate.exists() and os.access(candidate, os.X_OK):
                raise ProfileError(f"profile {profile.name}: {command} must be absent but {candidate} exists")


def add_executable(bin_dir: Path, name: str, text: str) -> Path:
    """Drop an extra executable (e.g. a ``docker`` wrapper) into a test host's bin dir,
    which is first on that host's PATH; an existing one of that name is replaced."""
    _check_command(name, bin_dir)
    bin_dir.mkdir(parents=True, exist_ok=True)
    path = bin_dir / name
    tmp = bin_dir / f".{name}.tmp"
    tmp.write_text(text)
    tmp.chmod(0o755)
    os.replace(tmp, path)
    return path
