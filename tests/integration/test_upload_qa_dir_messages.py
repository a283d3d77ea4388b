"""The `dataset` step's messages about directories, against a real sshd test host (real rsync,
real age): plain encrypted mode says which empty directories it does not upload (the host's
tree lacked them, silently); plain mode's upload of only empty directories says it made them
(it read "sent 0 files (0 B of data) ...; 0 files verified by sha256"), and its rerun says
what is up to date; shard mode counts a dataset of only empty directories as those, not as
"0 entries"."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from conftest import Project
from test_dataset import _age_key, needs_age, setup, step

pytestmark = pytest.mark.skipif(shutil.which("rsync") is None, reason="rsync not installed")

DIRS = ("e1/deep", "top empty", "new\nline")


def _empty_dirs(root: Path) -> set[str]:
    return {
        Path(d).relative_to(root).as_posix()
        for d, dirnames, filenames in os.walk(root)
        if not dirnames and not filenames and Path(d) != root
    }


def _only_dirs(tmp_path: Path) -> Path:
    only = tmp_path / "local" / "only dirs"
    for d in DIRS:
        (only / d).mkdir(parents=True)
    return only


@needs_age
def test_encrypted_mode_says_which_empty_directories_it_does_not_upload(
    project: Project, tmp_path: Path
) -> None:
    key, pub = _age_key(tmp_path)
    src, data_dir = setup(project, tmp_path, age_recipients=[pub], age_identity_file=str(key))
    for d in DIRS:
        (src / d).mkdir(parents=True)
    note = (
        "; 3 empty directories of the dataset are not uploaded in encrypted mode (e.g. 'e1/deep';"
        " --shards carries them)"
    )
    for args in (("--check",), (), ()):  # plan, final message, the up-to-date rerun
        r = project.cli("sync", "--host", "dataset", "--encrypt", "--decrypt-on-host", *args)
        s = step(project)
        assert r.returncode == 0 and note in s["msg"], (args, s)
        assert "1 symlink of the dataset is not uploaded in encrypted mode" in s["msg"], s["msg"]
    assert s["status"] == "ok" and s["msg"].startswith("dataset up to date at"), s
    # what the note says: neither the ciphertexts nor the decrypted tree has them
    assert _empty_dirs(data_dir / "my data.encrypted") == set() == _empty_dirs(data_dir / "my data")
    assert (data_dir / "my data" / "plain.txt").read_text() == "hello\n"
    shutil.rmtree(src / "e1")
    shutil.rmtree(src / "new\nline")  # one left: said in the singular
    r = project.cli("sync", "--host", "dataset", "--encrypt")
    assert r.returncode == 0 and step(project)["status"] == "ok", step(project)
    assert (
        "; 1 empty directory of the dataset is not uploaded in encrypted mode (e.g. 'top empty';"
        " --shards carries them)" in step(project)["msg"]
    ), step(project)["msg"]


def test_plain_mode_says_it_made_the_empty_directories_and_then_that_they_are_up_to_date(
    project: Project, tmp_path: Path
) -> None:
    _, data_dir = setup(project, tmp_path)
    only = _only_dirs(tmp_path)
    copy = f"dataset:{data_dir}/only dirs"
    r = project.cli("sync", "--host", "dataset", "--dataset", str(only), "--check")
    s = step(project)
    assert r.returncode == 0 and s["status"] == "changed", s
    assert s["msg"] == (
        f"would make 3 empty directories (e.g. 'e1/deep') at {copy}; the dataset has no files to send"
        " (check mode: nothing changed)"
    ), s["msg"]
    r = project.cli("sync", "--host", "dataset", "--dataset", str(only))
    s = step(project)
    assert r.returncode == 0 and s["status"] == "changed", s
    assert s["msg"] == (
        f"made 3 empty directories (e.g. 'e1/deep') at {copy}; the dataset has no files to send"
    ), s["msg"]
    assert _empty_dirs(data_dir / "only dirs") == set(DIRS)
    for args in ((), ("--check",)):
        r = project.cli("sync", "--host", "dataset", "--dataset", str(only), *args)
        s = step(project)
        assert r.returncode == 0 and s["status"] == "ok", (args, s)
        assert s["msg"] == f"dataset up to date at {copy} (3 empty directories, no files); nothing sent", s
    # with files: the new empty directory is said in the final message too, the rest unchanged
    (only / "f.txt").write_text("f\n")
    (only / "later").mkdir()
    r = project.cli("sync", "--host", "dataset", "--dataset", str(only))
    s = step(project)
    assert r.returncode == 0 and s["status"] == "changed", s
    assert s["msg"].startswith(f"sent 1 file (2 B of data) to {copy}; 1 file verified by sha256;"), s
    assert "; made 1 empty directory (e.g. 'later')" in s["msg"], s["msg"]
    r = project.cli("sync", "--host", "dataset", "--dataset", str(only))
    s = step(project)
    assert s["status"] == "ok" and s["msg"] == f"dataset up to date at {copy} (1 entry, 2 B); nothing sent", s


def test_shard_mode_counts_a_dataset_of_only_empty_directories_as_those(
    project: Project, tmp_path: Path
) -> None:
    _, data_dir = setup(project, tmp_path)
    only = _only_dirs(tmp_path)
    r = project.cli("sync", "--host", "dataset", "--dataset", str(only), "--unpack", "--check")
    s = step(project)
    assert r.returncode == 0 and s["status"] == "changed", s
    assert f" to build) of 3 empty directories to dataset:{data_dir}/only dirs.shards;" in s["msg"], s
    assert "0 entries" not in s["msg"], s["msg"]
    # a dataset with files keeps its count of entries
    (only / "f.txt").write_text("f\n")
    r = project.cli("sync", "--host", "dataset", "--dataset", str(only), "--unpack", "--check")
    assert " to build) of 1 entries to " in step(project)["msg"], step(project)
