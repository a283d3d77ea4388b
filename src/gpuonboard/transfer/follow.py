"""The host's sha256 of big files taken while rsync writes them (`sh/hash_follow.sh`).

An upload proves what arrived by the host's own sha256 of each file, read back from its disk.
For a big file that read came after the last byte: 1 GiB is 1.4 s with SHA-NI (8 s with
coreutils' sha256sum), all of it after the link went idle. A `Follower`, started beside the
rsync run over the same master connection, reads each big file on the host as it grows (the
inode rsync writes: its temp file, or a partial file written in place) and prints its sha256
once that very inode has landed under its real name, whole. The caller takes a file as verified
only where that hash is the one expected; any other outcome (a file the follower missed, a
stale partial it read before rsync rewrote it, a slow host) leaves the file to the ordinary
check after the upload. The follower only reads, and it ends with its SSH session.
"""

from __future__ import annotations

import contextlib
import posixpath
import subprocess
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

from gpuonboard import children, shell
from gpuonboard.sh import load
from gpuonboard.transfer.rsync import PARTIAL_DIR
from gpuonboard.transfer.verify import SHA256_FN

FOLLOW_MIN = 64 << 20  # a file this big is hashed while it arrives (64 MiB: ~0.1 s of a host's CPU)
FOLLOW_MAX = 32  # files per follower (the biggest): its arguments stay short
WAIT_S = 10.0  # after rsync's success, how long its last files' hashes may take to come


@dataclass(frozen=True)
class Followed:
    """One file to follow: its path under the target (the key of the verification's map), the
    host dir rsync writes it in and its name there, and where it lands (absolute host paths)."""

    rel: str
    dir: str
    name: str
    final: str


def entry(target: str, rel: str) -> Followed:
    """A file rsync writes under its real name (plain mode, a batch of ciphertexts)."""
    path = posixpath.join(target, rel)
    return Followed(rel, posixpath.dirname(path), posixpath.basename(path), path)


def follow_command(files: Sequence[Followed]) -> str:
    """The host's command: hash_follow.sh over `files`, stopped when its session ends."""
    args = [a for f in files for a in (f.dir, f.name, f.final)]
    script = SHA256_FN + "\n" + load("hash_follow")
    return shell.until_session_ends(shell.join(["sh", "-c", script, "sh", PARTIAL_DIR, *args]))


def parse_line(line: str, count: int) -> tuple[int, str] | None:
    """Pure: one output line "INDEX SHA256" (landed) or "INDEX -" (begun) -> (index, sha256 or
    ""), None for anything else."""
    index, _, digest = line.strip().partition(" ")
    if not index.isdigit() or int(index) >= count:
        return None
    if digest == "-":
        return int(index), ""
    if len(digest) != 64 or digest.strip("0123456789abcdef"):
        return None
    return int(index), digest


class Follower:
    """hash_follow.sh running on the host (`ssh` over the master: `ssh_argv`) for `files`."""

    def __init__(self, ssh_argv: Sequence[str], files: Sequence[Followed]) -> None:
        self.files = list(files)
        self._sums: dict[int, str] = {}
        self._begun: set[int] = set()  # the files it began to read (it waits for those only)
        self._cond = threading.Condition()
        self._ended = False
        self._proc: subprocess.Popen[str] | None = None
        if not self.files:
            self._ended = True
            return
        argv = [*ssh_argv, follow_command(self.files)]
        try:
            self._proc = children.track(
                subprocess.Popen(
                    argv,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL,
                    text=True,
                    errors="replace",
                )
            )
        except OSError:
            self._ended = True
            return
        threading.Thread(target=self._read, name="follow", daemon=True).start()

    def _read(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        try:
            for line in self._proc.stdout:
                got = parse_line(line, len(self.files))
                if got is not None:
                    with self._cond:
                        if got[1]:
                            self._sums[got[0]] = got[1]
                        else:
                            self._begun.add(got[0])
                        self._cond.notify_all()
        except (OSError, ValueError):
            pass
        finally:
            with self._cond:
                self._ended = True
                self._cond.notify_all()

    def sums(self, wait: float = WAIT_S) -> dict[str, str]:
        """rel -> the host's sha256 of it, for the files that landed; waits up to `wait`
        seconds for those it began to read and has not finished (call it once rsync succeeded:
        the rest it did not see, and never will), then stops."""
        deadline = time.monotonic() + wait
        with self._cond:
            while not self._begun <= self._sums.keys() and not self._ended:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(left)
            got = dict(self._sums)
        self.close()
        return {self.files[i].rel: digest for i, digest in got.items()}

    def close(self) -> None:
        """Stop the follower (its ssh client: the host's side ends with its session)."""
        proc, self._proc = self._proc, None
        if proc is not None:
            children.stop([proc], grace=2.0)


def biggest(sizes: Iterable[tuple[str, int]]) -> list[str]:
    """Of (rel, size), the rels worth following: FOLLOW_MIN bytes or more, the FOLLOW_MAX biggest."""
    big = sorted(((size, rel) for rel, size in sizes if size >= FOLLOW_MIN), reverse=True)
    return [rel for _size, rel in big[:FOLLOW_MAX]]


@contextlib.contextmanager
def following(
    into: dict[str, str], ssh_argv: Sequence[str], files: Sequence[Followed]
) -> Iterator[Callable[[], None]]:
    """A Follower of `files` for the block (stopped when it ends), which calls what it yields
    once its rsync run succeeded: the host's sha256 of the files that landed go `into`."""
    follower = Follower(ssh_argv, files if ssh_argv else [])
    try:
        yield lambda: into.update(follower.sums())
    finally:
        follower.close()
