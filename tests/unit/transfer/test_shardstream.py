"""The host side of shard mode's closing command, run by a real `sh` on real files."""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import os
import subprocess
from pathlib import Path

import pytest

from gpuonboard.transfer import Entry, shardstream


def _finish(
    target: Path, last: tuple[str, str, str] | None, manifest: bytes
) -> subprocess.CompletedProcess[str]:
    cmd = shardstream.finish_command(str(target), "", "", False, "zstd", "unpacked-x", last)
    stdin = shardstream.finish_lists([], []) + gzip.compress(manifest)
    return subprocess.run(cmd, shell=True, input=stdin, capture_output=True, timeout=30)


def test_closing_command_renames_the_last_shard_only_when_its_sha256_matches(tmp_path: Path) -> None:
    data = b"shard bytes" * 100
    sha = hashlib.sha256(data).hexdigest()
    (tmp_path / ".incoming-000002").write_bytes(data)
    (tmp_path / ".incoming-000002.sum").write_text(f"{sha}  -\n")
    r = _finish(tmp_path, (".incoming-000002", sha, f"{sha[:32]}.tar"), b'{"format": 3}\n')
    assert r.returncode == 0, r.stderr
    assert (tmp_path / f"{sha[:32]}.tar").read_bytes() == data
    assert (tmp_path / "manifest.json").read_bytes() == b'{"format": 3}\n'
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"{sha[:32]}.tar", "manifest.json"]

    # what arrived is not what was sent: removed, no manifest written, a plain message
    other = tmp_path / "again"
    other.mkdir()
    (other / ".incoming-000005").write_bytes(data + b"!")
    (other / ".incoming-000005.sum").write_text(hashlib.sha256(data + b"!").hexdigest() + "  -\n")
    r = _finish(other, (".incoming-000005", sha, f"{sha[:32]}.tar"), b"{}\n")
    assert r.returncode == 3
    assert r.stderr.decode().strip() == f"sha256 mismatch on the host for {sha[:32]}.tar"
    assert list(other.iterdir()) == []


