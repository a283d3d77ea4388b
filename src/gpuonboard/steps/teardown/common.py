"""What every teardown step shares: the path safety check (never `/`, a home dir, a system
dir), the local copy's directory, probe names, and lists of paths in messages."""

from __future__ import annotations

import hashlib
import os
import posixpath
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gpuonboard.inventory.fields import system_tree
from gpuonboard.steps.base import StepArgsError, StepContext

SHOWN = 3  # how many paths a message names before "+N more"

# their direct children are home dirs or system state (/home/alice, /var/lib): refused too
_GUARDED_PARENTS = ("/home", "/var", "/root", "/Users")


def probe_name(kind: str, key: str) -> str:
    """The name of a step's probe: its kind and a digest of its command (one per command)."""
    # (a path that is not UTF-8 holds lone surrogates: its own bytes)
    return f"{kind}:{hashlib.sha1(key.encode('utf-8', 'surrogateescape')).hexdigest()[:10]}"


def holds(path: str, inner: str) -> bool:
    """Pure: `path` is `inner` or a directory above it (both absolute, normalised)."""
    top = path.rstrip("/")
    return inner == path or inner.startswith(top + "/")


def path_problem(path: str, home: str | None = None) -> str | None:
    """Why deleting `path` on a host is refused, or None when it is safe to delete."""
    if not path or not path.strip():
        return "an empty path"
    if any(c in path for c in "\n\r\0"):
        return "a path with a line break"
    if not posixpath.isabs(path):
        return "not an absolute path"
    if ".." in path.split("/"):
        return "a path with '..'"
    norm = posixpath.normpath(path)
    if norm.startswith("//"):
        norm = "/" + norm.lstrip("/")
    if norm == "/":
        return "the root directory"
    if system_tree(norm) is not None:  # (never deleted, at any depth below them)
        return "a system directory"
    parts = norm.strip("/").split("/")
    if len(parts) == 1:
        return "a top-level directory"
    if len(parts) == 2 and "/" + parts[0] in _GUARDED_PARENTS:
        return "a home directory" if parts[0] in ("home", "Users") else "a system directory"
    if home and home.startswith("/"):
        h = posixpath.normpath(home)
        if norm == h:
            return "the login user's home directory"
        if holds(norm, h):
            return "a directory holding the login user's home directory"
    return None


def shown_names(paths: Sequence[str], limit: int = SHOWN) -> str:
    """The first `limit` paths, comma-separated, and `(+N more)` for the rest."""
    shown = ", ".join(paths[:limit])
    return shown + (f" (+{len(paths) - limit} more)" if len(paths) > limit else "")


def describe_problems(missing: Sequence[str], corrupt: Sequence[str], total: int) -> str:
    """`2 of 5 files not verified: missing 1 (a.txt); corrupt 1 (b.bin)` (first paths + count)."""
    parts = []
    if missing:
        parts.append(f"missing {len(missing)} ({shown_names(missing)})")
    if corrupt:
        parts.append(f"corrupt {len(corrupt)} ({shown_names(corrupt)})")
    return f"{len(missing) + len(corrupt)} of {total} files not verified: " + "; ".join(parts)


def check_dir_arg(value: Any, name: str) -> str:
    """A step argument naming a dir on the host: absolute (StepArgsError else), normalised; '' when unset."""
    text = str(value or "").strip()
    if text and not posixpath.isabs(text):
        raise StepArgsError(f"argument {name!r} must be an absolute path on the host, not {text!r}")
    return posixpath.normpath(text) if text else ""


def copy_dir(raw: Any, ctx: StepContext) -> Path:
    """The local copy's directory: `raw` (else vars.results_dest, else results/<host> under the
    project); `{host}` in it is replaced."""
    return copy_path(
        str(raw or "") or str(ctx.host.vars.get("results_dest") or ""), ctx.host.name, ctx.project
    )


def copy_path(text: str, host: str, project: Path) -> Path:
    """Pure: the local copy's directory for a dest `text` ('': results/<host>) of `host`, `{host}`
    in it replaced, relative to the project."""
    path = Path(os.path.expanduser((text or str(Path("results") / "{host}")).replace("{host}", host)))
    return path if path.is_absolute() else project / path


def rel_path(path: str) -> str:
    """A path as find prints it (`./x`) without its `./`."""
    return path[2:] if path.startswith("./") else path
