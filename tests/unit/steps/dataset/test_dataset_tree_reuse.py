"""Issue 32 follow-up: an --unpack rerun whose shards were removed takes the files of unchanged
shards from the host's current tree (hard-linked, checked by sha256) and sends only the shards
of new or changed files: which groups the plan takes (pure), and the host's seed command, run
by a real `sh` on real files."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

from gpuonboard.steps.dataset.sharded import _from_tree
from gpuonboard.steps.dataset.work import Work
from gpuonboard.transfer import Entry, RemoteState, SourceTree, link_hash, parse_hashes, shards, shardstream


def _entry(rel: str, size: int, kind: str = "f", sha: str = "ab" * 32) -> Entry:
    return Entry(rel=rel, kind=kind, size=size, mtime=0, sha256=sha)


def test_the_plan_takes_groups_whose_files_the_tree_holds_and_sends_the_rest() -> None:
    groups = [
        [_entry("a/1", 10), _entry("a/2", 20)],  # all there, same sizes: taken
        [_entry("b/1", 10)],  # another size there (edited): sent
        [_entry("c/1", 10)],  # content unknown to this machine's index (new): sent
        [_entry("d/1", 10), _entry("d/gone", 5)],  # one member missing there: sent
        [_entry("e", 0, kind="d", sha="")],  # an empty directory: sent
        [_entry("f/ln", 0, kind="l")],  # a symlink there: taken
    ]
    work = Work(SourceTree(Path("/x"), {}), [], "/data/x.shards")
    work.groups = groups
    work.built = [shards.Shard(f"{i:032x}.tar", "0" * 64, 1000 + i) for i in range(len(groups))]
    work.built[2] = None
    work.send_idx, work.need = list(range(len(groups))), sum(1000 + i for i in range(len(groups)))
    host = {"a/1": ("f", 10, 0), "a/2": ("f", 20, 0), "b/1": ("f", 11, 0), "c/1": ("f", 10, 0)}
    host |= {"d/1": ("f", 10, 0), "f/ln": ("l", 2, 0)}
    _from_tree(work, RemoteState(rsync=None, free_bytes=None, files=host), 1 << 20)
    assert work.reuse == [0, 5]
    assert work.send_idx == [1, 2, 3, 4]
    assert work.need == 1001 + 1002 + 1003 + 1004


def test_the_seed_links_the_current_trees_files_and_hashes_them_in_the_new_one(tmp_path: Path) -> None:
    tree = tmp_path / "many"
    (tree / "a" / "b").mkdir(parents=True)
    (tree / "a" / "b" / "f1").write_bytes(b"one\n")
    (tree / "-dash").write_bytes(b"two\n")
    (tree / "a" / "b" / "ln").symlink_to("f1")
    new = tmp_path / ".many.gpuonboard-unpack-tag-new"
    old = tmp_path / ".many.gpuonboard-unpack-tag-old"  # an interrupted run's: swept
    old.mkdir()
    rels = ["a/b/f1", "-dash", "a/b/ln", "missing/x"]
    cmd = shardstream.seed_command(str(new), str(tree))
    r = subprocess.run(cmd, shell=True, input=shardstream.seed_stdin(rels), capture_output=True, check=True)
    got = parse_hashes(rels, r.stdout.decode())
    assert got == {
        "a/b/f1": hashlib.sha256(b"one\n").hexdigest(),
        "-dash": hashlib.sha256(b"two\n").hexdigest(),
        "a/b/ln": link_hash("f1"),
        "missing/x": None,
    }
    assert (new / "a" / "b" / "f1").stat().st_ino == (tree / "a" / "b" / "f1").stat().st_ino  # a link
    assert os.readlink(new / "a" / "b" / "ln") == "f1"
    assert not old.exists() and not list(tmp_path.glob("*.seed"))
    subprocess.run(
        shardstream.seed_drop_command(str(new)),
        shell=True,
        input=shardstream.seed_stdin(["a/b/f1"]),
        check=True,
    )
    assert not (new / "a" / "b" / "f1").exists() and (tree / "a" / "b" / "f1").read_bytes() == b"one\n"


def test_the_seed_copies_where_a_link_cannot_be_made(tmp_path: Path) -> None:
    """No current tree (or another file system): nothing is made up, each file hashes as missing
    or, copied, as itself."""
    new = tmp_path / ".x.gpuonboard-unpack-tag-t"
    cmd = shardstream.seed_command(str(new), str(tmp_path / "no-tree"))
    r = subprocess.run(cmd, shell=True, input=shardstream.seed_stdin(["f"]), capture_output=True, check=True)
    assert parse_hashes(["f"], r.stdout.decode()) == {"f": None}
