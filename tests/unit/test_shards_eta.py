"""Pure parts of issue 5's additions: ETA formatting, batch sizing, pipelining, shard assignment
and deterministic shard packing."""

from __future__ import annotations

import errno
import hashlib
import os
import tarfile
import threading
import time
from pathlib import Path

import pytest

from gpuonboard import transfer
from gpuonboard.steps.base import StepArgsError
from gpuonboard.steps.dataset import DatasetStep
from gpuonboard.transfer import shards


def test_eta_formatting_and_rates() -> None:
    gib = 1024**3
    assert transfer.format_eta(int(12.4 * gib), 93) == "12.4 GiB at 93 Mbit/s ≈ 19 min"
    assert transfer.format_eta(10 * 1000**3, 100) == "9.3 GiB at 100 Mbit/s ≈ 13 min"  # the seed advice
    assert transfer.format_duration(44.6) == "45 s"
    assert transfer.format_duration(0.01) == "1 s"
    assert transfer.format_duration(3 * 3600 + 5 * 60) == "3 h 05 min"
    assert transfer.format_eta(1024, 0).endswith("unknown time")
    assert " at 2.5 Mbit/s " in transfer.format_eta(1 << 20, 2.5)
    assert " at 0.001 Mbit/s " in transfer.format_eta(1 << 20, 0.001)  # never "0.0"
    assert transfer.parse_rate_mbit("100mbit") == 100
    assert transfer.parse_rate_mbit("93") == 93
    assert transfer.parse_rate_mbit("1gbit") == 1000
    assert transfer.parse_rate_mbit("5m") == 5 * 1024**2 * 8 / 1e6  # rsync --bwlimit units
    assert transfer.parse_rate_mbit("") is None and transfer.parse_rate_mbit("fast") is None


def test_batch_sizes_grow_and_cover_everything() -> None:
    mib = 1024**2
    counts = transfer.batch_sizes([mib] * 100, first=4 * mib, cap=16 * mib)
    assert sum(counts) == 100
    assert counts[:3] == [4, 8, 16] and set(counts[3:-1]) == {16}
    assert transfer.batch_sizes([]) == []
    assert transfer.batch_sizes([1] * 10, max_items=3) == [3, 3, 3, 1]


def test_pipelined_overlaps_production_with_sending() -> None:
    log: list[str] = []
    lock = threading.Lock()

    def producer(k: int):  # type: ignore[no-untyped-def]
        def run() -> int:
            with lock:
                log.append(f"p{k}")
            time.sleep(0.1)
            return k

        return run

    def send(k: int) -> bool:
        time.sleep(0.1)
        with lock:
            log.append(f"s{k}")
        return True

    start = time.monotonic()
    assert transfer.pipelined([producer(k) for k in range(4)], send)
    elapsed = time.monotonic() - start
    assert [x for x in log if x.startswith("s")] == ["s0", "s1", "s2", "s3"]
    assert log.index("p1") < log.index("s0")  # batch 1 was produced while batch 0 was sent
    assert elapsed < 0.7  # ~0.5 pipelined, 0.8 in sequence (0.2 s spare: another xdist worker busy)
    assert not transfer.pipelined([producer(0), producer(1)], lambda k: False)


def _entries(n: int, size: int = 100) -> list[transfer.Entry]:
    return [transfer.Entry(f"d{i % 7}/f{i:05d}", "f", size, 0, f"{i:064x}") for i in range(n)]


def test_assignment_is_stable_under_unrelated_changes() -> None:
    entries = _entries(2000)
    size = 64 * 1024
    before = shards.assign(entries, size)
    assert 8 <= len(before) <= 64
    assert [e.rel for g in before for e in g] == sorted(e.rel for e in entries)
    # one file grows: only its shard's member list changes
    changed = [e if e.rel != "d6/f01000" else transfer.Entry(e.rel, "f", 150, 0, "x" * 64) for e in entries]
    after = shards.assign(changed, size)
    diff = [i for i, (a, b) in enumerate(zip(before, after, strict=True)) if a != b]
    assert len(before) == len(after) and len(diff) == 1
    # one file added: a fixed-size cut would shift every later shard; here at most 2 differ
    added = shards.assign([*entries, transfer.Entry("d0/f00000a", "f", 100, 0, "y" * 64)], size)
    assert len({tuple(e.rel for e in g) for g in added} - {tuple(e.rel for e in g) for g in before}) <= 2
    # a big file travels alone
    big = shards.assign([*_entries(10), transfer.Entry("d0/zz", "f", size, 0, "z" * 64)], size)
    assert any(len(g) == 1 and g[0].rel == "d0/zz" for g in big)


