"""Shard mode's stores, as plan and apply both name them: a shard's file name on the host, its
cached ciphertext here, what packing a group found (noted in the work, the hash cache and the
shard index), and the manifest: built from the shards, stored on the host as it is or as its
cached age ciphertext, read back from the host."""

from __future__ import annotations

import dataclasses
import hashlib
import io
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from gpuonboard import atomicfile, transfer
from gpuonboard.steps.dataset.work import Work
from gpuonboard.transfer import crypto, shards, shardstream
from gpuonboard.transfer.scanstore import Group


def shard_root(work: Work) -> Path:
    """The dir the shards' member paths are relative to (the dataset, or a file's parent)."""
    return work.tree.root if work.tree.root.is_dir() else work.tree.root.parent


def remote_name(work: Work, shard: shards.Shard) -> str:
    """The shard's file name on the host: `<sha>.tar`, or `<sha>.tar.zst.age` encrypted."""
    if work.enc is None:
        return shard.name
    return shard.name[: -len(".tar")] + shardstream.ENCRYPTED_SUFFIX[work.codec]


def cipher_path(cache: Path, work: Work, shard: shards.Shard) -> Path:
    """Where the shard's ciphertext is cached (encrypted mode; `cache`: the ciphertext cache)."""
    assert work.enc is not None
    return cache / f"{work.enc.cache_key(f'{shard.sha256}:{work.codec}')}.age"


def discard(data: bytes) -> None:
    """A write that keeps nothing (packing only to learn a shard's hashes)."""


def note_packed(work: Work, i: int, packed: shards.Packed) -> None:
    """Note what packing group i found (its files' hashes, the shard's name and member key) in
    the work, the hash cache and the shard index."""
    assert work.index is not None and work.hashes is not None
    group = work.groups[i]
    if isinstance(group, Group) and group.members.columns is work.tree.columns:
        group.note_digests(packed.digests)  # (into the scan's columns: the hash cache's records)
    else:  # (a list of entries: each replaced in place, and in the tree)
        assert isinstance(group, list)
        files = packed.files
        entries = work.tree.entries
        for n, old in enumerate(group):
            e = group[n] = dataclasses.replace(old, sha256=files.get(old.rel, old.sha256))
            work.hashes.put(e, e.sha256)
            if e.rel in entries:
                entries[e.rel] = e
    made = shards.Shard(packed.name, packed.sha256, packed.size)
    work.built[i] = made
    work.keys[i] = packed.key  # (packing computed member_key as it packed)
    work.index.put(work.keys[i], made)


def shard_digests(work: Work) -> Mapping[str, str]:
    """Path -> sha256 of every file and symlink in the shards (a view of the scan's columns
    when the groups are its members; else a dict)."""
    if work.groups and all(
        isinstance(g, Group) and g.members.columns is work.tree.columns for g in work.groups
    ):
        return work.tree.digests()
    return {e.rel: e.sha256 for g in work.groups for e in g if e.kind in ("f", "l")}


def _rows(work: Work) -> Iterator[tuple[str, str, int, Sequence[transfer.Entry]]]:
    for group, shard in zip(work.groups, work.built, strict=True):
        assert shard is not None
        yield remote_name(work, shard), shard.sha256, shard.size, group


def manifest_pieces(work: Work, size: int) -> Iterator[bytes]:
    """The manifest of the shards (every group built), for shards of `size`, in pieces."""
    return shards.manifest_pieces(_rows(work), size)


def manifest(work: Work, size: int) -> bytes:
    """The manifest of the shards (every group built), for shards of `size` (whole)."""
    return b"".join(manifest_pieces(work, size))


def manifest_digest(work: Work, size: int) -> str:
    """The manifest's sha256, made in pieces (never held whole)."""
    h = hashlib.sha256()
    for piece in manifest_pieces(work, size):
        h.update(piece)
    return h.hexdigest()


def manifest_bytes(cache: Path, work: Work) -> tuple[str, bytearray]:
    """The manifest's sha256 and the gzip form of what the host's manifest.json holds: the
    manifest, or in encrypted mode its age ciphertext to the same recipients (the paths, sizes
    and link targets of the dataset are no less private than the contents), made once and
    cached, so an unchanged manifest has one stable ciphertext and a rerun finds it on the host
    as it is. Made in pieces: the manifest is never held whole (~50 MB at 1,000,000 files)."""
    if work.enc is not None:
        digest = manifest_digest(work, work.shard_size)
        path = manifest_cipher(cache, work, digest)
        if not path.is_file():
            with atomicfile.replacing(path, crypto.temp_prefix(".enc.")) as out:
                crypto.encrypt_stream(_PiecesReader(manifest_pieces(work, work.shard_size)), out, work.enc)
        pieces: Iterable[bytes] = _file_pieces(path)
    else:
        pieces = manifest_pieces(work, work.shard_size)
    h = hashlib.sha256()
    z = zlib.compressobj(1, zlib.DEFLATED, 16 + zlib.MAX_WBITS)  # (the gzip format)
    gz = bytearray()  # (the caller puts the closing command's lists before it in place)
    for piece in pieces:
        if work.enc is None:
            h.update(piece)
        gz += z.compress(piece)
    gz += z.flush()
    return (h.hexdigest() if work.enc is None else digest), gz


def _file_pieces(path: Path) -> Iterator[bytes]:
    with path.open("rb") as f:
        while piece := f.read(1 << 20):
            yield piece


class _PiecesReader(io.RawIOBase):
    """A readable binary stream over an iterator of byte pieces (what encrypt_stream reads)."""

    def __init__(self, pieces: Iterator[bytes]) -> None:
        self._pieces, self._left = pieces, b""

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        while not self._left:
            nxt = next(self._pieces, None)
            if nxt is None:
                return 0
            self._left = nxt
        n = min(len(b), len(self._left))
        b[:n] = self._left[:n]
        self._left = self._left[n:]
        return n


def manifest_cipher(cache: Path, work: Work, digest: str) -> Path:
    """Where the ciphertext of the manifest of sha256 `digest` is cached (encrypted mode)."""
    assert work.enc is not None
    return cache / f"{work.enc.cache_key('manifest:' + digest)}.age"


def stored_digest(cache: Path, work: Work, digest: str) -> str:
    """sha256 of what the host's manifest.json holds when it is the manifest of sha256
    `digest` ('' when that is not known here: an encrypted manifest whose ciphertext this
    machine has not cached)."""
    if work.enc is None:
        return digest
    path = manifest_cipher(cache, work, digest)
    return crypto.sha256_file(path) if path.is_file() else ""


def readable_manifest(text: str, work: Work) -> str:
    """A host's manifest.json as JSON text: an encrypted one (age) decrypted with this run's
    identity or passphrase; '' when it cannot be (then it vouches for no file)."""
    data = text.encode("utf-8", "surrogateescape")
    if not data.startswith(b"age-encryption.org/"):
        return text  # (a plain-mode manifest, or one written before manifests were encrypted)
    passphrase = work.enc.passphrase if work.enc is not None else None
    if work.identity is None and passphrase is None:
        return ""
    try:
        return crypto.decrypt_bytes(data, work.identity, passphrase).decode("utf-8", "surrogateescape")
    except crypto.CryptoError:
        return ""
