"""The scan stored by column (issue 31): what goes in comes out (odd names, symlinks, empty
dirs), in sorted path order; shards assigned over it equal `assign` over entries; the hash cache
bound to it round-trips; and it holds ~100 bytes a file, not ~450."""

from __future__ import annotations

import dataclasses
import json
import os
import tracemalloc
from pathlib import Path

import pytest

from gpuonboard.steps.dataset.scan import dir_members
from gpuonboard.transfer import hashcache, link_hash, scan_source, shards
from gpuonboard.transfer.crypto import sha256_file
from gpuonboard.transfer.scanstore import Entries, Entry, Group, encode, payload, raw_sizes, whole_seconds
from gpuonboard.transfer.shardstream import part_of
from gpuonboard.transfer.source import SourceTree
from gpuonboard.units import format_bytes

ODD = ["line\nbreak", "back\\slash", "caf\udce9", "caf\u00e9", "e.txt", "e-x", "sp ace", "z"]


def _odd_tree(root: Path) -> None:
    """Files named oddly at two levels, a symlink (and one to a dir), empty dirs whose names sort
    around files' ("e" beside "e.txt" and "e-x"), a dir and a file sharing a prefix."""
    for base in (root, root / "sub"):
        base.mkdir(parents=True, exist_ok=True)
        for n in ODD:
            (base / os.fsencode(n).decode("utf-8", "surrogateescape")).write_bytes(
                n.encode("utf-8", "surrogateescape")
            )
    (root / "e").mkdir()
    (root / "sub" / "e").mkdir()
    (root / "sub" / "deep" / "er").mkdir(parents=True)
    (root / "a.b").write_text("a.b")
    (root / "a").mkdir()
    (root / "a" / "x").write_text("x")
    (root / "link").symlink_to("sp ace")
    (root / "sub" / "dirlink").symlink_to("../a")
    (root / "dangling\nlink").symlink_to("no/such\\target")


def _reference(root: Path) -> tuple[dict[str, Entry], set[str]]:
    """What a scan should find, made the plain way (os.walk, lstat)."""
    out: dict[str, Entry] = {}
    empty: set[str] = set()
    for top, dirs, files in os.walk(root):
        rel_top = os.path.relpath(top, root)
        prefix = "" if rel_top == "." else rel_top + "/"
        if not dirs and not files and prefix:
            empty.add(prefix[:-1])
        for name in files + [d for d in dirs if os.path.islink(os.path.join(top, d))]:
            p = Path(top, name)
            st = p.lstat()
            if p.is_symlink():
                target = os.readlink(p)
                out[prefix + name] = Entry(prefix + name, "l", 0, int(st.st_mtime), link_hash(target), target)
            else:
                out[prefix + name] = Entry(
                    prefix + name,
                    "f",
                    st.st_size,
                    int(st.st_mtime),
                    sha256_file(p),
                    "",
                    st.st_mtime_ns,
                    st.st_ino,
                )
    return out, empty


def test_a_scan_gives_back_every_entry_in_path_order(tmp_path: Path) -> None:
    _odd_tree(tmp_path)
    want, empty = _reference(tmp_path)
    tree = scan_source(tmp_path)
    assert list(tree.entries) == sorted(want)  # (str order, as shards.assign sorts)
    assert dict(tree.entries.items()) == want
    assert list(tree.entries.values()) == [want[r] for r in sorted(want)]
    assert tree.empty_dirs == empty == {"e", "sub/e", "sub/deep/er"}
    for rel, e in want.items():
        assert rel in tree.entries and tree.entries[rel] == e and tree.entries.get(rel) == e
    assert "nope" not in tree.entries and tree.entries.get("sub") is None and 3 not in tree.entries
    assert tree.entries["dangling\nlink"].target == "no/such\\target"
    assert tree.total_bytes == sum(e.size for e in want.values() if e.kind == "f")
    assert tree.files == [want[r] for r in sorted(want) if want[r].kind == "f"]
    # a tree made from entries holds the same; an entry replaced (a hash filled in) reads back
    again = SourceTree(tmp_path, want)
    assert again.entries == tree.entries and len(again.entries) == len(want)
    e = dataclasses.replace(want["caf\udce9"], sha256="", size=7, mtime_ns=5, ino=9)
    again.entries["caf\udce9"] = e
    assert again.entries["caf\udce9"] == e
    odd = dataclasses.replace(e, sha256="not hex")
    again.entries["caf\udce9"] = odd
    assert again.entries["caf\udce9"] == odd
    with pytest.raises(KeyError):
        again.entries["new"] = dataclasses.replace(e, rel="new")


