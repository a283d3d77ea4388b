"""Teardown keeps an upload's tree that a job changed in place at the same size: the list `sync`
keeps on the host of what it wrote (uploadlock.WRITTEN_DIR) held paths and sizes only, so after
a real `sync`, `corpus/a.bin` rewritten on the host with other bytes of the same size, teardown
removed `corpus` as "gpuonboard's upload". The list holds each file's mtime as the upload left
it on the host now (rsync -a, a decryption, an unpack all set it), and the listing teardown
compares it with prints mtimes too. Real sshd test host, real rsync, age, tar and real `sync`
uploads in each mode, as in test_teardown.py (whose fixtures this module uses)."""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import Project
from test_dataset import needs_age
from test_teardown import remote, steps
from test_teardown_uploads import _dataset, age_inventory_on_disk

from gpuonboard.testing import TestHostPool

__all__ = ["remote"]  # the fixture, used by name


@pytest.fixture(autouse=True)
def _clean_host_cache(pool: TestHostPool) -> Iterator[None]:
    """The trees these tests leave keep gpuonboard's cache on the shared test host (its record
    names them): gone afterwards, so the next module's teardown sees only its own uploads."""
    yield
    shutil.rmtree(pool.hosts["teardown"].home / ".cache" / "gpuonboard", ignore_errors=True)


def _rewrite(path: Path) -> None:
    """What a job does to a dataset file it changes in place: other bytes, the same size, its
    mtime the time of the write (here a minute after the upload's, as a job later on)."""
    st = path.stat()
    path.write_bytes(bytes(b ^ 0xFF for b in path.read_bytes()))
    os.utime(path, (st.st_mtime + 60, st.st_mtime + 60))
    assert path.stat().st_size == st.st_size


def _setup(project: Project, pool: TestHostPool, remote: dict[str, Path], tmp_path: Path) -> tuple[Path, ...]:
    disk, other, shm = (remote["base"] / n for n in ("disk", "scratch", "shm"))
    for d in (disk, other, shm):
        d.mkdir()
    corpus = _dataset(tmp_path / "local" / "corpus", 4)
    age_inventory_on_disk(project, pool, remote, tmp_path, disk, corpus)
    images = _dataset(tmp_path / "local" / "images", 5)
    tokens = _dataset(tmp_path / "local" / "tokens", 6)
    notes = _dataset(tmp_path / "local" / "notes", 2)
    for argv in (
        ["sync"],  # plain: rsync -a into disk/corpus
        ["sync", "--dataset", str(images), "--encrypt", "--decrypt-on-host", "--decrypt-to", str(shm)],
        ["sync", "--dataset", str(tokens), "--dest", str(other), "--shards", "--unpack"],
        ["sync", "--dataset", str(notes)],  # untouched
    ):
        r = project.cli(*argv, "--host", "teardown")
        assert r.returncode == 0, r.stdout + r.stderr
    return disk, other, shm


def _digest(root: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        if p.is_file():
            h.update(str(p.relative_to(root)).encode() + b"\0" + p.read_bytes())
    return h.hexdigest()


@needs_age
def test_a_dataset_file_rewritten_at_the_same_size_keeps_its_tree_in_every_mode(
    project: Project, pool: TestHostPool, remote: dict[str, Path], tmp_path: Path
) -> None:
    disk, other, shm = _setup(project, pool, remote, tmp_path)
    changed = [disk / "corpus" / "part1" / "1.bin", shm / "images" / "part0" / "3.bin"]
    changed.append(other / "tokens" / "part2" / "5.bin")
    for path in changed:
        _rewrite(path)
    trees = [disk / "corpus", shm / "images", other / "tokens"]
    before = [_digest(t) for t in trees]

    for extra in (["--check"], ["--dest", str(tmp_path / "copy")]):
        r = project.cli("teardown", "--host", "teardown", "--keep-image", *extra)
        assert r.returncode == 0, r.stdout + r.stderr
        msg = steps(project)["files"]["msg"]
        for tree, path in zip(trees, changed, strict=True):
            assert f"{tree} (e.g. '{path.relative_to(tree)}')" in msg, msg
        assert "gpuonboard's upload" in msg and "or a dataset file changed since" in msg, msg
        assert f"{disk}/notes" in msg.split("; left on the host: ", 1)[0], msg  # (removed)
    assert [_digest(t) for t in trees] == before
    assert not (disk / "notes").exists()
    assert not (disk / "images.encrypted").exists() and not (other / "tokens.shards").exists()


@needs_age
def test_untouched_uploads_go_in_every_mode_and_an_older_list_keeps_its_tree(
    project: Project, pool: TestHostPool, remote: dict[str, Path], tmp_path: Path
) -> None:
    """Each mode's files on the host carry the mtime the list holds (rsync -a and the decryption:
    the dataset file's; the unpack: its run's stamp), so an untouched upload still goes whole.
    A list an older gpuonboard wrote (`f SIZE REL`, no mtimes) cannot tell a rewrite at the same
    size: that tree stays, and the message says why."""
    disk, other, shm = _setup(project, pool, remote, tmp_path)
    home = pool.hosts["teardown"].home
    # the unpack gave its files the stamp its list holds (tar -m alone: the second each landed)
    unpacked = {int(p.stat().st_mtime) for p in (other / "tokens").rglob("*.bin")}
    listed = hashlib.sha256(str(other / "tokens").encode()).hexdigest()
    (tokens,) = (home / ".cache" / "gpuonboard").glob(f"written.*/{listed}")
    assert {int(e.split(" ")[2]) for e in tokens.read_text().split("\0") if e} == unpacked
    assert len(unpacked) == 1
    older = hashlib.sha256(str(disk / "notes").encode()).hexdigest()
    (mine,) = [p for p in (home / ".cache" / "gpuonboard").glob(f"written.*/{older}")]
    entries = [e.split(" ") for e in mine.read_text().split("\0") if e]
    mine.write_text("".join(f"f {e[1]} {e[3]}\0" if e[0] == "F" else " ".join(e) + "\0" for e in entries))

    r = project.cli("teardown", "--host", "teardown", "--keep-image", "--dest", str(tmp_path / "copy"))
    assert r.returncode == 0, r.stdout + r.stderr
    msg = steps(project)["files"]["msg"]
    for gone in (disk / "corpus", shm / "images", other / "tokens"):
        assert not gone.exists(), msg
    assert (
        f"; left on the host: {disk}/notes, uploaded by an older gpuonboard whose list of what it wrote"
        " there holds sizes but no modification times"
    ) in msg, msg
    assert sorted(p.name for p in (disk / "notes").rglob("*.bin")) == ["0.bin", "1.bin"]
