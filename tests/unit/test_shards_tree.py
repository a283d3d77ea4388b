"""Shard mode's checks of the host's unpacked tree (pure)."""

from __future__ import annotations

import io
import os
import time
from pathlib import Path

import pytest

from gpuonboard.transfer import Entry, shards


def test_tree_drift_compares_paths_kinds_and_file_sizes() -> None:
    local = {
        "a.bin": Entry("a.bin", "f", 10, 0, ""),
        "d/b.bin": Entry("d/b.bin", "f", 5, 0, ""),
        "link": Entry("link", "l", 7, 0, "", "a.bin"),
        "gone": Entry("gone", "f", 1, 0, ""),
    }
    host = {"a.bin": ("f", 10, 99), "d/b.bin": ("f", 4, 0), "link": ("l", 5, 0), "extra.pt": ("f", 1, 0)}
    assert shards.tree_drift(local, host) == (["d/b.bin", "gone"], ["extra.pt"])
    host["link"] = ("f", 7, 0)
    assert shards.tree_drift(local, host)[0] == ["d/b.bin", "gone", "link"]


def test_manifest_paths_reads_every_member_or_nothing() -> None:
    doc = shards.manifest(
        [("x.tar", "0" * 64, 10, [Entry("a b", "f", 1, 0, ""), Entry("c\udce9", "f", 2, 0, "")])], 1
    )
    assert shards.manifest_paths(doc.decode("utf-8", "surrogateescape")) == {"a b", "c\udce9"}
    assert shards.manifest_paths("not json") == set() == shards.manifest_paths('{"shards": 3}')


def test_a_file_written_to_while_it_is_packed_is_refused(tmp_path: Path) -> None:
    """Its bytes in the shard would be part old, part new (a torn copy reported as uploaded)."""
    root = tmp_path / "src"
    root.mkdir()
    big = root / "big.bin"
    big.write_bytes(os.urandom(3 << 20))
    st = big.stat()
    entry = Entry("big.bin", "f", st.st_size, int(st.st_mtime), "", "", st.st_mtime_ns, st.st_ino)
    calls = []

    def write(chunk: bytes) -> None:
        if not calls:  # the first MiB is out: someone rewrites the end of the file in place
            with open(big, "r+b") as f:
                f.seek(-10, os.SEEK_END)
                f.write(b"0123456789")
        calls.append(len(chunk))

    with pytest.raises(shards.ChangedWhilePacking, match="big.bin changed while it was being packed"):
        shards.pack(root, [entry], write)
    shards.pack(root, [entry], lambda chunk: None)  # left alone: packed


def test_a_file_changed_since_the_scan_is_told_apart(tmp_path: Path) -> None:
    from gpuonboard import transfer
    from gpuonboard.steps.dataset import _changed_since_scan

    (tmp_path / "a.txt").write_text("one")
    tree = transfer.scan_source(tmp_path, hashes=False)
    assert not _changed_since_scan(tree, "a.txt")
    time.sleep(0.01)
    (tmp_path / "a.txt").write_text("two")
    assert _changed_since_scan(tree, "a.txt")
    assert _changed_since_scan(tree, "gone.txt")


def test_tar_size_is_the_packed_size_without_reading_a_file(tmp_path: Path) -> None:
    """What the plan compares with the sizes of shards on the host that the index does not name:
    long names and link targets (GNU long-name members), nested parents, empty files, sizes on a
    512-byte boundary, and a tar that ends exactly on a 10 KiB record."""
    from gpuonboard.steps.dataset import _dir_members
    from gpuonboard.transfer import scan_source

    root = tmp_path / "src"
    deep = root / ("d" * 120) / "sub"
    deep.mkdir(parents=True)
    (deep / ("n" * 130 + ".bin")).write_bytes(os.urandom(1000))
    (root / "empty").write_bytes(b"")
    (root / "block").write_bytes(os.urandom(512))
    (root / "exec.sh").write_bytes(b"#!/bin/sh\n")
    (root / "exec.sh").chmod(0o755)
    (root / "link").symlink_to("t" * 150)
    (root / "no files" / ("e" * 110)).mkdir(parents=True)  # an empty directory member, long name
    tree = scan_source(root, hashes=False)
    members = sorted(list(tree.entries.values()) + _dir_members(tree.empty_dirs), key=lambda e: e.rel)
    assert any(e.kind == "d" for e in members)
    sizes = []
    for k in range(1, len(members) + 1):
        out = bytearray()
        packed = shards.pack(root, members[:k], out.extend)
        assert shards.tar_size(members[:k]) == packed.size == len(out), [e.rel for e in members[:k]]
        sizes.append(packed.size)
    assert len(set(sizes)) > 1  # (not one record every time)
    # 9,216 bytes of members + 1,024 of end blocks: exactly one record, no padding
    exact = tmp_path / "exact"
    exact.mkdir()
    (exact / "f").write_bytes(os.urandom(9216 - 512))
    one = list(scan_source(exact, hashes=False).entries.values())
    assert shards.tar_size(one) == 10240 == shards.pack(exact, one, lambda b: None).size


def test_worth_hashing_picks_groups_whose_tar_size_an_unknown_host_shard_has() -> None:
    a = [Entry("a/1", "f", 100, 0, ""), Entry("a/2", "f", 12_000, 0, "")]
    b = [Entry("b/1", "f", 30_000, 0, "")]
    c = [Entry("c", "l", 0, 0, "", "a/1")]
    groups = [a, b, c]
    size_a, size_b = shards.tar_size(a), shards.tar_size(b)
    assert size_a != size_b
    host = {"x.tar": ("f", size_a, 0), "y.tar": ("f", size_b, 0), "sub/z.tar": ("f", 1, 0)}
    assert shards.worth_hashing(groups, [None, None, None], host, set()) == [0, 1]
    # a group already known is never packed again; a name any index entry holds is no unknown
    known = shards.Shard("y.tar", "0" * 64, size_b)
    assert shards.worth_hashing(groups, [None, known, None], host, set()) == [0]
    assert shards.worth_hashing(groups, [None, None, None], host, {"x.tar"}) == [1]
    # not a shard: another suffix, a dir, or a symlink of that size
    odd = {"x.tar.part": ("f", size_a, 0), "d.tar": ("d", size_b, 0), "l.tar": ("l", size_a, 0)}
    assert shards.worth_hashing(groups, [None, None, None], odd, set()) == []
    assert shards.worth_hashing(groups, [None, None, None], {}, set()) == []  # a first upload


def test_an_empty_directory_member_unpacks_as_a_directory(tmp_path: Path) -> None:
    """The tar an empty directory of the dataset packs into: a directory member (with its
    parents before it), read back by tarfile as one, and in the member key."""
    import tarfile

    from gpuonboard.steps.dataset import _dir_members
    from gpuonboard.transfer import scan_source

    (tmp_path / "f.txt").write_text("x")
    members = [*scan_source(tmp_path, hashes=False).entries.values(), *_dir_members({"a/b"})]
    out = bytearray()
    shards.pack(tmp_path, members, out.extend)
    with tarfile.open(fileobj=io.BytesIO(bytes(out))) as tar:
        kinds = {m.name: (m.isdir(), m.mode) for m in tar.getmembers()}
    assert kinds == {"f.txt": (False, 0o644), "a": (True, 0o755), "a/b": (True, 0o755)}
    assert shards.member_key(tmp_path, members) != shards.member_key(tmp_path, members[:1])
