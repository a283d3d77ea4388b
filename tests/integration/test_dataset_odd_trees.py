"""The `dataset` step's messages about directories, against a real sshd test host (real rsync,
real age): plain encrypted mode says which empty directories it does not upload (the host's
tree lacked them, silently); plain mode's upload of only empty directories says it made them
(it read "sent 0 files (0 B of data) ...; 0 files verified by sha256"), and its rerun says
what is up to date; shard mode counts a dataset of only empty directories as those, not as
"0 entries"."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import Project, host_entry
from test_dataset import _age_key, needs_age, setup, step, tree_digest

from gpuonboard.testing import TestHostPool

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


# `invoke sync` of an empty dataset directory in plain mode: said as empty, never "up to date
# at" a copy the host does not have (real sshd test host, real rsync).


def test_an_empty_dataset_is_said_to_be_empty_not_up_to_date(
    project: Project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # (--encrypt's keys are checked before connecting, whatever the dataset holds: issue 27)
    monkeypatch.setenv("QA_EMPTY_PASS", "a passphrase")
    src = tmp_path / "local" / "corpus"
    src.mkdir(parents=True)
    data_dir = tmp_path / "remote data"
    h = project.pool.hosts["dataset"]
    entry = host_entry(h, project.pool, data_dir=str(data_dir))
    entry["vars"].update({"dataset": str(src), "age_passphrase_env": "QA_EMPTY_PASS"})
    project.write_inventory({"dataset": entry})
    for args in ((), ("--check",), ("--encrypt",)):
        r = project.cli("sync", "--host", "dataset", *args)
        s = project.summary()["hosts"][0]["steps"][0]
        assert r.returncode == 0 and s["status"] == "ok", (args, s)
        where = data_dir / ("corpus.encrypted" if args == ("--encrypt",) else "corpus")
        assert s["msg"] == (
            f"the dataset {src} is empty; nothing sent (what dataset:{where} holds is left as it is)"
        ), (args, s["msg"])
        assert "up to date" not in s["msg"]
    assert not data_dir.exists()  # nothing was made there, and nothing claimed to be
    # one file later: sent as usual
    (src / "a.txt").write_text("a\n")
    r = project.cli("sync", "--host", "dataset")
    s = project.summary()["hosts"][0]["steps"][0]
    assert r.returncode == 0 and s["status"] == "changed", s
    assert (data_dir / "corpus" / "a.txt").read_text() == "a\n"


# Shard mode (`--shards`, `--unpack`) and directories, against a real sshd test host (real
# rsync, tar, zstd): a dataset holding only empty directories is made on the host as plain mode's
# rsync -a makes it (it was called "empty" and nothing was done); a file that became a directory
# is unpacked (the swap was refused as "changed during the upload" on every run); an empty
# directory of a name gpuonboard keeps is refused (it was unpacked again on every run).

ODD = ("classes/zebra", "top empty", "ünï cødé/a b", "new\nline", "-dash")


def _dataset(project: Project, tmp_path: Path, dirs: tuple[str, ...] = ODD) -> tuple[Path, Path]:
    src = tmp_path / "local" / "corpus"
    src.mkdir(parents=True)
    for rel in dirs:
        (src / rel).mkdir(parents=True)
    data_dir = tmp_path / "remote data"
    entry = host_entry(project.pool.hosts["dataset"], project.pool, data_dir=str(data_dir))
    entry["vars"].update({"dataset": str(src), "age_passphrase_env": "QA_EMPTY_DIRS_PASS"})
    project.write_inventory({"dataset": entry})
    return src, data_dir


def _sync(project: Project, *args: str) -> tuple[int, dict[str, Any]]:
    r = project.cli("sync", "--host", "dataset", *args)
    return r.returncode, project.summary()["hosts"][0]["steps"][0]


def _listing(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*")) if root.exists() else []


def test_a_dataset_of_only_empty_directories_is_made_on_the_host_in_shard_mode(
    project: Project, tmp_path: Path
) -> None:
    src, data_dir = _dataset(project, tmp_path)
    want = _empty_dirs(src)
    assert len(want) == len(ODD)
    rc, s = _sync(project, "--shards", "--check")
    assert rc == 0 and s["status"] == "changed" and "send 1 of 1 shards" in s["msg"], s
    assert "is empty" not in s["msg"] and not data_dir.exists()  # (check mode: nothing made)
    rc, s = _sync(project, "--unpack")
    assert rc == 0 and s["status"] == "changed" and "; unpacked into" in s["msg"], s
    manifest = json.loads((data_dir / "corpus.shards" / "manifest.json").read_text())
    assert {f["path"] for sh in manifest["shards"] for f in sh["files"] if f.get("dir")} == want
    assert _empty_dirs(data_dir / "corpus") == want
    left = (
        f"the dataset {src} holds only empty directories; nothing sent (what dataset:{data_dir}/corpus.shards"
        " holds is left as it is)"
    )
    for args in (("--unpack",), ("--shards",)):  # reruns: nothing to do
        rc, s = _sync(project, *args)
        assert rc == 0 and s["status"] == "ok" and s["msg"] == left, (args, s)
    # the same directories plain mode's rsync -a makes
    rc, s = _sync(project, "--dest", str(tmp_path / "plain"))
    assert rc == 0 and _empty_dirs(tmp_path / "plain" / "corpus") == want, s


def test_a_dataset_whose_files_are_gone_never_mirrors_an_upload_away(
    project: Project, tmp_path: Path
) -> None:
    """Only the directories left (the files moved away, or the dataset's mounts missing): the
    host's shards and unpacked tree of the earlier upload stay as they are."""
    src, data_dir = _dataset(project, tmp_path, ("train", "val"))
    (src / "train" / "a.bin").write_bytes(os.urandom(1000))
    (src / "val" / "b.bin").write_bytes(os.urandom(1000))
    rc, s = _sync(project, "--unpack")
    assert rc == 0 and s["status"] == "changed", s
    before = tree_digest(data_dir)
    (src / "train" / "a.bin").unlink()
    (src / "val" / "b.bin").unlink()
    for args in (("--unpack",), ("--shards",)):
        rc, s = _sync(project, *args)
        assert rc == 0 and s["status"] == "ok" and "holds only empty directories; nothing sent" in s["msg"], s
    assert tree_digest(data_dir) == before


def test_a_file_that_became_a_directory_is_unpacked_and_back(project: Project, tmp_path: Path) -> None:
    """The swap's check of what it drops counted a file the dataset now has as an empty
    directory (or as a parent of one) as dropped: `the tree ... changed during the upload`,
    exit 1, on every rerun."""
    src, data_dir = _dataset(project, tmp_path, ("top empty",))
    for rel in ("keep.txt", "fileA", "deep"):
        (src / rel).write_text(f"{rel}\n")
    tree = data_dir / "corpus"

    def same() -> None:
        rc, s = _sync(project, "--unpack")
        assert rc == 0 and s["status"] == "changed", s
        assert tree_digest(tree) == tree_digest(src) and _empty_dirs(tree) == _empty_dirs(src)
        rc, s = _sync(project, "--unpack")
        assert rc == 0 and s["status"] == "ok", s

    same()
    (src / "fileA").unlink()
    (src / "fileA").mkdir()  # a file -> an empty directory
    (src / "deep").unlink()
    (src / "deep" / "er" / "est").mkdir(parents=True)  # a file -> the parent of an empty one
    (src / "top empty").rmdir()
    (src / "top empty").write_text("now a file\n")  # an empty directory -> a file
    same()
    assert (tree / "fileA").is_dir() and (tree / "deep" / "er" / "est").is_dir()
    shutil.rmtree(src / "deep")
    (src / "deep").write_text("a file again\n")
    (src / "fileA").rmdir()
    (src / "fileA").symlink_to("keep.txt")  # an empty directory -> a symlink
    same()
    assert (tree / "deep").read_text() == "a file again\n" and (tree / "fileA").is_symlink()


def test_nothing_to_carry_is_said_and_makes_nothing_on_the_host(
    project: Project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Plain encrypted mode does not carry empty directories: a dataset of only those is said
    so, not `up to date at` an .encrypted copy the host does not have; a dataset that is one
    empty directory is `empty` in every mode; neither makes anything on the host."""
    monkeypatch.setenv("QA_EMPTY_DIRS_PASS", "correct horse battery staple")
    src, data_dir = _dataset(project, tmp_path, ("classes/zebra",))
    for args in (("--encrypt",), ("--encrypt", "--check")):
        rc, s = _sync(project, *args)
        assert rc == 0 and s["status"] == "ok", (args, s)
        assert s["msg"] == (
            f"the dataset {src} holds only empty directories, which plain encrypted mode does not"
            f" upload (--shards carries them); nothing sent (what dataset:{data_dir}/corpus.encrypted"
            " holds is left as it is)"
        ), s["msg"]
    assert not data_dir.exists()
    shutil.rmtree(src / "classes")
    for args in (("--unpack",), ("--encrypt", "--shards"), ("--shards", "--check")):
        rc, s = _sync(project, *args)
        assert rc == 0 and s["status"] == "ok", (args, s)
        assert s["msg"] == (
            f"the dataset {src} is empty; nothing sent (what dataset:{data_dir}/corpus.shards holds is"
            " left as it is)"
        ), (args, s["msg"])
    assert not data_dir.exists()


@pytest.mark.parametrize("mode", [(), ("--unpack",)])
def test_an_empty_directory_of_the_partial_name_is_refused(
    project: Project, tmp_path: Path, mode: tuple[str, ...]
) -> None:
    """The listings leave `.gpuonboard-rsync-partial` out: an empty one in the dataset was
    unpacked again (plain mode: `changed`, never made) on every run; refused as a non-empty
    one is."""
    src, data_dir = _dataset(project, tmp_path, ("sub/.gpuonboard-rsync-partial",))
    (src / "f.txt").write_text("f\n")
    rc, s = _sync(project, *mode)
    assert rc == 1 and s["status"] == "failed", s
    assert s["msg"] == (
        f"the dataset {src} has a directory named .gpuonboard-rsync-partial (e.g."
        " 'sub/.gpuonboard-rsync-partial'), a name gpuonboard keeps for rsync's partial files; rename"
        " it, then rerun (nothing was sent)"
    ), s["msg"]
    assert _listing(data_dir) == []


# Plain encrypted mode uploads each regular file's ciphertext: a dataset that holds only
# symlinks (and perhaps empty directories) said `dataset up to date at H:/x.encrypted (1 entry,
# 0 B)`, naming a copy the host did not have. Now it says there is nothing that mode uploads,
# makes nothing on the host, and `--shards` still carries the links.


@needs_age
def test_a_dataset_of_only_symlinks_is_said_so_in_encrypted_mode(
    project: Project, pool: TestHostPool, tmp_path: Path
) -> None:
    key, pub = _age_key(tmp_path)
    src = tmp_path / "local" / "links"
    (src / "sub").mkdir(parents=True)
    (src / "latest").symlink_to("/nowhere/ckpt.pt")
    data_dir = tmp_path / "remote data"
    entry = host_entry(pool.hosts["dataset"], pool, data_dir=str(data_dir))
    entry["vars"].update({"dataset": str(src), "age_recipients": [pub], "age_identity_file": str(key)})
    project.write_inventory({"dataset": entry})
    for args in (("--check",), ()):
        r = project.cli("sync", "--host", "dataset", "--encrypt", *args)
        s = step(project)
        assert r.returncode == 0 and s["status"] == "ok", (args, s)
        assert s["msg"] == (
            f"the dataset {src} holds no regular file, the only kind plain encrypted mode uploads (its"
            " 1 symlink and its empty directories are not; --shards carries them); nothing sent (what"
            f" dataset:{data_dir}/links.encrypted holds is left as it is)"
        ), s["msg"]
    assert not data_dir.exists()
    r = project.cli("sync", "--host", "dataset", "--encrypt", "--shards")
    assert r.returncode == 0 and step(project)["status"] == "changed", step(project)


def test_symlinks_out_of_the_dataset_are_said_to_travel_without_what_they_point_to(
    project: Project, pool: TestHostPool, tmp_path: Path
) -> None:
    """A Hugging Face cache snapshot as the dataset (each file a symlink to ../../blobs/<sha>,
    as huggingface_hub's "Manage cache" guide shows): the upload said "sent 1 file and 2
    symlinks ... verified by sha256" and exit 0 while the weights never left this machine (the
    links dangle on the host). The plan, the final message, the rerun and shard mode now name
    the links that lead out of the dataset and what to do."""
    repo = tmp_path / "local" / "models--org--tiny"
    (repo / "blobs").mkdir(parents=True)
    (repo / "blobs" / "ab12").write_bytes(os.urandom(4096))
    src = repo / "snapshots" / "2d5f4a1c"
    src.mkdir(parents=True)
    (src / "model.safetensors").symlink_to("../../blobs/ab12")
    (src / "config.json").symlink_to(repo / "blobs" / "ab12")
    (src / "README.md").write_text("# tiny\n")
    data_dir = tmp_path / "remote data"
    entry = host_entry(pool.hosts["dataset"], pool, data_dir=str(data_dir))
    entry["vars"].update({"dataset": str(src)})
    project.write_inventory({"dataset": entry})
    note = (
        "; 2 symlinks of the dataset lead out of it (e.g. 'config.json' -> "
        f"'{repo}/blobs/ab12'): they are uploaded as links, what they point to is not sent"
    )
    for args in (("--check",), (), (), ("--shards", "--unpack")):  # plan, upload, rerun, shards
        r = project.cli("sync", "--host", "dataset", *args)
        s = step(project)
        assert r.returncode == 0 and note in s["msg"], (args, s["msg"])
    copy = data_dir / "2d5f4a1c"
    assert os.readlink(copy / "model.safetensors") == "../../blobs/ab12"
    assert not (copy / "model.safetensors").exists()  # what the note says: the link dangles there


def test_a_file_edited_on_the_host_since_the_upload_is_named_before_it_is_replaced(
    project: Project, tmp_path: Path
) -> None:
    """A file of the copy edited on the host after the upload (or a file of the user's own dir
    the dataset merges into) is newer there than the dataset's; a rerun's rsync -a replaced it,
    and the plan only listed it among the files it sends. The plan (--check) and the message
    now name the files the host has newer, so the work done on them can be pulled first; an
    ordinary change of the dataset here (newer here) is not named."""
    src, data_dir = setup(project, tmp_path)
    assert project.cli("sync", "--host", "dataset").returncode == 0
    edited = data_dir / "my data" / "plain.txt"
    edited.write_text("edited on the host\n")
    os.utime(edited, (time.time() + 100, time.time() + 100))
    (src / "-leading-dash").write_text("changed here\n")  # (newer here: sent, not named)
    note = (
        "; 1 file on the host was changed there since an upload wrote it and is replaced by the"
        " dataset's version (e.g. 'plain.txt'): what was done to it there is not kept (--check"
        " names such files before anything is sent; pull them first)"
    )
    for args in (("--check",), ()):
        r = project.cli("sync", "--host", "dataset", *args)
        s = step(project)
        assert r.returncode == 0 and note in s["msg"], (args, s["msg"])
    assert edited.read_text() == "hello\n"


def test_files_nobody_edited_on_the_host_are_never_said_to_be_edited(
    project: Project, tmp_path: Path
) -> None:
    """The note on files the host has newer named every file of a tree nobody touched: (a) a
    tree `sync --shards --unpack` wrote (each file carries the unpack's stamp, newer than the
    dataset's mtimes), which a plain rerun sends again; (b) data put there by `cp -r` (new
    mtimes, the same bytes), which said "what was done to them there is not kept". The host's
    list of what uploads wrote vouches for (a): nothing is named; (b) has no such list: the
    files are named as newer, with no record of an upload writing them, never as changed."""
    src, data_dir = setup(project, tmp_path)
    assert project.cli("sync", "--host", "dataset", "--shards", "--unpack").returncode == 0
    for args in (("--check",), ()):
        r = project.cli("sync", "--host", "dataset", *args)
        msg = step(project)["msg"]
        assert (
            r.returncode == 0 and "newer than the dataset" not in msg and "changed there since" not in msg
        ), msg
    fresh = tmp_path / "fresh data"
    shutil.copytree(src, fresh / "my data", symlinks=True, copy_function=shutil.copy)  # (as cp -r)
    later = time.time() + 100
    os.utime(fresh / "my data" / "plain.txt", (later, later))
    r = project.cli("sync", "--host", "dataset", "--dest", str(fresh), "--check")
    msg = step(project)["msg"]
    assert r.returncode == 0 and "changed there since" not in msg, msg
    assert (
        " newer than the dataset's, with no record of an upload writing them, and replaced by its"
        " version (e.g. "
        in msg
        or " newer than the dataset's, with no record of an upload writing it, and replaced by its"
        " version (e.g. 'plain.txt'): if it was changed there, pull it first"
        in msg
    ), msg


def test_the_plans_list_of_files_to_send_escapes_a_line_break_in_a_name(
    project: Project, tmp_path: Path
) -> None:
    """The plan (--check) named the files it sends as they are: a name holding a line break
    (`new<LF>line.txt`) broke the message into two lines, the second reading as another one.
    It is written as its escape (`new\\nline.txt`), as errors and the other notes write it."""
    src, _ = setup(project, tmp_path)
    (src / "new\nline.txt").write_text("nl\n")
    r = project.cli("sync", "--host", "dataset", "--check")
    msg = step(project)["msg"]
    assert r.returncode == 0 and "\n" not in msg, msg
    assert "new\\nline.txt" in msg, msg


def test_a_failed_write_of_the_list_of_what_uploads_wrote_never_calls_a_file_changed_there(
    project: Project, tmp_path: Path
) -> None:
    """Review S's repro: the host's list of what uploads wrote made immutable (`chattr +i`, as
    a write that fails) while an upload sends an edit; once writable again, a further edit's
    --check said the file "was changed there since an upload wrote it ... pull them first",
    from the old list the failed write left. The list is marked stale now (read as none):
    nothing is said changed, and the next upload lists afresh."""
    if shutil.which("chattr") is None or os.geteuid() != 0:
        pytest.skip("needs chattr as root")
    src, data_dir = setup(project, tmp_path)
    assert project.cli("sync", "--host", "dataset").returncode == 0
    home = project.pool.hosts["dataset"].home
    digest = hashlib.sha256(f"{os.path.realpath(data_dir)}/my data".encode()).hexdigest()
    (record,) = (home / ".cache" / "gpuonboard").glob(f"written.*/{digest}")
    subprocess.run(["chattr", "+i", str(record)], check=True)
    try:
        (src / "plain.txt").write_text("local v2\n")
        assert project.cli("sync", "--host", "dataset").returncode == 0
    finally:
        subprocess.run(["chattr", "-i", str(record)], check=True)
    (src / "plain.txt").write_text("local v3, longer\n")
    for args in (("--check",), ()):
        r = project.cli("sync", "--host", "dataset", *args)
        msg = step(project)["msg"]
        assert r.returncode == 0 and "changed there since" not in msg, (args, msg)
    (src / "plain.txt").write_text("local v4, longer still\n")
    r = project.cli("sync", "--host", "dataset", "--check")
    assert r.returncode == 0 and "changed there since" not in step(project)["msg"]
    assert not record.with_name(record.name + ".stale").exists()
