"""allreduce.py's launcher giving up on torchrun must stop the ranks too: torchrun starts each
worker in a session of its own, so killing torchrun alone (what subprocess.run's timeout does)
left the ranks running (on a GPU box: hung in NCCL, holding the GPUs) after the step had ended."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch not installed")

SCRIPT = Path(__file__).resolve().parents[2] / "src" / "gpuonboard" / "remote" / "allreduce.py"


def _pids_naming(text: str) -> list[int]:
    pids = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if text.encode() in (proc / "cmdline").read_bytes():
                    pids.append(int(proc.name))
            except OSError:
                continue
    return pids


def test_launcher_timeout_stops_the_ranks(tmp_path: Path) -> None:
    script = tmp_path / "gpuonboard-allreduce-test" / "allreduce.py"
    script.parent.mkdir()
    shutil.copy(SCRIPT, script)
    argv = [sys.executable, str(script), "--nproc", "2", "--timeout", "8"]
    argv += ["--min-bytes", "4096", "--max-bytes", "4096", "--iters", "10000000"]  # runs for hours
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=120)
        assert r.returncode == 1
        assert "torchrun did not finish within 8 s (stopped)" in r.stdout, r.stdout + r.stderr
        deadline = time.monotonic() + 10
        while _pids_naming(str(script)) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _pids_naming(str(script)) == []  # no rank trains on
    finally:
        for pid in _pids_naming(str(script)):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
