"""The host's record of uploads is named by the host name and the machine id
(uploadlock.MACHINE_SH), run with this machine's sh, uname and coreutils."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from gpuonboard.testing.hosts import this_machines_record
from gpuonboard.transfer import uploadlock

MY_RECORD = this_machines_record()


def test_two_machines_of_one_host_name_keep_a_record_each_and_an_old_record_stays_found(
    tmp_path: Path,
) -> None:
    """The record's name holds the machine id (where the host has one): a node named like another
    writes its own record. A record of the host name alone, written by an older gpuonboard, stays
    this machine's while there is no record of the new name (its uploads are still found), and is
    another machine's once one exists (kept, never removed as this machine's)."""
    if not Path("/etc/machine-id").is_file():
        pytest.skip("this machine has no /etc/machine-id")
    home = tmp_path / "home"
    cache = home / ".cache" / "gpuonboard"
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin"}

    def name() -> str:
        echo = f"echo {uploadlock.MACHINE_SH}"
        out = subprocess.run(["sh", "-c", echo], capture_output=True, text=True, check=True, env=env)
        return uploadlock.RECORD_PREFIX + out.stdout.strip()

    legacy = uploadlock.record_name(os.uname().nodename)
    assert name() == MY_RECORD != legacy and "@" in MY_RECORD
    cache.mkdir(parents=True)
    (cache / legacy).write_bytes(b"/data/old\0")
    assert name() == legacy  # (an older gpuonboard's record: its uploads are still this machine's)
    (cache / MY_RECORD).write_bytes(b"/data/new\0")
    assert name() == MY_RECORD
