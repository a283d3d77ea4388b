"""The local copy teardown pulls into: files already there that no pull of this host's results
dir put there (the user's own, another rental's verified copy) are never overwritten.

rsync replaces a local file of the same name as a host file: `--dest ~/exp` holding the user's
notes, or the default `results/<host>` holding the verified copy of an earlier rental that had
the same inventory name, lost those files silently. Real sshd test host and real rsync, as in
test_teardown.py (whose fixtures this module uses).
"""

from __future__ import annotations

import os
from pathlib import Path

from conftest import Project
from test_teardown import (
    FILES,
    LEFT_ON_HOST,
    corrupt_keeping_size_and_mtime,
    docker_calls,
    earlier_pull,
    inventory,
    listing,
    remote,
    steps,
)

from gpuonboard.steps.teardown import RECORD, Record
from gpuonboard.testing import TestHostPool

__all__ = ["remote"]  # the fixture, used by name


def refused(dest: Path, held: str) -> str:
    return (
        f"refusing to delete anything on teardown: {dest} already holds {held}, which the pull could"
        " overwrite; give --dest an empty or new directory (or move what it holds away), then rerun, or"
        " pass --force to wipe anyway"
    )


def test_a_dest_holding_the_users_files_is_never_overwritten(
    project: Project, pool: TestHostPool, remote: dict[str, Path], tmp_path: Path
) -> None:
    inventory(project, pool, remote)
    dest = tmp_path / "exp7"
    (dest / "ckpt").mkdir(parents=True)
    (dest / "ckpt" / "model.pt").write_bytes(b"the only copy of last week's model\n")
    (dest / "a.txt").write_text("my notes\n")
    before = listing(remote["base"])
    for check in (("--check",), ()):
        r = project.cli("teardown", "--host", "teardown", "--dest", str(dest), *check)
        assert r.returncode == 1, r.stdout + r.stderr
        s = steps(project)
        assert s["pull"]["msg"] == refused(
            dest, "2 entries no pull of " + str(remote["results"]) + " from it put there (first: a.txt)"
        )
        assert [s[n]["status"] for n in ("containers", "autostop", "files")] == ["skipped"] * 3
    assert (dest / "ckpt" / "model.pt").read_bytes() == b"the only copy of last week's model\n"
    assert (dest / "a.txt").read_text() == "my notes\n" and not (dest / RECORD).exists()
    assert listing(remote["base"]) == before and docker_calls(remote) == []

    # an empty dest (or one holding only rsync's partial dir) is fine
    empty = tmp_path / "empty"
    empty.mkdir()
    r = project.cli("teardown", "--host", "teardown", "--dest", str(empty), "--keep-image")
    assert r.returncode == 0, r.stdout + r.stderr
    assert all((empty / rel).read_bytes() == content for rel, content in FILES.items())
    assert listing(remote["base"]) == LEFT_ON_HOST


def test_another_rentals_verified_copy_under_the_same_host_name_is_kept(
    project: Project, pool: TestHostPool, remote: dict[str, Path], tmp_path: Path
) -> None:
    # the default dest results/<host> holds the verified copy of an earlier rental that had the
    # same inventory name (another address): the new box's ckpt/model.pt must not replace it
    dest = project.root / "results" / "teardown"
    earlier_pull(project, pool, remote, dest)
    rec = (dest / RECORD).read_bytes()
    old = Record.parse(rec)
    assert old is not None
    moved = rec.replace(f'"address": "{old.address}"'.encode(), b'"address": "192.0.2.7"')
    (dest / RECORD).write_bytes(moved)
    (remote["results"] / "ckpt" / "model.pt").write_bytes(b"the new rental's model\n")
    before = listing(remote["base"])
    r = project.cli("teardown", "--host", "teardown")
    assert r.returncode == 1, r.stdout + r.stderr
    assert steps(project)["pull"]["msg"] == refused(
        dest, f"the verified copy of {remote['results']} from teardown (192.0.2.7:{old.port})"
    )
    assert (dest / "ckpt" / "model.pt").read_bytes() == FILES["ckpt/model.pt"]
    assert (dest / RECORD).read_bytes() == moved
    assert listing(remote["base"]) == before and docker_calls(remote) == []

    # the same host and dir again (the job wrote more): its own copy is brought up to date
    (dest / RECORD).write_bytes(rec)
    r = project.cli("teardown", "--host", "teardown", "--keep-image")
    assert r.returncode == 0, r.stdout + r.stderr
    assert (dest / "ckpt" / "model.pt").read_bytes() == b"the new rental's model\n"


