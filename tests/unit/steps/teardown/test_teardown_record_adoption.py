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


def _meanwhile(tmp_path: Path, env: dict[str, str], action: str) -> None:
    """Run `action` (sh) once, inside the adoption's window: between its check that no record of
    the current id exists and its rename (the btime read by awk), as a second evaluation right
    after boot (another upload, teardown) does it."""
    shim = tmp_path / "bin" / "awk"
    shim.write_text(
        f'#!/bin/sh\nif ! [ -e "$MEANWHILE_DONE" ]; then : > "$MEANWHILE_DONE"; {action}; fi\n'
        'exec /usr/bin/awk "$@"\n'
    )
    shim.chmod(0o755)
    env["MEANWHILE_DONE"] = str(tmp_path / "meanwhile.done")


def test_a_record_the_current_id_got_meanwhile_is_never_replaced_by_an_adoption(tmp_path: Path) -> None:
    # review safety32: the check and the `mv` were two steps; a second evaluation that adopted (or
    # an upload that wrote) the current id's record between them lost it to the old one renamed over it
    cache, env = _box(tmp_path, "ext4")
    record = _old_record(tmp_path, cache)
    current = cache / f"uploads.trainer@{NEW}"
    _meanwhile(tmp_path, env, f"printf '%s\\0' {tmp_path}/data/fresh > {current}")
    assert _name(env) == f"trainer@{NEW}"
    assert current.read_bytes() == f"{tmp_path}/data/fresh\0".encode()
    assert record.read_bytes() == f"{tmp_path}/data/corpus\0".encode()  # (not lost either)


def test_written_lists_are_adopted_into_a_dir_a_concurrent_write_made_meanwhile(tmp_path: Path) -> None:
    # an upload's `mkdir -p written.<current id>` between the check and the rename left the old
    # lists behind under the old id (no tree they describe was ever removed by teardown again)
    cache, env = _box(tmp_path, "ext4")
    _old_record(tmp_path, cache)
    (cache / f"written.trainer@{NEW}").mkdir()
    assert _name(env) == f"trainer@{NEW}"
    assert (cache / f"written.trainer@{NEW}" / "abc").read_text() == "F 1 1 x\0"
    # one holding a list already: the old lists join it, none replaced
    (tmp_path / "b").mkdir()
    cache2, env2 = _box(tmp_path / "b", "ext4")
    _old_record(tmp_path / "b", cache2)
    (cache2 / f"written.trainer@{NEW}").mkdir()
    (cache2 / f"written.trainer@{NEW}" / "def").write_text("F 2 2 y\0")
    (cache2 / f"written.trainer@{NEW}" / "abc").write_text("F 3 3 z\0")
    (cache2 / f"written.trainer@{OLD}" / "ghi").write_text("F 4 4 w\0")
    assert _name(env2) == f"trainer@{NEW}"
    now = cache2 / f"written.trainer@{NEW}"
    assert sorted(p.name for p in now.iterdir()) == ["abc", "def", "ghi"]
    assert (now / "abc").read_text() == "F 3 3 z\0"
