"""A home shared between machines (NFS on a cluster): each machine's `sync` records its uploads in
a record of its own (`~/.cache/gpuonboard/uploads.<host name>`), and teardown of one machine
removes only what that machine recorded, and keeps the other machines' records (their teardown
needs them). Real sshd test host, real rsync, real `sync` uploads; the other machine's record is
one a real `sync` wrote, renamed as a machine called node2 would have named it."""

from __future__ import annotations

import shutil
from pathlib import Path

from conftest import Project
from test_teardown import inventory, remote, steps
from test_teardown_uploads import _dataset

from gpuonboard.testing import TestHostPool
from gpuonboard.testing.hosts import this_machines_record
from gpuonboard.transfer import uploadlock

__all__ = ["remote"]  # the fixture, used by name

MY_RECORD = this_machines_record()


def test_teardown_of_one_machine_leaves_what_another_machine_recorded(
    project: Project, pool: TestHostPool, remote: dict[str, Path], tmp_path: Path
) -> None:
    shared, local = remote["base"] / "nfs-scratch", remote["base"] / "scratch"
    for d in (shared, local):
        d.mkdir()
    corpus = _dataset(tmp_path / "local" / "corpus", 3)
    inventory(project, pool, remote, dataset=str(corpus), dataset_dir=None)
    cache = pool.hosts["teardown"].home / ".cache" / "gpuonboard"
    shutil.rmtree(cache, ignore_errors=True)  # (another test's upload records: not this test's)
    try:
        # node2's upload to the shared scratch, and its record in the shared home
        r = project.cli("sync", "--dest", str(shared), "--host", "teardown")
        assert r.returncode == 0, r.stdout + r.stderr
        assert (cache / MY_RECORD).read_bytes() == f"{shared}/corpus\0".encode()
        (cache / MY_RECORD).rename(cache / "uploads.node2")
        # this machine's own upload
        r = project.cli("sync", "--dest", str(local), "--host", "teardown")
        assert r.returncode == 0, r.stdout + r.stderr
        assert (cache / MY_RECORD).read_bytes() == f"{local}/corpus\0".encode()

        r = project.cli("teardown", "--host", "teardown", "--keep-image", "--dest", str(tmp_path / "copy"))
        assert r.returncode == 0, r.stdout + r.stderr
        msg = steps(project)["files"]["msg"]
        assert not (local / "corpus").exists()
        kept = sorted(p.name for p in (shared / "corpus").iterdir())
        assert kept == sorted(p.name for p in corpus.iterdir())
        assert f"{shared}/corpus" not in msg, msg
        # the cache dir stays for node2's record; this machine's record went
        assert sorted(p.name for p in cache.iterdir()) == ["uploads.node2"]
        assert (
            f"(gpuonboard's cache {cache} is left: it holds the upload records of other machines sharing"
            " this home (uploads.node2); the teardown of each removes its own)"
        ) in msg, msg
        assert f"{cache}/{MY_RECORD} (this machine's record of gpuonboard's uploads)" in msg, msg
    finally:  # (the test host's home is shared by the tests)
        shutil.rmtree(cache, ignore_errors=True)


def test_teardown_removes_a_copy_on_a_local_disk_that_another_machines_old_record_holds(
    project: Project, pool: TestHostPool, remote: dict[str, Path], tmp_path: Path
) -> None:
    """node2's record and lists are a real `sync`'s, copied under node2's name, of a copy on the
    test host's own disk (a local filesystem: no other machine sees it): a cloned image's old
    record, or this machine's from before its `uname -n` changed. Before, the copy was kept as
    node2's for ever (every teardown named it and none removed it); another machine's record
    counts only on a filesystem machines share (network: NFS, CIFS, Lustre, FUSE...; unit-tested
    by type, as the test host has none): the copy is this machine's upload and goes; node2's
    record is left as it is (not this machine's to remove)."""
    shared = remote["base"] / "nfs-scratch"
    shared.mkdir()
    corpus = _dataset(tmp_path / "local" / "corpus", 3)
    inventory(project, pool, remote, dataset=str(corpus), dataset_dir=None)
    cache = pool.hosts["teardown"].home / ".cache" / "gpuonboard"
    shutil.rmtree(cache, ignore_errors=True)  # (another test's upload records: not this test's)
    mine = MY_RECORD[len(uploadlock.RECORD_PREFIX) :]
    try:
        r = project.cli("sync", "--dest", str(shared), "--host", "teardown")
        assert r.returncode == 0, r.stdout + r.stderr
        shutil.copy(cache / MY_RECORD, cache / "uploads.node2")
        shutil.copytree(cache / f"written.{mine}", cache / "written.node2")

        r = project.cli("teardown", "--host", "teardown", "--keep-image", "--dest", str(tmp_path / "copy"))
        assert r.returncode == 0, r.stdout + r.stderr
        msg = steps(project)["files"]["msg"]
        assert not (shared / "corpus").exists(), msg
        assert "recorded as an upload by other machines" not in msg, msg
        # this machine's record and lists went; node2's are not this machine's to remove
        assert sorted(p.name for p in cache.iterdir()) == ["uploads.node2", "written.node2"], msg
    finally:  # (the test host's home is shared by the tests)
        shutil.rmtree(cache, ignore_errors=True)


def test_teardown_empties_a_dataset_dir_on_a_local_disk_that_another_machines_old_list_covers(
    project: Project, pool: TestHostPool, remote: dict[str, Path], tmp_path: Path
) -> None:
    """vars.dataset_dir on the test host's own disk (a local filesystem), node2's record and
    list of what it wrote a real `sync`'s, copied under node2's name: an old list of a cloned
    image or of a renamed machine. Before, the dir was kept whole for node2 by every teardown;
    such a list counts only on a filesystem machines share, so the dir is emptied of the upload."""
    disk = remote["base"] / "nfs-disk"
    disk.mkdir()
    copy = disk / "corpus"
    corpus = _dataset(tmp_path / "local" / "corpus", 3)
    inventory(project, pool, remote, dataset=str(corpus), dataset_dir=str(copy))
    hosts = project.root / "inventory" / "hosts.yml"
    hosts.write_text(hosts.read_text().replace("address:", f"data_dir: {disk}\n    address:", 1))
    cache = pool.hosts["teardown"].home / ".cache" / "gpuonboard"
    shutil.rmtree(cache, ignore_errors=True)  # (another test's upload records: not this test's)
    mine = MY_RECORD[len(uploadlock.RECORD_PREFIX) :]
    try:
        r = project.cli("sync", "--host", "teardown")
        assert r.returncode == 0, r.stdout + r.stderr
        shutil.copy(cache / MY_RECORD, cache / "uploads.node2")
        shutil.copytree(cache / f"written.{mine}", cache / "written.node2")
        uploaded = sorted(str(p.relative_to(copy)) for p in copy.rglob("*"))

        for extra in (["--check"], []):
            r = project.cli(
                "teardown", "--host", "teardown", "--keep-image", "--dest", str(tmp_path / "c"), *extra
            )
            assert r.returncode == 0, r.stdout + r.stderr
            msg = steps(project)["files"]["msg"]
            assert "other machines sharing this home uploaded into it too" not in msg, msg
            if extra:  # (--check removes nothing)
                assert sorted(str(p.relative_to(copy)) for p in copy.rglob("*")) == uploaded
        assert not copy.exists() or not any(copy.rglob("*")), msg
        assert sorted(p.name for p in cache.iterdir()) == ["uploads.node2", "written.node2"], msg
    finally:  # (the test host's home is shared by the tests)
        shutil.rmtree(cache, ignore_errors=True)
