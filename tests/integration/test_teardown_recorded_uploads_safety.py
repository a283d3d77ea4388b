"""Teardown of the uploads `sync` recorded on the host (~/.cache/gpuonboard/uploads) removes
those uploads and nothing else: not the user's own entries of a dir that holds one (a shard
store of their own, a dir named like the dataset beside a store-only upload), not a recorded
copy that is (or holds) the data dir; the pull refuses a symlink in the results into a recorded
upload (its target goes next); hundreds of recorded uploads are removed; a --decrypt-to dir made
by the upload under a symlinked path is found. Real sshd test host, real rsync, real `sync`
uploads, as in test_teardown.py (whose fixtures this module uses)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from conftest import Project
from test_dataset import _age_key, needs_age
from test_teardown import inventory, remote, steps
from test_teardown_uploads import _dataset

from gpuonboard.testing import TestHostPool
from gpuonboard.testing.hosts import this_machines_record
from gpuonboard.transfer import uploadlock

# this machine's record of uploads (the test hosts are this machine)
MY_RECORD = this_machines_record()

__all__ = ["remote"]  # the fixture, used by name


def _setup(
    project: Project, pool: TestHostPool, remote: dict[str, Path], tmp_path: Path, **more: object
) -> Path:
    """The data dir `disk` (host.data_dir), vars.dataset a local `corpus`; -> the data dir."""
    disk = remote["base"] / "disk"
    disk.mkdir()
    corpus = _dataset(tmp_path / "local" / "corpus", 3)
    inventory(project, pool, remote, dataset=str(corpus), dataset_dir=None, **more)
    hosts = project.root / "inventory" / "hosts.yml"
    hosts.write_text(hosts.read_text().replace("address:", f"data_dir: {disk}\n    address:", 1))
    return disk


def _sync(project: Project, *argv: str) -> None:
    r = project.cli("sync", *argv, "--host", "teardown")
    assert r.returncode == 0, r.stdout + r.stderr


def _teardown(project: Project, tmp_path: Path, *extra: str) -> str:
    r = project.cli(
        "teardown", "--host", "teardown", "--keep-image", "--dest", str(tmp_path / "copy"), *extra
    )
    assert r.returncode == 0, r.stdout + r.stderr
    return str(steps(project)["files"]["msg"])


def test_the_users_own_shard_stores_beside_a_recorded_upload_stay(
    project: Project, pool: TestHostPool, remote: dict[str, Path], tmp_path: Path
) -> None:
    """In the data dir any `X.shards` holding manifest.json is taken for an upload's store; in
    another dir (one `sync --dest` used, the home dir, /dev/shm) only the recorded ones are:
    the user's own sharded checkpoint there was removed, and a tree beside a store of theirs."""
    _setup(project, pool, remote, tmp_path)
    other = remote["base"] / "scratch"
    other.mkdir()
    _sync(project, "--dest", str(other))
    (other / "ckpt.shards").mkdir()
    (other / "ckpt.shards" / "manifest.json").write_text("{}\n")
    (other / "ckpt.shards" / "rank0.pt").write_bytes(b"only copy")
    (other / "model").mkdir()
    (other / "model" / "w.bin").write_bytes(b"only copy")
    (other / "model.shards").mkdir()
    for name in ("manifest.json", "manifest.unpacked.json"):
        (other / "model.shards" / name).write_text("{}\n")

    r = project.cli("teardown", "--host", "teardown", "--keep-image", "--check")
    assert r.returncode == 0, r.stdout + r.stderr
    msg = steps(project)["files"]["msg"]
    assert f"{other}/corpus" in msg and "ckpt" not in msg and "model" not in msg, msg
    msg = _teardown(project, tmp_path)
    assert sorted(p.name for p in other.iterdir()) == ["ckpt.shards", "model", "model.shards"], msg
    assert (other / "ckpt.shards" / "rank0.pt").read_bytes() == b"only copy"
    assert (other / "model" / "w.bin").read_bytes() == b"only copy"


def test_a_store_only_upload_records_its_store_not_a_dir_of_the_datasets_name(
    project: Project, pool: TestHostPool, remote: dict[str, Path], tmp_path: Path
) -> None:
    """`sync --shards` (no --unpack) writes `<name>.shards` only; it recorded `<name>` as its
    copy, and teardown removed the user's own dir of that name there (sync had said of it: not
    updated without --unpack)."""
    _setup(project, pool, remote, tmp_path)
    other = remote["base"] / "scratch"
    (other / "corpus" / "mine").mkdir(parents=True)
    (other / "corpus" / "mine" / "thesis.tex").write_text("only copy\n")
    _sync(project, "--dest", str(other), "--shards")
    assert (other / "corpus.shards" / "manifest.json").is_file()

    msg = _teardown(project, tmp_path)
    assert f"{other}/corpus.shards" in msg and f"{other}/corpus," not in msg, msg
    assert sorted(str(p.relative_to(other)) for p in other.rglob("*")) == [
        "corpus",
        "corpus/mine",
        "corpus/mine/thesis.tex",
    ]


def test_an_upload_into_the_users_own_dir_leaves_it(
    project: Project, pool: TestHostPool, remote: dict[str, Path], tmp_path: Path
) -> None:
    """`sync --dest ~ --dataset proj` with the user's own ~/proj there: the copy merges into it
    (`1 file on the host is not in the dataset and kept there`); recorded as the upload's, it
    was removed whole by teardown, the user's uncommitted work with it."""
    _setup(project, pool, remote, tmp_path)
    other = remote["base"] / "work"
    (other / "proj").mkdir(parents=True)
    (other / "proj" / "train.py").write_text("uncommitted\n")
    _sync(project, "--dest", str(other), "--dataset", str(_dataset(tmp_path / "l2" / "proj", 3)))
    assert (other / "proj" / "part0").is_dir()

    msg = _teardown(project, tmp_path)
    assert f"{other}/proj" not in msg, msg
    assert (other / "proj" / "train.py").read_text() == "uncommitted\n"


