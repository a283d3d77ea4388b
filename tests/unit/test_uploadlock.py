"""The upload lock: a real flock, held by real processes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from gpuonboard import uploadlock

HOLD = """
import sys, time
from pathlib import Path
from gpuonboard import uploadlock
held = uploadlock.acquire(Path(sys.argv[1]), sys.argv[2])
print("held", flush=True)
sys.stdin.read()
"""


def test_lock_name_is_per_host_port_user_and_path() -> None:
    base = uploadlock.lock_name("10.0.0.5", 22, "root", "/data/imagenet")
    assert base == uploadlock.lock_name("10.0.0.5", 22, "root", "/data/imagenet/")
    assert base == uploadlock.lock_name("10.0.0.5".upper(), 22, "root", "/data/imagenet")
    others = {
        uploadlock.lock_name("10.0.0.6", 22, "root", "/data/imagenet"),
        uploadlock.lock_name("10.0.0.5", 2222, "root", "/data/imagenet"),
        uploadlock.lock_name("10.0.0.5", 22, "ubuntu", "/data/imagenet"),
        uploadlock.lock_name("10.0.0.5", 22, "root", "/data/imagenet2"),
    }
    assert base not in others and len(others) == 4
    assert base.endswith(".lock") and "/" not in base


def _holder(lock_dir: Path, name: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(Path(uploadlock.__file__).parents[1])}
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(lock_dir), name],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdout is not None and proc.stdout.readline() == "held\n"
    return proc


def test_a_held_lock_turns_the_second_taker_away_naming_the_holder(tmp_path: Path) -> None:
    name = uploadlock.lock_name("127.0.0.1", 22, "root", "/data/x")
    proc = _holder(tmp_path, name)
    try:
        with pytest.raises(uploadlock.UploadBusy) as busy:
            uploadlock.acquire(tmp_path, name)
        assert str(busy.value).startswith(f"pid {proc.pid} since ")
        # another path of the same host is free meanwhile
        other = uploadlock.acquire(tmp_path, uploadlock.lock_name("127.0.0.1", 22, "root", "/data/y"))
        other.release()
    finally:
        proc.communicate("")  # the holder exits normally: the lock is free again
    held = uploadlock.acquire(tmp_path, name)
    with pytest.raises(uploadlock.UploadBusy):  # within one process too (one taker per run)
        uploadlock.acquire(tmp_path, name)
    held.release()
    held.release()  # idempotent
    uploadlock.acquire(tmp_path, name).release()


def test_a_killed_holder_leaves_no_stale_lock(tmp_path: Path) -> None:
    name = uploadlock.lock_name("127.0.0.1", 22, "root", "/data/x")
    proc = _holder(tmp_path, name)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    held = uploadlock.acquire(tmp_path, name)  # no wait, no manual cleanup
    assert (tmp_path / name).read_text().startswith(f"pid {os.getpid()} since ")
    assert (tmp_path / name).stat().st_mode & 0o777 == 0o600
    held.release()