def _tar_of(name: str, data: bytes) -> bytes:
    import io
    import tarfile

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as tar:
        info = tarfile.TarInfo(name)
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def test_the_closing_command_takes_thousands_of_shards_on_stdin(tmp_path: Path) -> None:
    """The shard lists travel on stdin: 3,600 stale names (~130 KB) were more than one command
    line argument may hold (128 KiB; 'Argument list too long' once a dataset had ~1,200 shards)."""
    target, plain = tmp_path / "ds.shards", tmp_path / "ds"
    target.mkdir()
    extract = []
    for i, name in enumerate(("a.bin", "sub/b.bin")):
        tar = _tar_of(name, f"content {i}\n".encode())
        sha = hashlib.sha256(tar).hexdigest()
        (target / f"{sha[:32]}.tar").write_bytes(tar)
        extract.append((f"{sha[:32]}.tar", sha))
    stale = [f"{i:032x}.tar" for i in range(3600)]
    for name in stale:
        (target / name).write_bytes(b"")
    unpack = str(tmp_path / ".ds.gpuonboard-unpack-test")
    cmd = shardstream.finish_command(str(target), unpack, str(plain), False, "zstd", "unpacked-x")
    stdin = shardstream.finish_lists(extract, stale) + gzip.compress(b"{}\n")
    assert len(cmd) + len(b"".join(n.encode() for n in stale)) > 128 * 1024  # the old command line
    r = subprocess.run(cmd, shell=True, input=stdin, capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert (plain / "a.bin").read_text() == "content 0\n"
    assert (plain / "sub" / "b.bin").read_text() == "content 1\n"
    kept = sorted([n for n, _ in extract] + ["manifest.json", "manifest.unpacked.json", "unpacked-x"])
    assert sorted(p.name for p in target.iterdir()) == kept


def test_the_closing_command_refuses_lists_cut_short(tmp_path: Path) -> None:
    cmd = shardstream.finish_command(str(tmp_path), "", "", False, "zstd", "unpacked-x")
    r = subprocess.run(cmd, shell=True, input=b"2 0\nonly-one.tar -\n", capture_output=True, timeout=30)
    assert r.returncode == 1 and r.stderr.decode().strip() == "the shard lists did not arrive whole"
    assert list(tmp_path.iterdir()) == []


def test_a_stream_leaves_no_file_descriptor_open(tmp_path: Path) -> None:
    """Each finished stream gives back every pipe (two fds a shard stayed open: 'Too many open
    files' after ~500 shards at the usual limit of 1024)."""
    import os

    def fds() -> int:
        return len(os.listdir("/proc/self/fd"))

    def produce(write: object) -> None:
        write(b"x" * 1000)  # type: ignore[operator]

    before = 0
    kept = []  # the upload keeps its streams until the end (to close any left on failure)
    for n in range(31):
        if n == 1:  # (after one: lazily opened things are open by then)
            before = fds()
        st = shardstream.Stream(["sh", "-c", "cat > /dev/null; echo done"])
        kept.append(st)
        st.feed(produce, "gzip")
        assert st.wait().remote_sha == "done"
    assert fds() <= before + 2, (before, fds())


def _one_shard(target: Path) -> tuple[str, str]:
    """A shard holding a.bin ("a\\n") stored in `target` (made): (its name, sha256)."""
    target.mkdir()
    tar = _tar_of("a.bin", b"a\n")
    sha = hashlib.sha256(tar).hexdigest()
    (target / f"{sha[:32]}.tar").write_bytes(tar)
    return f"{sha[:32]}.tar", sha


def _unpack_one(
    target: Path, unpack: str, plain: Path, shard: tuple[str, str], lease: tuple[str, str] = ("", "")
) -> subprocess.CompletedProcess[bytes]:
    """The closing command unpacking that one shard into `plain` (through `unpack`)."""
    cmd = shardstream.finish_command(
        str(target), unpack, str(plain), False, "zstd", "unpacked-x", None, lease
    )
    stdin = shardstream.finish_lists([shard], []) + gzip.compress(b"{}\n")
    return subprocess.run(cmd, shell=True, input=stdin, capture_output=True, timeout=60)


def test_the_closing_command_keeps_the_lease_fresh_while_it_unpacks(tmp_path: Path) -> None:
    import os
    import time

    target, plain = tmp_path / "ds.shards", tmp_path / "ds"
    shard = _one_shard(target)
    lease = tmp_path / ".ds.gpuonboard-upload"
    lease.write_text("token tok1\nowner me\npid 1\nholder h\n")
    old = time.time() - 100
    os.utime(lease, (old, old))
    unpack = str(tmp_path / ".ds.gpuonboard-unpack-x")
    r = _unpack_one(target, unpack, plain, shard, (str(lease), "tok1"))
    assert r.returncode == 0, r.stderr
    assert time.time() - lease.stat().st_mtime < 10  # refreshed by the host itself
    assert (plain / "a.bin").read_bytes() == b"a\n"


def test_the_closing_command_sweeps_its_own_copys_unpack_dirs_only(tmp_path: Path) -> None:
    """A killed run's unpack dir of this dataset is removed; another dataset's in the same data
    dir (a live upload of `coco` beside `imagenet`) is left alone, as is a name that merely
    starts alike."""
    target, plain = tmp_path / "my set.shards", tmp_path / "my set"
    shard = _one_shard(target)
    mine_old = tmp_path / ".my set.gpuonboard-unpack-0a1b"
    others = [tmp_path / ".coco.gpuonboard-unpack-77aa", tmp_path / ".my set2.gpuonboard-unpack-88bb"]
    for d in (mine_old, *others):
        d.mkdir()
        (d / "half.bin").write_bytes(b"x")
    unpack = str(tmp_path / ".my set.gpuonboard-unpack-ffee")
    r = _unpack_one(target, unpack, plain, shard)
    assert r.returncode == 0, r.stderr
    assert not mine_old.exists() and all((d / "half.bin").exists() for d in others)
    assert (plain / "a.bin").read_bytes() == b"a\n"


# Resuming inside a shard (issue 32): the host side of one stream (RECEIVE_SCRIPT) run by a real
# `sh` here, fed by a real Stream (compressor included); only ssh is left out.


def _tar_many(n: int = 40, size: int = 5_000) -> bytes:
    import io
    import os
    import tarfile

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for i in range(n):
            info = tarfile.TarInfo(f"d/f{i:03d}.bin")
            data = os.urandom(size)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _producer(data: bytes, piece: int = 4096) -> shardstream.Producer:
    def produce(write: object) -> str:
        for at in range(0, len(data), piece):
            write(data[at : at + piece])  # type: ignore[operator]
        return "packed"

    return produce


def _receive(store: Path, unpack: str = "", encrypted: bool = False) -> shardstream.Stream:
    cmd = shardstream.receive_command(str(store), shardstream.part_name(0), unpack, encrypted, False)
    return shardstream.Stream(["sh", "-c", cmd])


PART = shardstream.part_of([b"d/f000.bin", b"d/f001.bin"])


def test_a_shards_temp_name_depends_on_its_member_paths_only() -> None:
    assert shardstream.part_of([b"d/f000.bin", b"d/f001.bin"]) == PART
    assert PART != shardstream.part_of([b"d/f000.bin"]) != shardstream.part_of([b"d/f000.bin", b"d/f002.bin"])
    assert PART.startswith(shardstream.INCOMING) and len(PART) == len(shardstream.INCOMING) + 32
    # each path then a NUL: the name earlier versions gave, so their partials are resumed
    pinned = hashlib.sha256(b"d/f000.bin\0d/f001.bin\0").hexdigest()[:32]
    assert shardstream.INCOMING + pinned == PART
    assert shardstream.part_of([]) == shardstream.INCOMING + hashlib.sha256().hexdigest()[:32]
    assert shardstream.stream_header("zstd") == b"go zstd\n"
    assert shardstream.stream_header("gzip", PART, True) == f"go gzip {PART} ask\n".encode()


def test_prefix_sha_hashes_the_first_bytes_and_stops_there() -> None:
    data = bytes(range(256)) * 100
    calls: list[int] = []

    def produce(write: object) -> None:
        for at in range(0, len(data), 1000):
            calls.append(at)
            write(data[at : at + 1000])  # type: ignore[operator]

    assert shardstream.prefix_sha(produce, 2500) == hashlib.sha256(data[:2500]).hexdigest()
    assert len(calls) == 3  # (stopped once it had them)
    assert shardstream.prefix_sha(produce, len(data) + 1) is None
    assert shardstream.parse_have(b"have 12 abc\n") == (12, "abc")
    assert shardstream.parse_have(b"") is None and shardstream.parse_have(b"have x y\n") is None


def test_a_stream_resumes_from_the_partial_the_host_kept(tmp_path: Path) -> None:
    data = _tar_many()
    store, tree = tmp_path / "store", tmp_path / "tree"
    store.mkdir()
    kept = len(data) // 3 + 7  # (anywhere: not at a block boundary)
    (store / PART).write_bytes(data[:kept])
    st = _receive(store, str(tree))
    header = shardstream.stream_header("gzip", PART, True)
    assert st.feed(_producer(data), "gzip", header, resume=True) == "packed"
    res = st.wait()
    assert res.ok and res.remote_sha == res.local_sha == hashlib.sha256(data).hexdigest(), res
    assert (res.resumed, res.restarted, res.sent) == (kept, False, len(data) - kept)
    assert (store / PART).read_bytes() == data  # the whole shard: the partial, then the rest
    assert len(list((tree / "d").iterdir())) == 40  # unpacked whole: the partial's files too
    assert sorted(p.name for p in store.iterdir()) == [PART, PART + ".sum"]


def test_a_partial_that_differs_is_dropped_and_the_shard_sent_whole(tmp_path: Path) -> None:
    data = _tar_many()
    store = tmp_path / "store"
    store.mkdir()
    bad = bytearray(data[:20_000])
    bad[10_000] ^= 0xFF
    (store / PART).write_bytes(bytes(bad))
    st = _receive(store)
    st.feed(_producer(data), "zstd", shardstream.stream_header("zstd", PART, True), resume=True)
    res = st.wait()
    assert res.ok and res.remote_sha == hashlib.sha256(data).hexdigest(), res
    assert (res.resumed, res.restarted, res.sent) == (0, True, len(data))
    assert (store / PART).read_bytes() == data


def test_a_partial_longer_than_the_shard_is_not_taken(tmp_path: Path) -> None:
    data = _tar_many(4)
    store = tmp_path / "store"
    store.mkdir()
    (store / PART).write_bytes(data + b"x")
    st = _receive(store)
    st.feed(_producer(data), "gzip", shardstream.stream_header("gzip", PART, True), resume=True)
    res = st.wait()
    assert res.ok and (res.resumed, res.restarted) == (0, True) and (store / PART).read_bytes() == data


def test_a_ciphertext_resumes_as_it_is(tmp_path: Path) -> None:
    """Encrypted shards kept as ciphertext: the bytes are stored as they arrive (codec None)."""
    import os

    data = os.urandom(300_000)
    store = tmp_path / "store"
    store.mkdir()
    (store / PART).write_bytes(data[:123_457])
    st = _receive(store, encrypted=True)
    st.feed(_producer(data), None, shardstream.stream_header("zstd", PART, True), resume=True)
    res = st.wait()
    assert res.ok and res.remote_sha == hashlib.sha256(data).hexdigest(), res
    assert (res.resumed, res.sent) == (123_457, len(data) - 123_457)
    assert (store / PART).read_bytes() == data


def test_a_new_stream_drops_a_partial_it_was_not_asked_to_resume(tmp_path: Path) -> None:
    data = _tar_many(4)
    store = tmp_path / "store"
    store.mkdir()
    (store / PART).write_bytes(data[:1000])
    st = _receive(store)
    st.feed(_producer(data), "gzip", shardstream.stream_header("gzip", PART))
    res = st.wait()
    assert res.ok and res.resumed == 0 and not res.restarted and (store / PART).read_bytes() == data


def test_a_stream_cut_short_leaves_what_it_handed_on_in_the_partial(tmp_path: Path) -> None:
    """An interrupt mid-shard: the pipes are closed, not the processes killed, so every byte
    handed on reaches the host's partial (the rerun resumes from it)."""
    import pytest

    data = _tar_many()
    store = tmp_path / "store"
    store.mkdir()
    cut = 70_000

    def produce(write: object) -> None:
        write(data[:cut])  # type: ignore[operator]
        raise KeyboardInterrupt

    st = _receive(store)
    with pytest.raises(KeyboardInterrupt):
        st.feed(produce, "zstd", shardstream.stream_header("zstd", PART))
    assert (store / PART).read_bytes() == data[:cut]
    assert st.ssh.poll() is not None


def _dataset(root: Path) -> None:
    import os

    (root / "d" / "sub").mkdir(parents=True)
    (root / "empty").mkdir()
    for i in range(300):
        (root / "d" / f"f{i:03d}.bin").write_bytes(os.urandom(i * 7))
    for i in range(3):  # (big enough that tar is still writing one when it is named)
        (root / "d" / "sub" / f"big{i}.bin").write_bytes(os.urandom(3_000_000))
    (root / "d" / "sp ace ünï.txt").write_bytes(b"x")
    (root / "d" / "back\\slash").write_bytes(b"y")
    (root / "d" / "link").symlink_to("sub/big0.bin")


def _packed_members(root: Path) -> tuple[list[Entry], bytes]:
    from gpuonboard import transfer
    from gpuonboard.steps.dataset.scan import dir_members
    from gpuonboard.transfer import shards

    tree = transfer.scan_source(root, hashes=False)
    members = shards.assign(list(tree.entries.values()) + dir_members(tree.empty_dirs), 1 << 40)[0]
    out: list[bytes] = []
    packed = shards.pack(root, members, out.append)
    hashed = [dataclasses.replace(e, sha256=packed.files.get(e.rel, "")) for e in members]
    return hashed, b"".join(out)


def test_an_unpacking_stream_hashes_each_file_as_it_lands(tmp_path: Path) -> None:
    """With `tree` in its header, the receiving side hashes every unpacked file once tar has
    closed it (names with spaces, non-ASCII, backslashes, a symlink, an empty dir, files of
    3 MB) and says so in one `tree` line, equal to what the dataset's hashes give."""
    src, store, tree = tmp_path / "src", tmp_path / "store", tmp_path / "tree"
    _dataset(src)
    store.mkdir()
    members, data = _packed_members(src)
    st = _receive(store, str(tree))
    st.feed(_producer(data, 1 << 16), "zstd", shardstream.stream_header("zstd", PART, tree=True))
    res = st.wait()
    assert res.ok and res.remote_sha == res.local_sha, res
    assert res.tree and res.tree == shardstream.tree_digest(members)
    assert sorted(p.name for p in store.iterdir()) == [PART, PART + ".sum"]  # (no temp file left)
    assert (tree / "d" / "sub" / "big2.bin").read_bytes() == (src / "d" / "sub" / "big2.bin").read_bytes()
    # a file that differs on the host changes the line (the upload then hashes file by file)
    (tree / "d" / "f005.bin").write_bytes(b"changed")
    st = _receive(store, str(tmp_path / "again"))
    st.feed(_producer(data, 1 << 16), "zstd", shardstream.stream_header("zstd", PART, tree=True))
    assert st.wait().tree == res.tree  # (a fresh unpack: the same)
    changed = [m if m.rel != "d/f005.bin" else dataclasses.replace(m, sha256="0" * 64) for m in members]
    assert shardstream.tree_digest(changed) != res.tree
    # without `tree` (or with a name tar's listing would split) nothing is hashed
    st = _receive(store, str(tmp_path / "plain"))
    st.feed(_producer(data), "zstd", shardstream.stream_header("zstd", PART))
    assert st.wait().tree == ""
    assert shardstream.tree_digest([*members, dataclasses.replace(members[1], rel="a\nb")]) is None


def test_a_name_that_is_no_utf_8_is_proven_under_a_utf_8_locale(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Hosts run with LANG=C.UTF-8 (PAM, or sent by ssh): a name with a byte that is no UTF-8
    is still one line of the host's hashing (GNU grep would drop it as binary: no proof)."""
    monkeypatch.setenv("LC_ALL", "C.UTF-8")
    src, store = tmp_path / "src", tmp_path / "store"
    (src / "d").mkdir(parents=True)
    (src / "d" / os.fsdecode(b"caf\xe9")).write_bytes(b"latin-1 name")
    (src / "d" / "z").write_bytes(b"z")
    store.mkdir()
    members, data = _packed_members(src)
    st = _receive(store, str(tmp_path / "tree"))
    st.feed(_producer(data), "zstd", shardstream.stream_header("zstd", PART, tree=True))
    res = st.wait()
    assert res.ok and res.tree == shardstream.tree_digest(members), res


def test_a_tar_hashed_by_its_packing_is_not_hashed_again(tmp_path: Path) -> None:
    """`digest`: the shard's sha256 comes from what packing returned (it hashed the tar as it
    wrote it); the host's own sha256 is still compared with it, a resumed shard's too."""
    data = _tar_many()
    store = tmp_path / "store"
    store.mkdir()
    (store / PART).write_bytes(data[:5000])
    want = hashlib.sha256(data).hexdigest()
    st = _receive(store)
    header = shardstream.stream_header("zstd", PART, True)
    assert st.feed(_producer(data), "zstd", header, resume=True, digest=lambda r: want) == "packed"
    res = st.wait()
    assert res.ok and res.remote_sha == res.local_sha == want and res.resumed == 5000, res
    st = _receive(store)  # (a producer's sha256 that is not what it wrote: the host's differs)
    st.feed(_producer(data), "zstd", shardstream.stream_header("zstd", PART), digest=lambda r: "0" * 64)
    res = st.wait()
    assert res.ok and res.local_sha == "0" * 64 != res.remote_sha


def test_the_closing_command_removes_the_proven_shards_once_the_tree_is_in_place(tmp_path: Path) -> None:
    """The `drop` list (every file proven on the host as it landed): the closing command removes
    those shards, and what interrupted attempts left, after the swap, in the same round trip;
    never when it failed before the swap."""
    target, plain = tmp_path / "ds.shards", tmp_path / "ds"
    proven = "p" * 32 + ".tar"
    name, sha = _one_shard(target)
    (target / proven).write_bytes(b"streamed and proven")
    (target / ".incoming-0a1b").write_bytes(b"half")
    unpack = str(tmp_path / ".ds.gpuonboard-unpack-x")
    cmd = shardstream.finish_command(str(target), unpack, str(plain), False, "zstd", "unpacked-x")
    drop = [name, proven]
    stdin = shardstream.finish_lists([(name, sha)], [], drop) + gzip.compress(b"{}\n")
    r = subprocess.run(cmd, shell=True, input=stdin, capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert (plain / "a.bin").read_bytes() == b"a\n"
    assert sorted(p.name for p in target.iterdir()) == [
        "manifest.json",
        "manifest.unpacked.json",
        "unpacked-x",
    ]
    # a damaged shard to unpack: the closing command fails before the swap, nothing is dropped
    target2 = tmp_path / "ds2.shards"
    name, sha = _one_shard(target2)
    (target2 / name).write_bytes(b"damaged")
    (target2 / proven).write_bytes(b"streamed and proven")
    cmd = shardstream.finish_command(str(target2), unpack + "2", str(tmp_path / "ds2"), False, "zstd", "m")
    stdin = shardstream.finish_lists([(name, sha)], [], [proven]) + gzip.compress(b"{}\n")
    r = subprocess.run(cmd, shell=True, input=stdin, capture_output=True, timeout=60)
    assert r.returncode == 3 and (target2 / proven).exists()
