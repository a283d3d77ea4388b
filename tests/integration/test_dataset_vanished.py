"""A dataset file deleted (or replaced) on this machine after `sync` scanned the dataset and before
or while rsync sends it: rsync fails (`link_stat ... failed: No such file or directory`, exit 23;
`file has vanished`, exit 24), and the message names the files that changed since the scan, with
what to do, instead of rsync's raw line. Real sshd test host, real rsync; the deletion is made by
a stand-in `rsync` first on this machine's PATH that deletes the file, then execs the real one."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from conftest import Project
from test_dataset import setup, step

pytestmark = pytest.mark.skipif(shutil.which("rsync") is None, reason="rsync not installed")


def _stand_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, script: str) -> None:
    """This machine's `rsync`: `script` (sh) run first, then the real rsync."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    real = shutil.which("rsync")
    (bin_dir / "rsync").write_text(f'#!/bin/sh\n{script}\nexec {real} "$@"\n')
    (bin_dir / "rsync").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")


@pytest.mark.parametrize("when", ["before", "while"])
def test_a_file_deleted_after_the_scan_is_named(
    project: Project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, when: str
) -> None:
    src, data_dir = setup(project, tmp_path)
    (src / "a big.bin").write_bytes(os.urandom(600_000))  # (sent first, slowly: --bwlimit)
    gone = src / "sub dir" / "nested.bin"
    if when == "before":  # (rsync never lists it: the re-send of what the host lacks names it)
        _stand_in(tmp_path, monkeypatch, f"rm -f '{gone}'")
    else:  # (listed, then gone before rsync reads it: `file has vanished`, exit 24)
        _stand_in(tmp_path, monkeypatch, f"( sleep 1; rm -f '{gone}' ) &")
    r = project.cli("sync", "--host", "dataset", "--bwlimit", "200k", timeout=120)
    s = step(project)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "Traceback" not in r.stderr
    assert s["msg"] == (
        "'sub dir/nested.bin' changed on this machine since the scan (deleted, replaced or written"
        " to): rerun to send the dataset as it is now"
    ), s
    assert "link_stat" not in r.stdout and "vanished" not in r.stdout
    # nothing deleted on the host: what arrived stays, and a rerun sends the dataset as it is now
    assert (data_dir / "my data" / "a big.bin").stat().st_size == 600_000
    monkeypatch.undo()
    r = project.cli("sync", "--host", "dataset", timeout=120)
    assert r.returncode == 0, step(project)
    assert not (data_dir / "my data" / "sub dir" / "nested.bin").exists()
