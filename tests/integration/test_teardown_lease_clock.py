"""Teardown's "an upload runs there now" check reads an upload lease's age by the clock of the
file system the lease is on (its mtime is that clock's: on NFS the server's), as `sync` itself
does (uploadlock's `fsnow`), not by the host's `date`. A host whose clock is ahead of its file
server's saw the lease of an upload running now as over a minute old, and teardown removed the
copy under it; one whose clock is behind saw a lease long stale as fresh, and refused every
teardown until the clocks met. Real sshd test host; its `date` is a stand-in first on the host's
PATH, off by `skew` seconds (the host's clock; the file system keeps the real one)."""

from __future__ import annotations

import os
import re
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import Project
from test_teardown import inventory, remote, steps

from gpuonboard.testing import TestHostPool

__all__ = ["remote"]  # the fixture, used by name


@pytest.fixture
def host_clock(pool: TestHostPool) -> Iterator[Path]:
    """The host's `date`, whose offset the test writes (`skew` seconds ahead, or behind). The
    uploads other tests' `sync` recorded in the host's home (the pool's hosts live for the
    session) are not this test's: gone before and after it."""
    host = pool.hosts["teardown"]
    stand_in = host.bin_dir / "date"
    stand_in.parent.mkdir(exist_ok=True)
    shutil.rmtree(host.home / ".cache" / "gpuonboard", ignore_errors=True)
    yield stand_in
    stand_in.unlink(missing_ok=True)
    shutil.rmtree(host.home / ".cache" / "gpuonboard", ignore_errors=True)


def _skew(stand_in: Path, seconds: int) -> None:
    stand_in.write_text(f'#!/bin/sh\nexec /usr/bin/date -d "@$(( $(/usr/bin/date +%s) + {seconds} ))" "$@"\n')
    stand_in.chmod(0o755)


def _data_dir(project: Project, pool: TestHostPool, remote: dict[str, Path], tmp_path: Path) -> Path:
    """The data dir holding the copy of the dataset that a real `sync` uploaded (and listed)."""
    disk = remote["base"] / "disk"
    disk.mkdir()
    corpus = tmp_path / "local" / "corpus"
    corpus.mkdir(parents=True)
    (corpus / "a.bin").write_bytes(b"a" * 100)
    # (no vars.decrypted_dir: host_clock removed the list of what uploads wrote there with the cache,
    # so teardown would keep it, named, and the messages compared below would say so)
    inventory(project, pool, remote, dataset=str(corpus), dataset_dir=None, decrypted_dir=None)
    hosts = project.root / "inventory" / "hosts.yml"
    hosts.write_text(hosts.read_text().replace("address:", f"data_dir: {disk}\n    address:", 1))
    r = project.cli("sync", "--host", "teardown")
    assert r.returncode == 0, r.stdout + r.stderr
    assert sorted(p.name for p in disk.iterdir()) == ["corpus"]
    return disk


@pytest.mark.parametrize("lease_in_copy", [False, True])
def test_a_host_clock_ahead_of_its_file_system_keeps_a_running_uploads_copy(
    project: Project,
    pool: TestHostPool,
    remote: dict[str, Path],
    tmp_path: Path,
    host_clock: Path,
    lease_in_copy: bool,
) -> None:
    disk = _data_dir(project, pool, remote, tmp_path)
    lease = disk / "corpus" / ".gpuonboard-upload" if lease_in_copy else disk / ".corpus.gpuonboard-upload"
    lease.write_text("token 0123456789abcdef\n")  # (refreshed now, by the file system's clock)
    _skew(host_clock, 300)
    # check mode writes nothing on the host, so it reads the lease's age by the host's clock (300 s),
    # and says so: near the limit, the real teardown (the file system's clock) may read otherwise
    r = project.cli("teardown", "--host", "teardown", "--keep-image", "--check")
    assert r.returncode == 0, r.stdout + r.stderr
    files = steps(project)["files"]
    said = lease if not lease_in_copy else disk / "corpus" / ".gpuonboard-upload"
    assert re.search(
        rf" \(check mode read the age of the upload lease {re.escape(str(said))} \(3[01][0-9] s\) by the"
        " host's clock, as it writes nothing on the host; teardown itself reads it by the clock of the"
        r" lease's file system, which on NFS may be minutes off the host's, and may find otherwise\)"
        r" \(check mode:",
        files["msg"],
    ), files
    r = project.cli("teardown", "--host", "teardown", "--keep-image")
    assert r.returncode == 1, r.stdout + r.stderr
    files = steps(project)["files"]
    assert files["msg"] == (
        f"refusing to delete anything on teardown: an upload to {disk}/corpus is running (its lease"
        " was refreshed within the last minute); wait for it to end, or stop it, then rerun"
    ), files
    assert (disk / "corpus" / "a.bin").read_bytes() == b"a" * 100
    kept = ["corpus"] if lease_in_copy else [lease.name, "corpus"]
    assert sorted(p.name for p in disk.iterdir()) == kept