def test_the_whole_second_mtime_is_derived_as_os_stat_gives_it(tmp_path: Path) -> None:
    """The columns keep mtime_ns only; int(st_mtime) from it is the same to the last bit
    (a float sum that rounds up near a whole second; before 1970)."""
    p = tmp_path / "f"
    p.write_bytes(b"")
    for ns in (
        0,
        1,
        999_999_999,
        1_796_224_034_999_999_999,
        1_796_224_034_999_999_900,
        -1,
        -1_500_000_000,
        2**62,
    ):
        os.utime(p, ns=(ns, ns))
        st = p.stat()
        assert whole_seconds(st.st_mtime_ns) == int(st.st_mtime), ns
    assert scan_source(tmp_path, hashes=False).entries["f"].mtime == int(p.stat().st_mtime)


def test_columns_widen_for_what_32_bits_do_not_hold(tmp_path: Path) -> None:
    """Sizes and inodes start 32 bits wide: a file of 5 GiB, an inode past 2**32, a size of -1
    widen their column, and every entry reads back as it was."""
    small = {f"a{i}": Entry(f"a{i}", "f", i, 0, "", "", i, i) for i in range(5)}
    big = {"b": Entry("b", "f", 5 << 30, 7, "", "", 7_000_000_000, 2**40), "c": Entry("c", "f", -1, 0, "")}
    tree = SourceTree(tmp_path, {**small, **big})
    assert dict(tree.entries.items()) == {**small, **big}
    again = SourceTree(tmp_path, small)
    again.entries["a1"] = dataclasses.replace(small["a1"], size=1 << 40, ino=2**63)
    assert again.entries["a1"].size == 1 << 40 and again.entries["a1"].ino == 2**63
    assert again.entries["a2"] == small["a2"]


def test_path_lookups_agree_before_and_after_the_index(tmp_path: Path) -> None:
    """By bisection first, from a dict once many were asked: the same answers."""
    entries = {f"d{i % 7}/f{i:04d}": Entry(f"d{i % 7}/f{i:04d}", "f", i, 0, "") for i in range(300)}
    tree = SourceTree(tmp_path, entries)
    for _ in range(2):  # (the second round from the index)
        for rel, e in entries.items():
            assert tree.entries[rel] == e
        assert "d1/f0000" not in tree.entries and "" not in tree.entries


def test_shards_over_the_columns_are_the_shards_of_the_entries(tmp_path: Path) -> None:
    """assign_members (ranges of the scan's members, empty dirs merged in by path) gives the
    groups assign gives over a list of the entries, member for member."""
    _odd_tree(tmp_path)
    for i in range(300):
        (tmp_path / f"bulk{i % 3}").mkdir(exist_ok=True)
        (tmp_path / f"bulk{i % 3}" / f"f{i:04d}").write_bytes(b"x" * (i * 37 % 900))
    tree = scan_source(tmp_path, hashes=False)
    listed = list(tree.entries.values()) + dir_members(tree.empty_dirs)
    for size in (1 << 40, 4096, 1500):
        want = shards.assign(listed, size)
        got = shards.assign_members(tree.members(), size)
        assert [list(g) for g in got] == want
        assert [len(g) for g in got] == [len(g) for g in want]
        g = max(got, key=len)
        assert g[0] == list(g)[0] and g[-1] == list(g)[-1] and g[1:3] == list(g)[1:3]
    assert all(isinstance(g, Group) for g in got)