def test_an_interrupted_pull_resumes_into_its_own_copy(
    project: Project, pool: TestHostPool, remote: dict[str, Path], tmp_path: Path
) -> None:
    # a pull stopped after rsync (here: a local file holding a host file's name) leaves the mark
    # of this pull, so the rerun resumes into the copy instead of refusing it as someone else's
    inventory(project, pool, remote)
    dest = tmp_path / "copy"
    os.makedirs(dest / "a.txt" / "x")
    (dest / RECORD).write_text(
        "# gpuonboard-pulling "
        + f'{{"address": "{pool.hosts["teardown"].address}", "dir": "{remote["results"]}", "host":'
        + f' "teardown", "port": {pool.hosts["teardown"].port}}}\n'
    )
    r = project.cli("teardown", "--host", "teardown", "--dest", str(dest), "--keep-image")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "1 of 3 files not verified: missing 1 (a.txt)" in steps(project)["pull"]["msg"]
    assert (dest / RECORD).read_text().startswith("# gpuonboard-pulling {")
    (dest / "a.txt" / "x").rmdir()
    (dest / "a.txt").rmdir()
    r = project.cli("teardown", "--host", "teardown", "--dest", str(dest), "--keep-image")
    assert r.returncode == 0, r.stdout + r.stderr
    assert all((dest / rel).read_bytes() == content for rel, content in FILES.items())
    assert listing(remote["base"]) == LEFT_ON_HOST


def test_results_are_not_removed_when_the_verified_copy_lost_files_since_its_pull(
    project: Project, pool: TestHostPool, remote: dict[str, Path], tmp_path: Path
) -> None:
    # the pull verified earlier (a run that stopped after it); the copy then lost a file before
    # the removal ran alone (`--only files`, or `--resume` after a later step failed)
    dest = tmp_path / "copy"
    earlier_pull(project, pool, remote, dest)
    (dest / "ckpt" / "model.pt").unlink()
    (dest / "a.txt").write_text("cut")
    inventory(project, pool, remote, results_dest=str(dest))
    before = listing(remote["base"])
    r = project.cli("provision", "--host", "teardown", "--playbook", "teardown", "--only", "files")
    assert r.returncode == 1, r.stdout + r.stderr
    assert steps(project)["files"]["msg"] == (
        f"refusing to delete anything on teardown: the verified copy {dest} of teardown:{remote['results']}"
        " no longer matches its pull (sha256): 2 of 3 files not verified: missing 1 (ckpt/model.pt);"
        " corrupt 1 (a.txt); run the whole teardown (its pull brings them back), or pass --force to wipe"
        " anyway"
    )
    assert listing(remote["base"]) == before
    r = project.cli("teardown", "--host", "teardown", "--keep-image")
    assert r.returncode == 0, r.stdout + r.stderr
    assert all((dest / rel).read_bytes() == content for rel, content in FILES.items())
    assert listing(remote["base"]) == LEFT_ON_HOST


def test_results_are_not_removed_when_the_copy_was_corrupted_keeping_size_and_mtime(
    project: Project, pool: TestHostPool, remote: dict[str, Path], tmp_path: Path
) -> None:
    """`--only files` after a verified pull: a copy corrupted since (same size and mtime, or
    zeroed) let the results be deleted (exit 0): every file is hashed right before deleting."""
    dest = tmp_path / "copy"
    earlier_pull(project, pool, remote, dest)
    victim = dest / "ckpt" / "model.pt"
    corrupt_keeping_size_and_mtime(victim, bytes(victim.stat().st_size))  # zeroed, same size and mtime
    inventory(project, pool, remote, results_dest=str(dest))
    before = listing(remote["base"])
    r = project.cli("provision", "--host", "teardown", "--playbook", "teardown", "--only", "files")
    assert r.returncode == 1, r.stdout + r.stderr
    assert (
        "no longer matches its pull (sha256): 1 of 3 files not verified: corrupt 1 (ckpt/model.pt)"
        in (steps(project)["files"]["msg"])
    )
    assert listing(remote["base"]) == before  # nothing deleted on the host
    # the whole teardown's pull finds the same corruption (rsync's quick check skipped the file)
    # and marks it; its rerun mends the copy, then removes the results
    r = project.cli("teardown", "--host", "teardown", "--keep-image")
    assert r.returncode == 1 and "corrupt 1 (ckpt/model.pt)" in steps(project)["pull"]["msg"]
    assert listing(remote["base"]) == before
    r = project.cli("teardown", "--host", "teardown", "--keep-image")
    assert r.returncode == 0, r.stdout + r.stderr
    assert all((dest / rel).read_bytes() == content for rel, content in FILES.items())
    assert listing(remote["base"]) == LEFT_ON_HOST
