"""The host's sha256 of big files taken while rsync writes them (`sh/hash_follow.sh`).

An upload proves what arrived by the host's own sha256 of each file, read back from its disk.
For a big file that read came after the last byte: 1 GiB is 1.4 s with SHA-NI (8 s with
coreutils' sha256sum), all of it after the link went idle. A `Follower`, started beside the
rsync run over the same master connection, reads each big file on the host as it grows (the
inode rsync writes: its temp file, or a partial file written in place, a resumed file's in the
partial dir among them) and prints its sha256
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
from typing import IO

from gpuonboard import children, shell
from gpuonboard.sh import load
from gpuonboard.transfer.rsync import PARTIAL_DIR
from gpuonboard.transfer.verify import SHA256_FN

FOLLOW_MIN = 64 << 20  # a file this big is hashed while it arrives (64 MiB: ~0.1 s of a host's CPU)
FOLLOW_MAX = 32  # files per follower (the biggest): its arguments stay short
IDLE_S = 2.0  # after rsync's success, how long the host may say nothing of a file it reads
CLOSE_S = 1.0  # how long the follower's ssh may take to end once its stdin closed


@dataclass(frozen=True)
class Followed:
    """One file to follow: its path under the target (the key of the verification's map), the
    host dir rsync writes it in and its name there, where it lands (absolute host paths), and
    the size it will have (-1: not known; once that much is read, the follower looks for its
    landing more often: rsync renames it right after its last byte)."""

    rel: str
    dir: str
    name: str
    final: str
    size: int = -1


def entry(target: str, rel: str, size: int = -1) -> Followed:
    """A file rsync writes under its real name (plain mode, a batch of ciphertexts)."""
    path = posixpath.join(target, rel)
    return Followed(rel, posixpath.dirname(path), posixpath.basename(path), path, size)


def follow_command(files: Sequence[Followed]) -> str:
    """The host's command: hash_follow.sh over `files`, stopped when its stdin closes (a
    session over the master) or its session ends (one of its own)."""
    args = [a for f in files for a in (f.dir, f.name, f.final, str(f.size))]
    script = SHA256_FN + "\n" + load("hash_follow").replace("__PARTIAL__", PARTIAL_DIR)
    # (the wrapper runs it in the background, where stdin would be /dev/null: fd 3 carries it;
    # in sh, whatever the login shell is)
    command = shell.join(["sh", "-c", script, "sh", *args]) + " <&3"
    return shell.sh_c("exec 3<&0\n" + shell.until_session_ends(command))


# what hash_follow.sh says of a file besides its sha256: began to read it, read more, gave it up
BEGUN, READ, GAVE_UP = "-", "+", "x"


def parse_line(line: str, count: int) -> tuple[int, str] | None:
    """Pure: one output line "INDEX SHA256" (landed) or "INDEX -|+|x" -> (index, that word),
    None for anything else."""
    index, _, word = line.strip().partition(" ")
    if not index.isdigit() or int(index) >= count:
        return None
    if word in (BEGUN, READ, GAVE_UP):
        return int(index), word
    if len(word) != 64 or word.strip("0123456789abcdef"):
        return None
    return int(index), word


class Follower:
    """hash_follow.sh running on the host (`ssh` over the master: `ssh_argv`) for `files`."""

    def __init__(self, ssh_argv: Sequence[str], files: Sequence[Followed]) -> None:
        self.files = list(files)
        self._sums: dict[int, str] = {}
        self._reading: set[int] = set()  # begun, neither landed nor given up: waited for
        self._heard = time.monotonic()  # its last line
        self._cond = threading.Condition()
        self._ended = not self.files
        self._proc: subprocess.Popen[str] | None = None
        if self._ended:
            return
        argv = [*ssh_argv, shell.login_neutral(follow_command(self.files))]
        try:
            self._proc = children.track(
                subprocess.Popen(
                    argv,
                    stdin=subprocess.PIPE,  # (closed: the host's side ends, see hash_follow.sh)
                    stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL,
                    text=True,
                    errors="replace",
                )
            )
        except OSError:
            self._ended = True
            return
        threading.Thread(target=self._read, args=(self._proc.stdout,), name="follow", daemon=True).start()

    def _read(self, out: IO[str]) -> None:
        try:
            for line in out:
                got = parse_line(line, len(self.files))
                if got is None:
                    continue
                i, word = got
                with self._cond:
                    self._heard = time.monotonic()
                    if word in (BEGUN, READ):
                        self._reading.add(i)
                    else:
                        self._reading.discard(i)
                        if word != GAVE_UP:
                            self._sums[i] = word
                    self._cond.notify_all()
        except (OSError, ValueError):
            pass
        finally:
            with self._cond:
                self._ended = True
                self._cond.notify_all()

    def sums(self, idle: float = IDLE_S) -> dict[str, str]:
        """rel -> the host's sha256 of it, for the files that landed. Call it once rsync
        succeeded: it waits for the files the host is still reading for as long as the host
        says it reads more (a slow disk or CPU) or until `idle` seconds passed without a word
        from it (those it did not see, it never will), then stops it."""
        asked = time.monotonic()
        with self._cond:
            while self._reading and not self._ended:
                left = max(self._heard, asked) + idle - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(left)
            got = dict(self._sums)
        self.close()
        return {self.files[i].rel: digest for i, digest in got.items()}

    def close(self) -> None:
        """Stop the follower: its stdin closes, which ends its side on the host (and then this
        ssh client); one that does not end at once is terminated."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        with contextlib.suppress(OSError):
            if proc.stdin is not None:
                proc.stdin.close()
        try:
            proc.wait(timeout=CLOSE_S)
        except subprocess.TimeoutExpired:
            children.stop([proc], grace=2.0)


def biggest(sizes: Iterable[tuple[str, int]]) -> list[tuple[str, int]]:
    """Of (rel, size), those worth following: FOLLOW_MIN bytes or more, the FOLLOW_MAX biggest."""
    big = sorted(((size, rel) for rel, size in sizes if size >= FOLLOW_MIN), reverse=True)
    return [(rel, size) for size, rel in big[:FOLLOW_MAX]]


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
