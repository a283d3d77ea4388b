"""One upload per host copy of a dataset at a time: a lock on this machine, a lease on the host.

Two `invoke sync` runs writing the same dataset to the same host at once would overwrite each
other's half-received shards and unpack dirs on the host (each run then fails verification and
asks for a rerun: nothing silent, but both uploads, and the link time they cost, are wasted).

This machine: an upload takes an exclusive advisory lock (flock) on a small file under the
project's `.gpuonboard/locks/`, named by the host address, port, login user and remote path, and
keeps it until the step's run on that host ends. The kernel drops the lock when the holding
process exits for any reason (killed, crashed, Ctrl-C), so a stale lock never blocks a rerun.
The file says who holds it (pid, start time) for the message of the run that is turned away.

The host: other machines (or other project dirs) are turned away by a LEASE file beside the
dataset's copy, `<data_dir>/.<name>.gpuonboard-upload`, holding a random token, the owner (this
project on this machine) and who holds it. The upload refreshes its mtime every HEARTBEAT_S
seconds; a lease not refreshed for STALE_S seconds (by the host's own clock) is dead and is taken
over. A session whose link dropped cannot hold the host for hours this way: its lease goes stale
within STALE_S, and a rerun from the same project takes it over at once (holding this machine's
lock proves the earlier run from here has ended). Taking is atomic when no lease exists (the
shell's noclobber create, O_EXCL); two runs taking over the same STALE lease in the same instant
could both win (then both fail verification, as before this lease existed).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import posixpath
import socket
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from . import shell

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


# ---------------------------------------------------------------- the lease on the host

HEARTBEAT_S = 15  # the upload refreshes its lease this often
STALE_S = 60  # a lease not refreshed for this long (host clock) belongs to a run that has ended

# $1 target dir (made first), $2 lease file, $3 token, $4 owner, $5 holder text, $6 stale seconds.
# Prints "took", or "busy <age s>" and the lease's lines. A lease without a token line (a create
# cut short by a full disk) is no lease.
TAKE_SCRIPT = r"""
mkdir -p -- "$1" || exit 2
f=$2
write() { printf 'token %s\nowner %s\nholder %s\n' "$3" "$4" "$5"; }
if [ ! -e "$f" ] && (set -C; write "$@" > "$f") 2>/dev/null; then echo took; exit 0; fi
now=$(date +%s); mod=$(stat -c %Y -- "$f" 2>/dev/null || echo 0)
if grep -q '^token ' -- "$f" 2>/dev/null && ! grep -qxF "owner $4" -- "$f" \
   && [ $((now - mod)) -lt "$6" ]; then
  echo "busy $((now - mod))"; cat -- "$f"; exit 0
fi
write "$@" > "$f.$3" && mv -f -- "$f.$3" "$f" && echo took && exit 0
rm -f -- "$f.$3"; exit 3
"""
# $1 lease file, $2 token: refresh (touch) or remove it only while it is still ours
TOUCH_SCRIPT = 'grep -qxF "token $2" -- "$1" 2>/dev/null && touch -c -- "$1"; exit 0'
RELEASE_SCRIPT = 'grep -qxF "token $2" -- "$1" 2>/dev/null && rm -f -- "$1"; exit 0'


@dataclass(frozen=True)
class Lease:
    """A lease this run holds on the host (its file and token)."""

    path: str
    token: str


@dataclass(frozen=True)
class LeaseBusy:
    """Another live upload holds the host's lease: who, and seconds since it was refreshed."""

    holder: str
    age: int

    def sentence(self, where: str) -> str:
        wait = max(1, STALE_S - self.age)
        return (
            f"another gpuonboard upload to {where} is running from {self.holder} (last heard from"
            f" {self.age} s ago); wait for it to finish, or if that run was stopped, rerun in {wait} s"
        )


def lease_path(dest: str, name: str) -> str:
    """Pure: the lease file of the copy `<dest>/<name>` (beside it, in the data dir)."""
    return posixpath.join(dest, f".{name}.gpuonboard-upload")


def owner_id(lock_dir: Path) -> str:
    """This project on this machine: the same value for every run from here (machine-id and the
    lock dir), so a rerun recognises a lease its own earlier, ended run left behind."""
    try:
        machine = Path("/etc/machine-id").read_text().strip()
    except OSError:
        machine = ""
    key = "\0".join([machine, socket.gethostname(), str(lock_dir.resolve())])
    return hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()[:16]


def holder_text() -> str:
    """Pure but for the clock: who this run is, for the message of a run turned away."""
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime())
    host = "".join(c for c in socket.gethostname() if c.isprintable() and c != "\n") or "unknown host"
    return f"{host}, pid {os.getpid()}, started {stamp}"


def take_command(target: str, lease: Lease, owner: str, holder: str) -> str:
    """The one command that makes the copy's dir and takes the lease (see TAKE_SCRIPT)."""
    argv = ["sh", "-c", TAKE_SCRIPT, "sh", target, lease.path, lease.token, owner, holder, STALE_S]
    return shell.join(argv)


def parse_take(stdout: str) -> LeaseBusy | None:
    """Pure: None when the lease was taken, else who holds it. ValueError on other output."""
    lines = stdout.strip().splitlines()
    if lines and lines[-1] == "took":
        return None
    if lines and lines[0].startswith("busy "):
        fields = dict(line.split(" ", 1) for line in lines[1:] if " " in line)
        holder = "".join(c for c in fields.get("holder", "") if c.isprintable())[:200]
        return LeaseBusy(holder or "another machine", int(lines[0].split()[1]))
    raise ValueError(f"unexpected answer {stdout.strip()[:200]!r}")


def touch_command(lease: Lease) -> str:
    return shell.join(["sh", "-c", TOUCH_SCRIPT, "sh", lease.path, lease.token])


def release_command(lease: Lease) -> str:
    return shell.join(["sh", "-c", RELEASE_SCRIPT, "sh", lease.path, lease.token])


class Heartbeat:
    """Run `argv` (the lease's refresh over the master connection) every HEARTBEAT_S seconds
    until stop(); failures are ignored (a lease that goes stale is the dropped link's case)."""

    def __init__(self, argv: list[str], every: float | None = None) -> None:
        self._every = HEARTBEAT_S if every is None else every
        self._argv = argv
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stopped.wait(self._every):
            with contextlib.suppress(OSError, subprocess.TimeoutExpired):
                subprocess.run(
                    self._argv,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    timeout=max(self._every, 5),
                    check=False,
                )

    def stop(self) -> None:
        """No refresh after this returns (one in flight over the master takes milliseconds)."""
        self._stopped.set()
        self._thread.join(timeout=5)
