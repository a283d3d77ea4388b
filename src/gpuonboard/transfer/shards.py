"""Shard mode of the dataset upload: many small files packed into deterministic tar shards.

Assignment (pure, `assign`): files in sorted path order, with CONTENT-DEFINED boundaries where
the "content" is the path: a shard ends after a file when sha256(path), read as a fraction of
2^64, is below that file's share of a shard ((size + 512) / shard size). A shard therefore ends
after shard-size bytes on average, and whether a file ends one depends on that file alone (its
path and size), never on the rest of the dataset: editing, adding or removing a file changes the
shard holding it (splitting or joining it with the next at most), and no other (fixed-size cut
points would shift every later shard; a boundary from the dataset's mean file size, as before,
moved most of them when one big file was added or removed). Guards: a file of half a shard or
more travels alone, and a shard is closed at four times the shard size (rare, ~2 %; a forced cut
only moves until the next natural boundary).

Packing (`build`): tar headers normalised (mtime 0, uid/gid 0, no user/group names, mode 0644 or
0755 from the owner's exec bit, GNU format), members in sorted order, so the same files give a
byte-identical shard. A shard is named by its sha256 (`<sha256[:32]>.tar`); an index in the cache
maps the shard's member list (path, kind, sha256, mode) to that name, so a rerun rebuilds only
shards whose members changed. Shards live in `.gpuonboard/cache/shards/<dataset-id>/`.
"""

from __future__ import annotations

import errno
import hashlib
import io
import json
import operator
import os
import stat
import tarfile
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuonboard.transfer import Entry
from gpuonboard.transfer.hashcache import write_cache
from gpuonboard.transfer.scanstore import ZERO, Columns, Group, Members

DEFAULT_SIZE = 256 * 1024 * 1024
DEFAULT_THRESHOLD = 10_000
SHARD_MTIME = 1_000_000_000  # mtime of the shard FILES in the cache (stable for rsync's quick check)
MANIFEST = "manifest.json"
UNPACKED_MANIFEST = "manifest.unpacked.json"  # the manifest the plaintext tree was last unpacked from
FORMAT = "gpuonboard-shards/2"  # 2: parent directories are members (keys the index: never bump lightly)
# the uploaded manifest's format; 3: no per-file sha256 (each shard's sha256 covers its files'
# bytes; 50,000 per-file hashes were 2.3 MB of compressed JSON on the link, 0.18 s at 100 Mbit/s)
MANIFEST_FORMAT = "gpuonboard-shards/3"


def dataset_id(root: Path) -> str:
    """Cache directory name of one dataset source."""
    return hashlib.sha256(str(root.resolve()).encode("utf-8", "surrogateescape")).hexdigest()[:16]


_REL = operator.attrgetter("rel")


def _bucket(rel: str) -> int:
    return int.from_bytes(hashlib.sha256(rel.encode("utf-8", "surrogateescape")).digest()[:8], "big")


def ends_shard(rel: str, size: int, shard_size: int) -> bool:
    """Pure: whether a shard ends after this file: sha256(path), read as a fraction of 2^64, is
    below the file's share of a shard (its size with its 512-byte header, over shard_size). So a
    shard ends, on average, after shard_size bytes, and whether a file ends one depends on that
    file alone (its path and size), never on the rest of the dataset."""
    return _bucket(rel) * shard_size < size << 64


def assign(entries: Sequence[Entry], shard_size: int = DEFAULT_SIZE) -> list[list[Entry]]:
    """Pure: entries -> shards (lists in sorted path order), boundaries as the module says."""
    shards: list[list[Entry]] = []
    cur: list[Entry] = []
    acc = 0
    alone, cap = shard_size // 2, 4 * shard_size
    for e in sorted(entries, key=_REL):
        size = (e.size if e.size > 0 else 0) + 512
        if size >= alone:  # a big file travels alone
            if cur:
                shards.append(cur)
            shards.append([e])
            cur, acc = [], 0
            continue
        cur.append(e)
        acc += size
        if ends_shard(e.rel, size, shard_size) or acc >= cap:
            shards.append(cur)
            cur, acc = [], 0
    if cur:
        shards.append(cur)
    return shards


