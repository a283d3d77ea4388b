"""Reruns of `sync` and the host's list of what uploads wrote in a tree (uploadlock.WRITTEN_DIR),
which teardown compares with the tree's listing (`F SIZE MTIME REL`, mtimes cut to the second):
- a tree an older gpuonboard unpacked from shards (its files: the unpack's sub-second time; its
  list: `f SIZE REL`, no mtimes), rerun by this one after one local file changed: the rerun sends
  that shard and hard-links the other files from the old tree, which keep their old mtimes; the
  list held this run's stamp for them, so teardown kept the tree forever, saying it held "what no
  upload wrote there". The seeded files are listed as they stand on the host now;
- each rerun that unpacked added a full copy of the dataset to the list (a union): it now keeps
  only the entries still true of the tree, plus the new ones;
- a dataset file whose mtime is within ~120 ns of the next second, or before 1970, was listed
  with int(st_mtime) (rounded up, or toward zero) while the host's listing floors: the tree
  stayed. The list floors from the nanoseconds, and the decryption sets them exactly.
Real sshd test host, real rsync, age, tar and `sync`/`teardown` runs, as in test_teardown.py
(whose fixtures this module uses)."""

from __future__ import annotations

import hashlib
import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import Project
from test_dataset import needs_age
from test_teardown import remote, steps
from test_teardown_uploads import _dataset, age_inventory_on_disk

from gpuonboard.testing import TestHostPool

__all__ = ["remote"]  # the fixture, used by name

UNPACK = ["--shards", "--unpack"]


@pytest.fixture(autouse=True)
def _clean_host_cache(pool: TestHostPool) -> Iterator[None]:
    """The list these tests leave on the shared test host: gone afterwards (see
    test_teardown_rewritten.py)."""
    yield
    shutil.rmtree(pool.hosts["teardown"].home / ".cache" / "gpuonboard", ignore_errors=True)


def _setup(
    project: Project, pool: TestHostPool, remote: dict[str, Path], tmp_path: Path
) -> tuple[Path, Path]:
    disk = remote["base"] / "disk"
    disk.mkdir()
    corpus = _dataset(tmp_path / "local" / "corpus", 7)
    # (shard_size: about one file a shard: a rerun sends the changed file's alone)
    age_inventory_on_disk(project, pool, remote, tmp_path, disk, corpus, shard_size=300)
    return disk, corpus


def _sync(project: Project, *extra: str) -> str:
    r = project.cli("sync", "--host", "teardown", *extra)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def _record(pool: TestHostPool, tree: Path) -> Path:
    digest = hashlib.sha256(str(tree).encode()).hexdigest()
    (found,) = (pool.hosts["teardown"].home / ".cache" / "gpuonboard").glob(f"written.*/{digest}")
    return found


def _entries(pool: TestHostPool, tree: Path) -> list[str]:
    return [e for e in _record(pool, tree).read_text().split("\0") if e]


def _listed(p: Path, tree: Path) -> str:
    """A file's entry as the host's listing gives it (its mtime's tv_sec)."""
    st = p.stat()
    return f"F {st.st_size} {st.st_mtime_ns // 1_000_000_000} {p.relative_to(tree)}"


def _teardown_msg(project: Project) -> str:
    r = project.cli("teardown", "--host", "teardown", "--keep-image", "--check")
    assert r.returncode == 0, r.stdout + r.stderr
    return str(steps(project)["files"]["msg"])


def _removed(msg: str, tree: Path) -> bool:
    """Whether teardown's message names `tree` among what it removes (not among what it leaves)."""
    removes = msg.split("; left on the host: ", 1)[0]
    return f"{tree}," in removes or f"{tree} (" in removes


def test_a_tree_an_older_gpuonboard_unpacked_goes_once_this_one_reran_its_upload(
    project: Project, pool: TestHostPool, remote: dict[str, Path], tmp_path: Path
) -> None:
    disk, corpus = _setup(project, pool, remote, tmp_path)
    tree = disk / "corpus"
    _sync(project, *UNPACK)
    # as an older gpuonboard left it: the files tar -m unpacked keep the unpack's time (to the
    # nanosecond), and its list holds sizes alone
    t0 = time.time_ns() - 3_000_000_000
    files = sorted(p for p in tree.rglob("*.bin"))
    for i, p in enumerate(files):
        os.utime(p, ns=(t0 + i * 123_456_789, t0 + i * 123_456_789))
    record = _record(pool, tree)
    older = [e.split(" ", 3) for e in record.read_text().split("\0") if e]
    record.write_text("".join(f"f {e[1]} {e[3]}\0" for e in older))
    assert "uploaded by an older gpuonboard" in _teardown_msg(project)

    (corpus / "part0" / "0.bin").write_bytes(os.urandom(300))  # one file changed here
    out = _sync(project, *UNPACK)
    assert "1 shard" in out or "1 of" in out, out  # (the others' files were linked from the tree)
    kept = {p: p.stat().st_mtime_ns for p in files if p.name != "0.bin"}
    assert all(ns % 1_000_000_000 for ns in kept.values())  # (the older unpack's times, kept)
    msg = _teardown_msg(project)
    assert _removed(msg, tree) and "left on the host" not in msg, msg


