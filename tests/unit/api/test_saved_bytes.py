"""api/saved_bytes.py: reading a file named to `gpuonboard facts` (real files, FIFOs and writer
processes made here)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gpuonboard.api.saved_bytes import read_at_most


def test_a_fifo_nothing_writes_to_is_given_up_not_waited_on_for_ever(tmp_path: Path) -> None:
    """`gpuonboard facts out.fifo` (a named pipe no program writes to) blocked for ever in
    open(); it is given up after the silence allowed now, and a pipe a program writes to (as
    `<(nvidia-smi -q)` is) is read whole however slowly its writer starts."""
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    start = time.monotonic()
    with pytest.raises(TimeoutError, match="nothing came through this pipe in 0.5 s"):
        read_at_most(fifo, 1 << 20, silence=0.5)
    assert time.monotonic() - start < 5
    writer = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"import time; time.sleep(1); f = open({str(fifo)!r}, 'w'); f.write('GPU 0\\n' * 3)",
        ]
    )
    try:
        assert read_at_most(fifo, 1 << 20, silence=10) == b"GPU 0\n" * 3
    finally:
        writer.wait(timeout=30)
    plain = tmp_path / "plain.txt"
    plain.write_bytes(b"x" * 100)
    assert read_at_most(plain, 10) == b"x" * 11  # (one byte past the limit: the caller says so)
    assert read_at_most(plain, 1000) == b"x" * 100
    with pytest.raises(FileNotFoundError):
        read_at_most(tmp_path / "missing", 10)
