"""Teardown's pull and this machine's disk: results larger than the room left where the copy
goes are refused before anything is pulled (in --check too), a disk that fills up during the
pull says to make room (a plain rerun fills it again), and a file the host changes while it is
pulled fails the verification. Nothing on the host is deleted in any of them.

Real sshd test host and real rsync, as in test_teardown.py (whose fixtures this module uses);
the small disk is a tmpfs mounted under the test's tmp_path (root only) and unmounted after.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import Project
from test_teardown import (
    FILES,
    LEFT_ON_HOST,
    corrupt_keeping_size_and_mtime,
    docker_calls,
    earlier_pull,
    inventory,
    listing,
    refusal,
    remote,
    steps,
)

from gpuonboard.steps.teardown import RECORD
from gpuonboard.testing import TestHostPool
from gpuonboard.units import format_bytes

__all__ = ["remote"]  # the fixture, used by name


@contextlib.contextmanager
def small_disk(where: Path, size: str) -> Iterator[Path]:
    """A tmpfs of `size` mounted at `where` (skips the test where mounting is not allowed)."""
    where.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], capture_output=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode(errors='replace').strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", str(where)], check=True)


def host_rsync_hook(pool: TestHostPool, before: str = "", after: str = "") -> Path:
    """The host's rsync runs `before`, the real rsync, then `after` (in the results dir)."""
    real = shutil.which("rsync")
    hook = pool.hosts["teardown"].bin_dir / "rsync"
    hook.write_text(f'#!/bin/sh\n{before}\n{real} "$@"; rc=$?\n{after}\nexit $rc\n')
    hook.chmod(0o755)
    return hook


def test_results_larger_than_the_free_space_here_are_never_pulled(
    project: Project, pool: TestHostPool, remote: dict[str, Path], tmp_path: Path
) -> None:
    # rsync used to fill this machine's disk, hours of transfer later, then failed with "rerun
    # teardown to resume the pull": a rerun filled it again. A sparse file stands for the big
    # results (its size counts; it takes no room on the host's side either)
    dest = tmp_path / "copy"
    free = shutil.disk_usage(tmp_path).free
    big = remote["results"] / "ckpt" / "huge.pt"
    with big.open("wb") as f:
        f.truncate(free + 10**9)
    size = free + 10**9 + sum(len(c) for c in FILES.values())
    inventory(project, pool, remote)
    before = listing(remote["base"])
    for check in (("--check",), ()):
        r = project.cli("teardown", "--host", "teardown", "--dest", str(dest), *check)
        assert r.returncode == 1, r.stdout + r.stderr
        msg = steps(project)["pull"]["msg"]
        shown_free = msg.split("has only ")[1].split(" free")[0]  # (the free space moves meanwhile)
        assert msg == refusal(
            f"teardown:{remote['results']} holds {format_bytes(size, binary=False)} (4 files) but the disk"
            f" of {dest} on this machine has only {shown_free} free; make room there (or give --dest a"
            " directory on a disk with room), then rerun"
        )
        assert "Traceback" not in r.stdout + r.stderr
        assert [steps(project)[n]["status"] for n in ("containers", "autostop", "files")] == ["skipped"] * 3
    assert list(dest.iterdir()) == []  # nothing pulled (--dest is made up front, as the README says)
    assert listing(remote["base"]) == before and docker_calls(remote) == []