def test_a_groups_paths_and_sizes_from_the_columns_are_its_entries(tmp_path: Path) -> None:
    """raw_sizes of a Group (read from the scan's columns, no Entry made: planning asks it for
    each shard's temp name and size) gives what its entries give, empty dirs and odd names in
    every group boundary; so the temp name a rerun resumes from is the one part_of names."""
    _odd_tree(tmp_path)
    for i in range(120):
        (tmp_path / f"bulk{i % 3}").mkdir(exist_ok=True)
        (tmp_path / f"bulk{i % 3}" / f"f{i:04d}").write_bytes(b"x" * (i * 37 % 900))
    tree = scan_source(tmp_path, hashes=False)
    for size in (1 << 40, 1500):
        for g in shards.assign_members(tree.members(), size):
            entries = list(g)
            want = [(encode(e.rel), e.size) for e in entries]
            assert list(raw_sizes(g)) == want == list(raw_sizes(entries))
            names = [e.rel for e in entries]
            assert part_of(raw for raw, _ in raw_sizes(g)) == part_of(encode(n) for n in names)
            assert payload(g) == sum(max(e.size, 0) + 512 for e in entries) == payload(entries)
    assert any(e.kind == "d" for e in tree.members().iterate(0, len(tree.members())))


def test_packing_a_group_notes_its_hashes_in_the_scan(tmp_path: Path) -> None:
    """Packing gives each member's sha256 (raw, in order); noted in the scan they are what a
    hashing scan finds, and the hash cache bound to the scan saves and finds them again."""
    root = tmp_path / "ds"
    _odd_tree(root)
    tree = scan_source(root, hashes=False)
    (group,) = shards.assign_members(tree.members(), 1 << 40)
    packed = shards.pack(root, group, lambda b: None)
    group.note_digests(packed.digests)
    hashed = scan_source(root)
    assert tree.entries == hashed.entries
    assert packed.files == {e.rel: e.sha256 for e in hashed.entries.values()}
    cache_dir = tmp_path / "cache"
    hashcache.HashCache(cache_dir, tree.columns).save(tree.entries)
    assert len(json.loads((cache_dir / "hashes.json").read_text())) == len(tree.files)
    fresh = scan_source(root, hashes=False)
    os.utime(root / "z", ns=(1, 1))  # (changed since: not vouched for)
    touched = scan_source(root, hashes=False)
    hashcache.HashCache(cache_dir, fresh.columns)
    assert fresh.entries == hashed.entries
    hashcache.HashCache(cache_dir, touched.columns)
    assert touched.entries["z"].sha256 == "" and touched.entries["caf\udce9"].sha256


def test_the_bound_hash_cache_reads_an_older_cache_in_any_order(tmp_path: Path) -> None:
    """A hashes.json written by an earlier version (the scan's old order, JSON with spaces,
    escaped names) is read record by record; records of another shape are skipped."""
    root = tmp_path / "ds"
    _odd_tree(root)
    hashed = scan_source(root)
    files = [e for e in hashed.entries.values() if e.kind == "f"]
    old = {e.rel: [e.size, e.mtime_ns, e.ino, e.sha256] for e in reversed(files)}
    old["gone/file"] = [1, 2, 3, "a" * 64]
    old["weird"] = {"not": "a record"}
    cache_dir = tmp_path / "cache"
    cache_dir.mkdir()
    (cache_dir / "hashes.json").write_text(json.dumps(old))
    tree = scan_source(root, hashes=False)
    hashcache.HashCache(cache_dir, tree.columns)
    assert tree.entries == hashed.entries


def test_the_manifest_in_pieces_is_the_manifest() -> None:
    members = [Entry(f"d/f{i:05d}\u00e9", "f", i, 0, "") for i in range(9000)] + [
        Entry("l", "l", 0, 0, "", "t\n")
    ]
    rows = [
        ("a.tar", "0" * 64, 5, members[:4100]),
        ("b.tar", "1" * 64, 6, members[4100:]),
        ("c.tar", "2" * 64, 1, []),
    ]
    whole = shards.manifest(rows, 99)
    assert b"".join(shards.manifest_pieces(rows, 99)) == whole
    doc = json.loads(whole)
    assert [len(s["files"]) for s in doc["shards"]] == [4100, 4901, 0]
    assert doc["shards"][1]["files"][-1] == {"path": "l", "size": 0, "link": "t\n"}


def test_drift_from_the_columns_is_tree_drift(tmp_path: Path) -> None:
    entries = {f"d/f{i}": Entry(f"d/f{i}", "f", i, 0, "") for i in range(50)}
    entries["d/l"] = Entry("d/l", "l", 0, 0, "", "f1")
    tree = SourceTree(tmp_path, entries)
    host = {f"d/f{i}": ("f", i + (i % 9 == 0), 0) for i in range(5, 60)}
    host["d/l"] = ("f", 2, 0)
    host["a"] = ("f", 1, 0)
    drift, extra = shards.tree_drift(entries, host)
    assert shards.drift_summary(tree.entries, host) == (len(drift), drift[0], extra)
    assert shards.drift_summary(entries, host) == (len(drift), drift[0], extra)
    assert shards.drift_summary(tree.entries, {}) == (len(entries), min(entries), [])


