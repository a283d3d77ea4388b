"""Shard mode's stores, as plan and apply both name them: a shard's file name on the host, its
cached ciphertext here, what packing a group found (noted in the work, the hash cache and the
shard index), and the manifest: built from the shards, stored on the host as it is or as its
cached age ciphertext, read back from the host."""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
from pathlib import Path

from gpuonboard.steps.dataset.work import Work
from gpuonboard.transfer import crypto, shards, shardstream


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


def note_packed(work: Work, i: int, packed: shards.Packed, root: Path) -> None:
    """Note what packing group i found (its files' hashes, the shard's name and member key) in
    the work, the hash cache and the shard index."""
    assert work.index is not None and work.hashes is not None
    files = packed.files
    group = work.groups[i]
    entries = work.tree.entries
    for n, old in enumerate(group):  # (in place, one entry at a time: the scan's entry, now with
        # its hash, replaces it in the group and the tree: never two objects per file at once)
        e = group[n] = dataclasses.replace(old, sha256=files.get(old.rel, old.sha256))
        work.hashes.put(e, e.sha256)
        if e.rel in entries:
            entries[e.rel] = e
    made = shards.Shard(packed.name, packed.sha256, packed.size)
    work.built[i] = made
    work.keys[i] = shards.member_key(root, group, packed.modes)
    work.index.put(work.keys[i], made)


def manifest(work: Work, size: int) -> bytes:
    """The manifest of the shards (every group built), for shards of `size`."""
    rows = []
    for group, shard in zip(work.groups, work.built, strict=True):
        assert shard is not None
        rows.append((remote_name(work, shard), shard.sha256, shard.size, group))
    return shards.manifest(rows, size)


def manifest_bytes(cache: Path, work: Work) -> tuple[str, bytes]:
    """The manifest's sha256 and the gzip form of what the host keeps (see stored_manifest)."""
    made = work.manifest or manifest(work, work.shard_size)
    digest = hashlib.sha256(made).hexdigest()
    stored = stored_manifest(cache, work, made, digest)
    return digest, gzip.compress(stored, compresslevel=1, mtime=0)


def manifest_cipher(cache: Path, work: Work, digest: str) -> Path:
    """Where the ciphertext of the manifest of sha256 `digest` is cached (encrypted mode)."""
    assert work.enc is not None
    return cache / f"{work.enc.cache_key('manifest:' + digest)}.age"


def stored_manifest(cache: Path, work: Work, made: bytes, digest: str) -> bytes:
    """What the host's manifest.json holds: the manifest, or in encrypted mode its age
    ciphertext to the same recipients (the paths, sizes and link targets of the dataset are
    no less private than the contents), made once and cached, so an unchanged manifest has
    one stable ciphertext and a rerun finds it on the host as it is."""
    if work.enc is None:
        return made
    path = manifest_cipher(cache, work, digest)
    if not path.is_file():
        crypto.encrypt_file(made, path, work.enc)
    return path.read_bytes()


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
