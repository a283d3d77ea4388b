"""Teardown removes an upload's plaintext tree whole only while it holds nothing but what uploads
listed as written there (uploadlock.WRITTEN_DIR), takes a `X.shards` dir for a store only on
gpuonboard's own manifest format or the record, and removes its record of uploads only after
everything before it went. The scripts run with this machine's sh, find and coreutils over real
directories (HOME a temp dir)."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

from gpuonboard.steps.teardown import classify_uploads, uploads_probe_command
from gpuonboard.steps.teardown.emptied import Emptied
from gpuonboard.steps.teardown.files import _guarded_rm_script
from gpuonboard.steps.teardown.uploads import THEIRS, Uploads, kept_note
from gpuonboard.testing.hosts import this_machines_record
from gpuonboard.transfer import uploadlock

MY_RECORD = this_machines_record()
OWN_MANIFEST = '{"format": "gpuonboard-shards/3", "shard_size": 268435456, "shards": []}'


def _sh(command: str, home: Path, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin"}
    return subprocess.run(["sh", "-c", command], input=stdin, capture_output=True, env=env)


def _upload(home: Path, tree: Path, files: dict[str, bytes]) -> None:
    """What `sync` does for a tree it made: writes the files, lists them for teardown."""
    for rel, data in files.items():
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        (tree / rel).write_bytes(data)
    listing = uploadlock.listing_stdin(
        ("f", rel, len(data), int((tree / rel).stat().st_mtime)) for rel, data in files.items()
    )
    assert _sh(uploadlock.write_listing_command(str(tree)), home, listing).returncode == 0


def _found(home: Path, disk: Path, dataset: str = "corpus", recorded: tuple[str, ...] = ()) -> Uploads:
    out = _sh(uploads_probe_command(str(disk)), home).stdout.decode("utf-8", "surrogateescape")
    found = classify_uploads(out, dataset, (), {str(disk): set(recorded)})
    assert found is not None
    return found


def test_a_tree_goes_whole_only_while_it_holds_what_uploads_wrote(tmp_path: Path) -> None:
    home, disk = tmp_path / "home", tmp_path / "disk"
    home.mkdir()
    _upload(home, disk / "corpus", {"train.txt": b"data\n", "sub/val.txt": b"v\n"})
    (disk / "corpus" / ".gpuonboard-rsync-partial").mkdir()  # (gpuonboard's own: not counted)
    found = _found(home, disk)
    assert found.ours == ("corpus",) and set(found.guards) == {"corpus"} and found.kept == ()
    # a job's checkpoint written into the copy: the copy stays, and the file is named
    (disk / "corpus" / "checkpoints").mkdir()
    (disk / "corpus" / "checkpoints" / "epoch9.pt").write_bytes(b"W" * 5000)
    found = _found(home, disk)
    assert found.ours == () and "corpus" in found.others, found
    assert found.kept == (("corpus", "e.g. 'checkpoints/epoch9.pt'"),)
    # a dataset file rewritten on the host (another size): the same
    (disk / "corpus" / "checkpoints" / "epoch9.pt").unlink()
    (disk / "corpus" / "train.txt").write_bytes(b"tokenized, longer\n")
    assert _found(home, disk).kept == (("corpus", "e.g. 'train.txt'"),)
    # a dir of the dataset's name that no upload listed (the user's own, an upload merged into)
    (disk / "mine").mkdir()
    (disk / "mine" / "model-final.pt").write_bytes(b"M")
    found = _found(home, disk, "mine")
    assert found.ours == () and found.kept == (("mine", ""),)  # (said: no upload listed it)
    assert kept_note([(f"{disk}/mine", "")]) == (
        f"; left on the host: {disk}/mine, named or marked as an upload's copy, but no upload listed"
        " what it wrote there (a dir of yours that an upload merged into, or one an older gpuonboard"
        " uploaded): delete it yourself once nothing there is needed"
    )


def test_a_shards_dir_is_a_store_only_in_gpuonboards_format_or_recorded(tmp_path: Path) -> None:
    """Other tools write `X.shards/manifest.json` too (a sharded checkpoint): never removed as
    gpuonboard's upload on that alone; an age-encrypted manifest only with the record."""
    home, disk = tmp_path / "home", tmp_path / "disk"
    home.mkdir()
    manifests = {
        "llama-ft.shards": '{"shards": ["shard-00000.bin"], "tool": "my-own-sharder"}',
        "imgs.shards": OWN_MANIFEST,
        "docs.shards": "age-encryption.org/v1\n-> X25519 abc\n",
        "notes.shards": "age-encryption.org/v1\n-> X25519 def\n",
    }
    for name, text in manifests.items():
        (disk / name).mkdir(parents=True)
        (disk / name / "manifest.json").write_text(text)
    found = _found(home, disk, "llama-ft", recorded=("notes.shards",))
    assert found.ours == ("imgs.shards", "notes.shards"), found
    assert found.others == ("docs.shards", "llama-ft.shards"), found


