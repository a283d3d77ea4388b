"""The record of uploads `sync` keeps on the host (uploadlock.RECORD_FN) and how teardown reads
it (recorded_probe_command, parse_recorded): the scripts run with this machine's sh over real
directories; and /dev/shm's entries (where --decrypt-to puts plaintext in RAM) may be removed."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from gpuonboard.steps.teardown import parse_recorded, path_problem, recorded_probe_command
from gpuonboard.transfer import uploadlock
from gpuonboard.transfer.uploadlock import RECORD_FN

# this machine's record of uploads (the test hosts are this machine)
MY_RECORD = uploadlock.record_name(os.uname().nodename)


def _sh(script: str, home: Path, *args: str, cache: str | None = None) -> str:
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin"}
    if cache is not None:
        env["XDG_CACHE_HOME"] = cache
    return subprocess.run(["sh", "-c", script, "sh", *args], capture_output=True, text=True, env=env).stdout


def test_each_path_is_recorded_once_and_read_back_with_its_dirs_entries(tmp_path: Path) -> None:
    home, data, shm = tmp_path / "home", tmp_path / "data", tmp_path / "shm"
    for d in (home, data / "corpus", shm / "corpus"):
        d.mkdir(parents=True)
    (shm / "corpus" / ".gpuonboard-copy").write_text(f"{shm}/corpus\n")
    odd = f"{data}/two words 'quoted'"
    for _ in range(2):
        _sh(RECORD_FN + 'record "$@"', home, f"{data}/corpus", f"{shm}/corpus", "", odd)
    record = home / ".cache" / "gpuonboard" / MY_RECORD
    assert record.read_bytes().split(b"\0")[:-1] == [
        f"{data}/corpus".encode(),
        f"{shm}/corpus".encode(),
        odd.encode(),
    ]
    assert (record.parent.stat().st_mode & 0o777) == 0o700

    found = parse_recorded(_sh(recorded_probe_command(), home))
    assert found is not None
    names, listings = found
    assert names == {str(data): {"corpus", "two words 'quoted'"}, str(shm): {"corpus"}}
    assert sorted(listings) == [str(data), str(shm)]
    assert listings[str(shm)].startswith(f"dir {shm}\0uid ")
    assert "\0d c " in listings[str(shm)] and f"mark {shm}/corpus" in listings[str(shm)]


def test_no_record_and_a_relative_cache_dir(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    assert parse_recorded(_sh(recorded_probe_command(), home)) is None
    # a relative $XDG_CACHE_HOME names no one place: nothing is written (and the upload goes on)
    _sh(RECORD_FN + 'record "$@"', home, "/data/corpus", cache="rel")
    assert not (tmp_path / "rel").exists() and not (home / ".cache").exists()
    # a record holding a relative path (not one `sync` writes) is never read as a place
    (home / ".cache" / "gpuonboard").mkdir(parents=True)
    (home / ".cache" / "gpuonboard" / MY_RECORD).write_bytes(b"corpus\0/\0")
    assert parse_recorded(_sh(recorded_probe_command(), home)) == ({}, {})


def test_dev_shm_entries_may_be_removed_but_not_dev_shm_itself() -> None:
    assert path_problem("/dev/shm/corpus") is None
    assert path_problem("/dev/shm/a/b") is None
    assert path_problem("/dev/shm") == "a system directory"
    assert path_problem("/dev/shm/") == "a system directory"
    assert path_problem("/dev/sda1") == "a system directory"
    assert path_problem("/dev/shmx/corpus") == "a system directory"


def test_a_path_with_a_line_break_is_never_recorded(tmp_path: Path) -> None:
    """Read back line by line, `/x/a\\n/etc/name` would name `/x/a`, a path no upload made."""
    home = tmp_path / "home"
    home.mkdir()
    _sh(RECORD_FN + 'record "$@"', home, f"{tmp_path}/a\n/etc/name", f"{tmp_path}/b")
    record = home / ".cache" / "gpuonboard" / MY_RECORD
    assert record.read_bytes() == f"{tmp_path}/b\0".encode()


def test_decrypt_to_with_a_control_character_is_refused() -> None:
    import pytest

    from gpuonboard.steps.base import StepArgsError
    from gpuonboard.steps.dataset import DatasetStep

    args = {"source": "/d/corpus", "dest": "/data", "encrypt": True, "decrypt_on_host": True}
    for bad in ("/tmp/a\n/etc", "/dev/shm/\x1b[2J"):
        with pytest.raises(StepArgsError, match="decrypt_dir must not hold a line break"):
            DatasetStep({**args, "decrypt_dir": bad})
    assert DatasetStep({**args, "decrypt_dir": "/dev/shm"}).decrypt_dir == "/dev/shm"


def test_a_lease_inside_the_copy_is_a_running_upload_too(tmp_path: Path) -> None:
    """A data dir the login may not write keeps the upload's lease inside the copy: teardown
    must see that one too, or it removes the copy under a running upload."""
    import os

    from gpuonboard.steps.teardown import classify_uploads, uploads_probe_command

    disk = tmp_path / "data"
    for name in ("corpus", ".hidden", "old"):
        (disk / name).mkdir(parents=True)
        (disk / name / ".gpuonboard-upload").write_text("token aaaa\n")
    os.utime(disk / "old" / ".gpuonboard-upload", (1_000_000_000, 1_000_000_000))  # (long over)
    (disk / "linked").mkdir()
    (disk / "linked" / ".gpuonboard-upload").symlink_to(disk / "corpus" / ".gpuonboard-upload")
    probe = subprocess.run(["sh", "-c", uploads_probe_command(str(disk))], capture_output=True, text=True)
    found = classify_uploads(probe.stdout, "corpus")
    assert found is not None and found.live_leases == (".hidden", "corpus")
