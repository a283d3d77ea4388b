"""What every part of the dataset step shares: the names it gives its files on the host, the
words its messages end with, and the pure sentences for a dataset file this machine could not
read or a local write that failed."""

from __future__ import annotations

import errno
import os
import posixpath
from collections.abc import Collection, Iterable, Sequence
from pathlib import Path
from typing import Any

from gpuonboard import transfer
from gpuonboard.transfer import uploadlock

ENCRYPTED_SUFFIX = ".encrypted"  # ciphertexts live in <data_dir>/<name>.encrypted/<rel>.age
SHARDS_SUFFIX = ".shards"  # shard mode: <data_dir>/<name>.shards/<sha>.tar[.age] + manifest.json
MAX_NAME = 214  # bytes of the copy's name: its unpack dir, `.<name>.gpuonboard-unpack-<8>-<12>`, holds 255
DISK_FULL = (errno.ENOSPC, errno.EDQUOT)
NOTHING_SENT = "nothing was sent"
LOCAL_KEPT = "what already arrived is not sent again"  # (plain mode: rsync keeps what arrived)
# errors reading a dataset file that a rerun alone would meet again
UNREADABLE = (errno.EACCES, errno.EPERM, errno.EISDIR)
# (plain encrypted mode sends each file's ciphertext: a directory with no file in it has none)
NOT_IN_PLAIN_ENCRYPTED = "which plain encrypted mode does not upload (--shards carries them)"


def transfer_size(value: Any) -> int:
    """A size setting: bytes, or text like 256MiB."""
    from gpuonboard.units import parse_size

    return parse_size(value)


class LocalWriteError(Exception):
    """This machine could not write what the upload needed (its message is the step's)."""


def local_write_failure(exc: OSError, what: str, where: Path, kept: str = LOCAL_KEPT) -> str:
    """Pure: the sentence for a local write that failed (a full disk is the usual one)."""
    if exc.errno in DISK_FULL:
        return (
            f"no space left on this machine for {what} under {where}; free space there (or set"
            f" the step's cache_dir to a bigger disk), then rerun: {kept}"
        )
    return f"cannot write {what} under {where}: {exc.strerror or exc}; fix that, then rerun: {kept}"


def unreadable_source(
    exc: Exception, root: Path, kept: str, errnos: Sequence[int] | None = UNREADABLE
) -> str | None:
    """Pure: the sentence for a dataset file (under root, or root itself) this process could not
    read, with one of `errnos` (None: any); else None. By default only errors a rerun alone would
    meet again: a file that vanished meanwhile is left to the caller (the rerun's scan no longer
    lists it)."""
    if not isinstance(exc, OSError) or exc.filename is None:
        return None
    if errnos is not None and exc.errno not in errnos:
        return None
    path = Path(os.fsdecode(exc.filename))
    base = root if root.is_dir() else root.parent
    if not path.is_relative_to(base):
        return None
    rel = path.relative_to(base).as_posix()
    return (
        f"cannot read {rel} in the dataset on this machine: {exc.strerror};"
        f" fix it (or move it out), then rerun: {kept}"
    )


def unreadable(exc: OSError, root: Path, kept: str) -> str:
    """The sentence for any error reading the dataset (a file or directory in it, or itself)."""
    return unreadable_source(exc, root, kept, errnos=None) or (
        f"cannot read the dataset {root} on this machine: {exc.strerror or exc}; fix it, then rerun: {kept}"
    )


def ours(name: str) -> bool:
    """A name gpuonboard gives its own files beside (or in) a copy on the host."""
    return (
        name in (uploadlock.COPY_MARK, transfer.PARTIAL_DIR)
        or name.endswith(".gpuonboard-upload")
        or ".gpuonboard-unpack-" in name
    )


def shown(path: str) -> str:
    """A path as one line of a sentence: as it is when printable, else with its line breaks,
    control characters and undecodable bytes escaped as Python writes them."""
    return path if path.isprintable() else repr(path)[1:-1]


def count(n: int, noun: str) -> str:
    """Pure: '1 file', '3 files'."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def empty_dirs(n: int) -> str:
    """Pure: '1 empty directory', '3 empty directories'."""
    return f"{n} empty {'directory' if n == 1 else 'directories'}"


def _holding(dirs: Collection[str], specials: Iterable[str]) -> str:
    """Pure: how the dataset's directories with nothing to upload (`tree.empty_dirs`) hold
    fifos, sockets or device nodes (never uploaded): '' (none does: all are empty)."""
    holding = {rel.rpartition("/")[0] for rel in specials}.intersection(dirs)
    if not holding:
        return ""
    what = "holding only" if len(holding) == len(dirs) else "empty or holding only"
    return f"{what} fifos, sockets or device nodes"


def bare_dirs(dirs: Collection[str], specials: Iterable[str], where: str = "") -> str:
    """Pure: those directories counted as what they are here, `where` after the noun: '1 empty
    directory of the dataset', or where one holds a fifo: '1 directory of the dataset holding
    only fifos, sockets or device nodes' ('3 directories ... empty or holding only ...')."""
    n, holding = len(dirs), _holding(dirs, specials)
    if not holding:
        return empty_dirs(n) + where
    return f"{n} {'directory' if n == 1 else 'directories'}{where} {holding}"


def only_dirs(dirs: Collection[str], specials: Iterable[str]) -> str:
    """Pure: what a dataset with no file, only those directories, holds: 'only empty
    directories', or 'no files, only directories holding only fifos, sockets or device nodes'."""
    holding = _holding(dirs, specials)
    return f"no files, only directories {holding}" if holding else "only empty directories"


def made(dirs: Sequence[str]) -> str:
    """Pure: the message's count of empty directories made on the host, with one example."""
    return f"{empty_dirs(len(dirs))} (e.g. {dirs[0]!r})"


def one_spelling(path: str) -> str:
    """Pure: an absolute path without repeated slashes, `.` parts or a trailing slash ('' stays
    ''); `..` is refused before this."""
    return posixpath.normpath("/" + path.lstrip("/")) if path else ""


def parent_dirs(paths: Iterable[str]) -> set[str]:
    """Pure: every directory the '/'-separated relative paths imply ('a/b/c' -> 'a', 'a/b')."""
    out: set[str] = set()
    for rel in paths:
        i = rel.find("/")
        while i != -1:
            out.add(rel[:i])
            i = rel.find("/", i + 1)
    return out