def test_a_changed_tree_and_the_record_stay_when_the_removal_finds_them(tmp_path: Path) -> None:
    """The removal compares each tree's listing again (a job may write between the probe and
    it); the record of uploads goes last and only when everything before it went, so a rerun
    still finds what was left (it used to go anyway: the rerun said `already clean`)."""
    home, disk = tmp_path / "home", tmp_path / "disk"
    home.mkdir()
    _upload(home, disk / "corpus", {"a.txt": b"a\n"})
    _upload(home, disk / "imgs", {"b.txt": b"b\n"})
    found = _found(home, disk, "corpus", recorded=("imgs",))
    assert found.ours == ("corpus", "imgs"), found
    record = home / ".cache" / "gpuonboard" / MY_RECORD
    record.write_bytes(f"{disk}/imgs\0".encode())
    targets = [(str(disk / n), str(disk / n)) for n in found.ours] + [(str(record), str(record))]
    guards = {str(disk / n): d for n, d in found.guards.items()}
    (disk / "imgs" / "out.log").write_text("written since\n")
    r = _sh(_guarded_rm_script(targets, None, guards, last=1), home)
    assert r.returncode == 1 and b"changed since teardown looked at it, left" in r.stderr, r
    assert not (disk / "corpus").exists() and (disk / "imgs" / "out.log").is_file()
    assert record.is_file()
    # nothing changed: all go, the record last
    found = _found(home, disk, "corpus", recorded=("imgs",))
    assert found.ours == () and "imgs" in dict(found.kept)
    (disk / "imgs" / "out.log").unlink()
    found = _found(home, disk, "corpus", recorded=("imgs",))
    targets = [(str(disk / "imgs"), str(disk / "imgs")), (str(record), str(record))]
    r = _sh(_guarded_rm_script(targets, None, {str(disk / "imgs"): found.guards["imgs"]}, last=1), home)
    assert r.returncode == 0 and not (disk / "imgs").exists() and not record.exists(), r


def test_a_dataset_file_rewritten_at_the_same_size_keeps_its_tree(tmp_path: Path) -> None:
    """The list holds each file's mtime as the upload left it: a job's rewrite in place at the
    same size (a new mtime) keeps the tree, named; a sub-second difference alone does not (file
    systems keep mtimes to different precision: compared to the second)."""
    home, disk = tmp_path / "home", tmp_path / "disk"
    home.mkdir()
    for rel, data in (("a.bin", b"A" * 64), ("sub/b.bin", b"B" * 32)):
        (disk / "corpus" / rel).parent.mkdir(parents=True, exist_ok=True)
        (disk / "corpus" / rel).write_bytes(data)
        # (as rsync -a leaves them: the source's mtime, here .25 s into its second)
        os.utime(disk / "corpus" / rel, ns=(0, 1_700_000_000_250_000_000))
    sizes = (("a.bin", 64), ("sub/b.bin", 32))
    listing = uploadlock.listing_stdin([("f", r, n, 1_700_000_000) for r, n in sizes])
    assert _sh(uploadlock.write_listing_command(str(disk / "corpus")), home, listing).returncode == 0
    assert _found(home, disk).ours == ("corpus",)
    (disk / "corpus" / "a.bin").write_bytes(b"Z" * 64)  # the job's, same size
    found = _found(home, disk)
    assert found.ours == () and found.kept == (("corpus", "e.g. 'a.bin'"),), found


def test_a_list_an_older_gpuonboard_wrote_keeps_its_tree_and_says_so(tmp_path: Path) -> None:
    """A list without mtimes (`f SIZE REL`: a gpuonboard from before) cannot tell a rewrite at
    the same size from the upload: the tree stays, named as such, never removed on sizes alone."""
    home, disk = tmp_path / "home", tmp_path / "disk"
    home.mkdir()
    tree = disk / "corpus"
    (tree / "sub").mkdir(parents=True)
    (tree / "a.bin").write_bytes(b"A" * 64)
    (tree / "sub" / "b.bin").write_bytes(b"B" * 32)
    (tree / "link").symlink_to("a.bin")
    older = b"f 64 a.bin\0f 32 sub/b.bin\0l 0 link\0"
    write = uploadlock.write_listing_command(str(tree))
    assert _sh(write, home, older + b"end\0").returncode == 0  # (as an older gpuonboard wrote it)
    found = _found(home, disk)
    assert found.ours == () and found.kept == (("corpus", "older"),), found
    assert kept_note([(str(tree), "older")]) == (
        f"; left on the host: {tree}, uploaded by an older gpuonboard whose list of what it wrote"
        " there holds sizes but no modification times, so a dataset file a job rewrote there at the"
        " same size cannot be told from the upload's: pull what you need, then delete it yourself"
    )
    # an upload by this gpuonboard lists it anew: the tree is judged by that list
    listing = uploadlock.listing_stdin(
        [("f", r, n, int((tree / r).stat().st_mtime)) for r, n in (("a.bin", 64), ("sub/b.bin", 32))]
    )
    assert _sh(write, home, listing).returncode == 0
    assert _found(home, disk).ours == ("corpus",)


