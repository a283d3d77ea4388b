"""The scan of a dataset stored by column (issue 31: memory flat in the number of files).

One `Entry` object per file, in a dict by path, with its path string, integers and hex sha256,
was ~450 bytes a file at the upload's peak (600 MB at 1,000,000 files). `Columns` keeps the same
fields in one buffer of encoded paths with their end offsets and one array per field (sizes,
nanosecond mtimes, inodes, raw 32-byte sha256s): ~80 bytes a file (the whole-second mtime is
derived from the nanosecond one, as os.stat does it). An `Entry` is made when one is asked
for (`Entries`, the Mapping the steps read; a shard's members while it is packed) and dropped
after. Entries are kept in sorted path order (str order, as `shards.assign` sorts), so a shard's
members are a range of positions (`Members`, `Group`), not a list of entries.
"""

from __future__ import annotations

import bisect
from array import array
from collections.abc import ItemsView, Iterable, Iterator, MutableMapping, Sequence, ValuesView
from dataclasses import dataclass
from typing import overload

ZERO = bytes(32)  # a sha256 not known yet
_HEX = frozenset("0123456789abcdef")
_INDEX_AFTER = 64  # path lookups by bisection before a dict index is made (plain mode's many)


@dataclass(slots=True, unsafe_hash=True)
class Entry:
    """One file or symlink of the dataset (directories are implied by paths). Treat as
    immutable (`dataclasses.replace`); not frozen only because a frozen dataclass's __init__
    sets each field through object.__setattr__: 35 ms more per 50,000 files."""

    rel: str  # path relative to the dataset root, '/'-separated
    kind: str  # 'f' regular file, 'l' symlink ('d': an empty directory as a shard member)
    size: int
    mtime: int  # whole seconds, as rsync -t sets them
    sha256: str  # of the content (file) or of the link target + '\n' (symlink)
    target: str = ""  # symlink target
    mtime_ns: int = 0  # for the local hash cache (shard mode)
    ino: int = 0


_NS = 1_000_000_000


