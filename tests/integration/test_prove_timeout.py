"""A prove script that outlives its step's timeout is stopped ON THE HOST: the SSH wait giving up
alone left it running (a non-tty session's process gets no signal), training on for hours, the
GPU held and its temp dir left behind, while the step said only "a remote command timed out"."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import signal
import sys
import time
from pathlib import Path

import pytest
from conftest import Project, host_entry

pytestmark = pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch not installed")


def _pids_under(path: Path) -> list[int]:
    """PIDs of processes whose command line names `path` (this test's private remote tmp)."""
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
        if str(path).encode() in cmdline and int(proc.name) != os.getpid():
            pids.append(int(proc.name))
    return pids


def test_smoke_train_past_its_timeout_is_stopped_on_the_host(project: Project, tmp_path: Path) -> None:
    remote_tmp = tmp_path / "remote tmp"
    remote_tmp.mkdir()
    entry = host_entry(project.pool.hosts["prove"], project.pool)
    entry["vars"].update(
        {
            "train_python": sys.executable,
            "train_steps": 10_000_000,  # hours on the CPU: only the timeout ends it
            "train_batch_size": 8,
            "train_workers": 0,
            "train_timeout": 8,
            "remote_tmp": str(remote_tmp),
        }
    )
    project.write_inventory({"prove": entry})
    try:
        r = project.cli(
            "provision", "--host", "prove", "--playbook", "prove", "--only", "smoke_train", timeout=60
        )
        assert r.returncode == 1, r.stdout + r.stderr
        msg = project.summary()["hosts"][0]["steps"][0]["msg"]
        assert (
            "smoke_train.py with" in msg and "did not finish within 6 s and was stopped on the host" in msg
        ), msg
        assert "raise vars.train_timeout (now 8 s)" in msg, msg
        deadline = time.monotonic() + 5
        while _pids_under(remote_tmp) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _pids_under(remote_tmp) == []  # nothing trains on
        assert list(remote_tmp.iterdir()) == []  # the private temp dir went with it
    finally:
        for pid in _pids_under(remote_tmp):  # without the fix: stop what the test started
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
