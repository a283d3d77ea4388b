"""Teardown empties a configured dir (vars.dataset_dir, vars.decrypted_dir) only of what uploads
listed as written there and is unchanged (uploadlock.WRITTEN_DIR), keeps and names the rest, and
the dir with it: before, it removed these dirs whole, a job's checkpoint written into the dataset
dir after the upload with them. The scripts run with this machine's sh, find and coreutils over
real directories (HOME a temp dir)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from gpuonboard.steps.teardown import emptied
from gpuonboard.steps.teardown.emptied import Emptied
from gpuonboard.steps.teardown.files import _guarded_rm_script
from gpuonboard.testing.hosts import this_machines_record
from gpuonboard.transfer import uploadlock

MY_RECORD = this_machines_record()


def _sh(command: str, home: Path, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin"}
    return subprocess.run(["sh", "-c", command], input=stdin, capture_output=True, env=env)


def _upload(home: Path, tree: Path, files: dict[str, bytes]) -> None:
    """What `sync` does for a tree it made: writes the files, lists them for teardown."""
    for rel, data in files.items():
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        (tree / rel).write_bytes(data)
    listing = uploadlock.listing_stdin(
        ("f", rel, len(data), (tree / rel).stat().st_mtime_ns // 10**9) for rel, data in files.items()
    )
    assert _sh(uploadlock.write_listing_command(str(tree)), home, listing).returncode == 0


def _probe(home: Path, d: Path) -> Emptied | None:
    out = _sh(emptied.probe_command([str(d)]), home)
    assert out.returncode == 0, out.stderr
    return emptied.parse_probe(out.stdout.decode("utf-8", "surrogateescape"))[str(d)]


def _empty(home: Path, d: Path) -> None:
    r = _sh("sh -s", home, _guarded_rm_script([], emptying=[(str(d), str(d))]).encode())
    assert r.returncode == 0, r.stderr


def test_a_jobs_checkpoint_in_the_dataset_dir_stays_named_and_the_upload_goes(tmp_path: Path) -> None:
    home, d = tmp_path / "home", tmp_path / "data" / "dataset"
    home.mkdir()
    _upload(home, d, {"train.bin": b"T" * 300, "sub/val.bin": b"v\n"})
    (d / uploadlock.COPY_MARK).write_text(f"{d}\n")  # (gpuonboard's own: goes with the upload)
    seen = _probe(home, d)
    assert seen is not None and (seen.lists, seen.remove, seen.kept) == (1, 3, 0) and seen.note() == ""
    # the job writes its checkpoint into the dataset dir after the upload
    (d / "epoch9-ckpt.pt").write_bytes(b"W" * 1500)
    seen = _probe(home, d)
    assert seen is not None and (seen.remove, seen.kept, seen.kept_bytes, seen.changed) == (3, 1, 1500, 0)
    assert seen.note() == (
        f"; kept in {d}: 1 file no upload wrote (epoch9-ckpt.pt, 1.5 KiB): pull it or remove it"
        " yourself (the dir stays)"
    )
    _empty(home, d)
    assert sorted(p.name for p in d.rglob("*")) == ["epoch9-ckpt.pt"]  # (sub/ went, emptied)
    # the checkpoint pulled: the rerun removes the dir itself
    (d / "epoch9-ckpt.pt").unlink()
    seen = _probe(home, d)
    assert seen is not None and (seen.remove, seen.kept) == (0, 0)
    _empty(home, d)
    assert not d.exists()


def test_a_dataset_file_changed_since_its_upload_stays_even_at_the_same_size(tmp_path: Path) -> None:
    home, d = tmp_path / "home", tmp_path / "plain"
    home.mkdir()
    _upload(home, d, {"a.txt": b"alpha\n", "b.txt": b"beta\n"})
    st = (d / "a.txt").stat()
    (d / "a.txt").write_bytes(b"ALPHA\n")  # rewritten in place by a job, same size, a later mtime
    os.utime(d / "a.txt", ns=(st.st_atime_ns, st.st_mtime_ns + 5 * 10**9))
    seen = _probe(home, d)
    assert seen is not None and (seen.remove, seen.kept, seen.changed) == (1, 1, 1)
    assert seen.note() == (
        f"; kept in {d}: 1 file changed since uploaded (a.txt, 6 B): pull it or remove it yourself"
        " (the dir stays)"
    )
    _empty(home, d)
    assert [p.name for p in d.iterdir()] == ["a.txt"] and (d / "a.txt").read_bytes() == b"ALPHA\n"


def test_a_dir_no_upload_listed_is_kept_whole_and_named(tmp_path: Path) -> None:
    # filled by other means (scp): no list of what uploads wrote covers it
    home, d = tmp_path / "home", tmp_path / "data" / "by scp"
    home.mkdir()
    d.mkdir(parents=True)
    (d / "train.bin").write_bytes(b"x" * 10)
    seen = _probe(home, d)
    assert seen is not None and (seen.lists, seen.remove, seen.kept) == (0, 0, 1)
    assert seen.note() == (
        f"; kept: {d} as it is (1 file, 10 B, e.g. 'train.bin'): no upload listed what it wrote there"
        " (filled by other means, such as scp), so nothing in it was removed; pull what you need, then"
        f" remove it yourself (rm -rf -- '{d}')"
    )
    _empty(home, d)
    assert (d / "train.bin").read_bytes() == b"x" * 10


def test_an_upload_recorded_inside_the_dir_counts_by_its_own_list(tmp_path: Path) -> None:
    # vars.dataset_dir the data dir holding the copy `corpus` that sync recorded (its list keyed
    # by the copy's path), and the user's notes beside it
    home, d = tmp_path / "home", tmp_path / "data"
    home.mkdir()
    _upload(home, d / "corpus", {"x.bin": b"1", "y/z.bin": b"22"})
    cache = home / ".cache" / "gpuonboard"
    (cache / MY_RECORD).write_bytes(f"{d / 'corpus'}\0".encode())
    (d / "notes.txt").write_text("mine\n")
    seen = _probe(home, d)
    assert seen is not None and (seen.lists, seen.remove, seen.kept) == (1, 2, 1)
    _empty(home, d)
    assert sorted(str(p.relative_to(d)) for p in d.rglob("*")) == ["notes.txt"]


def test_a_probe_cut_short_is_never_read_as_nothing_kept() -> None:
    out = "emptied /d\0dir /d\0lists 1\0remove 3\0"  # (no `kept` record)
    assert emptied.parse_probe(out) == {"/d": None}
    assert emptied.parse_probe("emptied /d\0none\0") == {"/d": None}