def whole_seconds(mtime_ns: int) -> int:
    """int(os.stat's st_mtime) from st_mtime_ns: the same float sum (seconds + nanoseconds *
    1e-9, as CPython's fill_time) truncated, so equal to it to the last bit."""
    return int(mtime_ns // _NS + mtime_ns % _NS * 1e-9)


def host_seconds(e: Entry) -> int:
    """The whole-second mtime a file with e's mtime has on the host, as its listing there reads
    it (tv_sec: find's %T@ up to the dot): floor(mtime_ns / 1e9), which near the next second
    (within ~120 ns, where the float sum rounds up) or before 1970 (int() truncates toward zero)
    is not e.mtime. An entry made without nanoseconds (a ciphertext's) gives its e.mtime."""
    return e.mtime_ns // _NS if e.mtime == whole_seconds(e.mtime_ns) else e.mtime


def listed_seconds(t: str) -> int:
    """Pure: a whole-second mtime from find's %T@ (`S.F`: S is tv_sec, F the nanoseconds, so
    0.5 s before 1970 reads `-1.5000000000`) as whole_seconds() takes a local one: the same
    rule on both sides of the quick check. ValueError: not such a number."""
    sec, _, frac = t.partition(".")
    if not frac:
        return int(float(sec))
    if not (frac.isdigit() and frac.isascii()):
        raise ValueError(t)
    return whole_seconds(int(sec) * _NS + int(frac[:9].ljust(9, "0")))


def touch_time(e: Entry) -> str:
    """`touch -d @` of e's mtime to the nanosecond (`-1.500000000` for 1.5 s before 1970), so a
    file written on the host gets the dataset file's own mtime as rsync -a gives it: its
    listing there reads host_seconds(e), and the quick check's e.mtime."""
    if e.mtime != whole_seconds(e.mtime_ns):
        return str(e.mtime)
    whole, part = divmod(abs(e.mtime_ns), _NS)
    return f"{'-' if e.mtime_ns < 0 else ''}{whole}.{part:09d}"


def encode(rel: str) -> bytes:
    """A path as stored (and as tar, the host and the manifests see it)."""
    return rel.encode("utf-8", "surrogateescape")


def _hex64(sha: str) -> bool:
    return len(sha) == 64 and _HEX.issuperset(sha)


class Columns:
    """Files and symlinks in sorted path order, one array per field. Appended in order by the
    scan (`add`); afterwards only hashes and stats of existing entries change (`put`, `set_sha`)."""

    __slots__ = (
        "names",
        "ends",
        "kinds",
        "sizes",
        "mtime_odd",
        "mtime_ns",
        "inos",
        "digests",
        "odd",
        "targets",
        "_lookups",
        "_index",
    )

    def __init__(self) -> None:
        self.names = bytearray()  # every path, encoded, one after another
        self.ends = array("I")  # where each path ends in names ("Q" past 4 GiB of them: widen)
        self.kinds = bytearray()  # ord('f') or ord('l')
        self.sizes = array("I")  # ("q" once one does not fit: widen)
        self.mtime_odd: dict[int, int] = {}  # a whole-second mtime not whole_seconds(mtime_ns)
        self.mtime_ns = array("q")
        self.inos = array("I")  # ("Q" once one does not fit: widen)
        self.digests = bytearray()  # 32 bytes an entry: its sha256, ZERO while not known
        self.odd: dict[int, str] = {}  # a sha256 value that is not 64 hex digits (as given)
        self.targets: dict[int, str] = {}  # symlink targets
        self._lookups = 0
        self._index: dict[str, int] | None = None

    def __len__(self) -> int:
        return len(self.ends)

    def add(
        self, rel: bytes, kind: str, size: int, mtime: int, mtime_ns: int, ino: int, sha: str, target: str
    ) -> None:
        """Append an entry (after every entry already there in path order)."""
        i = len(self.ends)
        self.row(rel, ord(kind), size, mtime_ns, ino, ZERO)
        if mtime != whole_seconds(mtime_ns):
            self.mtime_odd[i] = mtime
        self.set_sha(i, sha)
        if target:
            self.targets[i] = target
        self._index = None

    def row(self, rel: bytes, kind: int, size: int, mtime_ns: int, ino: int, digest: bytes) -> None:
        """Append an entry's fields (the scan's one call per file; a path end, size or inode
        past 32 bits widens its column to 64)."""
        self.names += rel
        self.kinds.append(kind)
        self.mtime_ns.append(mtime_ns)
        self.digests += digest
        try:
            self.ends.append(len(self.names))
        except OverflowError:
            self.ends = array("Q", self.ends)
            self.ends.append(len(self.names))
        try:
            self.sizes.append(size)
        except OverflowError:
            self.sizes = array("q", self.sizes)
            self.sizes.append(size)
        try:
            self.inos.append(ino)
        except OverflowError:
            self.inos = array("Q", self.inos)
            self.inos.append(ino)

    def mtime(self, i: int) -> int:
        """Entry i's whole-second mtime."""
        odd = self.mtime_odd
        return odd[i] if odd and i in odd else whole_seconds(self.mtime_ns[i])

    def raw(self, i: int) -> bytes:
        """Entry i's path, encoded."""
        return bytes(self.names[self.ends[i - 1] if i else 0 : self.ends[i]])

    def rel(self, i: int) -> str:
        """Entry i's path."""
        return self.raw(i).decode("utf-8", "surrogateescape")

    def kind(self, i: int) -> str:
        return chr(self.kinds[i])

    def sha(self, i: int) -> str:
        """Entry i's sha256 (hex; "" while not known)."""
        d = self.digests[32 * i : 32 * i + 32]
        if d != ZERO:
            return d.hex()
        return self.odd.get(i, "") if self.odd else ""

    def has_sha(self, i: int) -> bool:
        return self.digests[32 * i : 32 * i + 32] != ZERO or i in self.odd

    def set_sha(self, i: int, sha: str) -> None:
        """Set entry i's sha256 (hex, or "" for not known)."""
        if _hex64(sha):
            self.digests[32 * i : 32 * i + 32] = bytes.fromhex(sha)
            if self.odd:
                self.odd.pop(i, None)
            return
        self.digests[32 * i : 32 * i + 32] = ZERO
        if sha:
            self.odd[i] = sha
        elif self.odd:
            self.odd.pop(i, None)

    def set_digest(self, i: int, digest: bytes | bytearray) -> None:
        """Set entry i's sha256 from its 32 raw bytes."""
        self.digests[32 * i : 32 * i + 32] = digest
        if self.odd:
            self.odd.pop(i, None)

    def entry(self, i: int) -> Entry:
        """Entry i as an object (made now)."""
        return Entry(
            self.rel(i),
            chr(self.kinds[i]),
            self.sizes[i],
            self.mtime(i),
            self.sha(i),
            self.targets.get(i, "") if self.targets else "",
            self.mtime_ns[i],
            self.inos[i],
        )

    def put(self, i: int, e: Entry) -> None:
        """Replace entry i's fields by e's (e.rel must be its path)."""
        self.kinds[i] = ord(e.kind)
        self.mtime_ns[i] = e.mtime_ns
        try:
            self.sizes[i] = e.size
        except OverflowError:
            self.sizes = array("q", self.sizes)
            self.sizes[i] = e.size
        try:
            self.inos[i] = e.ino
        except OverflowError:
            self.inos = array("Q", self.inos)
            self.inos[i] = e.ino
        if e.mtime != whole_seconds(e.mtime_ns):
            self.mtime_odd[i] = e.mtime
        else:
            self.mtime_odd.pop(i, None)
        self.set_sha(i, e.sha256)
        if e.target:
            self.targets[i] = e.target
        else:
            self.targets.pop(i, None)

    def entries(self, start: int = 0, stop: int | None = None) -> Iterator[Entry]:
        """Entries start..stop-1 as objects, made one at a time."""
        stop = len(self.ends) if stop is None else stop
        names, ends, kinds, digests = self.names, self.ends, self.kinds, self.digests
        sizes, mtime_ns, inos = self.sizes, self.mtime_ns, self.inos
        odd, targets, mtime_odd = self.odd, self.targets, self.mtime_odd
        at = ends[start - 1] if start else 0
        for i in range(start, stop):
            end = ends[i]
            d = digests[32 * i : 32 * i + 32]
            ns = mtime_ns[i]
            yield Entry(
                names[at:end].decode("utf-8", "surrogateescape"),
                chr(kinds[i]),
                sizes[i],
                mtime_odd[i] if mtime_odd and i in mtime_odd else int(ns // _NS + ns % _NS * 1e-9),
                d.hex() if d != ZERO else (odd.get(i, "") if odd else ""),
                targets.get(i, "") if targets else "",
                mtime_ns[i],
                inos[i],
            )
            at = end

    def rels(self, start: int = 0, stop: int | None = None) -> Iterator[str]:
        """Paths start..stop-1, one at a time."""
        stop = len(self.ends) if stop is None else stop
        names, ends = self.names, self.ends
        at = ends[start - 1] if start else 0
        for i in range(start, stop):
            end = ends[i]
            yield names[at:end].decode("utf-8", "surrogateescape")
            at = end

    def bisect(self, rel: str) -> int:
        """How many entries sort before rel (str order)."""
        lo, hi = 0, len(self.ends)
        while lo < hi:
            mid = (lo + hi) // 2
            if self.rel(mid) < rel:
                lo = mid + 1
            else:
                hi = mid
        return lo

    def find(self, rel: str, index: bool = True) -> int:
        """rel's position, or -1. By bisection (~20 decoded paths); once many lookups were made
        (plain mode asks for each file sent), from a dict of path -> position made then
        (`index=False`: never that: a caller walking the whole scan in order)."""
        if self._index is not None:
            return self._index.get(rel, -1)
        if index:
            self._lookups += 1
            if self._lookups > _INDEX_AFTER:
                self._index = {r: n for n, r in enumerate(self.rels())}
                return self._index.get(rel, -1)
        i = self.bisect(rel)
        return i if i < len(self.ends) and self.rel(i) == rel else -1


class _Values(ValuesView[Entry]):
    _mapping: Entries

    def __iter__(self) -> Iterator[Entry]:
        return self._mapping.columns.entries()


class _Items(ItemsView[str, Entry]):
    _mapping: Entries

    def __iter__(self) -> Iterator[tuple[str, Entry]]:
        return ((e.rel, e) for e in self._mapping.columns.entries())


class Entries(MutableMapping[str, Entry]):
    """The scan as a Mapping of path -> Entry (each made when asked for), in path order. An
    entry can be replaced (a hash filled in), none added or removed."""

    __slots__ = ("columns",)

    def __init__(self, columns: Columns) -> None:
        self.columns = columns

    def __getitem__(self, rel: str) -> Entry:
        i = self.columns.find(rel) if isinstance(rel, str) else -1
        if i < 0:
            raise KeyError(rel)
        return self.columns.entry(i)

    def __setitem__(self, rel: str, e: Entry) -> None:
        i = self.columns.find(rel)
        if i < 0 or e.rel != rel:
            raise KeyError(f"{rel!r}: a scan's paths are fixed (only an entry's fields change)")
        self.columns.put(i, e)

    def __delitem__(self, rel: str) -> None:
        raise TypeError("a scan's paths are fixed")

    def __contains__(self, rel: object) -> bool:
        return isinstance(rel, str) and self.columns.find(rel) >= 0

    def __iter__(self) -> Iterator[str]:
        return self.columns.rels()

    def __len__(self) -> int:
        return len(self.columns)

    def values(self) -> ValuesView[Entry]:
        return _Values(self)

    def items(self) -> ItemsView[str, Entry]:
        return _Items(self)

    def __repr__(self) -> str:
        return f"Entries({len(self)} entries)"


class Members:
    """A dataset's shard members in path order: the scan's files and symlinks and its empty
    directories (kind 'd'), by position, each made when asked for."""

    def __init__(self, columns: Columns, empty_dirs: Iterable[str] = ()) -> None:
        self.columns = columns
        self.dirs = sorted(empty_dirs)
        # each empty dir's position among the members (the entries before it, and the dirs)
        self.dir_at = array("q", (columns.bisect(d) + k for k, d in enumerate(self.dirs)))

    def __len__(self) -> int:
        return len(self.columns) + len(self.dirs)

    def _dir(self, k: int) -> Entry:
        return Entry(self.dirs[k], "d", 0, 0, "")

    def at(self, p: int) -> Entry:
        """The member at position p."""
        t = self.tree_index(p)
        return self._dir(bisect.bisect_left(self.dir_at, p)) if t < 0 else self.columns.entry(t)

    def tree_index(self, p: int) -> int:
        """The scan's position of member p (-1: an empty dir)."""
        if not self.dirs:
            return p
        k = bisect.bisect_right(self.dir_at, p)
        return -1 if k and self.dir_at[k - 1] == p else p - k

    def _runs(self, start: int, stop: int) -> Iterator[tuple[int, int]]:
        """Members start..stop-1 as runs: (first scan position, count), or (-1 - dir, 1)."""
        if not self.dirs:
            if stop > start:
                yield start, stop - start
            return
        dir_at = self.dir_at
        k = bisect.bisect_left(dir_at, start)
        p, t = start, start - k
        while p < stop:
            upto = min(dir_at[k] if k < len(dir_at) else stop, stop)
            if upto > p:
                yield t, upto - p
                t, p = t + upto - p, upto
            if p < stop:  # (dir k is at p)
                yield -1 - k, 1
                k, p = k + 1, p + 1

    def iterate(self, start: int, stop: int) -> Iterator[Entry]:
        """Members start..stop-1, made one at a time."""
        for t, n in self._runs(start, stop):
            if t < 0:
                yield self._dir(-1 - t)
            else:
                yield from self.columns.entries(t, t + n)

    def raw_sizes(self, start: int = 0, stop: int | None = None) -> Iterator[tuple[bytes, int]]:
        """Members start..stop-1 (default: all): each encoded path and size (a dir's: 0), in
        order, no Entry made."""
        c = self.columns
        names, ends, sizes = c.names, c.ends, c.sizes
        for t, n in self._runs(start, len(self) if stop is None else stop):
            if t < 0:
                yield encode(self.dirs[-1 - t]), 0
                continue
            at = ends[t - 1] if t else 0
            for i in range(t, t + n):
                end = ends[i]
                yield bytes(names[at:end]), sizes[i]
                at = end

    def payload(self, start: int, stop: int) -> int:
        """Members start..stop-1's bytes as a tar holds them: each one's size (a negative one:
        0) and a 512-byte header, summed over the columns (no Entry, no path made)."""
        total = 512 * (stop - start)
        for t, n in self._runs(start, stop):
            if t >= 0:
                part = self.columns.sizes[t : t + n]
                total += sum(part) if min(part) >= 0 else sum(max(s, 0) for s in part)
        return total

    def tree_positions(self, start: int, stop: int) -> Iterator[int]:
        """The scan's position of each member start..stop-1 (-1: an empty dir)."""
        for t, n in self._runs(start, stop):
            if t < 0:
                yield -1
            else:
                yield from range(t, t + n)


class Group(Sequence[Entry]):
    """One shard's members: positions start..stop-1 of `members`, made when iterated."""

    __slots__ = ("members", "start", "stop")

    def __init__(self, members: Members, start: int, stop: int) -> None:
        self.members, self.start, self.stop = members, start, stop

    def __len__(self) -> int:
        return self.stop - self.start

    @overload
    def __getitem__(self, i: int) -> Entry: ...

    @overload
    def __getitem__(self, i: slice) -> list[Entry]: ...

    def __getitem__(self, i: int | slice) -> Entry | list[Entry]:
        n = self.stop - self.start
        if isinstance(i, slice):
            a, b, step = i.indices(n)
            if step != 1:
                return [self[k] for k in range(a, b, step)]
            return list(self.members.iterate(self.start + a, self.start + max(a, b)))
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("member index out of range")
        return self.members.at(self.start + i)

    def __iter__(self) -> Iterator[Entry]:
        return self.members.iterate(self.start, self.stop)

    def raw_sizes(self) -> Iterator[tuple[bytes, int]]:
        """Each member's encoded path and size (a dir's: 0), in order, no Entry made."""
        return self.members.raw_sizes(self.start, self.stop)

    def note_digests(self, digests: bytes | bytearray) -> None:
        """Store the sha256s packing found (32 bytes a member, in order; ZERO: none) in the scan."""
        columns = self.members.columns
        for k, t in enumerate(self.members.tree_positions(self.start, self.stop)):
            d = digests[32 * k : 32 * k + 32]
            if t >= 0 and d != ZERO:
                columns.set_digest(t, d)

    def __repr__(self) -> str:
        return f"Group({self.start}..{self.stop})"


class TreeDigests(MutableMapping[str, str]):
    """The scan's files' and symlinks' sha256s as a Mapping of path -> hex (what the host's
    copy should hash to), read from the columns, in path order."""

    __slots__ = ("columns",)

    def __init__(self, columns: Columns) -> None:
        self.columns = columns

    def __getitem__(self, rel: str) -> str:
        i = self.columns.find(rel)
        if i < 0:
            raise KeyError(rel)
        return self.columns.sha(i)

    def __setitem__(self, rel: str, sha: str) -> None:
        i = self.columns.find(rel)
        if i < 0:
            raise KeyError(rel)
        self.columns.set_sha(i, sha)

    def __delitem__(self, rel: str) -> None:
        raise TypeError("a scan's paths are fixed")

    def __iter__(self) -> Iterator[str]:
        return self.columns.rels()

    def __len__(self) -> int:
        return len(self.columns)

    def values(self) -> ValuesView[str]:
        return _DigestValues(self)

    def items(self) -> ItemsView[str, str]:
        return _DigestItems(self)


class _DigestValues(ValuesView[str]):
    _mapping: TreeDigests

    def __iter__(self) -> Iterator[str]:
        c = self._mapping.columns
        return (c.sha(i) for i in range(len(c)))


class _DigestItems(ItemsView[str, str]):
    _mapping: TreeDigests

    def __iter__(self) -> Iterator[tuple[str, str]]:
        c = self._mapping.columns
        return ((rel, c.sha(i)) for i, rel in enumerate(c.rels()))


def payload(members: Sequence[Entry]) -> int:
    """Members' bytes as a tar holds them (each size, a negative one as 0, and a 512-byte
    header): a Group's summed over the scan's columns, any other sequence's over its entries."""
    if isinstance(members, Group):
        return members.members.payload(members.start, members.stop)
    return sum(max(e.size, 0) + 512 for e in members)


def raw_sizes(members: Sequence[Entry]) -> Iterator[tuple[bytes, int]]:
    """Members' encoded paths and sizes (as their entries give them): a Group's read from the
    scan's columns (no Entry made), any other sequence's from its entries."""
    if isinstance(members, Group):
        return members.raw_sizes()
    return ((encode(e.rel), e.size) for e in members)
