"""One upload per host target at a time from this machine.

Two `invoke sync` runs writing the same dataset to the same host at once would overwrite each
other's half-received shards and unpack dirs on the host (each run then fails verification and
asks for a rerun: nothing silent, but both uploads are wasted). So an upload takes an exclusive
advisory lock (flock) on a small file under the project's `.gpuonboard/locks/`, named by the host
address, port, login user and remote path, and keeps it until the step's run on that host ends.
The kernel drops the lock when the holding process exits for any reason (killed, crashed,
Ctrl-C), so a stale lock never blocks a rerun, even after a dropped link. The file says who holds
it (pid, start time) for the message of the run that is turned away.

A lock on the host itself would cover other machines too, but a session whose link dropped keeps
such a lock until the host's sshd notices (hours without keepalives), which would block exactly
the rerun that resumes it; so it is not done (README: Limits).
"""

from __future__ import annotations

import hashlib
import os
import time
from dataclasses import dataclass
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover - not on Windows: no lock there
    fcntl = None  # type: ignore[assignment]


class UploadBusy(Exception):
    """Another process of this machine holds the lock; str() is the holder ("pid 123 since ...")."""


def lock_name(address: str, port: int, user: str, remote_path: str) -> str:
    """Pure: the lock file's name for one remote path of one host."""
    key = "\0".join([address.lower(), str(port), user, remote_path.rstrip("/") or "/"])
    return hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()[:24] + ".lock"


@dataclass
class UploadLock:
    """A held lock; `release()` (idempotent) frees it."""

    path: Path
    fd: int | None

    def release(self) -> None:
        """Unlock and close (the file stays: unlinking it would race with the next taker)."""
        fd, self.fd = self.fd, None
        if fd is not None:
            os.close(fd)  # closing the last descriptor drops the flock


def acquire(lock_dir: Path, name: str) -> UploadLock:
    """Take the lock `name` under lock_dir without waiting; UploadBusy when it is held.
    OSError when the lock file cannot be created (the caller reports it)."""
    lock_dir.mkdir(parents=True, exist_ok=True)
    path = lock_dir / name
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    if fcntl is None:  # pragma: no cover
        return UploadLock(path, fd)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = _read_holder(fd)
        os.close(fd)
        raise UploadBusy(holder) from None
    except OSError:
        os.close(fd)
        raise
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime())
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"pid {os.getpid()} since {stamp}\n".encode(), 0)
    return UploadLock(path, fd)


def _read_holder(fd: int) -> str:
    try:
        text = os.pread(fd, 200, 0).decode("utf-8", "replace").strip()
    except OSError:
        text = ""
    return text or "pid unknown"
