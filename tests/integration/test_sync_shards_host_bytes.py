"""Issue 32: what a `sync --shards --unpack` leaves on the host. An upload stopped part-way
(SIGTERM to the gpuonboard process, through the real sshd test host and real rsync/ssh), then
run again to completion: the host's data dir holds the dataset unpacked plus a small manifest
(and the unpack's empty marker), nothing else: no shard, no partial shard, no temp file. Plain
shards and encrypted shards (decrypted on the host). With keep_shards the shards stay (the
opt-in cache), and a rerun over a tree whose shards were removed finds it up to date."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import Project, age_key, host_entry, interrupt_when

needs_age = pytest.mark.skipif(shutil.which("age") is None, reason="Debian `age` not installed")


def _step(project: Project) -> dict[str, Any]:
    return dict(project.summary()["hosts"][0]["steps"][0])


def _digest(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _bytes_under(root: Path) -> dict[str, int]:
    """`du`-style: every file's size under root (apparent sizes), by path."""
    return {
        p.relative_to(root).as_posix(): p.lstat().st_size
        for p in root.rglob("*")
        if not p.is_dir() or p.is_symlink()
    }


def _setup(project: Project, tmp_path: Path, **extra: Any) -> tuple[Path, Path]:
    src = tmp_path / "local" / "many"
    for i in range(400):
        d = src / f"d{i % 7}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"f{i:04d}.bin").write_bytes(os.urandom(8_000 + i % 900))
    data_dir = tmp_path / "remote data"
    entry = host_entry(project.pool.hosts["dataset"], project.pool, data_dir=str(data_dir))
    entry["vars"].update({"dataset": str(src), "shard_size": "256KiB", "shard_threshold": 100, **extra})
    project.write_inventory({"dataset": entry})
    return src, data_dir


