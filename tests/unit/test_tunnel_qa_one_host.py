"""`invoke tensorboard` without --host on an inventory of several hosts: one sentence saying to
give --host NAME (it said "give exactly one host for tensorboard, not 2."), exit 2."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from gpuonboard.api.tunnel import one_host_problem

CLI = [
    sys.executable,
    "-c",
    "import sys; from gpuonboard.cli import main; sys.argv[0] = 'gpuonboard'; main()",
]


def test_one_host_problem_names_the_hosts_and_the_flag() -> None:
    assert one_host_problem(["a", "b"]) == (
        "tensorboard forwards one host's port, and the selection picked 2 hosts (a, b);"
        " give one with --host NAME."
    )
    assert "(h0, h1, h2, h3, h4, ...)" in one_host_problem([f"h{i}" for i in range(7)])
    assert "picked none" in one_host_problem([])


def test_tensorboard_without_host_on_two_hosts_says_to_give_one(tmp_path: Path) -> None:
    (tmp_path / "inventory").mkdir()
    (tmp_path / "inventory" / "hosts.yml").write_text(
        "hosts:\n  gpu-1:\n    address: 127.0.0.1\n  gpu-2:\n    address: 127.0.0.1\n"
    )
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "GPUONBOARD_SSH_CONFIG": "/dev/null"}
    r = subprocess.run(
        [*CLI, "tensorboard"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
    )
    assert r.returncode == 2, r.stdout + r.stderr
    assert "the selection picked 2 hosts (gpu-1, gpu-2); give one with --host NAME." in r.stderr + r.stdout
    assert "Traceback" not in r.stderr
