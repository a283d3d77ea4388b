"""allreduce.py never hangs on a collective that does not complete (issue 29 item 4): the real
script on the CPU (2 gloo ranks under torchrun), one rank frozen with SIGSTOP mid-run (as a GPU
rank is when NCCL waits on a P2P path that never delivers). The other rank ends on the process
group's timeout (--collective-timeout), torchrun stops, and the launcher says which timeout
struck, long before its own --timeout. Before, the process group had torch's default timeout
(30 minutes for gloo, 10 for NCCL) and only the launcher's or the host's timeout ended the run."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gpuonboard.steps.prove import script_bytes

pytestmark = pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch not installed")

MARK = "GPUONBOARD_RESULT "


def _rank_pid(script: Path, rank: int) -> int | None:
    """The pid of torchrun's worker `rank` running `script` (not the launcher, not torchrun)."""
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes()
            env = (proc / "environ").read_bytes()
        except OSError:
            continue
        if str(script).encode() not in argv or b"torch.distributed.run" in argv or b"--nproc" in argv:
            continue
        if f"\0RANK={rank}\0".encode() in b"\0" + env:
            return int(proc.name)
    return None


def test_a_frozen_rank_ends_the_run_on_the_collective_timeout(tmp_path: Path) -> None:
    script = tmp_path / "gpuonboard-allreduce-hang" / "allreduce.py"
    script.parent.mkdir()
    script.write_bytes(script_bytes("allreduce.py"))  # as shipped: its parts inlined
    limit = 8
    argv = [
        sys.executable,
        str(script),
        "--nproc",
        "2",
        "--timeout",
        "600",
        "--collective-timeout",
        str(limit),
    ]
    argv += ["--min-bytes", "4096", "--max-bytes", "4096", "--iters", "100000000"]  # runs for hours
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    frozen: int | None = None
    try:
        deadline = time.monotonic() + 240
        while frozen is None:
            assert time.monotonic() < deadline and proc.poll() is None, "the ranks never started"
            r0, r1 = _rank_pid(script, 0), _rank_pid(script, 1)
            if r0 and r1:
                time.sleep(3)  # most likely in the timed loop by now (else: the start's timeout)
                os.kill(r1, signal.SIGSTOP)
                frozen = r1
            time.sleep(0.1)
        started = time.monotonic()
        # rank 0 ends on the timeout; torchrun's SIGTERM waits in a stopped rank until it goes on
        while r0 and Path(f"/proc/{r0}").exists() and time.monotonic() - started < 240:
            time.sleep(0.2)
        os.kill(frozen, signal.SIGCONT)
        out, _ = proc.communicate(timeout=240)
        took = time.monotonic() - started
    finally:
        if frozen is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(frozen, signal.SIGCONT)
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        for rank in (0, 1):
            pid = _rank_pid(script, rank)
            if pid:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
    assert proc.returncode == 1
    result = json.loads([x for x in out.splitlines() if x.startswith(MARK)][-1][len(MARK) :])
    assert result["ok"] is False and result["p2p"] is None  # gloo: no P2P decision
    collective = f"gloo did not complete an all-reduce within {limit} s (the collective timeout;"
    start = f"the gloo process group did not start within {limit} s (a rank did not join in time;"
    assert result["error"].startswith((collective, start)), result
    assert took < 200, took  # the process group's timeout, not the launcher's 600 s
