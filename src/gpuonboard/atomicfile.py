"""Atomic file writes: a new temp file beside the target, renamed over it once complete, so a
reader (or a crash, or Ctrl-C) never sees half a file and a failure leaves the old one whole."""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import IO

# a file of its own: never one that exists already, nor a link planted at its name
_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def _create(directory: Path, prefix: str, mode: int) -> tuple[int, Path]:
    """A new empty file `<prefix><random>` in directory, created with `mode` less the umask.
    -> (fd open for writing, its path)."""
    for _ in range(100):
        tmp = directory / f"{prefix}{secrets.token_hex(4)}"
        try:
            return os.open(tmp, _NEW, mode), tmp
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temp file name", str(directory / prefix))


@contextlib.contextmanager
def replacing(
    path: Path, prefix: str | None = None, mode: int = 0o600, fsync: bool = False, parents: bool = True
) -> Iterator[IO[bytes]]:
    """Write `path` atomically: yields a binary file, a new temp file in path's directory
    (created, with its parents, when missing); when the block ends the file is closed and
    renamed over path (os.replace). On any exception, KeyboardInterrupt too, the temp file is
    removed, path left as it was, and the exception (an OSError with its errno) goes on.
    `mode`: the new file's mode less the umask (0o600: private; 0o666: as open() makes one);
    `prefix`: the temp file's name prefix (default `.<name>.`: hidden, and no `*.json` glob
    finds it); `fsync`: the data reaches the disk before the rename (a power cut then leaves the
    old file or the whole new one; without it, only a crash of this process is covered);
    `parents`: False when a missing directory is an error (FileNotFoundError), not made."""
    if parents:
        path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = _create(path.parent, f".{path.name}." if prefix is None else prefix, mode)
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
            if fsync:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


# the most bytes handed to one write(2): a report of 13 MB written in one call cost 13-171 ms of
# kernel CPU in half of the runs measured on this project's VM (Linux 6.18), in pieces of 1 MiB
# 3-5 ms in every run (docs/benchmarks.md, round 29)
PIECE = 1 << 20


def write_pieces(f: IO[bytes], data: bytes) -> None:
    """Write `data` to `f` whole, at most PIECE bytes a call (the file's bytes are the same)."""
    if len(data) <= PIECE:
        f.write(data)
        return
    view = memoryview(data)
    for start in range(0, len(data), PIECE):
        f.write(view[start : start + PIECE])


def write_text(
    path: Path,
    text: str,
    mode: int = 0o600,
    errors: str = "strict",
    prefix: str | None = None,
    fsync: bool = False,
) -> None:
    """Write text as UTF-8 (`errors`: what a character UTF-8 cannot hold, a lone surrogate,
    becomes) to path atomically (see `replacing`). Encoded before the temp file exists: a text
    that cannot be encoded leaves nothing behind."""
    data = text.encode("utf-8", errors)
    with replacing(path, prefix, mode, fsync) as f:
        write_pieces(f, data)
