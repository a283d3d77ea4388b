"""Adoption of a record of uploads named by another machine id (uploadlock.MACHINE_SH), run with
this machine's sh and coreutils: a host name shim (`uname -n` = trainer), a `stat -f` shim naming
the filesystem type (all else real stat), the machine id read from a file of the test's own.
Review revD: a second live machine named alike (its own id, one home shared on an overlay or
ext4 bind mount, BeeGFS...) took the first's record and removed its in-use upload. A record is
adopted only where it (and its uploads) are on a local filesystem of the allowlist and it was
last written before this boot; once, by renaming it (and its `written.` lists) to the current id;
never a `.stale` marker nor a record marked stale."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from gpuonboard.transfer import uploadlock

OLD, NEW = "aaaaaaaaaaaa", "bbbbbbbbbbbb"


def _box(tmp_path: Path, fstype: str) -> tuple[Path, dict[str, str]]:
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    (bin_ / "uname").write_text("#!/bin/sh\necho trainer\n")
    (bin_ / "stat").write_text(
        '#!/bin/sh\nif [ "$1" = -f ]; then case $5 in */nfs/*) echo nfs ;; *) echo "$FSTYPE" ;; esac;'
        ' else exec /usr/bin/stat "$@"; fi\n'
    )
    for f in bin_.iterdir():
        f.chmod(0o755)
    (tmp_path / "mid").write_text(NEW + "00000000000000000000\n")
    cache = tmp_path / "home" / ".cache" / "gpuonboard"
    cache.mkdir(parents=True)
    env = {"HOME": str(tmp_path / "home"), "PATH": f"{bin_}:/usr/bin:/bin", "FSTYPE": fstype}
    env["MIDFILE"] = str(tmp_path / "mid")
    return cache, env


def _name(env: dict[str, str]) -> str:
    script = "printf '%s' " + uploadlock.MACHINE_SH.replace("/etc/machine-id", '"$MIDFILE"')
    return subprocess.run(["sh", "-c", script], capture_output=True, text=True, check=True, env=env).stdout


def _old_record(tmp_path: Path, cache: Path, *, before_boot: bool = True) -> Path:
    (tmp_path / "data" / "corpus").mkdir(parents=True)
    record = cache / f"uploads.trainer@{OLD}"
    record.write_bytes(f"{tmp_path}/data/corpus\0".encode())
    (cache / f"written.trainer@{OLD}").mkdir()
    (cache / f"written.trainer@{OLD}" / "abc").write_text("F 1 1 x\0")
    if before_boot:
        os.utime(record, (1_000_000, 1_000_000))
    return record


@pytest.mark.parametrize("fstype", ["ext2/ext3", "ext4", "xfs", "btrfs", "zfs", "tmpfs"])
def test_an_earlier_boots_record_on_a_local_disk_is_adopted_once_by_renaming(
    tmp_path: Path, fstype: str
) -> None:
    cache, env = _box(tmp_path, fstype)
    _old_record(tmp_path, cache)
    assert _name(env) == f"trainer@{NEW}"
    assert sorted(p.name for p in cache.iterdir()) == [f"uploads.trainer@{NEW}", f"written.trainer@{NEW}"]
    assert (cache / f"uploads.trainer@{NEW}").read_bytes() == f"{tmp_path}/data/corpus\0".encode()
    assert (cache / f"written.trainer@{NEW}" / "abc").is_file()
    # sticky: a later upload to an NFS dir appends to the one record, whose name stays
    (tmp_path / "nfs" / "scratch").mkdir(parents=True)
    with (cache / f"uploads.trainer@{NEW}").open("ab") as f:
        f.write(f"{tmp_path}/nfs/scratch\0".encode())
    assert _name(env) == f"trainer@{NEW}"


@pytest.mark.parametrize(
    "fstype",
    ["overlayfs", "fhgfs", "gfs2", "gfs", "ocfs2", "acfs", "vboxsf", "vmhgfs", "prl_fs", "nfs", "fuseblk"],
)
def test_a_record_on_any_other_filesystem_is_never_adopted(tmp_path: Path, fstype: str) -> None:
    cache, env = _box(tmp_path, fstype)
    record = _old_record(tmp_path, cache)
    assert _name(env) == f"trainer@{NEW}"
    assert record.is_file() and not (cache / f"uploads.trainer@{NEW}").exists()


def test_a_record_written_since_this_boot_is_another_live_machines(tmp_path: Path) -> None:
    cache, env = _box(tmp_path, "ext4")
    record = _old_record(tmp_path, cache, before_boot=False)
    assert _name(env) == f"trainer@{NEW}"
    assert record.is_file() and not (cache / f"uploads.trainer@{NEW}").exists()


def test_a_stale_marker_or_a_record_marked_stale_is_never_adopted(tmp_path: Path) -> None:
    cache, env = _box(tmp_path, "ext4")
    record = _old_record(tmp_path, cache)
    marker = cache / f"uploads.trainer@{OLD}.stale"
    marker.write_bytes(b"")
    os.utime(marker, (1_000_000, 1_000_000))
    assert _name(env) == f"trainer@{NEW}"
    assert record.is_file() and marker.is_file() and not (cache / f"uploads.trainer@{NEW}").exists()
    record.unlink()
    assert _name(env) == f"trainer@{NEW}"
    assert marker.is_file() and not (cache / f"uploads.trainer@{NEW}").exists()


@pytest.mark.parametrize(
    "fstype", ["fhgfs", "gfs", "gfs2", "ocfs2", "acfs", "vmhgfs", "prl_fs", "vboxsf", "snfs", "ibrix", "coda"]
)
def test_cluster_and_host_share_filesystems_count_as_shared(fstype: str) -> None:
    script = uploadlock.SHARED_FS_FN + f"sharedfs {fstype}"
    assert subprocess.run(["sh", "-c", script]).returncode == 0
