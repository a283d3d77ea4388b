"""The dataset on this machine: the scan of a local source (files, symlinks, empty dirs) with the
sha256 of each file, the background prescan that overlaps the login, and the hashing that
fills in a scan made without hashes.

`scan_source` is the one part that reads local files; `Entry` and `SourceTree` are what the
upload, the shards and the manifests are built from.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import os
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

from gpuonboard.transfer.crypto import sha256_file
from gpuonboard.transfer.scanstore import ZERO, Columns, Entries, Entry, Members, TreeDigests, encode

__all__ = ["Entry", "SourceTree", "hash_tree", "link_hash", "prescan", "scan_source", "take_prescan"]


class SourceTree:
    """The dataset on this machine: root, entries by relative path (a Mapping over the scan's
    columns, in path order: `scanstore`), its empty directories, totals."""

    def __init__(
        self,
        root: Path,
        entries: Mapping[str, Entry] | None = None,
        empty_dirs: set[str] | None = None,
        columns: Columns | None = None,
    ) -> None:
        self.root = root
        self.columns = columns if columns is not None else Columns()
        if entries:
            for rel in sorted(entries):
                e = entries[rel]
                self.columns.add(encode(rel), e.kind, e.size, e.mtime, e.mtime_ns, e.ino, e.sha256, e.target)
        self.entries = Entries(self.columns)
        self.empty_dirs: set[str] = empty_dirs if empty_dirs is not None else set()
        # fifos, sockets and device nodes (their paths): never uploaded (no data to copy; as
        # root, rsync -a would make a device node on the host), and every message says so
        self.specials: list[str] = []
        # files whose length is at least SPARSE_GAP more than what their file system reports
        # they take on this machine's disk (sparse, compressed, or a count of its own): (path,
        # length, bytes allocated, whether it reports holes in it). They travel and land whole
        # (holes as zeros), and every message says so
        self.sparse: list[tuple[str, int, int, bool]] = []

    def __repr__(self) -> str:
        return f"SourceTree({self.root}, {len(self.columns)} entries, {len(self.empty_dirs)} empty dirs)"

    @property
    def files(self) -> list[Entry]:
        """Regular files only (a list: every one made now; `iter_files` makes one at a time)."""
        return list(self.iter_files())

    def iter_files(self) -> Iterator[Entry]:
        """Regular files only, one at a time."""
        return (e for e in self.columns.entries() if e.kind == "f")

    @property
    def total_bytes(self) -> int:
        """Sum of regular file sizes."""
        c, f = self.columns, ord("f")
        return sum(size for size, kind in zip(c.sizes, c.kinds, strict=True) if kind == f)

    def members(self) -> Members:
        """The shard members: files, symlinks and empty directories, in path order."""
        return Members(self.columns, self.empty_dirs)

    def digests(self) -> TreeDigests:
        """Path -> sha256 of every file and symlink (a view of the columns)."""
        return TreeDigests(self.columns)

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


SPARSE_GAP = 1 << 30  # a file's length this far beyond its allocation is said (1 GiB)


def _note_sparse(
    tree: SourceTree, rel: str, st: os.stat_result, name: str, dir_fd: int | None = None
) -> None:
    """Keep a file whose length is SPARSE_GAP or more beyond what its file system reports it
    takes on disk here, with whether that file system reports a hole in it (`holes_found`)."""
    allocated = st.st_blocks * 512
    if st.st_size - allocated >= SPARSE_GAP:
        tree.sparse.append((rel, st.st_size, allocated, holes_found(name, dir_fd)))


def holes_found(name: str, dir_fd: int | None = None) -> bool:
    """Whether the file's file system reports a hole in it before its end (lseek SEEK_HOLE).
    A length far beyond the blocks allocated is no proof of holes: ZFS compression (a CSV
    takes a fifth), a FUSE file system's own block count (KarpelesLab/squashfs: 1 block for any file),
    NFS (the server's disk). False where none is reported, where the file system cannot say
    (without SEEK_HOLE support the whole file reads as data) or the file cannot be opened."""
    whence = getattr(os, "SEEK_HOLE", None)
    if whence is None:
        return False
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=dir_fd)
    except OSError:
        return False
    try:  # (against its length before and after: a file cut short since the scan's stat ends
        # in no hole, and the end of a file that grew meanwhile, a hole at the old end, is none)
        before = os.fstat(fd).st_size
        hole = os.lseek(fd, 0, whence)
        return hole < min(before, os.fstat(fd).st_size)
    except OSError:
        return False
    finally:
        os.close(fd)


def link_hash(target: str) -> str:
    """What the remote computes for a symlink: sha256 of `readlink` output (target + newline)."""
    import hashlib

    return hashlib.sha256(target.encode("utf-8", "surrogateescape") + b"\n").hexdigest()


def scan_source(root: Path, hashes: bool = True) -> SourceTree:
    """Walk the dataset (a directory, or one file) and hash every regular file (with
    `hashes=False` files get sha256 "" and `hash_tree` fills them in later, e.g. while rsync runs).
    One fstatat per entry, relative to its directory's fd (os.scandir on an fd: the kernel
    resolves one name, not the whole path). Entries are stored by column in sorted path order:
    each directory's names sorted with a subdirectory's as `name/` and walked into in its place."""
    tree = SourceTree(root)
    columns = tree.columns
    if root.is_file() and not root.is_symlink():
        st = root.stat()
        sha = sha256_file(root) if hashes else ""
        columns.add(encode(root.name), "f", st.st_size, int(st.st_mtime), st.st_mtime_ns, st.st_ino, sha, "")
        _note_sparse(tree, root.name, st, str(root))
        return tree
    base = str(root)
    row, f_kind, l_kind = columns.row, ord("f"), ord("l")

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
        items.sort(key=_path_order)
        specials = 0
        head = prefix.encode("utf-8", "surrogateescape")
        for d in items:
            name = head + d.name.encode("utf-8", "surrogateescape")
            if d.is_file(follow_symlinks=False):
                st = d.stat(follow_symlinks=False)
                digest = sha256_digest(Path(base, prefix + d.name)) if hashes else ZERO
                # (the whole-second mtime is derived from mtime_ns)
                row(name, f_kind, st.st_size, st.st_mtime_ns, st.st_ino, digest)
                if st.st_size >= SPARSE_GAP:
                    _note_sparse(tree, prefix + d.name, st, d.name, dfd)
            elif d.is_symlink():
                target = os.readlink(d.name, dir_fd=dfd)
                st = d.stat(follow_symlinks=False)
                at = len(columns.ends)
                row(name, l_kind, 0, 0, 0, bytes.fromhex(link_hash(target)))
                columns.mtime_odd[at] = int(st.st_mtime)  # (a link's mtime_ns stays 0, as before)
                if target:
                    columns.targets[at] = target
            elif d.is_dir(follow_symlinks=False):
                fd = os.open(d.name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=dfd)
                try:
                    walk(fd, prefix + d.name + "/")
                finally:
                    os.close(fd)
            else:  # a fifo, socket or device node: not uploaded, and said
                tree.specials.append(prefix + d.name)
                specials += 1
        if specials == len(items) and prefix:  # (empty, or only fifos: an empty dir on the host)
            tree.empty_dirs.add(prefix[:-1])

    top = os.open(base, os.O_RDONLY | os.O_DIRECTORY)
    try:
        with _gc_paused():  # (no cycles made; the collector's passes cost 20-70 ms per 50,000)
            walk(top, "")
    finally:
        os.close(top)
    return tree


def _path_order(d: os.DirEntry[str]) -> str:
    """A directory's sort key among its siblings: its name with a slash (what its entries'
    paths continue with), so the walk meets paths in sorted order."""
    return d.name + "/" if d.is_dir(follow_symlinks=False) else d.name


def sha256_digest(path: Path) -> bytes:
    """The raw sha256 of a file."""
    return bytes.fromhex(sha256_file(path))


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


def prescanned(root: Path) -> SourceTree | None:
    """The tree `prescan(root)` found, if that scan has ended (it stays for take_prescan);
    None while it runs, or when none ran or it failed. Never waits."""
    with _PRESCANS_LOCK:
        started = _PRESCANS.get(root)
    if started is None or started[0].is_alive():
        return None
    return started[1][0] if started[1] else None


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
    """Fill in the sha256 of every regular file scanned with `hashes=False` (in place, in the
    scan's columns); ends early once `stop` is set (the upload failed or was interrupted:
    nobody waits for them)."""
    columns, f_kind = tree.columns, ord("f")
    for i in range(len(columns)):
        if stop is not None and stop.is_set():
            return
        if columns.kinds[i] == f_kind and not columns.has_sha(i):
            columns.set_digest(i, sha256_digest(tree.path(columns.rel(i))))
