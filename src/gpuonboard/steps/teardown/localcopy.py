"""The local copy of a pull: whether a dest may be pulled into (another user's, anyone's, holding
what no pull of this host put there), room for it, the check by content of a verified copy before
the host's dir is removed, the stale marks that make a rerun mend corrupt files, and the symlinks
out of an unverified copy."""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from gpuonboard.steps.teardown.common import rel_path
from gpuonboard.steps.teardown.records import Record, read_owner
from gpuonboard.transfer import PARTIAL_DIR, compare_manifests, local_manifest

if TYPE_CHECKING:
    from gpuonboard.inventory import Host


def foreign_dest(dest: Path, host: Host, results: str, key: str = "") -> str | None:
    """What in `dest` no pull of host:results put there (rsync would overwrite a local file of
    the same name as a host file), or None: dest is missing or empty, or its record (or mark of
    a pull in progress) is of this host's address and port and this results dir."""
    owner = read_owner(dest)
    if owner is not None and owner.of(host, results, key):
        return None
    try:
        entries = sorted(p.name for p in dest.iterdir() if p.name != PARTIAL_DIR)
    except OSError:  # missing, or not a dir this machine can list: the pull says why it cannot write
        return None
    if not entries:
        return None
    if owner is not None:
        what = "the verified copy" if owner.verified else "an unfinished pull"
        return f"{what} of {owner.dir} from {owner.host} ({owner.address}:{owner.port})"
    n = len(entries)
    return f"{n} entr{'y' if n == 1 else 'ies'} no pull of {results} from it put there (first: {entries[0]})"


def exposed_dest(dest: Path) -> str | None:
    """Why another local user could change what a pull writes into `dest` (it is theirs, or
    anyone may write it), or None: missing, or this user's (root's) and not world-writable."""
    try:
        st = dest.stat()
    except OSError:
        return None
    if st.st_uid not in (os.getuid(), 0):
        return f"belongs to another user (uid {st.st_uid})"
    if st.st_mode & 0o002:
        return f"is writable by every user (mode {st.st_mode & 0o7777:o})"
    return None


def copy_unverified(dest: Path, record: Record) -> tuple[list[str], list[str]]:
    """(missing, corrupt): the files the record lists that are no longer in dest, and those whose
    sha256 now differs from the one the verified pull recorded. By content, not by size and
    mtime: a copy corrupted after its pull (size and mtime kept, or zeroed) is no copy."""
    return compare_manifests(record.sums, local_manifest(dest, record.sums))


def held_bytes(dest: Path) -> int:
    """Bytes of the regular files under dest (rsync's partial files too; no link followed):
    what an interrupted pull into it already brought."""
    total = 0
    for top, _, files in os.walk(dest):
        for name in files:
            try:
                st = os.lstat(os.path.join(top, name))
            except OSError:
                continue
            total += st.st_size if stat.S_ISREG(st.st_mode) else 0
    return total


def free_bytes(dest: Path) -> int | None:
    """Bytes this user may still write on the file system that holds (or will hold) dest;
    None when no dir on its path can be asked."""
    for part in (dest, *dest.parents):
        try:
            return shutil.disk_usage(part).free
        except OSError:
            continue
    return None


def room_problem(size: int, held: int, free: int | None) -> int | None:
    """Pure: the bytes the pull still needs when they surely exceed what is free (a lower
    bound: file system blocks and rsync's temp files need more), else None."""
    need = max(0, size - held)
    return need if free is not None and need > free else None


def mark_stale(dest: Path, names: Sequence[str], listing: Sequence[str]) -> None:
    """Give each local file whose sha256 differs from the host's an mtime one second off the
    host's one: rsync's quick check (size and mtime in whole seconds) skipped it, and a rerun,
    skipping it again, could never mend the copy (a corrupted copy, or a file the host rewrote
    at its size within the second it was pulled). Its content stays: the rerun's rsync sends
    only what differs from it."""
    mtimes = {}
    for entry in listing:
        kind, _, mtime, path = (entry.split(" ", 3) + ["", "", ""])[:4]
        if kind == "f":
            mtimes[rel_path(path)] = mtime
    root = dest.resolve()
    for name in names:
        with contextlib.suppress(OSError, ValueError):
            host = int(float(mtimes.get(name) or "0"))
            p = dest / name
            # (names come from the host's manifest: `../x` or `/etc/x` there never reaches a file
            # of this machine outside the copy; nor does a path through a symlink in it)
            if (
                name.startswith("/")
                or ".." in Path(name).parts
                or not p.parent.resolve().is_relative_to(root)
            ):
                continue
            st = p.lstat()
            if stat.S_ISREG(st.st_mode):
                os.utime(p, ns=(st.st_atime_ns, (host - 1 if host > 0 else host + 1) * 10**9))


def links_out_of(dest: Path) -> list[tuple[str, str]]:
    """Symlinks under dest whose target, resolved on this machine, lies outside dest:
    (relative path, link text), sorted. No link is followed while walking."""
    root = os.path.realpath(dest)
    out = []
    for top, dirs, files in os.walk(dest, followlinks=False):
        for name in (*dirs, *files):
            path = os.path.join(top, name)
            if not os.path.islink(path):
                continue
            resolved = os.path.realpath(path)
            if resolved != root and not resolved.startswith(root.rstrip(os.sep) + os.sep):
                try:
                    out.append((os.path.relpath(path, dest), os.readlink(path)))
                except OSError:
                    continue
    return sorted(out)


def drop_links_out(dest: Path) -> str:
    """Remove the symlinks under dest that point out of it (an unverified copy keeps none of
    them: followed later, they would read or write this machine's files); -> a note for the
    step's message ('' when there were none)."""
    gone = []
    for rel, target in links_out_of(dest):
        with contextlib.suppress(OSError):
            (dest / rel).unlink()
            gone.append((rel, target))
    if not gone:
        return ""
    n, (first, target) = len(gone), gone[0]
    links, were = ("symlink", "was") if n == 1 else ("symlinks", "were")
    return (
        f"; the {n} pulled {links} pointing out of {dest} {were} removed from it (first: {first} -> {target})"
    )
