"""What an interrupted upload leaves in the host's copy (issue 26), over a real sshd test host and
real rsync: rsync temp files (`.big.bin.XXXXXX`, a dropped link's receiver keeps one instead of a
partial file) are resumed from or removed, never passed over by "up to date"; one that appears
during an upload fails its verification; the disk-space preflight counts what is already there.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import Project, host_entry
from test_dataset import _age_key, needs_age, setup, small_disk, step, tree_digest

from gpuonboard.testing import TestHost, TestHostPool, add_executable

__all__ = ["small_disk"]  # (a fixture of test_dataset.py, used here)

pytestmark = pytest.mark.skipif(shutil.which("rsync") is None, reason="rsync not installed")

PARTIAL = ".gpuonboard-rsync-partial"


@needs_age
def test_a_temp_file_left_beside_a_complete_file_is_removed_never_passed_over(
    project: Project, tmp_path: Path
) -> None:
    """Encrypted mode: a killed receiver's `.big.bin.age.XXXXXX` stayed in the store after the
    rerun verified every file, and later runs said "up to date" without a word of it."""
    key, pub = _age_key(tmp_path)
    src, data_dir = setup(project, tmp_path, age_recipients=[pub], age_identity_file=str(key))
    (src / "big.bin").write_bytes(os.urandom(300_000))
    r = project.cli("sync", "--host", "dataset", "--encrypt")
    assert r.returncode == 0, r.stdout + r.stderr
    store = data_dir / "my data.encrypted"
    stray = store / ".big.bin.age.Ab12Cd"
    stray.write_bytes((store / "big.bin.age").read_bytes()[:100_000])
    theirs = store / ".notes.txt.Zz99Zz"  # (no dataset file's temp name: the user's, kept)
    theirs.write_text("mine\n")
    r = project.cli("sync", "--host", "dataset", "--encrypt", "--check")
    msg = step(project)["msg"]
    assert "remove 1 temp or partial file an interrupted upload left (e.g. '.big.bin.age.Ab12Cd')" in msg, msg
    assert stray.exists()  # (check mode changes nothing)
    r = project.cli("sync", "--host", "dataset", "--encrypt")
    assert r.returncode == 0, r.stdout + r.stderr
    assert step(project)["status"] == "changed", step(project)
    assert not stray.exists() and theirs.read_text() == "mine\n"
    r = project.cli("sync", "--host", "dataset", "--encrypt")
    s = step(project)
    assert r.returncode == 0 and s["status"] == "ok" and "up to date" in s["msg"], s
    assert "'.notes.txt.Zz99Zz'" in s["msg"], s["msg"]  # (said as kept there, not removed)


def test_a_temp_file_of_a_file_not_there_yet_is_resumed_from(project: Project, tmp_path: Path) -> None:
    """Plain mode: what a dropped link's receiver held (its temp file, no partial file) is the
    rerun's start: only the rest of the file travels, and no temp file stays."""
    src, data_dir = setup(project, tmp_path)
    big = src / "big.bin"
    big.write_bytes(os.urandom(4 * 1024 * 1024))
    r = project.cli("sync", "--host", "dataset")
    assert r.returncode == 0, r.stdout + r.stderr
    copy = data_dir / "my data"
    (copy / "big.bin").unlink()
    temp = copy / ".big.bin.Qw12Er"
    temp.write_bytes(big.read_bytes()[: 3 * 1024 * 1024])
    r = project.cli("sync", "--host", "dataset")
    assert r.returncode == 0, r.stdout + r.stderr
    s = step(project)
    assert s["diff"]["literal_bytes"] < 1024 * 1024 + 64 * 1024, s
    assert "; resumed from 1 partial file an interrupted upload left (3.0 MiB already there)" in s["msg"], s
    assert not temp.exists() and not (copy / PARTIAL).exists()
    assert tree_digest(copy) == tree_digest(src)


STRAYS = "strays"
# the host's rsync, as another writer into the copy would: a temp file of a dataset file appears
# there while the upload runs (this run's own rsync never leaves one)
STRAY_RSYNC = '#!/bin/sh\n: > .plain.txt.Xx11Yy 2>/dev/null\nexec /usr/bin/rsync "$@"\n'


@pytest.fixture(scope="module")
def stray_host(pool: TestHostPool) -> Iterator[TestHost]:
    (h,) = pool.add_many([(STRAYS, None)])
    add_executable(h.bin_dir, "rsync", STRAY_RSYNC)
    yield h
    h.stop()


def test_a_temp_file_appearing_during_the_upload_fails_its_verification(
    project: Project, tmp_path: Path, stray_host: TestHost
) -> None:
    from test_dataset import make_dataset

    src = make_dataset(tmp_path / "local")
    data_dir = tmp_path / "remote data"
    entry = host_entry(stray_host, project.pool, data_dir=str(data_dir))
    entry["vars"]["dataset"] = str(src)
    project.write_inventory({STRAYS: entry})
    r = project.cli("sync", "--host", STRAYS)
    assert r.returncode == 1, r.stdout + r.stderr
    msg = step(project)["msg"]
    assert "1 rsync temp file not of this run is in" in msg and "(e.g. '.plain.txt.Xx11Yy')" in msg, msg
    assert "Traceback" not in r.stdout + r.stderr


def test_the_space_preflight_counts_the_partial_file_already_there(
    project: Project, tmp_path: Path, small_disk: Any
) -> None:
    """Disk full, then room made: a partial file of the big file is on the host. The rerun needs
    at most the big file's whole temp file beside it, then what the rest adds (the partial file
    goes once the big file is in place); not the whole dataset again on top of the partial."""
    src, data_dir = setup(project, tmp_path)
    mib = 1024 * 1024
    (src / "big.bin").write_bytes(os.urandom(8 * mib))
    (src / "small").mkdir()
    for i in range(8):
        (src / "small" / f"f{i}.bin").write_bytes(os.urandom(mib))
    disk = small_disk(data_dir, "20m")
    partial = disk / "my data" / PARTIAL / "big.bin"
    partial.parent.mkdir(parents=True)
    partial.write_bytes((src / "big.bin").read_bytes()[: 6 * mib])  # 14 MiB free, 16.1 MiB to send
    r = project.cli("sync", "--host", "dataset")
    assert r.returncode == 0, r.stdout + r.stderr + step(project)["msg"]
    s = step(project)
    assert s["diff"]["literal_bytes"] < 10.5 * mib, s
    assert tree_digest(disk / "my data") == tree_digest(src)
    assert not partial.exists()