def test_a_host_clock_behind_its_file_system_does_not_keep_a_stale_lease_alive(
    project: Project, pool: TestHostPool, remote: dict[str, Path], tmp_path: Path, host_clock: Path
) -> None:
    disk = _data_dir(project, pool, remote, tmp_path)
    lease = disk / ".corpus.gpuonboard-upload"
    lease.write_text("token 0123456789abcdef\n")
    ten_min_ago = time.time() - 600  # (the upload ended ten minutes ago, by the file system's clock)
    os.utime(lease, (ten_min_ago, ten_min_ago))
    _skew(host_clock, -900)
    r = project.cli("teardown", "--host", "teardown", "--keep-image", "--dest", str(tmp_path / "copy"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "refusing" not in steps(project)["files"]["msg"]
    assert not (disk / "corpus").exists() and not lease.exists()


def _state(top: Path) -> dict[str, tuple[int, int]]:
    """Every entry under `top` (itself too): its mtime (ns) and size, as the host's disk holds it."""
    out = {".": (os.lstat(top).st_mtime_ns, 0)}
    for dirpath, dirnames, filenames in os.walk(top):
        for n in dirnames + filenames:
            p = Path(dirpath) / n
            st = os.lstat(p)
            out[str(p.relative_to(top))] = (st.st_mtime_ns, st.st_size)
    return out


@pytest.mark.parametrize("lease_in_copy", [False, True])
def test_check_writes_nothing_on_the_host_reading_a_lease(
    project: Project,
    pool: TestHostPool,
    remote: dict[str, Path],
    tmp_path: Path,
    host_clock: Path,
    lease_in_copy: bool,
) -> None:
    """`teardown --check` promises nothing on the host changes: reading a lease's age by its file
    system's clock made (and removed) a file beside it, which changed the data dir's mtime (the
    copy's, for a lease kept inside it)."""
    disk = _data_dir(project, pool, remote, tmp_path)
    lease = disk / "corpus" / ".gpuonboard-upload" if lease_in_copy else disk / ".corpus.gpuonboard-upload"
    lease.write_text("token 0123456789abcdef\n")
    for age, refused in ((600, False), (0, True)):  # (an upload that ended; one running now)
        then = time.time() - age
        os.utime(lease, (then, then))
        before = _state(disk)
        time.sleep(1.1)  # (a write now has a later mtime, whatever the file system's granularity)
        r = project.cli("teardown", "--host", "teardown", "--keep-image", "--check")
        assert _state(disk) == before
        files = steps(project)["files"]
        assert r.returncode == (1 if refused else 0), r.stdout + r.stderr
        assert files["msg"].startswith("refusing" if refused else "would remove"), files
        # (read by the host's clock, said where it is near the limit: 600 s is not)
        assert ("by the host's clock" in files["msg"]) == refused, files


def test_a_clock_probe_file_left_in_a_copy_does_not_keep_it(
    project: Project, pool: TestHostPool, remote: dict[str, Path], tmp_path: Path, host_clock: Path
) -> None:
    """The file `fsnow` makes beside a lease kept in the copy (mktemp: a random name) and removes at
    once stays there when the host's shell is killed between the two: it is gpuonboard's own, not
    something no upload wrote, and the copy is removed with it."""
    disk = _data_dir(project, pool, remote, tmp_path)
    copy = disk / "corpus"
    for left in (".gpuonboard-upload.now.Xq3vB9", ".gpuonboard-upload.0123456789abcdef.now.a1B2c3"):
        (copy / left).touch()
    r = project.cli("teardown", "--host", "teardown", "--keep-image", "--dest", str(tmp_path / "copy"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "left on the host" not in steps(project)["files"]["msg"], steps(project)["files"]
    assert not copy.exists()