def test_a_disk_that_fills_up_during_the_pull_says_make_room_then_resumes(
    project: Project, pool: TestHostPool, remote: dict[str, Path], tmp_path: Path
) -> None:
    (remote["results"] / "ckpt" / "big.pt").write_bytes(b"w" * 2_000_000)
    inventory(project, pool, remote)
    before = listing(remote["base"])
    with small_disk(tmp_path / "small", "3m") as disk:
        dest, filler = disk / "copy", disk / "other-job.bin"
        # another job on this machine takes the room after the check, while rsync starts
        hook = host_rsync_hook(pool, before=f"head -c 1500000 /dev/zero > '{filler}'")
        try:
            r = project.cli("teardown", "--host", "teardown", "--dest", str(dest))
        finally:
            hook.unlink()
        assert r.returncode == 1, r.stdout + r.stderr
        msg = steps(project)["pull"]["msg"]
        assert msg.startswith(
            f"refusing to delete anything on teardown: the pull of teardown:{remote['results']} to {dest} is"
            " incomplete: "
        ), msg
        assert msg.endswith(
            " (rsync: No space left on device on this machine); make room on the disk of"
            f" {dest} (or give another --dest), then rerun, or pass --force to wipe anyway"
        ), msg
        assert listing(remote["base"]) == before and docker_calls(remote) == []

        filler.unlink()  # room made: the rerun resumes, verifies and cleans the host
        r = project.cli("teardown", "--host", "teardown", "--dest", str(dest), "--keep-image")
        assert r.returncode == 0, r.stdout + r.stderr
        assert (dest / "ckpt" / "big.pt").read_bytes() == b"w" * 2_000_000
        assert all((dest / rel).read_bytes() == content for rel, content in FILES.items())
        assert (dest / RECORD).exists()
    assert listing(remote["base"]) == LEFT_ON_HOST


def test_a_file_the_host_changes_while_it_is_pulled_is_not_verified(
    project: Project, pool: TestHostPool, remote: dict[str, Path], tmp_path: Path
) -> None:
    inventory(project, pool, remote)
    dest = tmp_path / "copy"
    before = listing(remote["base"])
    # the job writes once more just after rsync read the file, at its size and within the same
    # second: rsync's quick check (size, mtime in whole seconds) does not see it, the sha256 does,
    # and a rerun must pull it again
    hook = host_rsync_hook(pool, after="t=$(stat -c %Y a.txt); printf 'ALPHA\\n' > a.txt; touch -d @$t a.txt")
    try:
        r = project.cli("teardown", "--host", "teardown", "--dest", str(dest))
    finally:
        hook.unlink()
    assert r.returncode == 1, r.stdout + r.stderr
    assert steps(project)["pull"]["msg"] == refusal(
        f"the pull of teardown:{remote['results']} to {dest} is incomplete: 1 of 3 files not verified:"
        " corrupt 1 (a.txt); rerun teardown to resume the pull"
    )
    assert listing(remote["base"]) == before and docker_calls(remote) == []
    assert (remote["results"] / "a.txt").read_bytes() == b"ALPHA\n"
    r = project.cli("teardown", "--host", "teardown", "--dest", str(dest), "--keep-image")
    assert r.returncode == 0, r.stdout + r.stderr
    assert (dest / "a.txt").read_bytes() == b"ALPHA\n"
    assert listing(remote["base"]) == LEFT_ON_HOST


def test_a_rerun_mends_a_corrupt_copy_rsync_would_skip(
    project: Project, pool: TestHostPool, remote: dict[str, Path], tmp_path: Path
) -> None:
    # the copy's a.txt went bad keeping its size and mtime: rsync's quick check skipped it on
    # every rerun, so "rerun teardown to resume the pull" never mended it (only --force went on,
    # wiping the host's good a.txt)
    dest = tmp_path / "copy"
    earlier_pull(project, pool, remote, dest)
    bad = dest / "a.txt"
    st = bad.stat()
    corrupt_keeping_size_and_mtime(bad, b"ALPHA\n")
    r = project.cli("teardown", "--host", "teardown", "--dest", str(dest))
    assert r.returncode == 1, r.stdout + r.stderr
    assert steps(project)["pull"]["msg"].endswith(
        "1 of 3 files not verified: corrupt 1 (a.txt); rerun teardown to resume the pull, or pass --force"
        " to wipe anyway"
    )
    assert bad.read_bytes() == b"ALPHA\n"  # (kept: the rerun's rsync sends only what differs)
    r = project.cli("teardown", "--host", "teardown", "--dest", str(dest), "--keep-image")
    assert r.returncode == 0, r.stdout + r.stderr
    assert bad.read_bytes() == b"alpha\n" and bad.stat().st_mtime_ns == st.st_mtime_ns
    assert listing(remote["base"]) == LEFT_ON_HOST