def assign_members(members: Members, shard_size: int = DEFAULT_SIZE) -> list[Group]:
    """Pure: `assign` over a scan's members (already in path order) without making an Entry:
    the same groups, as ranges of member positions."""
    groups: list[Group] = []
    start = acc = 0
    alone, cap = shard_size // 2, 4 * shard_size
    sha256 = hashlib.sha256
    for n, (raw, size) in enumerate(members.raw_sizes()):
        size = (size if size > 0 else 0) + 512
        if size >= alone:  # a big file travels alone
            if n > start:
                groups.append(Group(members, start, n))
            groups.append(Group(members, n, n + 1))
            start, acc = n + 1, 0
            continue
        acc += size
        if int.from_bytes(sha256(raw).digest()[:8], "big") * shard_size < size << 64 or acc >= cap:
            groups.append(Group(members, start, n + 1))
            start, acc = n + 1, 0
    if len(members) > start:
        groups.append(Group(members, start, len(members)))
    return groups


def _mode(path: Path) -> int:
    return 0o755 if path.lstat().st_mode & stat.S_IXUSR else 0o644


_FIXED_MODE = {"l": 0o777, "d": 0o755}  # a symlink's and an empty directory's tar mode


def member_key(root: Path, members: Sequence[Entry], modes: Mapping[str, int] | bytes | None = None) -> str:
    """What identifies a shard's content without building it: paths, kinds, hashes, modes
    (`modes`: the tar modes packing used, by path or as Packed.mode_codes, else read from the
    files)."""
    h = hashlib.sha256(FORMAT.encode())
    codes = modes if isinstance(modes, bytes) else None
    for n, e in enumerate(members):
        if codes is not None:
            known = _CODE_MODE.get(codes[n])
        else:
            known = modes.get(e.rel) if isinstance(modes, Mapping) else None
        mode = _FIXED_MODE.get(e.kind) or (known if known is not None else _mode(root / e.rel))
        h.update(_key_field(e.rel, e.kind, e.sha256, mode))
    return h.hexdigest()


def _key_field(rel: str, kind: str, sha: str, mode: int) -> bytes:
    """One member's part of member_key (pack hashes the same while it packs)."""
    return f"\0{rel}\0{kind}\0{sha}\0{mode:o}".encode("utf-8", "surrogateescape")


def tree_line(kind: str, sha: str) -> bytes:
    """One file's (kind f) or symlink's line of shardstream.tree_digest: hash_batch.sh's line
    for it on the host ("F <sha256>" / "L <sha256>")."""
    return f"{'F' if kind == 'f' else 'L'} {sha}\n".encode()


@dataclass(frozen=True)
class Shard:
    """One shard: its name, sha256 and size (path: the local tar file, when one was written)."""

    name: str  # <sha256[:32]>.tar
    sha256: str
    size: int
    path: Path | None = None


_MODE_CODE = {0o644: 1, 0o755: 2}  # a regular file's tar mode as one byte (0: not a file)
_CODE_MODE = {1: 0o644, 2: 0o755}


@dataclass(frozen=True)
class Packed:
    """What packing one shard produced: the tar's sha256 and size, and per member (in order)
    its content sha256 (32 raw bytes; zeros for a directory) and, for a regular file, its tar
    mode (a byte: `_MODE_CODE`): not dicts by path (~150 bytes a file of a 250,000-file shard)."""

    sha256: str
    size: int
    digests: bytes | bytearray
    mode_codes: bytes
    members: Sequence[Entry] = ()
    key: str = ""  # member_key of the members as packed (the shard index's key)
    tree: str | None = None  # shardstream.tree_digest of the members as packed

    @property
    def name(self) -> str:
        """The shard's name on the host (content-addressed)."""
        return f"{self.sha256[:32]}.tar"

    @property
    def files(self) -> dict[str, str]:
        """Each file's and symlink's content sha256 by path (a dict made now)."""
        d = self.digests
        return {e.rel: d[32 * n : 32 * n + 32].hex() for n, e in enumerate(self.members) if e.kind != "d"}

    @property
    def modes(self) -> dict[str, int]:
        """Each regular file's tar mode by path (a dict made now)."""
        c = self.mode_codes
        return {e.rel: _CODE_MODE[c[n]] for n, e in enumerate(self.members) if c[n]}


