"""What the record of uploads (uploadlock.TAKE_SCRIPT's `record`) names, and what teardown takes
for an upload in a dir holding recorded ones: the scripts run with this machine's sh, find and
coreutils over real directories (HOME a temp dir: the record goes there)."""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path

import pytest

from gpuonboard.steps.teardown import (
    _holds,
    classify_uploads,
    parse_recorded,
    pull_probe_command,
    recorded_probe_command,
    records,
)
from gpuonboard.steps.teardown.uploads import parse_theirs
from gpuonboard.testing.hosts import this_machines_record
from gpuonboard.transfer import uploadlock

# this machine's record of uploads (the test hosts are this machine)
MY_RECORD = this_machines_record()


def _sh(command: str, home: Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin"}
    return subprocess.run(["sh", "-c", command], capture_output=True, text=True, env=env, cwd=cwd)


def _recorded(home: Path) -> list[str]:
    path = home / ".cache" / "gpuonboard" / MY_RECORD
    return [p for p in path.read_text().split("\0") if p]


def _take(home: Path, dest: Path, target: str, plain: str = "", name: str = "corpus") -> None:
    lease = uploadlock.Lease(uploadlock.lease_path(str(dest), name), "t1")
    command = uploadlock.take_command(str(dest / target), lease, "me", "h", 5, 0, plain, name, "tag")
    r = _sh(command, home)
    assert r.returncode == 0 and r.stdout.splitlines()[-1].startswith("took "), r
    Path(lease.path).unlink()  # (given back: the next take is a new run's)


def test_the_record_names_what_the_upload_writes(tmp_path: Path) -> None:
    home, dest = tmp_path / "home", tmp_path / "scratch"
    home.mkdir()
    (dest / "corpus").mkdir(parents=True)  # the user's own dir of the dataset's name
    # `sync --shards` alone writes the store only: `corpus` beside it is not the upload's
    _take(home, dest, "corpus.shards")
    assert _recorded(home) == [f"{dest}/corpus.shards"]
    # --decrypt-to a dir not made yet, under a symlink: its resolved place (where teardown looks)
    nvme = tmp_path / "nvme"
    nvme.mkdir()
    (tmp_path / "link").symlink_to(nvme)
    _take(home, dest, "corpus.encrypted", plain=f"{tmp_path}/link/new/corpus")
    assert _recorded(home)[1:] == [f"{dest}/corpus.encrypted", f"{nvme}/new/corpus"]
    # plain mode: the copy itself (made by it, or found empty), once
    _take(home, dest, "corpus", plain=f"{dest}/corpus")
    _take(home, dest, "corpus", plain=f"{dest}/corpus")
    assert _recorded(home)[3:] == [f"{dest}/corpus"]


def test_a_dir_holding_the_users_files_before_the_upload_is_not_recorded(tmp_path: Path) -> None:
    """`sync --dest ~ --dataset proj` into the user's own ~/proj merges into it: recorded, it was
    removed whole by teardown, the user's files with it."""
    home, dest = tmp_path / "home", tmp_path / "scratch"
    (dest / "proj").mkdir(parents=True)
    (dest / "proj" / "notes.txt").write_text("mine\n")
    (dest / "shm" / "proj").mkdir(parents=True)
    (dest / "shm" / "proj" / "a.txt").write_text("another program's\n")
    home.mkdir()
    _take(home, dest, "proj", plain=f"{dest}/proj", name="proj")
    _take(home, dest, "proj.encrypted", plain=f"{dest}/shm/proj", name="proj")
    assert _recorded(home) == [f"{dest}/proj.encrypted"]
    # a plaintext tree marked as this very copy's was made by an upload of it
    (dest / "shm" / "proj" / uploadlock.COPY_MARK).write_text(f"{dest}/proj\n")
    _take(home, dest, "proj.encrypted", plain=f"{dest}/shm/proj", name="proj")
    assert _recorded(home) == [f"{dest}/proj.encrypted", f"{dest}/shm/proj"]


def test_in_a_dir_that_is_not_the_data_dir_only_recorded_uploads_are_taken(tmp_path: Path) -> None:
    home, other = tmp_path / "home", tmp_path / "scratch"
    home.mkdir()
    for d in ("imgs.shards", "ckpt.shards", "model", "model.shards", ".imgs.gpuonboard-unpack-t-x", "imgs"):
        (other / d).mkdir(parents=True)
    (other / "imgs.shards" / "manifest.json").write_text("{}")
    (other / "ckpt.shards" / "manifest.json").write_text("{}")  # the user's sharded checkpoint
    own = '{"format": "gpuonboard-shards/3", "shard_size": 268435456, "shards": []}'
    (other / "model.shards" / "manifest.json").write_text(own)
    (other / "model.shards" / "manifest.unpacked.json").write_text(own)
    (other / ".imgs.gpuonboard-upload").write_text("token t\n")
    os.utime(other / ".imgs.gpuonboard-upload", (1_000_000_000, 1_000_000_000))  # (a run long over)
    (home / ".cache" / "gpuonboard").mkdir(parents=True)
    (home / ".cache" / "gpuonboard" / MY_RECORD).write_bytes(f"{other}/imgs.shards\0{other}/imgs\0".encode())
    nothing = "printf 'end\\0' | "  # (it wrote nothing: the input is the end mark alone)
    _sh(nothing + uploadlock.write_listing_command(f"{other}/imgs"), home)

    found = parse_recorded(_sh(recorded_probe_command(), home).stdout)
    assert found is not None
    names, listings = found
    assert names == {str(other): {"imgs", "imgs.shards"}}
    elsewhere = classify_uploads(listings[str(other)], "", (), names, only_recorded=True)
    assert elsewhere is not None
    assert elsewhere.ours == (".imgs.gpuonboard-unpack-t-x", ".imgs.gpuonboard-upload", "imgs", "imgs.shards")
    assert elsewhere.others == ("ckpt.shards", "model", "model.shards")
    # the data dir's own rule: a shard store in gpuonboard's own format there is an upload's (not
    # the user's `ckpt.shards/manifest.json` of another tool); the tree unpacked from one is
    # named, not removed: no upload listed what it wrote there
    data_dir = classify_uploads(listings[str(other)], "", (), names)
    assert data_dir is not None and "model.shards" in data_dir.ours, data_dir
    assert "ckpt.shards" in data_dir.others and "model" in dict(data_dir.kept), data_dir


def test_a_record_of_a_path_at_the_top_is_read_in_its_dir(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".cache" / "gpuonboard").mkdir(parents=True)
    (home / ".cache" / "gpuonboard" / MY_RECORD).write_bytes(b"/gpuonboard-test-nothing-here\0")
    found = parse_recorded(_sh(recorded_probe_command(), home).stdout)
    assert found is not None and found[0] == {"/": {"gpuonboard-test-nothing-here"}}
    assert found[1]["/"].startswith("dir /\0")


def test_a_copy_holding_the_data_dir() -> None:
    assert _holds("/mnt/data", "/mnt/data") and _holds("/mnt", "/mnt/data") and _holds("/", "/mnt")
    assert not _holds("/mnt/data2", "/mnt/data") and not _holds("/mnt/data/x", "/mnt/data")


def test_the_pulls_link_check_counts_recorded_uploads_as_removed(tmp_path: Path) -> None:
    home, res, other = tmp_path / "home", tmp_path / "results", tmp_path / "scratch"
    for d in (home / ".cache" / "gpuonboard", res, other / "corpus", other / "corpus.shards", other / "runs"):
        d.mkdir(parents=True)
    for f in ("corpus/a.bin", "corpus.shards/manifest.json", "runs/b.pt"):
        (other / f).write_text("x")
    (home / ".cache" / "gpuonboard" / MY_RECORD).write_bytes(f"{other}/corpus\0".encode())
    (res / "a").symlink_to(other / "corpus" / "a.bin")
    (res / "m").symlink_to(other / "corpus.shards" / "manifest.json")
    (res / "b").symlink_to(other / "runs" / "b.pt")  # beside the upload, not in it: it stays
    got = records(_sh(pull_probe_command(str(res), [], recorded=True), home).stdout)
    kinds = sorted((k, v) for k, v in got if k in ("doomed", "outside"))
    assert kinds == [("doomed", "./a"), ("doomed", "./m"), ("outside", "./b")], got
    # without the record read (the step arg off): as before
    got = records(_sh(pull_probe_command(str(res), [], recorded=False), home).stdout)
    assert sorted(k for k, _ in got if k in ("doomed", "outside")) == ["outside"] * 3


def _other_machines_record(home: Path, name: str, *paths: Path) -> Path:
    """Another machine's record of uploads beside this machine's (as `sync` writes them)."""
    cache = home / ".cache" / "gpuonboard"
    cache.mkdir(parents=True, exist_ok=True)
    (cache / MY_RECORD).write_bytes(b"")
    record = cache / f"{uploadlock.RECORD_PREFIX}{name}"
    record.write_bytes(b"".join(f"{p}\0".encode() for p in paths))
    return record


def test_another_machines_record_of_a_copy_on_a_local_disk_is_no_shared_upload(tmp_path: Path) -> None:
    """A record `uploads.node2` beside this machine's, holding a copy on this machine's own disk
    (tmp_path: a local filesystem): a cloned image's old record, or this machine's from before its
    `uname -n` changed. It made the copy node2's for ever (`theirs node2 PATH`: kept by every
    teardown); a record is another machine's upload only on a filesystem machines share."""
    home, scratch = tmp_path / "home", tmp_path / "scratch"
    (scratch / "corpus").mkdir(parents=True)
    assert subprocess.run(
        ["stat", "-f", "-c", "%T", str(scratch)], capture_output=True, text=True
    ).stdout.strip() in ("ext2/ext3", "xfs", "btrfs", "tmpfs", "overlayfs", "zfs")
    _other_machines_record(home, "node2", scratch / "corpus")
    output = _sh(recorded_probe_command(), home).stdout
    assert parse_theirs(output) == {}


@pytest.mark.parametrize(
    ("fs_type", "shared"),
    [
        # `stat -f -c %T`'s names (coreutils) of filesystems other machines may see
        ("nfs", True),
        ("nfs4", True),
        ("cifs", True),
        ("smb2", True),
        ("lustre", True),
        ("gpfs", True),
        ("ceph", True),
        ("fuseblk", True),  # (sshfs and other FUSE mounts)
        ("fuse", True),
        ("UNKNOWN (0x19830326)", True),  # (a type coreutils does not name: never taken for local)
        ("", True),  # (stat could not say)
        # and of local ones
        ("ext2/ext3", False),
        ("xfs", False),
        ("btrfs", False),
        ("tmpfs", False),
        ("overlayfs", False),
        ("zfs", False),
    ],
)
def test_which_filesystems_other_machines_may_share(tmp_path: Path, fs_type: str, shared: bool) -> None:
    r = _sh(f"{uploadlock.SHARED_FS_FN}sharedfs {shlex.quote(fs_type)}", tmp_path)
    assert (r.returncode == 0) is shared, r