def test_the_scan_holds_about_a_hundred_bytes_a_file(tmp_path: Path) -> None:
    """One Entry object, its strings and a dict slot per file were ~450 bytes at the upload's
    peak; the columns hold the path's bytes and ~75 more."""
    n = 6000
    for i in range(n):
        if i % 1000 == 0:
            d = tmp_path / f"d{i // 1000:04d}"
            d.mkdir()
        (d / f"f{i:07d}.bin").write_bytes(b"x")
    scan_source(tmp_path, hashes=False)  # (warm: imports, caches)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tree = scan_source(tmp_path, hashes=False)
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(tree.entries) == n and isinstance(tree.entries, Entries)
    assert held / n < 130, f"{held / n:.0f} bytes a file"


def test_a_scan_names_fifos_and_sockets_and_a_dir_of_only_those_is_empty(tmp_path: Path) -> None:
    """They are no entry (never uploaded) but the scan names them, for the messages; a dir that
    holds nothing else is an empty dir (plain mode's rsync makes it, shard mode carries it)."""
    import socket

    (tmp_path / "a" / "only").mkdir(parents=True)
    (tmp_path / "a" / "f.txt").write_text("x")
    os.mkfifo(tmp_path / "a" / "only" / "q")
    os.mkfifo(tmp_path / "pipe")
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(tmp_path / "sock"))
    tree = scan_source(tmp_path)
    assert list(tree.entries) == ["a/f.txt"]
    assert sorted(tree.specials) == ["a/only/q", "pipe", "sock"]
    assert tree.empty_dirs == {"a/only"}


def test_a_scan_keeps_files_far_longer_than_what_they_take_on_disk(tmp_path: Path) -> None:
    """A sparse file (a 2 GiB image holding 4 KiB) travels and lands whole, holes as zeros: the
    scan keeps it (path, length, bytes allocated) for the messages; a dense file is not kept."""
    from gpuonboard.steps.dataset.scan import local_notes

    with open(tmp_path / "disk.img", "wb") as f:
        f.truncate(2 << 30)
        f.write(b"x" * 4096)
    (tmp_path / "dense.bin").write_bytes(os.urandom(8192))
    allocated = os.stat(tmp_path / "disk.img").st_blocks * 512
    if allocated >= 1 << 30:
        pytest.skip("this file system does not keep holes")
    tree = scan_source(tmp_path, hashes=False)
    assert tree.sparse == [("disk.img", 2 << 30, allocated, True)]  # (ext4, tmpfs: SEEK_HOLE finds them)
    assert local_notes(tree) == (
        f"; 'disk.img' is 2.0 GiB long but takes {format_bytes(allocated, binary=True)} on this"
        " machine's disk (sparse): it is sent and stored on the host whole, 2.0 GiB, its holes as zeros"
    )
    assert local_notes(scan_source(tmp_path / "disk.img", hashes=False)) == local_notes(tree)
    assert local_notes(scan_source(tmp_path / "dense.bin", hashes=False)) == ""


