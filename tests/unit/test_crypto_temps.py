"""Leftover temp files of killed runs in the ciphertext cache (real processes)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from gpuonboard import machine
from gpuonboard.transfer import crypto


def test_only_temps_of_ended_processes_are_swept(tmp_path: Path) -> None:
    code = "import os; print(os.getpid())"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    dead = int(done.stdout)
    live = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        me = machine.tag(length=8)
        names = {
            f".enc.{me}-{dead}.abc": False,
            f".stream.{me}-{dead}.xyz": False,
            f".enc.{me}-{live.pid}.abc": True,
            f".enc.{me}-{os.getpid()}.mine": True,
            f".enc.0badc0de-{dead}.other-machine": True,  # its pids mean nothing here
            "ready.age": True,
            ".enc.notapid": True,
        }
        for name in names:
            (tmp_path / name).write_bytes(b"x")
        assert crypto.sweep_dead_temps(tmp_path) == 2
        assert {p.name for p in tmp_path.iterdir()} == {n for n, keep in names.items() if keep}
        assert crypto.temp_prefix(".enc.") == f".enc.{me}-{os.getpid()}."
    finally:
        live.communicate(b"")
    assert crypto.sweep_dead_temps(tmp_path / "missing") == 0
