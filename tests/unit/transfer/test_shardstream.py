"""The host side of shard mode's closing command, run by a real `sh` on real files."""

from __future__ import annotations

import gzip
import hashlib
import subprocess
from pathlib import Path

from gpuonboard.transfer import shardstream


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
