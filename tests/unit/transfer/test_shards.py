"""Pure parts of issue 5's additions: ETA formatting, batch sizing, pipelining, shard assignment
and deterministic shard packing."""

from __future__ import annotations

import errno
import hashlib
import io
import os
import random
import tarfile
import threading
import time
from pathlib import Path

import pytest

from gpuonboard import transfer
from gpuonboard.steps.base import StepArgsError
from gpuonboard.steps.dataset import DatasetStep
from gpuonboard.transfer import Entry, shards, shardstream


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


# Shard mode's checks of the host's unpacked tree (pure).


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


def _tarfile_header(name: str, kind: bytes, mode: int, size: int, linkname: str) -> bytes:
    """The reference: the normalised header as tarfile writes it."""
    info = tarfile.TarInfo(name)
    info.type, info.mode, info.size, info.linkname = kind, mode, size, linkname
    info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
    return info.tobuf(tarfile.GNU_FORMAT, "utf-8", "surrogateescape")


def _random_name(rng: random.Random, length: int) -> str:
    """A path of about `length` characters: ASCII, slashes, spaces, multi-byte UTF-8, and
    surrogate-escaped bytes (a name that is not UTF-8 on disk)."""
    pool = ["a", "Z", "0", "_", ".", "-", " ", "/", "ü", "日", "\U0001f600", "\udce9", "\udcff", "\udc80"]
    return "".join(rng.choice(pool) for _ in range(length))


def test_fast_headers_are_tarfiles_byte_for_byte() -> None:
    """Packing builds headers from constant fields (tarfile took a third of its CPU): every
    corner byte for byte as tarfile writes it: names and link targets around the 100-byte limit
    (GNU long-name/long-link members), non-ASCII and non-UTF-8 names, directories (a trailing
    slash), sizes on block edges and from 8 GiB on (base-256), any mode."""
    rng = random.Random(31)
    sizes = [0, 1, 511, 512, 513, 4096, 8**11 - 1, 8**11, 8**11 + 12345, 2**40, 2**62]
    kinds = [tarfile.REGTYPE, tarfile.DIRTYPE, tarfile.SYMTYPE]
    cases = [
        ("n" * 100, tarfile.REGTYPE, 0o644, 1, ""),  # exactly 100 bytes: no long name
        ("n" * 101, tarfile.REGTYPE, 0o644, 1, ""),
        ("d" * 100, tarfile.DIRTYPE, 0o755, 0, ""),  # 101 with its slash: a long name
        ("d" * 99 + "/", tarfile.DIRTYPE, 0o755, 0, ""),
        ("ü" * 50, tarfile.REGTYPE, 0o644, 0, ""),  # 100 bytes of 2-byte characters
        ("x" * 99 + "ü", tarfile.REGTYPE, 0o644, 0, ""),  # cut in the middle of a character
        ("l", tarfile.SYMTYPE, 0o777, 0, "t" * 100),
        ("l", tarfile.SYMTYPE, 0o777, 0, "t" * 101),
        ("l" * 300, tarfile.SYMTYPE, 0o777, 0, "t" * 300),  # long link, then long name
    ]
    for _ in range(5000):
        kind = rng.choice(kinds)
        cases.append(
            (
                _random_name(rng, rng.randint(1, rng.choice([40, 300]))),
                kind,
                rng.choice([0o644, 0o755, 0o777, 0o600, 0o4755, rng.randrange(0o10000), 0o100644]),
                rng.choice(sizes) if kind == tarfile.REGTYPE else 0,
                _random_name(rng, rng.randint(0, rng.choice([40, 300]))) if kind == tarfile.SYMTYPE else "",
            )
        )
    long_ones = 0
    for name, kind, mode, size, link in cases:
        want = _tarfile_header(name, kind, mode, size, link)
        assert shards._header(name, kind, mode, size, link) == want, (name, kind, mode, size, link)
        long_ones += len(want) > tarfile.BLOCKSIZE
    assert 1000 < long_ones < len(cases) - 1000  # (both kinds well covered)
    # a name no encoding can write fails as it does in tarfile
    with pytest.raises(UnicodeEncodeError):
        _tarfile_header("bad\ud800", tarfile.REGTYPE, 0o644, 0, "")
    with pytest.raises(UnicodeEncodeError):
        shards._header("bad\ud800", tarfile.REGTYPE, 0o644, 0, "")


