"""Teardown without `vars.dataset_dir` removes what gpuonboard's dataset upload made in the data
dir (the configured dataset's copy, shard stores and their unpacked trees, marked copies,
leases) and nothing else there: other dirs and files on the data disk were never pulled, so
they stay and are named. Real sshd test host, real rsync and real `sync` uploads, as in
test_teardown.py (whose fixtures this module uses)."""

from __future__ import annotations

import os
import re
from pathlib import Path

from conftest import Project
from test_dataset import _age_key
from test_teardown import inventory, remote, steps

from gpuonboard.testing import TestHostPool

__all__ = ["remote"]  # the fixture, used by name


def _dataset(root: Path, n: int) -> Path:
    for i in range(n):
        (root / f"part{i % 3}").mkdir(parents=True, exist_ok=True)
        (root / f"part{i % 3}" / f"{i}.bin").write_bytes(os.urandom(200 + i))
    return root


def age_inventory_on_disk(
    project: Project,
    pool: TestHostPool,
    remote: dict[str, Path],
    tmp_path: Path,
    disk: Path,
    corpus: Path,
    **more: object,
) -> None:
    """test_teardown's inventory for uploads in the data dir: `corpus` the host's dataset (no
    vars.dataset_dir), an age key pair made in tmp_path for encrypted uploads, the host's data_dir
    `disk` (written before its address), and `more` vars."""
    key, pub = _age_key(tmp_path)
    inventory(
        project,
        pool,
        remote,
        dataset=str(corpus),
        dataset_dir=None,
        age_recipients=[pub],
        age_identity_file=str(key),
        **more,
    )
    hosts = project.root / "inventory" / "hosts.yml"
    hosts.write_text(hosts.read_text().replace("address:", f"data_dir: {disk}\n    address:", 1))


