"""A pull running past `pull_timeout` is stopped by the host itself (the same watcher that stops
it when the session ends), says so on the channel's stderr, and leaves no process and no
temporary auth dir behind; a pull that ends in time is not touched."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from gpuonboard.steps.container import _PULL_TIMED_OUT, parse_state, pull_command
from gpuonboard.testing.hosts import process_alive

STATE = parse_state('##gpuonboard-container info docker\n{"DockerRootDir": "/var/lib/docker"}\n')


@pytest.mark.parametrize("login", [True, False])
def test_a_pull_past_its_time_limit_is_stopped_on_the_host(tmp_path: Path, login: bool) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    stalled = tmp_path / "stalled"
    (bin_dir / "docker").write_text(
        "#!/bin/sh\n"
        'if [ "$1" = pull ]; then\n'
        "  sleep 300 &\n"
        f'  echo "$$ $! ${{DOCKER_CONFIG:--}}" > {stalled}.tmp && mv {stalled}.tmp {stalled}\n'
        "  wait; exit 1\n"
        "fi\n"
        'cat >/dev/null; echo "Login Succeeded"\n'
    )
    (bin_dir / "docker").chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "XDG_RUNTIME_DIR": str(tmp_path)}
    cmd = pull_command(
        STATE, "registry.example:5000/a:b", ("u1", "registry.example:5000") if login else None, 2
    )
    start = time.monotonic()
    r = subprocess.run(["sh", "-c", cmd], input=b"pw\n", capture_output=True, env=env, timeout=30)
    took = time.monotonic() - start
    assert 2 <= took < 10, took
    assert r.returncode != 0
    assert _PULL_TIMED_OUT in r.stderr.decode()
    pid, child, _ = stalled.read_text().split()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and any(process_alive(int(p)) for p in (pid, child)):
        time.sleep(0.05)
    assert not [p for p in (pid, child) if process_alive(int(p))], "the timed-out pull still runs"
    assert not list(tmp_path.glob("gpuonboard-auth.*"))


def test_a_pull_that_ends_in_time_is_unchanged(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "docker").write_text('#!/bin/sh\nsleep 1.5; echo "Status: Downloaded newer image"\n')
    (bin_dir / "docker").chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    r = subprocess.run(
        ["sh", "-c", pull_command(STATE, "r.example/a:b", None, 3)], capture_output=True, env=env, timeout=30
    )
    assert r.returncode == 0 and r.stdout.decode().endswith("Status: Downloaded newer image\n")
    assert _PULL_TIMED_OUT not in r.stderr.decode()
