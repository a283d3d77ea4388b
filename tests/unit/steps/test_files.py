"""The template step's write script, run by a real sh: a cut or interrupted write never
reaches dest and leaves no temp file beside it."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import time
from pathlib import Path

from gpuonboard.steps.files import write_script

CONTENT = b"line one\nline two\n" * 50


def _start(dest: Path, content: bytes) -> subprocess.Popen[bytes]:
    want = hashlib.sha256(content).hexdigest()
    return subprocess.Popen(
        ["/bin/sh", "-c", write_script(str(dest), "640", want, "0123456789abcdef")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def test_whole_content_is_renamed_into_place_with_its_mode(tmp_path: Path) -> None:
    dest = tmp_path / "sub" / "f.conf"
    out, _ = _start(dest, CONTENT).communicate(CONTENT, timeout=20)
    assert dest.read_bytes() == CONTENT
    assert oct(dest.stat().st_mode & 0o777) == "0o640"
    assert out.decode().strip() == hashlib.sha256(CONTENT).hexdigest()
    assert sorted(p.name for p in dest.parent.iterdir()) == ["f.conf"]


def test_a_cut_write_keeps_the_old_file_and_no_temp_file(tmp_path: Path) -> None:
    """A dropped link ends stdin early: install succeeds with a cut file, which must not
    replace the old dest."""
    dest = tmp_path / "f.conf"
    dest.write_bytes(b"old\n")
    proc = _start(dest, CONTENT)
    _, err = proc.communicate(CONTENT[:100], timeout=20)
    assert proc.returncode == 1
    assert "the host received a cut or altered file" in err.decode()
    assert dest.read_bytes() == b"old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["f.conf"]


def test_a_killed_write_leaves_no_temp_file(tmp_path: Path) -> None:
    dest = tmp_path / "f.conf"
    proc = _start(dest, CONTENT)
    assert proc.stdin is not None
    proc.stdin.write(CONTENT[:100])
    proc.stdin.flush()
    deadline = time.monotonic() + 10
    while not any(p.name.startswith(".gpuonboard.") for p in tmp_path.iterdir()):
        assert time.monotonic() < deadline
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGTERM)
    time.sleep(0.2)
    proc.stdin.close()
    proc.wait(timeout=20)
    assert proc.returncode != 0
    assert list(tmp_path.iterdir()) == []