def test_reruns_that_unpack_keep_the_list_to_what_is_true_of_the_tree(
    project: Project, pool: TestHostPool, remote: dict[str, Path], tmp_path: Path
) -> None:
    disk, corpus = _setup(project, pool, remote, tmp_path)
    tree = disk / "corpus"
    n = len(list(corpus.rglob("*.bin")))
    before: set[str] = set()
    for run in range(4):
        if run:
            (corpus / f"part{run % 3}" / f"{run}.bin").write_bytes(os.urandom(250))
            time.sleep(1.1)  # (each run's stamp its own second)
        _sync(project, *UNPACK)
        entries = _entries(pool, tree)
        # this run's stamp for each file, and what earlier runs listed that was still true when
        # it started (the files it linked from the old tree keep their mtimes)
        stamp = max(int(e.split(" ")[2]) for e in entries)
        true = {_listed(p, tree) for p in tree.rglob("*.bin")}
        assert [e for e in entries if e not in true | before and int(e.split(" ")[2]) != stamp] == []
        assert len(entries) <= 2 * n, (run, entries)
        before = true
    msg = _teardown_msg(project)
    assert _removed(msg, tree), msg


def test_a_plain_rerun_drops_what_no_longer_holds(
    project: Project, pool: TestHostPool, remote: dict[str, Path], tmp_path: Path
) -> None:
    disk, corpus = _setup(project, pool, remote, tmp_path)
    tree = disk / "corpus"
    _sync(project)
    changed = corpus / "part1" / "1.bin"
    for i in range(3):
        changed.write_bytes(os.urandom(201))
        os.utime(changed, (1_600_000_000 + i, 1_600_000_000 + i))
        _sync(project)
    # (the version the last run found there, which it listed as still true, and the new one)
    listed = [e for e in _entries(pool, tree) if e.endswith(" part1/1.bin")]
    assert listed == ["F 201 1600000001 part1/1.bin", "F 201 1600000002 part1/1.bin"], listed
    assert _removed(_teardown_msg(project), tree)


# a mtime ~50 ns before the next second (int(st_mtime) rounds it up), and ones before 1970
ODD_NS = [1_700_000_000_999_999_950, -1_500_000_000, -500_000_000]


@needs_age
@pytest.mark.parametrize("mode", ["plain", "decrypt", "shards"])
def test_a_file_with_an_odd_mtime_lets_its_tree_go(
    project: Project, pool: TestHostPool, remote: dict[str, Path], tmp_path: Path, mode: str
) -> None:
    disk, corpus = _setup(project, pool, remote, tmp_path)
    shm = remote["base"] / "shm"
    shm.mkdir()
    for ns, p in zip(ODD_NS, sorted(corpus.rglob("*.bin")), strict=False):
        os.utime(p, ns=(ns, ns))
    extra = {
        "plain": [],
        "shards": UNPACK,
        "decrypt": ["--encrypt", "--decrypt-on-host", "--decrypt-to", str(shm)],
    }
    _sync(project, *extra[mode])
    tree = shm / "corpus" if mode == "decrypt" else disk / "corpus"
    if mode != "shards":  # (the host file has the dataset file's mtime to the nanosecond)
        odd = sorted(corpus.rglob("*.bin"))[: len(ODD_NS)]
        assert [(tree / p.relative_to(corpus)).stat().st_mtime_ns for p in odd] == ODD_NS
    if mode == "decrypt":  # a rerun finds the plaintext up to date (nothing decrypted again)
        again = _sync(project, *extra[mode])
        assert "dataset up to date at" in again and "nothing sent" in again, again
    msg = _teardown_msg(project)
    assert _removed(msg, tree) and "no upload wrote" not in msg, msg