class ChangedWhilePacking(OSError):
    """A file was written to while it was being packed (its bytes would be part old, part new)."""


_ZERO = bytes(tarfile.BLOCKSIZE)
_OCTAL_END = 8**11  # a size from here on is a GNU base-256 field: left to tarfile
_IDS = b"0000000\0" * 2  # uid, gid
_MTIME = b"00000000000\0"
# magic, uname, gname, devmajor, devminor, prefix, and the block's padding
_HEADER_END = tarfile.GNU_MAGIC + bytes(32 + 32 + 8 + 8 + 155 + 12)
_FIXED_SUM = 8 * ord(" ") + sum(_IDS) + sum(_MTIME) + sum(_HEADER_END)  # (checksum field: spaces)
_MODES = {m: b"%07o\0" % m for m in (0, 0o644, 0o755, 0o777)}


def _block(name: bytes, kind: bytes, mode: bytes, size: int, link: bytes) -> bytes:
    """One 512-byte header block: name and link at most 100 bytes, 0 <= size < 8**11."""
    size_field = b"%011o\0" % size
    chksum = _FIXED_SUM + sum(name) + sum(mode) + sum(size_field) + kind[0] + sum(link)
    return b"".join(
        (name, _ZERO[: 100 - len(name)], mode, _IDS, size_field, _MTIME, b"%06o\0 " % chksum)
        + (kind, link, _ZERO[: 100 - len(link)], _HEADER_END)
    )


def _long(data: bytes, kind: bytes) -> bytes:
    """A GNU long-name (or long-link) member holding data, as tarfile writes it."""
    data += b"\0"
    return _block(b"././@LongLink", kind, _MODES[0], len(data), b"") + data + _ZERO[: -len(data) % 512]


def _tarfile_header(name: str, kind: bytes, mode: int, size: int = 0, linkname: str = "") -> bytes:
    """The normalised header as tarfile builds it (what `_header` gives, byte for byte)."""
    info = tarfile.TarInfo(name)
    info.type, info.mode, info.size, info.linkname = kind, mode, size, linkname
    info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
    return info.tobuf(tarfile.GNU_FORMAT, "utf-8", "surrogateescape")


def _header(name: str, kind: bytes, mode: int, size: int = 0, linkname: str = "") -> bytes:
    """The normalised GNU header of one member (mtime 0, uid/gid 0, no user/group names), byte
    for byte what tarfile's TarInfo.tobuf(GNU_FORMAT, "utf-8", "surrogateescape") gives, built
    from constant fields in ~2.5 us of CPU (tarfile: ~25 us, a third of packing a small file).
    A size of 8 GiB or more (a base-256 field) is left to tarfile."""
    if kind == tarfile.DIRTYPE and not name.endswith("/"):
        name += "/"
    if not 0 <= size < _OCTAL_END:
        return _tarfile_header(name, kind, mode, size, linkname)
    encoded = name.encode("utf-8", "surrogateescape")
    link = linkname.encode("utf-8", "surrogateescape")
    mode_field = _MODES.get(mode) or b"%07o\0" % (mode & 0o7777)
    if len(encoded) <= 100 and len(link) <= 100:
        return _block(encoded, kind, mode_field, size, link)
    longs = _long(link, tarfile.GNUTYPE_LONGLINK) if len(link) > 100 else b""
    if len(encoded) > 100:
        longs += _long(encoded, tarfile.GNUTYPE_LONGNAME)
    return longs + _block(encoded[:100], kind, mode_field, size, link[:100])


def _dir_headers(rel: str, made: set[str]) -> list[bytes]:
    """The headers of rel's parent directories not in `made` yet (added to it), outermost first:
    every parent is its own member, before the first file in it (the host unpacks two shards at
    once, one draining, the next arriving, and GNU tar's implicit creation of a missing parent
    races with another tar: "Cannot open: No such file")."""
    out = []
    parts = rel.split("/")[:-1]
    for depth in range(1, len(parts) + 1):
        d = "/".join(parts[:depth])
        if d not in made:
            made.add(d)
            out.append(_header(d, tarfile.DIRTYPE, 0o755))
    return out