def test_shard_is_byte_identical_and_normalised(tmp_path: Path) -> None:
    root = tmp_path / "src"
    (root / "a b").mkdir(parents=True)
    (root / "a b" / "ü.txt").write_bytes(b"x" * 1000)
    (root / "run.sh").write_bytes(b"#!/bin/sh\n")
    os.chmod(root / "run.sh", 0o700)
    (root / "link").symlink_to("run.sh")
    tree = transfer.scan_source(root)
    members = sorted(tree.entries.values(), key=lambda e: e.rel)
    one = shards.build(root, members, tmp_path / "c1")
    os.utime(root / "run.sh", (5, 5))  # mtimes do not matter
    os.chown(root / "run.sh", os.getuid(), os.getgid())
    two = shards.build(root, members, tmp_path / "c2")
    assert one.sha256 == two.sha256 and one.path.read_bytes() == two.path.read_bytes()
    assert one.name == one.sha256[:32] + ".tar"
    assert hashlib.sha256(one.path.read_bytes()).hexdigest() == one.sha256
    with tarfile.open(one.path) as tar:
        infos = {i.name: i for i in tar.getmembers()}
        names = [i.name for i in tar.getmembers()]
    assert set(infos) == {"a b", "a b/ü.txt", "link", "run.sh"}
    assert names.index("a b") < names.index("a b/ü.txt")  # a parent dir comes before its files
    assert infos["a b"].isdir() and infos["a b"].mode == 0o755
    assert all(i.mtime == 0 and i.uid == 0 and i.gid == 0 and i.uname == "" for i in infos.values())
    assert infos["run.sh"].mode == 0o755 and infos["a b/ü.txt"].mode == 0o644
    assert infos["link"].issym() and infos["link"].linkname == "run.sh"
    # the index finds it again by member key; unused shard files are dropped on save
    index = shards.Index(tmp_path / "c1")
    key = shards.member_key(root, members)
    index.put(key, one)
    index.save({key})
    assert shards.Index(tmp_path / "c1").get(key) == one
    shards.Index(tmp_path / "c1").save(set())
    assert not one.path.exists()


def test_two_shards_unpack_at_once_into_one_dir(tmp_path: Path) -> None:
    """The host runs two `tar -x` into the same dir at once (one shard draining, the next
    arriving); parent dirs as members keep GNU tar's implicit mkdir from racing."""
    import subprocess

    root = tmp_path / "src"
    for i in range(3000):
        d = root / f"dir{i % 13}" / f"sub{i % 3}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"f {i}").write_text(str(i))
    members = sorted(transfer.scan_source(root).entries.values(), key=lambda e: e.rel)
    halves = [shards.build(root, members[k::2], tmp_path / f"c{k}") for k in (0, 1)]
    for attempt in range(8):
        out = tmp_path / f"out{attempt}"
        out.mkdir()
        procs = [
            subprocess.Popen(["tar", "-x", "-m", "--no-same-owner", "-f", str(h.path), "-C", str(out)])
            for h in halves
            if h.path is not None
        ]
        assert [p.wait() for p in procs] == [0, 0]
        assert sum(1 for p in out.rglob("f *")) == 3000


def test_an_unreadable_dataset_file_is_named_not_a_rerun_loop(tmp_path: Path) -> None:
    """Packing a shard fails on a file this process may not read: the sentence names the file
    and what to do (a plain rerun would fail the same way); other failures are left to the
    generic message (a file that vanished meanwhile: the rerun's scan no longer lists it)."""
    from gpuonboard.steps.dataset import unreadable_source

    kept = "2 of 5 shards arrived, only the rest is sent"
    victim = tmp_path / "sub dir" / "x.bin"
    denied = PermissionError(errno.EACCES, "Permission denied", str(victim))
    assert unreadable_source(denied, tmp_path, kept) == (
        "cannot read sub dir/x.bin in the dataset on this machine: Permission denied;"
        " fix it (or move it out), then rerun: 2 of 5 shards arrived, only the rest is sent"
    )
    assert unreadable_source(IsADirectoryError(errno.EISDIR, "Is a directory", str(victim)), tmp_path, kept)
    assert unreadable_source(FileNotFoundError(errno.ENOENT, "gone", str(victim)), tmp_path, kept) is None
    # plain encrypted mode reports any read error of a dataset file (else it would blame the cache)
    gone = FileNotFoundError(errno.ENOENT, "No such file or directory", str(victim))
    assert unreadable_source(gone, tmp_path, kept, errnos=None) == (
        "cannot read sub dir/x.bin in the dataset on this machine: No such file or directory;"
        " fix it (or move it out), then rerun: 2 of 5 shards arrived, only the rest is sent"
    )
    assert (
        unreadable_source(PermissionError(errno.EACCES, "Permission denied", "/etc/x"), tmp_path, kept)
        is None
    )
    assert unreadable_source(PermissionError(errno.EACCES, "Permission denied"), tmp_path, kept) is None
    assert unreadable_source(ValueError("x"), tmp_path, kept) is None