def _interrupt_then_complete(project: Project, flags: list[str], data_dir: Path) -> None:
    """Start the upload slowly, SIGTERM it once some shards arrived on the host, rerun it."""
    argv = [*project.cli_argv(), "sync", "--host", "dataset", *flags, "--bwlimit", "400k"]
    proc = subprocess.Popen(
        argv, cwd=project.root, env=project.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    store = data_dir / "many.shards"

    def two_shards_in() -> bool:
        names = [p.name for p in store.iterdir()] if store.is_dir() else []
        return sum(n.endswith((".tar", ".age")) for n in names) >= 2

    interrupt_when(proc, two_shards_in, 60)
    r = project.cli("sync", "--host", "dataset", *flags)
    assert r.returncode == 0, r.stdout + r.stderr


def _assert_only_dataset_and_manifest(src: Path, data_dir: Path) -> None:
    there = _bytes_under(data_dir)
    dataset = sum(p.stat().st_size for p in src.rglob("*") if p.is_file())
    tree = {k: v for k, v in there.items() if k.startswith("many/")}
    rest = {k: v for k, v in there.items() if not k.startswith("many/")}
    assert sum(tree.values()) == dataset
    # what else is there: the manifest, the copy of it the tree was unpacked from, the marker
    assert set(rest) <= {"many.shards/manifest.json", "many.shards/manifest.unpacked.json"} | {
        k for k in rest if re.fullmatch(r"many\.shards/unpacked-[0-9a-f]{16}", k)
    }, sorted(rest)
    assert rest["many.shards/manifest.json"] > 0
    assert sum(rest.values()) <= 2 * (64 * 1024 + len(tree) * 120), rest  # small and bounded
    assert sum(there.values()) == dataset + sum(rest.values())
    assert not list(data_dir.glob(".*gpuonboard-unpack-*"))


def test_an_interrupted_then_completed_unpack_leaves_the_dataset_and_a_manifest(
    project: Project, tmp_path: Path
) -> None:
    src, data_dir = _setup(project, tmp_path)
    _interrupt_then_complete(project, ["--shards", "--unpack"], data_dir)
    assert _digest(data_dir / "many") == _digest(src)
    _assert_only_dataset_and_manifest(src, data_dir)
    # nothing changed: up to date although the shards are gone (the marker vouches for them)
    r = project.cli("sync", "--host", "dataset", "--shards", "--unpack")
    s = _step(project)
    assert r.returncode == 0 and s["status"] == "ok", s
    # one file changed: the tree is rebuilt (the shards were not kept: all are sent) and verified
    (src / "d3" / "f0003.bin").write_bytes(os.urandom(123))
    r = project.cli("sync", "--host", "dataset", "--shards", "--unpack")
    assert r.returncode == 0 and _step(project)["status"] == "changed", _step(project)
    assert _digest(data_dir / "many") == _digest(src)
    _assert_only_dataset_and_manifest(src, data_dir)


@needs_age
def test_an_interrupted_then_completed_encrypted_unpack_leaves_the_dataset_and_a_manifest(
    project: Project, tmp_path: Path
) -> None:
    key, pub = age_key(tmp_path)
    src, data_dir = _setup(project, tmp_path, age_recipients=[pub], age_identity_file=str(key))
    flags = ["--encrypt", "--decrypt-on-host", "--shards", "--unpack"]
    _interrupt_then_complete(project, flags, data_dir)
    assert _digest(data_dir / "many") == _digest(src)
    _assert_only_dataset_and_manifest(src, data_dir)
    r = project.cli("sync", "--host", "dataset", *flags)
    assert r.returncode == 0 and _step(project)["status"] == "ok", _step(project)


def test_keep_shards_keeps_the_shard_cache(project: Project, tmp_path: Path) -> None:
    src, data_dir = _setup(project, tmp_path)
    r = project.cli("sync", "--host", "dataset", "--shards", "--unpack", "--keep-shards")
    assert r.returncode == 0, r.stdout + r.stderr
    s = _step(project)
    assert (
        len([p for p in (data_dir / "many.shards").iterdir() if p.name.endswith(".tar")])
        == s["diff"]["shards"]
    )
    assert _digest(data_dir / "many") == _digest(src)


def _edit_one_add_one(src: Path) -> None:
    (src / "d3" / "f0003.bin").write_bytes(os.urandom(5_000))  # changed (and another size)
    (src / "d3" / "f0003a.bin").write_bytes(os.urandom(6_000))  # new, beside it


def _one_file_changed_sends_about_one_shard(
    project: Project, flags: list[str], src: Path, data_dir: Path, tamper: bool = False
) -> dict[str, Any]:
    """A completed upload (no keep_shards), one file edited and one added here, rerun: only
    the shards holding them are sent; every other file of the new tree is the current tree's
    (hard-linked: the same inode), and the host holds the dataset and the manifest only."""
    r = project.cli("sync", "--host", "dataset", *flags)
    assert r.returncode == 0, r.stdout + r.stderr
    first = _step(project)["diff"]
    dataset = sum(p.stat().st_size for p in src.rglob("*") if p.is_file())
    assert first["literal_bytes"] >= dataset  # (the first upload sends it all)
    tree = data_dir / "many"
    inode = (tree / "d5" / "f0005.bin").stat().st_ino  # a file neither edited nor beside one
    _edit_one_add_one(src)
    if tamper:  # a file of the host's tree written there meanwhile (same size): not taken
        bad = tree / "d0" / "f0007.bin"
        bad.write_bytes(os.urandom(bad.stat().st_size))
    r = project.cli("sync", "--host", "dataset", *flags)
    s = _step(project)
    assert r.returncode == 0 and s["status"] == "changed", s
    diff = s["diff"]
    most = 3 if tamper else 2  # (the edited and the new file's shards: one, or two at a boundary)
    assert 1 <= diff["sent_shards"] <= most, diff
    assert diff["literal_bytes"] <= most * 4 * 256 * 1024 and diff["literal_bytes"] < dataset // 3, diff
    assert diff["reused_shards"] == diff["shards"] - diff["sent_shards"], diff
    assert _digest(tree) == _digest(src)
    assert (tree / "d5" / "f0005.bin").stat().st_ino == inode  # linked, not sent nor copied
    _assert_only_dataset_and_manifest(src, data_dir)
    assert not list(data_dir.glob(".many.gpuonboard-unpack-*"))
    r = project.cli("sync", "--host", "dataset", *flags)
    assert r.returncode == 0 and _step(project)["status"] == "ok", _step(project)
    return s


def test_one_changed_file_resends_about_one_shard_not_the_dataset(project: Project, tmp_path: Path) -> None:
    src, data_dir = _setup(project, tmp_path)
    s = _one_file_changed_sends_about_one_shard(project, ["--shards", "--unpack"], src, data_dir)
    assert "taken from the tree there (hard-linked, checked by sha256)" in s["msg"], s["msg"]


def test_a_tree_file_changed_on_the_host_is_not_taken_but_its_shard_sent(
    project: Project, tmp_path: Path
) -> None:
    src, data_dir = _setup(project, tmp_path)
    s = _one_file_changed_sends_about_one_shard(project, ["--shards", "--unpack"], src, data_dir, tamper=True)
    assert (
        "sent after all: the tree on the host differed from the dataset (1 file, e.g. 'd0/f0007.bin')"
        in s["msg"]
    )


@needs_age
def test_one_changed_file_resends_about_one_encrypted_shard(project: Project, tmp_path: Path) -> None:
    key, pub = age_key(tmp_path)
    src, data_dir = _setup(project, tmp_path, age_recipients=[pub], age_identity_file=str(key))
    flags = ["--encrypt", "--decrypt-on-host", "--shards", "--unpack"]
    _one_file_changed_sends_about_one_shard(project, flags, src, data_dir)