def test_only_gpuonboards_uploads_leave_the_data_dir(
    project: Project, pool: TestHostPool, remote: dict[str, Path], tmp_path: Path
) -> None:
    disk = remote["base"] / "disk"
    disk.mkdir()
    corpus = _dataset(tmp_path / "local" / "corpus", 9)
    images = _dataset(tmp_path / "local" / "images", 12)
    inventory(project, pool, remote, dataset=str(corpus), dataset_dir=None)
    hosts = project.root / "inventory" / "hosts.yml"
    text = hosts.read_text()
    hosts.write_text(text.replace("address:", f"data_dir: {disk}\n    address:", 1))
    for argv in (["sync"], ["sync", "--dataset", str(images), "--shards", "--unpack", "--name", "imgs"]):
        r = project.cli(*argv, "--host", "teardown")
        assert r.returncode == 0, r.stdout + r.stderr
    assert sorted(p.name for p in disk.iterdir()) == ["corpus", "imgs", "imgs.shards"]
    # what the user put on the data disk: never pulled, so never deleted
    (disk / "runs-old").mkdir()
    (disk / "runs-old" / "ckpt.pt").write_bytes(b"only copy")
    (disk / "notes.txt").write_text("mine\n")
    (disk / "corpus-link").symlink_to(disk / "corpus")
    (disk / "lost+found").mkdir()
    # a name teardown would never rm (a line break): left and said, never failing the step
    (disk / ".x\n.gpuonboard-upload").write_text("token\n")
    os.utime(disk / ".x\n.gpuonboard-upload", (1_000_000_000, 1_000_000_000))  # (a run long over)

    r = project.cli("teardown", "--host", "teardown", "--keep-image", "--check")
    assert r.returncode == 0, r.stdout + r.stderr
    msg = steps(project)["files"]["msg"]
    assert f"{disk}/corpus, {disk}/imgs, {disk}/imgs.shards (gpuonboard's uploads in {disk})" in msg, msg
    odd = repr(f"{disk}/.x\n.gpuonboard-upload")
    assert (
        f"; left on the host: 4 entries in {disk} that teardown cannot tell for gpuonboard's uploads"
        " (it knows vars.dataset's copy, marked ones and those `sync` recorded on the host) nor pulled"
        f" ({odd}, {disk}/corpus-link, {disk}/notes.txt (+1 more)): pull or delete them yourself,"
        " or set vars.dataset_dir to a dir teardown should remove whole"
    ) in msg, msg
    assert (disk / "corpus").is_dir()

    r = project.cli("teardown", "--host", "teardown", "--keep-image", "--dest", str(tmp_path / "copy"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert sorted(p.name for p in disk.iterdir()) == [
        ".x\n.gpuonboard-upload",
        "corpus-link",
        "lost+found",
        "notes.txt",
        "runs-old",
    ]
    assert (disk / "runs-old" / "ckpt.pt").read_bytes() == b"only copy"
    assert not remote["results"].exists()  # (pulled and verified first)

    r = project.cli("teardown", "--host", "teardown", "--keep-image", "--dest", str(tmp_path / "copy"))
    assert r.returncode == 0, r.stdout + r.stderr
    files = steps(project)["files"]
    assert files["status"] == "ok" and "left on the host: 4 entries" in files["msg"], files


def test_provision_says_what_a_step_without_rules_would_do(
    project: Project, pool: TestHostPool, remote: dict[str, Path]
) -> None:
    """`provision --playbook teardown --only files --check`: the step's sentence (which paths it
    would remove) is on the terminal, as `invoke teardown` prints it, not only in the recap."""
    inventory(project, pool, remote)
    r = project.cli("provision", "--host", "teardown", "--playbook", "teardown", "--only", "files", "--check")
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"teardown: files: changed: would remove {remote['dataset']}, " in r.stdout, r.stdout


def test_teardown_waits_for_an_upload_that_runs_now(
    project: Project, pool: TestHostPool, remote: dict[str, Path], tmp_path: Path
) -> None:
    """A lease refreshed within the last minute: `sync` is uploading there now. Removing its
    copy under it failed the upload (and a rerun put the data back): refused, in --check too."""
    disk = remote["base"] / "disk"
    (disk / "corpus").mkdir(parents=True)
    (disk / ".corpus.gpuonboard-upload").write_text("token\n")
    inventory(project, pool, remote, dataset=str(tmp_path / "corpus"), dataset_dir=None)
    hosts = project.root / "inventory" / "hosts.yml"
    hosts.write_text(hosts.read_text().replace("address:", f"data_dir: {disk}\n    address:", 1))
    for extra in (["--check"], []):
        r = project.cli("teardown", "--host", "teardown", "--keep-image", *extra)
        assert r.returncode == 1, r.stdout + r.stderr
        files = steps(project)["files"]
        # (--check writes nothing on the host: it reads the lease's age by the host's clock, and says so)
        clock = (
            f" (check mode read the age of the upload lease {disk}/.corpus.gpuonboard-upload (N s) by the"
            " host's clock, as it writes nothing on the host; teardown itself reads it by the clock of"
            " the lease's file system, which on NFS may be minutes off the host's, and may find otherwise)"
        )
        assert re.sub(r"\([0-9] s\)", "(N s)", files["msg"]) == (
            f"refusing to delete anything on teardown: an upload to {disk}/corpus is running (its lease"
            " was refreshed within the last minute); wait for it to end, or stop it, then rerun"
            + (clock if extra else "")
        ), files
    assert (disk / "corpus").is_dir()


def test_uploads_inside_the_results_dir_go_with_it_and_are_never_said_to_stay(
    project: Project, pool: TestHostPool, remote: dict[str, Path], tmp_path: Path
) -> None:
    """`--results` naming the data dir itself (every output back, the uploads with them): the
    files step removed the whole dir after the verified pull, yet said "left on the host:
    DISK/corpus (e.g. 'mine.txt') ... pull what you need, then delete it yourself", so the user
    went looking on the host for what was gone (and was in the local copy). The uploads in a dir
    teardown removes whole after its pull are not said to stay now."""
    disk = remote["base"] / "disk"
    disk.mkdir()
    corpus = _dataset(tmp_path / "local" / "corpus", 4)
    inventory(project, pool, remote, dataset=str(corpus), dataset_dir=None, results_dir=str(disk))
    hosts = project.root / "inventory" / "hosts.yml"
    hosts.write_text(hosts.read_text().replace("address:", f"data_dir: {disk}\n    address:", 1))
    r = project.cli("sync", "--host", "teardown")
    assert r.returncode == 0, r.stdout + r.stderr
    (disk / "corpus" / "mine.txt").write_text("a job's output in the copy\n")
    copy = tmp_path / "copy"
    for args in (("--check",), ()):
        r = project.cli("teardown", "--host", "teardown", "--keep-image", "--dest", str(copy), *args)
        assert r.returncode == 0, r.stdout + r.stderr
        msg = steps(project)["files"]["msg"]
        assert "left on the host" not in msg and msg.startswith(f"{'would ' if args else ''}remove "), msg
        assert f"{disk}," in msg or msg.split(" (")[0].endswith(str(disk)), msg
    assert not disk.exists() and (copy / "corpus" / "mine.txt").read_text() == "a job's output in the copy\n"