def test_a_recorded_copy_that_holds_the_data_dir_is_not_removed_whole(
    project: Project, pool: TestHostPool, remote: dict[str, Path], tmp_path: Path
) -> None:
    """`sync --dest <parent of the data dir>` of a dataset named like the data dir: its copy IS
    the data dir, which teardown never removes whole (other runs' outputs there were never
    pulled). The whole data dir went, while the message said its other entries were left."""
    disk = _setup(project, pool, remote, tmp_path)
    _sync(project, "--dest", str(remote["base"]), "--dataset", str(_dataset(tmp_path / "l2" / "disk", 3)))
    _sync(project)  # vars.dataset into the data dir
    (disk / "runs-old").mkdir()
    (disk / "runs-old" / "ckpt.pt").write_bytes(b"only copy")

    msg = _teardown(project, tmp_path)
    assert (disk / "runs-old" / "ckpt.pt").read_bytes() == b"only copy", msg
    assert not (disk / "corpus").exists()  # (vars.dataset's copy goes)
    assert (
        f"; left on the host: {disk}, recorded by sync as its uploads but holding the data dir {disk},"
        " which teardown never removes whole (it may hold other runs' outputs that no pull took):"
        " delete what you no longer need there yourself"
    ) in msg, msg


def test_a_symlink_in_the_results_into_a_recorded_upload_is_refused_by_the_pull(
    project: Project, pool: TestHostPool, remote: dict[str, Path], tmp_path: Path
) -> None:
    """The pull said such a link was `copied as a link, not its target (... outside every
    directory teardown removes, so they stay)`, then the files step removed the target."""
    _setup(project, pool, remote, tmp_path)
    other = remote["base"] / "scratch"
    other.mkdir()
    _sync(project, "--dest", str(other), "--shards", "--unpack")
    target = next((other / "corpus").rglob("*.bin"))
    (remote["results"] / "train.bin").symlink_to(target)
    for extra in (["--check"], []):
        r = project.cli(
            "teardown", "--host", "teardown", "--keep-image", "--dest", str(tmp_path / "c"), *extra
        )
        assert r.returncode == 1, r.stdout + r.stderr
        s = steps(project)
        assert s["pull"]["status"] == "failed", s["pull"]
        lost = f"1 symlink whose target lies in a directory teardown deletes (first: train.bin -> {target})"
        assert f"holds {lost}" in s["pull"]["msg"], s["pull"]
        assert s["files"]["status"] == "skipped"
    assert target.is_file()


def test_hundreds_of_recorded_uploads_are_removed(
    project: Project, pool: TestHostPool, remote: dict[str, Path], tmp_path: Path
) -> None:
    """The removal was one command line of ~1 KB per path: with some hundred recorded uploads
    it passed sshd's limits, the connection was reset and the host called unreachable."""
    _setup(project, pool, remote, tmp_path)
    other = remote["base"] / "scratch"
    other.mkdir()
    _sync(project, "--dest", str(other))
    record = pool.hosts["teardown"].home / ".cache" / "gpuonboard" / MY_RECORD
    runs = [other / f"sweep-{i:04d}" for i in range(300)]  # as 300 `sync --name sweep-N` left
    home = {"HOME": str(pool.hosts["teardown"].home), "PATH": "/usr/bin:/bin"}
    for run in runs:
        run.mkdir()
        (run / "cfg.json").write_text("{}\n")
        listed = uploadlock.listing_stdin([("f", "cfg.json", 3, int((run / "cfg.json").stat().st_mtime))])
        # (what each such `sync` lists on the host as written there: uploadlock.WRITTEN_DIR)
        subprocess.run(
            ["sh", "-c", uploadlock.write_listing_command(str(run))], input=listed, env=home, check=True
        )
    record.write_bytes(record.read_bytes() + b"".join(f"{run}".encode() + b"\0" for run in runs))

    msg = _teardown(project, tmp_path)
    assert f"{other}/sweep-0000" in msg and "(+" in msg, msg
    assert list(other.iterdir()) == []
    assert not record.exists()


@needs_age
def test_plaintext_decrypted_into_a_new_dir_under_a_symlink_is_found(
    project: Project, pool: TestHostPool, remote: dict[str, Path], tmp_path: Path
) -> None:
    """`--decrypt-to /scratch/plain` with /scratch a link and `plain` not made yet: the record
    held the unresolved path, and teardown left the plaintext on the returned box (`not
    removable now (a symlink, ...)`)."""
    key, pub = _age_key(tmp_path)
    _setup(project, pool, remote, tmp_path, age_recipients=[pub], age_identity_file=str(key))
    nvme = remote["base"] / "nvme"
    nvme.mkdir()
    (remote["base"] / "scratch").symlink_to(nvme)
    images = _dataset(tmp_path / "local" / "images", 4)
    plain = remote["base"] / "scratch" / "plain"
    _sync(project, "--dataset", str(images), "--encrypt", "--decrypt-on-host", "--decrypt-to", str(plain))
    assert (nvme / "plain" / "images" / "part0").is_dir()

    msg = _teardown(project, tmp_path)
    assert "left on the host" not in msg, msg
    assert list((nvme / "plain").iterdir()) == []
