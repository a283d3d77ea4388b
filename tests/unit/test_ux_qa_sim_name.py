"""`sim.up --name "a b"` (a typo, a space) was "internal error (TestHostError: invalid host
name 'a b'); rerun with --debug and report it", exit 70: a usage error, exit 2, naming the flag."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.parametrize("name", ["a b", "h1;id", ".hidden"])
def test_a_bad_sim_host_name_is_a_usage_error(tmp_path: Path, name: str) -> None:
    base = tmp_path / "sim"
    r = subprocess.run(
        [sys.executable, "-c", "from gpuonboard.cli import main; main()"]
        + ["sim.up", "--name", name, "--base", str(base)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.strip() == (
        f"error: --name {name!r} is not a host name; use letters, digits, '.', '_' and '-',"
        " starting with a letter or digit."
    )
    assert not base.exists()