def test_a_local_write_failure_is_one_sentence(tmp_path: Path) -> None:
    from gpuonboard.steps.dataset import local_write_failure

    full = OSError(errno.ENOSPC, "No space left on device")
    assert local_write_failure(full, "the encrypted copy of a.bin", tmp_path) == (
        f"no space left on this machine for the encrypted copy of a.bin under {tmp_path}; free space"
        " there (or set the step's cache_dir to a bigger disk), then rerun: what already arrived is"
        " not sent again"
    )
    ro = OSError(errno.EROFS, "Read-only file system")
    assert local_write_failure(ro, "the encrypted copy of a.bin", tmp_path, "1 of 2 shards arrived") == (
        f"cannot write the encrypted copy of a.bin under {tmp_path}: Read-only file system; fix that,"
        " then rerun: 1 of 2 shards arrived"
    )


BAD_RATES = ["5kkk", "5bm", "\u00b2", "\u0661\u0662", "99999999999999999999g", "abc", "-5", "1e99", ""]


@pytest.mark.parametrize("rate", BAD_RATES)
def test_a_bwlimit_rsync_would_refuse_is_refused_before_connecting(rate: str) -> None:
    if rate == "":
        DatasetStep({"source": "x", "dest": "/d", "bwlimit": rate})  # empty: no limit
        return
    with pytest.raises(StepArgsError, match="bwlimit must be a rate like 500k or 5m"):
        DatasetStep({"source": "x", "dest": "/d", "bwlimit": rate})


@pytest.mark.parametrize("rate", ["500k", "5m", "1.5M", "100", "2g", "800kb", "12MB"])
def test_rates_rsync_takes_are_taken(rate: str) -> None:
    assert DatasetStep({"source": "x", "dest": "/d", "bwlimit": rate}).bwlimit == rate


def test_one_big_or_mid_size_file_moves_no_other_boundary() -> None:
    """Adding a file of any size (one travelling alone, one of a third of a shard) leaves every
    shard that does not hold it as it was (the boundary rule used the dataset's mean file size:
    one 60 MB file re-sent 115 of 147 shards)."""
    size = 1024 * 1024
    entries = [
        transfer.Entry(f"d{i % 9}/f{i:05d}", "f", 4000 + i % 9000, 0, f"{i:064x}") for i in range(5000)
    ]
    before = {tuple(e.rel for e in g) for g in shards.assign(entries, size)}
    for extra in (60_000_000, size // 3):
        after = {
            tuple(e.rel for e in g)
            for g in shards.assign([*entries, transfer.Entry("d4/labels.bin", "f", extra, 0, "z" * 64)], size)
        }
        # its shard, cut around it (and a forced cut at 4 shard sizes after it may move): a handful
        assert len(after - before) <= 4 and len(before - after) <= 2, extra


def test_shards_average_about_the_shard_size() -> None:
    size = 1024 * 1024
    entries = [
        transfer.Entry(f"d{i % 13}/x{i:06d}", "f", 500 + (i * 7919) % 3000, 0, "") for i in range(40_000)
    ]
    groups = shards.assign(entries, size)
    total = sum(e.size + 512 for e in entries)
    assert 0.6 * size <= total / len(groups) <= 1.6 * size, (total / len(groups)) / size
    assert max(sum(e.size + 512 for e in g) for g in groups) <= 4 * size + 4096


@pytest.mark.parametrize("dest", ["relative dir", "~/tilde", "-dashdest"])
def test_a_dest_that_is_not_absolute_is_refused(dest: str) -> None:
    with pytest.raises(StepArgsError, match="must be an absolute path on the host, like /data, not"):
        DatasetStep({"source": "x", "dest": dest})
