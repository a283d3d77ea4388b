"""The hash cache of a dataset's files (hashes.json in the dataset's cache dir): rel -> sha256,
valid while the file's (size, mtime_ns, inode) are unchanged, so a rerun hashes only the files
that changed. Shard and plain mode both read it.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from gpuonboard import atomicfile
from gpuonboard.transfer import Entry
from gpuonboard.transfer.crypto import sha256_file
from gpuonboard.transfer.scanstore import Columns

RACY_MARGIN_NS = 2_000_000_000  # a hash cache record this close to its stamp is re-hashed


def write_cache(path: Path, text: str) -> None:
    """Write a cache file atomically: a full disk leaves the previous one whole, no temp behind.
    Its mode is the one open() gives (0666 less the umask): the shards beside it are 0644."""
    atomicfile.write_text(path, text, mode=0o666)


class HashCache:
    """rel -> sha256 of a dataset file, valid while (size, mtime_ns, inode) are unchanged, so a
    rerun hashes only the files that changed (persisted as hashes.json in the dataset's cache).

    Bound to a scan (`columns`), the scan's own columns are its records: loading fills in the
    sha256 of each file the cache vouches for, record by record (nothing kept per file), and
    saving writes the scan's known hashes. Unbound, it is a dict of records (`data`).

    Racily clean records (git's rule): a file rewritten within the same timestamp tick as the
    stat its record holds keeps its size, mtime and inode. So a save stamps hashes.json's own
    mtime with `started`, when this cache was made: before every hash it saves was taken (a
    save's own time would not do: a file hashed as a long upload began and rewritten moments
    later is still older than the save). A record whose mtime is within RACY_MARGIN_NS of the
    stamp it was read with, or later, is not trusted: its file (`locate(rel)`: the dataset's
    path of it) is hashed again, and that fresh sha256 is used; one never checked is not saved
    again. Without `locate` such a record is trusted as before (production callers pass it)."""

    def __init__(
        self, cache: Path, columns: Columns | None = None, locate: Callable[[str], Path] | None = None
    ) -> None:
        self.started = time.time_ns()  # (before anything is read or hashed: the stamp it saves)
        self.path = cache / "hashes.json"
        self.columns = columns
        self.locate = locate
        self.data: dict[str, Sequence[Any] | Entry] = {}
        self._racy: set[str] = set()  # (unbound: records read racy, not checked yet)
        if columns is not None:
            self._fill(columns)
            return
        try:
            with self.path.open("rb") as f:
                racy_from = os.fstat(f.fileno()).st_mtime_ns - RACY_MARGIN_NS
                self.data = json.loads(f.read())
        except (OSError, ValueError):
            self.data = {}
            return
        if not isinstance(self.data, dict):
            self.data = {}
        for k, v in self.data.items():
            if isinstance(v, list) and len(v) == 4 and type(v[1]) is int and v[1] >= racy_from:
                self._racy.add(k)

    def _fill(self, columns: Columns) -> None:
        """The sha256 of each scanned file whose record matches its stat, record by record
        (the file is written in the scan's path order: each record is the next entry; another
        order is found by bisection); a racy record's file is hashed again."""
        f_kind, nxt = ord("f"), 0
        sizes, mtime_ns, inos, kinds = columns.sizes, columns.mtime_ns, columns.inos, columns.kinds
        try:
            with self.path.open("rb") as f:
                racy_from = os.fstat(f.fileno()).st_mtime_ns - RACY_MARGIN_NS
                for rel, size, ns, ino, sha in _records(f):
                    i = (
                        nxt
                        if nxt < len(columns) and columns.rel(nxt) == rel
                        else columns.find(rel, index=False)
                    )
                    if i < 0:
                        continue
                    nxt = i + 1
                    stat = (sizes[i], mtime_ns[i], inos[i])
                    if kinds[i] == f_kind and stat == (size, ns, ino) and not columns.has_sha(i):
                        if ns >= racy_from:
                            sha = self._hash_again(rel, sha)
                        if sha:
                            columns.set_sha(i, sha)
        except (OSError, ValueError):
            return

    def _hash_again(self, rel: str, sha: str) -> str:
        """The sha256 of a file whose record `sha` is racy, hashed now ("" when it cannot be
        read: left to the normal path, which reports it); `sha` itself without `locate`."""
        if self.locate is None:
            return sha
        try:
            return sha256_file(self.locate(rel))
        except OSError:
            return ""

    def get(self, e: Entry) -> str:
        """The cached sha256 of e, or "" when unknown or stale (a racy record: hashed again)."""
        c = self.columns
        if c is not None and e.kind == "f":
            i = c.find(e.rel)
            if (
                i >= 0
                and (c.sizes[i], c.mtime_ns[i], c.inos[i]) == (e.size, e.mtime_ns, e.ino)
                and c.has_sha(i)
            ):
                return c.sha(i)
        rec = _fields(self.data.get(e.rel))
        if (
            rec is not None
            and len(rec) == 4
            and e.kind == "f"
            and (rec[0], rec[1], rec[2]) == (e.size, e.mtime_ns, e.ino)
        ):
            if e.rel not in self._racy:
                return str(rec[3])
            self._racy.discard(e.rel)
            sha = self._hash_again(e.rel, str(rec[3]))
            if sha:
                self.data[e.rel] = (e.size, e.mtime_ns, e.ino, sha)
            else:
                del self.data[e.rel]
            return sha
        return ""

    def put(self, e: Entry, sha: str) -> None:
        """Remember e's content hash under its current stat: nothing when the bound scan holds
        it already; else the entry itself when it holds that hash (nothing more per file than
        the dict's slot), or a tuple; either is written as [size, mtime_ns, inode, sha256]."""
        if e.kind != "f":
            return
        self._racy.discard(e.rel)
        c = self.columns
        if c is not None:
            i = c.find(e.rel)
            if (
                i >= 0
                and (c.sizes[i], c.mtime_ns[i], c.inos[i]) == (e.size, e.mtime_ns, e.ino)
                and c.sha(i) == sha
            ):
                self.data.pop(e.rel, None)
                return
        self.data[e.rel] = e if e.sha256 == sha else (e.size, e.mtime_ns, e.ino, sha)

    def save(self, keep: Iterable[str]) -> None:
        """Write the cache with only the paths still in the dataset (`keep`: a dict or set is
        asked as it is; anything else is made a set; the bound scan's entries: its known
        hashes). The JSON is written record by record, not built whole first; racy records
        never checked are left out, and the file's mtime is set to `started` (see the class)."""
        mine = self.columns is not None and getattr(keep, "columns", None) is self.columns
        wanted = keep if isinstance(keep, (Mapping, set, frozenset)) else set(keep)
        racy = self._racy
        for k in [k for k in self.data if k not in wanted or k in racy]:
            del self.data[k]
        racy.clear()
        with atomicfile.replacing(self.path, mode=0o666) as f:
            f.write(b"{")
            batch: list[str] = []
            n = 0
            for rec in self._scan_records() if mine else ():
                batch.append(("," if n else "") + rec)
                n += 1
                if len(batch) >= 4096:
                    f.write("".join(batch).encode())
                    batch.clear()
            for k, v in self.data.items():
                batch.append(("," if n else "") + _record_text(k, v))
                n += 1
                if len(batch) >= 4096:
                    f.write("".join(batch).encode())
                    batch.clear()
            f.write("".join(batch).encode() + b"}")
            f.flush()  # (nothing written after the stamp: the rename keeps it)
            os.utime(f.fileno(), ns=(self.started, self.started))

    def _scan_records(self) -> Iterator[str]:
        """The bound scan's files with a known sha256 as JSON records, in path order (not those
        put() holds apart)."""
        c = self.columns
        assert c is not None
        dumps, f_kind, held = json.dumps, ord("f"), self.data
        sizes, mtime_ns, inos, kinds = c.sizes, c.mtime_ns, c.inos, c.kinds
        for i, rel in enumerate(c.rels()):
            if kinds[i] == f_kind and c.has_sha(i) and rel not in held:
                yield f"{dumps(rel)}:[{sizes[i]},{mtime_ns[i]},{inos[i]},{dumps(c.sha(i))}]"


def _record_text(k: str, v: Any) -> str:
    """One hash cache record as JSON text."""
    dumps = json.dumps
    r = _fields(v)
    if r is not None and _record(r):
        return f"{dumps(k)}:[{r[0]},{r[1]},{r[2]},{dumps(r[3])}]"
    return f"{dumps(k)}:{dumps(v, separators=(',', ':'))}"  # (a value read back in another shape)


_RECORD = re.compile(
    rb'"((?:[^"\\]|\\.)*)"\s*:\s*\[\s*(\d+)\s*,\s*(-?\d+)\s*,\s*(\d+)\s*,\s*"([0-9a-f]{64})"\s*\]'
)


def _records(f: IO[bytes], chunk: int = 1 << 20) -> Iterator[tuple[str, int, int, int, str]]:
    """The records of an open hash cache file, read a piece at a time: (rel, size, mtime_ns,
    inode, sha256); a record of another shape is skipped."""
    left = b""
    while True:
        piece = f.read(chunk)
        buf = left + piece
        end = 0
        for m in _RECORD.finditer(buf):
            key = m.group(1)
            rel = json.loads(b'"' + key + b'"') if b"\\" in key else key.decode("utf-8", "surrogateescape")
            yield rel, int(m.group(2)), int(m.group(3)), int(m.group(4)), m.group(5).decode()
            end = m.end()
        if not piece:
            return
        left = buf[max(end, len(buf) - 65536) :]


def _fields(rec: Any) -> Sequence[Any] | None:
    """A hash cache value as its (size, mtime_ns, inode, sha256) fields (None: no sequence)."""
    if isinstance(rec, Entry):
        return (rec.size, rec.mtime_ns, rec.ino, rec.sha256)
    return rec if isinstance(rec, (list, tuple)) else None


def _record(v: Any) -> bool:
    """Whether a hash cache value has the shape put() gives (a read one can be anything)."""
    return (
        isinstance(v, (list, tuple))
        and len(v) == 4
        and type(v[0]) is int
        and type(v[1]) is int
        and type(v[2]) is int
        and type(v[3]) is str
    )
