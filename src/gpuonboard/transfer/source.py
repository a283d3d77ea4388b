"""The dataset on this machine: the scan of a local source (files, symlinks, empty dirs) with the
sha256 of each file, the background prescan that overlaps the login, and the hashing that
fills in a scan made without hashes.

`scan_source` is the one part that reads local files; `Entry` and `SourceTree` are what the
upload, the shards and the manifests are built from.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import gc
import operator
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from gpuonboard.transfer.crypto import sha256_file


@dataclass(slots=True, unsafe_hash=True)
class Entry:
    """One file or symlink of the dataset (directories are implied by paths). Treat as
    immutable (`dataclasses.replace`); not frozen only because a frozen dataclass's __init__
    sets each field through object.__setattr__: 35 ms more per 50,000 files, on the upload's
    critical path (the scan before the first byte)."""

    rel: str  # path relative to the dataset root, '/'-separated
    kind: str  # 'f' regular file, 'l' symlink
    size: int
    mtime: int  # whole seconds, as rsync -t sets them
    sha256: str  # of the content (file) or of the link target + '\n' (symlink)
    target: str = ""  # symlink target
    mtime_ns: int = 0  # for the local hash cache (shard mode)
    ino: int = 0


@dataclass
class SourceTree:
    """The dataset on this machine: root, entries by relative path, totals."""

    root: Path
    entries: dict[str, Entry] = field(default_factory=dict)
    empty_dirs: set[str] = field(default_factory=set)  # directories with nothing in them (rel)

    @property
    def files(self) -> list[Entry]:
        """Regular files only."""
        return [e for e in self.entries.values() if e.kind == "f"]

    @property
    def total_bytes(self) -> int:
        """Sum of regular file sizes."""
        return sum(e.size for e in self.entries.values() if e.kind == "f")

    @functools.cached_property
    def _root_is_dir(self) -> bool:
        return self.root.is_dir()

    def landing(self, target: str) -> str:
        """Where the dataset lands in the copy dir `target`: the dir, or for a one-file dataset
        the file in it (`--dataset x.bin` lands at `<target>/x.bin`)."""
        if self._root_is_dir or len(self.entries) != 1:
            return target
        return f"{target.rstrip('/')}/{next(iter(self.entries))}"

    def path(self, rel: str) -> Path:
        """The local path of an entry (the root itself when the dataset is one file)."""
        return self.root / rel if self._root_is_dir else self.root


def link_hash(target: str) -> str:
    """What the remote computes for a symlink: sha256 of `readlink` output (target + newline)."""
    import hashlib

    return hashlib.sha256(target.encode("utf-8", "surrogateescape") + b"\n").hexdigest()


def scan_source(root: Path, hashes: bool = True) -> SourceTree:
    """Walk the dataset (a directory, or one file) and hash every regular file (with
    `hashes=False` files get sha256 "" and `hash_tree` fills them in later, e.g. while rsync runs).
    One fstatat per entry, relative to its directory's fd (os.scandir on an fd: the kernel
    resolves one name, not the whole path); directories in sorted order."""
    tree = SourceTree(root)
    if root.is_file() and not root.is_symlink():
        st = root.stat()
        sha = sha256_file(root) if hashes else ""
        tree.entries[root.name] = Entry(
            root.name, "f", st.st_size, int(st.st_mtime), sha, "", st.st_mtime_ns, st.st_ino
        )
        return tree
    entries = tree.entries
    base = str(root)

    def walk(dfd: int, prefix: str) -> None:
        try:
            walk_dir(dfd, prefix)
        except OSError as exc:  # name the path in full (the calls are relative to a dir fd)
            name = exc.filename
            if isinstance(name, int) or (name is not None and not os.path.isabs(os.fsdecode(name))):
                full = os.path.join(base, prefix + ("" if isinstance(name, int) else os.fsdecode(name)))
                raise OSError(exc.errno, exc.strerror, full.rstrip("/")) from None
            raise

    def walk_dir(dfd: int, prefix: str) -> None:
        with os.scandir(dfd) as it:
            items = list(it)
        if not items and prefix:
            tree.empty_dirs.add(prefix[:-1])
        items.sort(key=_NAME)
        subdirs = []
        for d in items:
            if d.is_file(follow_symlinks=False):
                st = d.stat(follow_symlinks=False)
                rel = prefix + d.name
                sha = sha256_file(Path(base, rel)) if hashes else ""
                mtime = int(st.st_mtime)
                entries[rel] = Entry(rel, "f", st.st_size, mtime, sha, "", st.st_mtime_ns, st.st_ino)
            elif d.is_symlink():
                rel = prefix + d.name
                target = os.readlink(d.name, dir_fd=dfd)
                st = d.stat(follow_symlinks=False)
                entries[rel] = Entry(rel, "l", 0, int(st.st_mtime), link_hash(target), target)
            elif d.is_dir(follow_symlinks=False):
                subdirs.append(d.name)
        for name in subdirs:
            fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=dfd)
            try:
                walk(fd, prefix + name + "/")
            finally:
                os.close(fd)

    top = os.open(base, os.O_RDONLY | os.O_DIRECTORY)
    try:
        with _gc_paused():  # entries hold no cycles; the collector's passes cost 20-70 ms per 50,000
            walk(top, "")
    finally:
        os.close(top)
    return tree


_GC_PAUSE = threading.Lock()


_gc_pausers = [0, False]  # scans pausing the cyclic GC now; whether it was on before the first


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """Cyclic GC off while any scan runs (scans of several hosts may overlap: counted)."""
    with _GC_PAUSE:
        if _gc_pausers[0] == 0:
            _gc_pausers[1] = gc.isenabled()
            gc.disable()
        _gc_pausers[0] += 1
    try:
        yield
    finally:
        with _GC_PAUSE:
            _gc_pausers[0] -= 1
            if _gc_pausers[0] == 0 and _gc_pausers[1]:
                gc.enable()


_NAME = operator.attrgetter("name")


_PRESCANS: dict[Path, tuple[threading.Thread, list[SourceTree], float]] = {}


_PRESCANS_LOCK = threading.Lock()


def prescan(root: Path) -> None:
    """Start `scan_source(root, hashes=False)` in the background (once per root) so that it
    overlaps the login; `take_prescan` collects it. Errors are left to the real scan."""
    with _PRESCANS_LOCK:
        if root in _PRESCANS:
            return
        found: list[SourceTree] = []

        def scan() -> None:
            with contextlib.suppress(Exception):  # the caller scans again and reports it
                found.append(scan_source(root, hashes=False))

        job = threading.Thread(target=scan, name="gpuonboard-prescan", daemon=True)
        _PRESCANS[root] = (job, found, time.monotonic())
    job.start()


def take_prescan(root: Path, max_age: float = 30.0) -> SourceTree | None:
    """The tree `prescan(root)` found (waiting for it), once; None when none ran, it failed, or
    it started more than `max_age` seconds ago (the caller scans afresh)."""
    with _PRESCANS_LOCK:
        started = _PRESCANS.pop(root, None)
    if started is None or time.monotonic() - started[2] > max_age:
        return None
    started[0].join()
    return started[1][0] if started[1] else None


def hash_tree(tree: SourceTree, stop: threading.Event | None = None) -> None:
    """Fill in the sha256 of every regular file scanned with `hashes=False` (in place); ends
    early once `stop` is set (the upload failed or was interrupted: nobody waits for them).
    (Values are replaced while the dict is walked, no key added or removed: no copy of its
    items, which was 90 bytes per file at the peak.)"""
    entries = tree.entries
    for rel, e in entries.items():
        if stop is not None and stop.is_set():
            return
        if e.kind == "f" and not e.sha256:
            entries[rel] = dataclasses.replace(e, sha256=sha256_file(tree.path(rel)))
