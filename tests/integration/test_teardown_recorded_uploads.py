"""Teardown finds the uploads `sync` made outside the data dir: a copy under another `--dest`,
and the plaintext `--decrypt-on-host --decrypt-to DIR` put in DIR (e.g. /dev/shm), which it
used to leave on the returned box. `sync` records each copy and plaintext tree on the host
(`~/.cache/gpuonboard/uploads`); teardown removes them, with their stores and leases, on the
same evidence and ownership rules as in the data dir, and never the other entries of those
dirs. Real sshd test host, real rsync, real age, real `sync` uploads, as in test_teardown.py
(whose fixtures this module uses)."""

from __future__ import annotations

from pathlib import Path

from conftest import Project
from test_dataset import needs_age
from test_teardown import inventory, remote, steps
from test_teardown_uploads import _dataset, age_inventory_on_disk

from gpuonboard.testing import TestHostPool
from gpuonboard.testing.hosts import this_machines_record

# this machine's record of uploads (the test hosts are this machine)
MY_RECORD = this_machines_record()

__all__ = ["remote"]  # the fixture, used by name


def _record(pool: TestHostPool) -> list[str]:
    path = pool.hosts["teardown"].home / ".cache" / "gpuonboard" / MY_RECORD
    return [p for p in path.read_text().split("\0") if p] if path.exists() else []


@needs_age
def test_uploads_under_another_dest_and_decrypted_elsewhere_are_removed(
    project: Project, pool: TestHostPool, remote: dict[str, Path], tmp_path: Path
) -> None:
    disk, other, shm = (remote["base"] / n for n in ("disk", "scratch", "shm"))
    for d in (disk, other, shm):
        d.mkdir()
    corpus = _dataset(tmp_path / "local" / "corpus", 6)
    images = _dataset(tmp_path / "local" / "images", 7)
    notes = _dataset(tmp_path / "local" / "notes", 4)
    age_inventory_on_disk(project, pool, remote, tmp_path, disk, corpus)
    uploads = (
        ["sync", "--dest", str(other)],  # vars.dataset, under another --dest
        ["sync", "--dataset", str(images), "--encrypt", "--decrypt-on-host", "--decrypt-to", str(shm)],
        ["sync", "--dataset", str(notes)],  # another dataset in the data dir: no mark
    )
    for argv in uploads:
        r = project.cli(*argv, "--host", "teardown")
        assert r.returncode == 0, r.stdout + r.stderr
    assert sorted(_record(pool)) == sorted(
        [f"{other}/corpus", f"{disk}/images.encrypted", f"{shm}/images", f"{disk}/notes"]
    )
    assert sorted(p.name for p in other.iterdir()) == ["corpus"]
    assert (shm / "images" / "part0").is_dir()  # the plaintext, outside the data dir
    # what else the user keeps in those dirs is not teardown's
    (other / "runs").mkdir()
    (other / "runs" / "ckpt.pt").write_bytes(b"only copy")
    (shm / "nccl-socket").write_text("another program's\n")

    r = project.cli("teardown", "--host", "teardown", "--keep-image", "--check")
    assert r.returncode == 0, r.stdout + r.stderr
    msg = steps(project)["files"]["msg"]
    for path in (f"{other}/corpus", f"{shm}/images", f"{disk}/images.encrypted", f"{disk}/notes"):
        assert path in msg, msg
    assert "(gpuonboard's uploads)" in msg, msg
    assert "nccl-socket" not in msg and f"{other}/runs" not in msg, msg
    assert "plaintext that `sync --decrypt-on-host --decrypt-to DIR`" not in msg, msg  # (found now)
    assert "left on the host" not in msg, msg
    assert (shm / "images").is_dir()

    r = project.cli("teardown", "--host", "teardown", "--keep-image", "--dest", str(tmp_path / "copy"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert sorted(p.name for p in other.iterdir()) == ["runs"]
    assert (other / "runs" / "ckpt.pt").read_bytes() == b"only copy"
    assert sorted(p.name for p in shm.iterdir()) == ["nccl-socket"]
    assert sorted(p.name for p in disk.iterdir()) == []
    assert _record(pool) == []  # (gpuonboard's cache on the host went last)

    r = project.cli("teardown", "--host", "teardown", "--keep-image", "--dest", str(tmp_path / "copy"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert steps(project)["files"]["status"] == "ok", steps(project)["files"]


def test_a_recorded_copy_that_is_not_the_logins_stays_and_is_named(
    project: Project, pool: TestHostPool, remote: dict[str, Path], tmp_path: Path
) -> None:
    """The record is evidence, not a licence: a recorded path that is now a symlink (to the
    user's data) is left, and named."""
    other = remote["base"] / "scratch"
    other.mkdir()
    corpus = _dataset(tmp_path / "local" / "corpus", 3)
    inventory(project, pool, remote, dataset=str(corpus), dataset_dir=None)
    r = project.cli("sync", "--dest", str(other), "--host", "teardown")
    assert r.returncode == 0, r.stdout + r.stderr
    # the user replaced the copy by a link to their own results
    mine = remote["base"] / "mine"
    (mine / "keep").mkdir(parents=True)
    for p in sorted((other / "corpus").rglob("*"), reverse=True):
        p.rmdir() if p.is_dir() else p.unlink()
    (other / "corpus").rmdir()
    (other / "corpus").symlink_to(mine)

    r = project.cli("teardown", "--host", "teardown", "--keep-image", "--dest", str(tmp_path / "copy"))
    assert r.returncode == 0, r.stdout + r.stderr
    msg = steps(project)["files"]["msg"]
    assert (
        f"; left on the host: {other}/corpus, recorded by sync as its uploads but not removable now"
        " (a symlink, another user's, or an unsafe path): delete them yourself"
    ) in msg, msg
    assert (mine / "keep").is_dir() and (other / "corpus").is_symlink()
