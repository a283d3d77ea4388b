"""Turns on this machine for tests run in parallel (pytest-xdist workers, concurrent runs).

Most tests share this machine freely: each has its own temp dir, test hosts and ports. A few
read what is machine-wide by nature (a test host's ``ps``, ``pgrep cron`` or ``who`` see every
process here, since its sessions run on this kernel) and need no other test running meanwhile:
those take the turn alone, every other test takes it shared. A readers-writer lock of two
``flock`` files: a waiting lone test holds the gate, so shared takers queue behind it instead
of starving it. The kernel drops the locks of a process that dies.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path


def lock_dir() -> Path:
    """Where the lock files live: this machine's temp dir, one pair per user."""
    return Path(tempfile.gettempdir())


def _open(path: Path) -> int:
    return os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)


@contextlib.contextmanager
def machine_turn(alone: bool, where: Path | None = None) -> Iterator[None]:
    """Hold this machine's turn while the block runs: `alone` (no other test runs), or shared."""
    base = where or lock_dir()
    stem = f"gpuonboard-tests-{os.getuid()}"
    gate, turn = _open(base / f"{stem}.gate"), _open(base / f"{stem}.turn")
    try:
        fcntl.flock(gate, fcntl.LOCK_EX)
        try:
            fcntl.flock(turn, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        finally:
            fcntl.flock(gate, fcntl.LOCK_UN)
        yield
    finally:
        os.close(turn)  # (closing drops the lock)
        os.close(gate)