def _tarfile_shard(root: Path, members: list[Entry]) -> bytes:
    """The reference: the same shard written by tarfile (parents as members, normalised)."""
    out = io.BytesIO()
    made: set[str] = set()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.GNU_FORMAT, encoding="utf-8") as tar:
        for e in members:
            parts = e.rel.split("/")
            for depth in range(1, len(parts) + (e.kind == "d")):
                d = "/".join(parts[:depth])
                if d not in made:
                    made.add(d)
                    tar.addfile(_info(d, tarfile.DIRTYPE, 0o755))
            if e.kind == "d":
                continue
            if e.kind == "l":
                tar.addfile(_info(e.rel, tarfile.SYMTYPE, 0o777, linkname=e.target))
                continue
            path = root / e.rel
            mode = 0o755 if path.stat().st_mode & 0o100 else 0o644
            data = path.read_bytes()
            tar.addfile(_info(e.rel, tarfile.REGTYPE, mode, len(data)), io.BytesIO(data))
    return out.getvalue()


def _info(name: str, kind: bytes, mode: int, size: int = 0, linkname: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.mode, info.size, info.linkname = kind, mode, size, linkname
    info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
    return info


def test_pack_gives_the_shard_tarfile_writes(tmp_path: Path) -> None:
    """pack() of a real tree is byte for byte tarfile's tar of it (shards are named, cached and
    resumed by their sha256): nested and long paths, non-UTF-8 and non-ASCII names, exec bits,
    empty, block-edge and multi-MiB files, symlinks with long targets, empty directories, any
    flush size; a file that became a directory is named in the error."""
    from gpuonboard.steps.dataset import _dir_members

    root = tmp_path / "src"
    deep = root / "a b" / ("d" * 120) / "ü sub"
    deep.mkdir(parents=True)
    rng = random.Random(5)
    for i, size in enumerate([0, 1, 511, 512, 513, 4096, 3 << 20, 10_000]):
        (deep / f"f{i}.bin").write_bytes(rng.randbytes(size))
        (root / f"top {i}").write_bytes(rng.randbytes(size))
    (root / ("n" * 150 + ".txt")).write_bytes(b"long name")
    fd = os.open(os.fsencode(root) + b"/caf\xe9", os.O_WRONLY | os.O_CREAT, 0o600)  # not UTF-8
    os.write(fd, b"latin-1")
    os.close(fd)
    (root / "run.sh").write_bytes(b"#!/bin/sh\n")
    (root / "run.sh").chmod(0o755)
    (root / "link").symlink_to("t" * 150)
    (root / "a b" / "short").symlink_to("../run.sh")
    tree = transfer.scan_source(root)
    members = sorted(
        [*tree.entries.values(), *_dir_members({"empty/inner", "a b/" + "e" * 110})], key=lambda e: e.rel
    )
    assert "caf\udce9" in tree.entries
    want = _tarfile_shard(root, members)
    for flush in (1 << 20, 700):
        out = bytearray()
        packed = shards.pack(root, members, out.extend, flush)
        assert bytes(out) == want
        assert packed.sha256 == hashlib.sha256(want).hexdigest() and packed.size == len(want)
    assert packed.files == {e.rel: e.sha256 for e in members if e.kind != "d"}
    assert packed.modes["run.sh"] == 0o755 and packed.modes["caf\udce9"] == 0o644
    assert shards.tar_size(members) == len(want)
    # the shard index's key and the unpacked tree's digest, made while packing: what a second
    # pass over the members gives (modes read from the files)
    assert (
        packed.key == shards.member_key(root, members) == shards.member_key(root, members, packed.mode_codes)
    )
    assert packed.tree == shardstream.tree_digest(members) and packed.tree is not None
    # a path holding a line break: no tree digest (tar's listing would split it)
    (root / "two\nlines").write_bytes(b"x")
    odd = sorted(transfer.scan_source(root).entries.values(), key=lambda e: e.rel)
    packed = shards.pack(root, odd, lambda b: None)
    assert packed.tree is None is shardstream.tree_digest(odd)
    assert packed.key == shards.member_key(root, odd)
    (root / "two\nlines").unlink()
    # a file turned into a directory since the scan: named, as open() named it
    (root / "top 1").unlink()
    (root / "top 1").mkdir()
    with pytest.raises(IsADirectoryError) as err:
        shards.pack(root, members, lambda b: None)
    assert err.value.filename == str(root / "top 1")
