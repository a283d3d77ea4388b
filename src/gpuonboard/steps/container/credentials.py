"""Registry credentials for the container step's login, read on this machine: from the
environment (registry_user_env / registry_password_env, for the image's own registry only) or
from a credentials file only its owner can read, the entry named for the login registry;
passwords wrapped as masking.Secret, YAML errors never quoting them."""

from __future__ import annotations

import os
from pathlib import Path

from gpuonboard import machine, masking
from gpuonboard.steps.base import StepArgsError
from gpuonboard.steps.checks.ngc import mirror_host
from gpuonboard.steps.container.settings import Settings
from gpuonboard.yamlload import load_yaml


def _credentials(s: Settings, project: Path) -> tuple[str, masking.Secret] | str | None:
    """(user, Secret password) for the login registry, from this machine's environment
    (registry_user_env/registry_password_env) else the credentials file; None when neither
    is configured (or the file has no entry for that registry); a message when unusable.

    The environment's credentials are for the image's own registry (e.g. nvcr.io): with a
    mirror they are never used (never sent to the mirror); only a credentials-file entry
    named for the mirror's host logs in to the mirror."""
    if s.user_env or s.password_env:
        if not (s.user_env and s.password_env):
            return "set both registry_user_env and registry_password_env (or neither)"
        if s.mirror:
            if not s.credentials_file:
                return None
            return read_credentials_file(Path(s.credentials_file).expanduser(), project, s.login_registry)
        user, password = os.environ.get(s.user_env), os.environ.get(s.password_env)
        if not user or not password:
            missing = s.user_env if not user else s.password_env
            return f"registry credentials: environment variable {missing} is not set on this machine"
        return user, masking.Secret(password)
    if not s.credentials_file:
        return None
    return read_credentials_file(Path(s.credentials_file).expanduser(), project, s.login_registry)


def read_credentials_file(
    path: Path, project: Path, registry: str | None
) -> tuple[str, masking.Secret] | str | None:
    """`{registry: {username, password}}` (YAML or JSON) from a file only its owner can read."""
    if not path.is_absolute():
        path = project / path
    try:
        mode = path.stat().st_mode & 0o777
    except OSError as exc:
        return f"registry credentials file {path}: {exc.strerror or exc}"
    if refused := machine.exposed("registry credentials file", str(path), mode, "passwords"):
        return refused
    try:
        # (numbers as YAML reads them: a password that is no text gets its own sentence below)
        data = load_yaml(path, StepArgsError, "registry credentials file", strict_numbers=False)
    except StepArgsError as exc:
        return _without_yaml_problem(str(exc))
    if not isinstance(data, dict):
        return f"registry credentials file {path}: expected a mapping of registry -> {{username, password}}"
    if registry is None:
        return None
    entry = None
    for key, value in data.items():
        # docker logs in per host: `HOST[:PORT]`, as written or with the mirror's /prefix (as in
        # registry_mirror), in any case
        if mirror_host(str(key)).split("/", 1)[0].lower() == registry.lower():
            entry = value
    if entry is None:
        return None  # no entry for this registry: pull anonymously
    if not (isinstance(entry, dict) and entry.get("username") and entry.get("password")):
        return f"registry credentials file {path}: the entry for {registry} needs username and password"
    for key in ("username", "password"):
        if not isinstance(entry[key], str):  # (the value is not shown: it may be the password)
            return (
                f"registry credentials file {path}: the {key} for {registry} is read as a"
                f" {_yaml_kind(entry[key])}, not as text (YAML turns 0123 into 83, yes into true);"
                f" put it in single quotes: {key}: '...'"
            )
    return str(entry["username"]), masking.Secret(str(entry["password"]))


def _yaml_kind(value: object) -> str:
    """What YAML made of an unquoted value: `number`, `true/false value`, `date`, ..."""
    if isinstance(value, bool):
        return "true/false value"
    if isinstance(value, int | float):
        return "number"
    return {"date": "date", "datetime": "date and time"}.get(type(value).__name__, type(value).__name__)


def _without_yaml_problem(message: str) -> str:
    """A YAML error about the credentials file without PyYAML's words for the problem: they
    quote the text it stopped at, and an unquoted password starting with `*` or `!` is read as
    an alias or a tag named by the password itself ("found undefined alias 'S3cret'")."""
    head, sep, _ = message.partition(": invalid YAML:")
    if not sep:
        return message
    return (
        f"registry credentials file {head}: invalid YAML (the problem is not shown, as it may quote a"
        " password); put each username and password in single quotes, e.g. password: '...' (a value"
        " starting with *, !, &, %, @ or ` is YAML syntax, not text)"
    )