def _record(home: Path, tree: Path) -> list[bytes]:
    (found,) = (home / ".cache" / "gpuonboard").glob(
        f"written.*/{hashlib.sha256(str(tree).encode()).hexdigest()}"
    )
    return [e for e in found.read_bytes().split(b"\0") if e]


def test_each_write_keeps_of_the_old_list_only_what_is_still_true(tmp_path: Path) -> None:
    """The list was the union over every upload: each rerun that unpacked added the whole dataset
    again (its own stamp), so it grew by a dataset's listing per rerun. A write now keeps the old
    entries still true of the tree (a file it leaves as it is, or rewrites only later) and adds
    its own; an older gpuonboard's `f SIZE REL` entries go with the first write. Real sh, find,
    comm and sort over a real tree."""
    home, tree = tmp_path / "home", tmp_path / "disk" / "corpus"
    home.mkdir()
    tree.mkdir(parents=True)
    (tree / "a.bin").write_bytes(b"A" * 8)
    (tree / "b.bin").write_bytes(b"B" * 4)
    os.utime(tree / "a.bin", (1_600_000_000, 1_600_000_000))
    os.utime(tree / "b.bin", (1_600_000_000, 1_600_000_000))
    write = uploadlock.write_listing_command(str(tree))
    assert _sh(write, home, b"f 8 a.bin\0f 4 b.bin\0end\0").returncode == 0  # (an older gpuonboard's)
    for stamp in range(1_700_000_000, 1_700_000_004):
        listing = uploadlock.listing_stdin([("f", "a.bin", 8, stamp), ("f", "b.bin", 4, 1_600_000_000)])
        assert _sh(write, home, listing).returncode == 0
        os.utime(tree / "a.bin", (stamp, stamp))  # (a.bin written anew by the upload; b.bin left)
    # (a.bin as the last write found it, and as it wrote it)
    assert _record(home, tree) == [b"F 4 1600000000 b.bin", b"F 8 1700000002 a.bin", b"F 8 1700000003 a.bin"]
    assert _found(home, disk=tree.parent).ours == ("corpus",)


def test_the_files_a_seed_linked_are_listed_as_they_stand(tmp_path: Path) -> None:
    """A rerun of an unpack hard-links the files of shards it does not send from the old tree
    (sha256-checked): they keep the old tree's mtime (an older gpuonboard's unpack time, to the
    nanosecond), not the stamp the closing command gives what it unpacks. They are added to the
    list as they stand; a file the unpack dir holds once (unpacked, or copied) is not."""
    home, tree = tmp_path / "home", tmp_path / "disk" / "corpus"
    home.mkdir()
    (tree / "sub").mkdir(parents=True)
    unpack = tmp_path / "disk" / ".corpus.gpuonboard-unpack-1"
    (unpack / "sub").mkdir(parents=True)
    (tree / "sub" / "kept.bin").write_bytes(b"K" * 3)
    os.utime(tree / "sub" / "kept.bin", ns=(1_650_000_000_123_456_789,) * 2)
    os.link(tree / "sub" / "kept.bin", unpack / "sub" / "kept.bin")
    (unpack / "new.bin").write_bytes(b"N")
    assert _sh(uploadlock.seeded_listing_command(str(tree), str(unpack)), home).returncode == 0
    assert _record(home, tree) == [b"F 3 1650000000 sub/kept.bin"]


def test_a_copy_another_machine_recorded_names_its_record_and_the_command_for_when_it_is_gone() -> None:
    """A copy kept for another machine's record: a record outlives its machine (a clone's, one
    whose `uname -n` changed), and the note said only that the last machine's teardown removes it:
    now it names the record and the `rm -rf` that removes the copy where that machine is gone."""
    note = kept_note([("/nfs/scratch/my corpus", THEIRS + "node2")])
    assert "left on the host: /nfs/scratch/my corpus (node2)" in note
    assert (
        "where that machine is gone, its record (~/.cache/gpuonboard/uploads.node2, or under"
        " $XDG_CACHE_HOME) keeps it: remove the copy with `rm -rf -- '/nfs/scratch/my corpus'` and"
        " that record"
    ) in note


def test_a_dataset_dir_another_machine_uploaded_into_names_its_list() -> None:
    note = Emptied("/nfs/disk/corpus", "/nfs/disk/corpus", 1, 0, 0, 0, 0, theirs=("node2",)).note()
    assert note.endswith(
        "; where that machine is gone, its list of what uploads wrote keeps it: remove it (`rm -rf --"
        " ~/.cache/gpuonboard/written.node2`, or under $XDG_CACHE_HOME) and run the teardown again"
    ), note
