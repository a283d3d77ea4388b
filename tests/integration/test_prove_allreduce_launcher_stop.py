"""allreduce.py's launcher giving up on torchrun must stop the ranks too: torchrun starts each
worker in a session of its own, so killing torchrun alone (what subprocess.run's timeout does)
left the ranks running (on a GPU box: hung in NCCL, holding the GPUs) after the step had ended."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gpuonboard.steps.prove import script_bytes

pytestmark = pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch not installed")


def _pids_naming(text: str, *, ranks_only: bool = False) -> list[int]:
    """PIDs whose command line names `text`; `ranks_only`: torchrun's workers alone (not the
    launcher, whose argv has --nproc, nor torchrun, run as torch.distributed.run)."""
    pids = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                argv = (proc / "cmdline").read_bytes()
            except OSError:
                continue
            if text.encode() in argv and not (
                ranks_only and (b"torch.distributed.run" in argv or b"--nproc" in argv)
            ):
                pids.append(int(proc.name))
    return pids


def _run_until_stopped(argv: list[str], script: Path, timeout: int) -> tuple[str, bool]:
    """The launcher's stdout, and whether both ranks were seen running before it returned."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen = False
    limit = time.monotonic() + timeout + 60  # ranks left running keep its pipes open: it hangs
    try:
        while proc.poll() is None:
            assert time.monotonic() < limit, "the launcher did not return after its timeout"
            seen = seen or len(_pids_naming(str(script), ranks_only=True)) >= 2
            time.sleep(0.05)
        out, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 1
    return out, seen


def test_launcher_timeout_stops_the_ranks(tmp_path: Path) -> None:
    script = tmp_path / "gpuonboard-allreduce-test" / "allreduce.py"
    script.parent.mkdir()
    script.write_bytes(script_bytes("allreduce.py"))  # as shipped: its parts inlined
    try:
        # a short launcher timeout, as long as the ranks were running when it struck (a busy
        # machine starts them later: then again with a longer one)
        for timeout in (3, 6, 12, 24):
            argv = [sys.executable, str(script), "--nproc", "2", "--timeout", str(timeout)]
            argv += ["--min-bytes", "4096", "--max-bytes", "4096", "--iters", "10000000"]  # runs for hours
            out, ranks_ran = _run_until_stopped(argv, script, timeout)
            assert f"torchrun did not finish within {timeout} s (stopped)" in out, out
            if ranks_ran:
                break
            deadline = time.monotonic() + 10
            while _pids_naming(str(script)) and time.monotonic() < deadline:
                time.sleep(0.2)
        assert ranks_ran, "torchrun never started its ranks within the launcher's timeout"
        deadline = time.monotonic() + 10
        while _pids_naming(str(script)) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _pids_naming(str(script)) == []  # no rank trains on
    finally:
        for pid in _pids_naming(str(script)):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
