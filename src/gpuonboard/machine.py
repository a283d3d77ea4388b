"""This machine and its processes, as named in files other runs read later (an upload lease on
a host, temp files in a cache dir on a shared disk): who wrote it, and whether it still runs."""

from __future__ import annotations

import hashlib
import os
import socket
from pathlib import Path


def tag(*extra: str, length: int) -> str:
    """Hex digits naming this machine (machine-id and host name), and `extra` (e.g. a project
    dir): the same value for every run from here."""
    try:
        machine = Path("/etc/machine-id").read_text().strip()
    except OSError:
        machine = ""
    key = "\0".join([machine, socket.gethostname(), *extra])
    return hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()[:length]


def process_ended(pid: int) -> bool:
    """Whether a process of this machine has ended (False for one that runs, or that we may not
    signal, or a pid that is no pid)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False
    return False


def exposed(label: str, path: str, mode: int, holds: str) -> str | None:
    """The sentence refusing a local file of secrets that others can read (`mode & 0o077`), as
    ssh refuses such a private key; None when only its owner can."""
    if not mode & 0o077:
        return None
    return (
        f"{label} {path} has mode {mode:04o}, readable by others; it holds {holds}, so it was not"
        f" used: chmod 600 {path}"
    )