def test_a_file_far_longer_than_its_allocation_is_called_sparse_only_where_holes_are_reported(
    tmp_path: Path,
) -> None:
    """Blocks far fewer than the length are no proof of holes: ZFS with lz4 stores a CSV in a
    fifth, a FUSE squashfs reader (KarpelesLab/squashfs
    inode_darwin.go) reports 1 block for any file, NFS the server's. The note said "its holes
    as zeros" for all of them; now holes are said only where the file system reports one
    (SEEK_HOLE), and the others are said as what their file system reports. A real dense file
    with its stat's block count made that reader's (1), and a real sparse one."""
    from gpuonboard.steps.dataset.scan import local_notes
    from gpuonboard.transfer.source import _note_sparse, holes_found

    dense = tmp_path / "big.csv"
    dense.write_bytes(os.urandom(1 << 16))
    holey = tmp_path / "disk.img"
    with holey.open("wb") as f:
        f.truncate(2 << 30)
        f.write(b"x" * 4096)
    if os.stat(holey).st_blocks * 512 >= 1 << 30 or not holes_found(str(holey)):
        pytest.skip("this file system does not keep holes, or cannot report them")
    assert not holes_found(str(dense))
    assert not holes_found(str(tmp_path / "missing"))  # (not opened: no claim)
    fields = list(os.stat(dense))  # (the 10 fields a stat_result is made of; st_blocks by name)
    fields[6] = 5 << 30  # st_size: a 5 GiB file, reported as 1 block
    st = os.stat_result(fields, {"st_blocks": 1})
    tree = SourceTree(tmp_path)
    _note_sparse(tree, "big.csv", st, str(dense))
    assert local_notes(tree) == (
        "; 'big.csv' is 5.0 GiB long but its file system reports 512 B on disk for it (compressed,"
        " or counted its own way; no holes reported): it is sent and stored on the host whole, 5.0 GiB"
    )
    _note_sparse(tree, "big2.csv", st, str(dense))
    _note_sparse(tree, "disk.img", os.stat(holey), str(holey))
    notes = local_notes(tree)
    assert notes.count("holes as zeros") == 1 and notes.index("'disk.img'") < notes.index("2 files are ")
    assert "(compressed, or counted its own way; no holes reported; e.g. 'big.csv': 5.0 GiB, 512 B)" in notes


def test_a_dense_file_growing_while_it_is_checked_is_never_called_sparse(tmp_path: Path) -> None:
    """holes_found compared lseek(SEEK_HOLE) (a dense file's end: its length then) with an fstat
    taken after it: a file that grew in between (a log, a dataset still being written) was
    called sparse. A real dense file appended to by a real writer process while it is checked:
    a hole counts only before the length the file had both before and after."""
    import subprocess
    import sys

    from gpuonboard.transfer.source import holes_found

    grows = tmp_path / "train.log"
    grows.write_bytes(os.urandom(1 << 16))
    writer = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import os, sys\nfd = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND)\n"
            "for _ in range(2_000_000): os.write(fd, b'x')",
            str(grows),
        ]
    )
    try:
        found = [holes_found(str(grows)) for _ in range(20_000) if writer.poll() is None]
    finally:
        writer.kill()
        writer.wait()
    assert len(found) > 1000 and not any(found), sum(found)


@pytest.mark.parametrize(
    "ns",
    [
        1_700_000_000_999_999_950,
        1_700_000_000_500_000_000,
        1_700_000_000_000_000_000,
        -500_000_000,
        -1_500_000_000,
        1,
    ],
)
def test_a_files_second_on_the_host_is_the_floor_of_its_nanoseconds(tmp_path: Path, ns: int) -> None:
    """The host's listing of a file (find's %T@ cut at the dot) reads tv_sec, the floor, where
    int(st_mtime) rounds up within ~120 ns of the next second and truncates toward zero before
    1970: the host's list of what uploads wrote took the latter, and such a file kept its tree.
    A real file given the mtime by touch -d @touch_time() (as the host decryption does) and by
    os.utime (as rsync -a), listed by the real find: host_seconds() is what it reads, and
    listed_seconds() reads that listing back as the local side's whole_seconds()."""
    import subprocess

    from gpuonboard.transfer.scanstore import Entry, host_seconds, listed_seconds, touch_time, whole_seconds

    e = Entry("a.bin", "f", 1, whole_seconds(ns), "", mtime_ns=ns)
    for way in ("touch", "utime"):
        f = tmp_path / way
        f.write_bytes(b"x")
        if way == "touch":
            subprocess.run(["touch", "-m", "-d", f"@{touch_time(e)}", str(f)], check=True)
        else:
            os.utime(f, ns=(ns, ns))
        assert f.stat().st_mtime_ns == ns
        t = subprocess.run(["find", str(f), "-printf", "%T@"], capture_output=True, text=True).stdout
        assert int(t.split(".")[0]) == host_seconds(e) == ns // 1_000_000_000
        assert listed_seconds(t) == e.mtime == int(f.stat().st_mtime)
    coarse = Entry("a.bin.age", "f", 1, 1_700_000_000, "")  # (made without nanoseconds)
    assert host_seconds(coarse) == 1_700_000_000 and touch_time(coarse) == "1700000000"
