"""The hash cache's racily clean records (git's rule): a file rewritten in place within the same
timestamp tick as the stat its record holds keeps size, mtime and inode; a rerun must not trust
the old sha256 then. Real files, real stats: the tick is reproduced by putting the old mtime back."""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

from gpuonboard.steps.dataset.scan import known_hashes
from gpuonboard.transfer import SourceTree, hashcache, scan_source

OLD, NEW = b"old content!", b"new content!"  # (the same size)


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _dataset(tmp_path: Path, mtime_ns: int | None = None) -> Path:
    root = tmp_path / "ds"
    (root / "d").mkdir(parents=True)
    (root / "d" / "a.bin").write_bytes(OLD)
    if mtime_ns is not None:
        os.utime(root / "d" / "a.bin", ns=(mtime_ns, mtime_ns))
    return root


def _rewrite_in_the_same_tick(path: Path) -> None:
    """NEW over OLD in place (same inode, same size), the mtime put back as it was."""
    before = path.stat()
    with path.open("r+b") as f:
        f.write(NEW)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = path.stat()
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (
        before.st_ino,
        before.st_size,
        before.st_mtime_ns,
    )
    assert path.read_bytes() == NEW


def _save_bound(root: Path, cache: Path) -> hashcache.HashCache:
    tree = scan_source(root)
    hashes = hashcache.HashCache(cache, tree.columns, tree.path)
    hashes.save(tree.entries)
    return hashes


def _load_bound(root: Path, cache: Path) -> SourceTree:
    tree = scan_source(root, hashes=False)
    hashcache.HashCache(cache, tree.columns, tree.path)
    return tree


def _save_unbound(root: Path, cache: Path) -> hashcache.HashCache:
    tree = scan_source(root)
    hashes = hashcache.HashCache(cache, locate=tree.path)
    for e in tree.iter_files():
        hashes.put(e, e.sha256)
    hashes.save(tree.entries)
    return hashes


def _load_unbound(root: Path, cache: Path) -> SourceTree:
    tree = scan_source(root, hashes=False)
    known_hashes(tree, hashcache.HashCache(cache, locate=tree.path))
    return tree


def test_a_file_rewritten_in_the_tick_of_its_record_is_hashed_again_bound(tmp_path: Path) -> None:
    root, cache = _dataset(tmp_path), tmp_path / "cache"
    _save_bound(root, cache)
    _rewrite_in_the_same_tick(root / "d" / "a.bin")
    assert _load_bound(root, cache).entries["d/a.bin"].sha256 == _sha(NEW)


def test_a_file_rewritten_in_the_tick_of_its_record_is_hashed_again_unbound(tmp_path: Path) -> None:
    root, cache = _dataset(tmp_path), tmp_path / "cache"
    _save_unbound(root, cache)
    _rewrite_in_the_same_tick(root / "d" / "a.bin")
    assert _load_unbound(root, cache).entries["d/a.bin"].sha256 == _sha(NEW)


def test_the_fresh_hash_is_saved_and_found_again(tmp_path: Path) -> None:
    """After the rewrite is noticed, the next save holds the new hash (both forms)."""
    for load in (_load_bound, _load_unbound):
        root, cache = _dataset(tmp_path / load.__name__), tmp_path / load.__name__ / "cache"
        _save_bound(root, cache)
        _rewrite_in_the_same_tick(root / "d" / "a.bin")
        tree = scan_source(root, hashes=False)
        hashes = hashcache.HashCache(cache, tree.columns, tree.path)
        hashes.save(tree.entries)
        assert load(root, cache).entries["d/a.bin"].sha256 == _sha(NEW)


def test_a_record_well_before_the_stamp_is_trusted_without_reading_the_file(tmp_path: Path) -> None:
    """Not racy: the record is believed as it is (the file is not read: content changed behind
    an unchanged size, mtime and inode still gives the recorded, old, sha256)."""
    long_ago = time.time_ns() - 100 * 10**9
    for save, load in ((_save_bound, _load_bound), (_save_unbound, _load_unbound)):
        where = tmp_path / save.__name__
        root, cache = _dataset(where, long_ago), where / "cache"
        save(root, cache)
        _rewrite_in_the_same_tick(root / "d" / "a.bin")
        assert load(root, cache).entries["d/a.bin"].sha256 == _sha(OLD)


def test_a_fresh_unchanged_file_keeps_its_hash_on_a_rerun(tmp_path: Path) -> None:
    """A racy record whose file is unchanged: hashed again, the same sha256 (the rerun reuses
    its shard or ciphertext); checked, it is saved again, in both forms."""
    for save, load in ((_save_bound, _load_bound), (_save_unbound, _load_unbound)):
        where = tmp_path / save.__name__
        root, cache = _dataset(where), where / "cache"
        save(root, cache)
        assert load(root, cache).entries["d/a.bin"].sha256 == _sha(OLD)
        tree = scan_source(root, hashes=False)
        hashes = hashcache.HashCache(cache, locate=tree.path)
        known_hashes(tree, hashes)
        hashes.save(tree.entries)
        assert load(root, cache).entries["d/a.bin"].sha256 == _sha(OLD)


def test_the_stamp_is_when_the_cache_was_made_not_when_it_was_saved(tmp_path: Path) -> None:
    """A file hashed as a long upload began and rewritten later in its tick is older than the
    save: the stamp is the cache's start, at or before every hash it holds."""
    root, cache = _dataset(tmp_path), tmp_path / "cache"
    before = time.time_ns()
    tree = scan_source(root, hashes=False)
    hashes = hashcache.HashCache(cache, tree.columns, tree.path)
    hashed_at = time.time_ns()
    tree.columns.set_sha(tree.columns.find("d/a.bin"), _sha(OLD))
    time.sleep(0.05)
    hashes.save(tree.entries)
    stamp = (cache / "hashes.json").stat().st_mtime_ns
    assert stamp == hashes.started and before <= stamp <= hashed_at


def test_a_racy_record_never_checked_is_not_saved_again(tmp_path: Path) -> None:
    """Unbound: a racy record that no get() checked would turn trusted under the new, later
    stamp; it is left out of the save (git smudges it), the checked ones stay."""
    root, cache = _dataset(tmp_path), tmp_path / "cache"
    (root / "b.bin").write_bytes(OLD)
    _save_unbound(root, cache)
    tree = scan_source(root, hashes=False)
    hashes = hashcache.HashCache(cache, locate=tree.path)
    assert hashes.get(tree.entries["b.bin"]) == _sha(OLD)
    hashes.save(tree.entries)
    again = hashcache.HashCache(cache)
    assert set(again.data) == {"b.bin"}


def test_an_unreadable_racy_file_is_left_unknown(tmp_path: Path) -> None:
    """Gone since the scan: no hash (the normal path reads it and reports it)."""
    root, cache = _dataset(tmp_path), tmp_path / "cache"
    _save_bound(root, cache)
    tree = scan_source(root, hashes=False)
    (root / "d" / "a.bin").unlink()
    hashcache.HashCache(cache, tree.columns, tree.path)
    assert tree.entries["d/a.bin"].sha256 == ""