def _member_header(e: Entry, mode: int, size: int) -> bytes:
    """The normalised header of one member: a symlink, or an empty directory, when e is one,
    else a regular file of this mode and size."""
    if e.kind == "l":
        return _header(e.rel, tarfile.SYMTYPE, 0o777, 0, e.target)
    if e.kind == "d":
        return _header(e.rel, tarfile.DIRTYPE, 0o755)
    return _header(e.rel, tarfile.REGTYPE, mode, size)


def tar_size(members: Sequence[Entry]) -> int:
    """The size `pack` gives these members while their sizes are the scanned ones, from the
    headers alone (no file is read): what tells a shard on the host worth hashing for."""
    made: set[str] = set()
    size = 0
    for e in members:
        size += sum(len(h) for h in _dir_headers(e.rel, made))
        size += len(_member_header(e, 0o644, 0))  # (mode and size never change its length)
        if e.kind == "f":
            size += -(-max(e.size, 0) // tarfile.BLOCKSIZE) * tarfile.BLOCKSIZE
    size += 2 * tarfile.BLOCKSIZE
    return size + (-size % tarfile.RECORDSIZE)


def worth_hashing(
    groups: Sequence[Sequence[Entry]],
    built: Sequence[Shard | None],
    host: Mapping[str, tuple[str, int, int]],
    indexed: set[str],
) -> list[int]:
    """Pure: which groups of unknown content (`built[i]` None) to pack, hashing only, because
    the host holds a shard no index entry names (`indexed`: every name the index holds, even one
    no group packs into now, e.g. the old shard of a file edited to the same size) whose size
    their tar would have. None on a first upload (no tar size is computed then)."""
    known = indexed | {s.name for s in built if s is not None}
    sizes = {
        have[1]
        for name, have in host.items()
        if "/" not in name and have[0] == "f" and name.endswith(".tar") and name not in known
    }
    if not sizes:
        return []
    return [i for i, s in enumerate(built) if s is None and tar_size(groups[i]) in sizes]


def pack(root: Path, members: Sequence[Entry], write: Callable[[bytes], Any], flush: int = 1 << 20) -> Packed:
    """Stream the deterministic tar of `members` (in order) to `write`, in ~`flush`-byte pieces,
    hashing each member and the whole tar as it goes (files are read once, constant memory).
    Byte-identical to what tarfile writes for the same normalised headers. (Per file: one
    os.open/fstat/read/fstat/close, no file object or Path; ~30 us of CPU for a 4 KiB file.)"""
    from gpuonboard.transfer import link_hash

    total = hashlib.sha256()
    size = 0
    digests = bytearray()
    codes = bytearray()
    buf = bytearray()

    def emit() -> None:
        nonlocal size
        if buf:
            chunk = bytes(buf)
            total.update(chunk)
            size += len(chunk)
            write(chunk)
            buf.clear()

    base = os.path.join(os.fspath(root), "")  # (with its trailing slash)
    made: set[str] = set()
    # member_key and shardstream.tree_digest of what is packed, as it is packed (the members
    # were iterated again for each, after the stream: a second pass on the upload's thread)
    key = hashlib.sha256(FORMAT.encode())
    tree: Any = hashlib.sha256()
    for e in members:
        rel = e.rel
        parent = rel.rpartition("/")[0]
        if parent and parent not in made:  # (a dir in `made` has its parents there too)
            for header in _dir_headers(rel, made):
                buf += header
        if e.kind == "l":
            buf += _member_header(e, 0o777, 0)
            hexd, mode = link_hash(e.target), 0o777
            digests += bytes.fromhex(hexd)
            codes.append(0)
        elif e.kind == "d":  # an empty directory of the dataset (a parent one is a header above)
            made.add(rel)
            buf += _member_header(e, 0o755, 0)
            hexd, mode = e.sha256, 0o755
            digests += ZERO
            codes.append(0)
        else:
            digest, mode = _pack_file(root, base + rel, e, buf, flush, emit)
            hexd = digest.hex()
            digests += digest
            codes.append(_MODE_CODE[mode])
        key.update(_key_field(rel, e.kind, hexd, mode))
        if tree is not None and "\n" in rel:
            tree = None
        elif tree is not None and e.kind != "d":
            tree.update(tree_line("l" if e.kind == "l" else "f", hexd))
        if len(buf) >= flush:
            emit()
    buf += _ZERO * 2
    end = (size + len(buf)) % tarfile.RECORDSIZE
    if end:
        buf += bytes(tarfile.RECORDSIZE - end)
    emit()
    return Packed(
        total.hexdigest(),
        size,
        digests,  # (not copied)
        bytes(codes),
        members,
        key.hexdigest(),
        tree.hexdigest() if tree is not None else None,
    )


def _pack_file(
    root: Path, path: str, e: Entry, buf: bytearray, flush: int, emit: Callable[[], None]
) -> tuple[bytes, int]:
    """Append a regular file's header, bytes and padding to buf (emitting whenever it holds
    `flush` bytes): the file's sha256 (raw) and its tar mode. Raises ChangedWhilePacking when it was
    written to meanwhile (its bytes would be part old, part new)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):  # (open() said so; os.open opens one)
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
        mode = 0o755 if st.st_mode & stat.S_IXUSR else 0o644
        buf += _member_header(e, mode, st.st_size)
        h = hashlib.sha256()
        left = st.st_size
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                raise ChangedWhilePacking(f"{root / e.rel} shrank while it was being packed")
            h.update(chunk)
            buf += chunk
            left -= len(chunk)
            if len(buf) >= flush:
                emit()
        after = os.fstat(fd)
    finally:
        os.close(fd)
    if (after.st_mtime_ns, after.st_size) != (st.st_mtime_ns, st.st_size):  # torn: part old, part new
        raise ChangedWhilePacking(f"{root / e.rel} changed while it was being packed")
    buf += _ZERO[: -st.st_size % tarfile.BLOCKSIZE]
    return h.digest(), mode


def build(root: Path, members: Sequence[Entry], cache: Path) -> Shard:
    """Pack members (in order) into a deterministic tar file in cache, named by its sha256."""
    cache.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=cache, prefix=".build.")
    try:
        with os.fdopen(fd, "wb") as raw:
            packed = pack(root, members, raw.write)
        final = cache / packed.name
        os.chmod(tmp, 0o644)
        os.utime(tmp, (SHARD_MTIME, SHARD_MTIME))
        os.replace(tmp, final)
        return Shard(final.name, packed.sha256, packed.size, final)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class Index:
    """member_key -> built shard, persisted as index.json in the dataset's cache dir."""

    def __init__(self, cache: Path) -> None:
        self.cache, self.path = cache, cache / "index.json"
        try:
            self.data: dict[str, dict[str, Any]] = json.loads(self.path.read_text())
        except (OSError, ValueError):
            self.data = {}

    def get(self, key: str) -> Shard | None:
        """The shard these members packed into last time (name, sha256, size; packing is
        deterministic, so the same members give the same shard again)."""
        rec = self.data.get(key)
        if not rec:
            return None
        path = self.cache / rec["name"]
        return Shard(rec["name"], rec["sha256"], rec["size"], path if path.is_file() else None)

    def put(self, key: str, shard: Shard) -> None:
        """Remember a built shard (saved by `save`)."""
        self.data[key] = {"name": shard.name, "sha256": shard.sha256, "size": shard.size}

    def save(self, keep: set[str]) -> None:
        """Write the index with only the keys still in use, and delete unused shard files."""
        self.data = {k: v for k, v in self.data.items() if k in keep}
        used = {v["name"] for v in self.data.values()}
        for p in self.cache.glob("*.tar"):
            if p.name not in used:
                p.unlink(missing_ok=True)
        write_cache(self.path, json.dumps(self.data, indent=0, sort_keys=True))


_TAIL = {"f": "}", "d": ', "dir": true}'}  # a member's manifest entry after its size


def manifest(shards: Sequence[tuple[str, str, int, Sequence[Entry]]], shard_size: int) -> bytes:
    """Pure: the uploaded manifest (JSON): per shard its uploaded name, sha256 (of the file as
    stored on the host), size and members (path and size; a symlink's target; `"dir": true` for
    an empty directory). The shard's sha256 covers every byte of its members; their own sha256s
    stay in the local hash cache. (`manifest_pieces` gives it a piece at a time.)"""
    out = io.BytesIO()
    for piece in manifest_pieces(shards, shard_size):
        out.write(piece)
    return out.getvalue()


def manifest_pieces(
    shards: Iterable[tuple[str, str, int, Sequence[Entry]]], shard_size: int
) -> Iterator[bytes]:
    """Pure: `manifest`'s bytes in pieces of at most 4,096 members (a 1,000,000-file manifest
    is ~50 MB: hashed, compressed or encrypted as it is made, never held whole)."""
    dumps = json.dumps
    yield f'{{"format": {dumps(MANIFEST_FORMAT)}, "shard_size": {shard_size}, "shards": ['.encode()
    sep = ""
    for name, sha, size, members in shards:
        head = f'{{"name": {dumps(name)}, "sha256": {dumps(sha)}, "size": {size}, "files": ['
        yield f"{sep}\n {head}\n".encode("utf-8", "surrogateescape")
        sep = ","
        batch: list[str] = []
        first = True
        for e in members:
            batch.append(
                f'  {{"path": {dumps(e.rel, ensure_ascii=False)}, "size": {e.size}'
                + (f', "link": {dumps(e.target, ensure_ascii=False)}}}' if e.kind == "l" else _TAIL[e.kind])
            )
            if len(batch) >= 4096:
                yield (("" if first else ",\n") + ",\n".join(batch)).encode("utf-8", "surrogateescape")
                batch.clear()
                first = False
        if batch:
            yield (("" if first else ",\n") + ",\n".join(batch)).encode("utf-8", "surrogateescape")
        yield b"\n ]}"
    yield b"\n]}\n"


def tree_drift(
    local: Mapping[str, Entry], host: Mapping[str, tuple[str, int, int]]
) -> tuple[list[str], list[str]]:
    """Pure: an unpacked tree's listing on the host (rel -> (kind, size, mtime)) against the
    dataset: (paths missing, of another kind, or of another size there; paths there that the
    dataset does not have), each sorted. Contents are not compared (a same-size edit on the host
    is not seen: each shard was verified by sha256 when it was unpacked)."""
    drift = sorted(
        rel
        for rel, e in local.items()
        if (got := host.get(rel)) is None or got[0] != e.kind or (e.kind == "f" and got[1] != e.size)
    )
    return drift, sorted(rel for rel in host if rel not in local)


def drift_summary(
    local: Mapping[str, Entry], host: Mapping[str, tuple[str, int, int]]
) -> tuple[int, str | None, list[str]]:
    """Pure: `tree_drift` as (how many paths drift, the first of them, the paths there that the
    dataset does not have, sorted), without a list of the drifting ones (on a first unpack that
    is every file). A scan's entries (`scanstore.Entries`) are read from their columns, in path
    order, and the extra paths found by a merge of the two sorted sides (no lookup per path)."""
    columns = getattr(local, "columns", None)
    if not isinstance(columns, Columns):
        drift, extra = tree_drift(local, host)
        return len(drift), (drift[0] if drift else None), extra
    n, first = 0, None
    get, kinds, sizes, f_kind = host.get, columns.kinds, columns.sizes, ord("f")
    for i, rel in enumerate(columns.rels()):
        got = get(rel)
        if got is None or got[0] != chr(kinds[i]) or (kinds[i] == f_kind and got[1] != sizes[i]):
            n += 1
            first = rel if first is None else first
    extra = []
    if host:
        theirs = sorted(host)
        k = 0
        for rel in columns.rels():
            while k < len(theirs) and theirs[k] < rel:
                extra.append(theirs[k])
                k += 1
            if k < len(theirs) and theirs[k] == rel:
                k += 1
        extra += theirs[k:]
    return n, first, extra


def manifest_paths(text: str) -> set[str]:
    """Pure: every member path of an uploaded manifest (empty when it cannot be read)."""
    try:
        doc = json.loads(text)
        return {f["path"] for s in doc["shards"] for f in s["files"]}
    except (ValueError, KeyError, TypeError):
        return set()


MARKER_PREFIX = "unpacked-"


def marker_name(manifest_sha: str, tree_dir: str) -> str:
    """File in the shards dir saying the plaintext tree `tree_dir` (the data dir's, or a
    --decrypt-to one) was unpacked from this manifest."""
    key = f"{manifest_sha}\0{tree_dir}".encode("utf-8", "surrogateescape")
    return f"{MARKER_PREFIX}{hashlib.sha256(key).hexdigest()[:16]}"
