"""The container step's remote pull wrapper stops the pull when its session ends early.

Run here with `sh -c` as the SSH server would run it: the client going away (Ctrl-C or
SIGTERM of gpuonboard, a dropped link) shows on the host only as the channel's pipes being
closed by sshd, which sends no signal to a command without a tty; a Ctrl-C with `connection:
local` is a SIGINT to the terminal's process group. Either way the stand-in `docker pull`
(silent, hanging) and the temporary auth dir of the registry login must be gone at once.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from gpuonboard.steps.container import parse_state, pull_command
from gpuonboard.testing.hosts import process_alive

STATE = parse_state('##gpuonboard-container info docker\n{"DockerRootDir": "/var/lib/docker"}\n')


def _start(tmp_path: Path, login: bool) -> tuple[subprocess.Popen[bytes], list[int], str]:
    """The pull command with a stand-in `docker` whose pull hangs; -> (process, the stand-in's
    pid and its child's, the temporary auth dir or '-')."""
    tmp_path.mkdir(exist_ok=True)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    stalled = tmp_path / "stalled"
    docker = bin_dir / "docker"
    docker.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = pull ]; then\n'
        "  sleep 300 &\n"
        f'  echo "$$ $! ${{DOCKER_CONFIG:--}}" > {stalled}.tmp && mv {stalled}.tmp {stalled}\n'
        "  wait; exit 1\n"
        "fi\n"
        'cat >/dev/null; echo "Login Succeeded"\n'
    )
    docker.chmod(0o755)
    runtime = tmp_path / "run"
    runtime.mkdir()
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "XDG_RUNTIME_DIR": str(runtime)}
    cmd = pull_command(STATE, "registry.example:5000/a:b", ("u1", "registry.example:5000") if login else None)
    proc = subprocess.Popen(
        ["sh", "-c", cmd],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        start_new_session=True,  # its own process group: a terminal's Ctrl-C reaches it alone
    )
    assert proc.stdin is not None
    proc.stdin.write(b"SECRET-PW\n")
    proc.stdin.close()
    deadline = time.monotonic() + 10
    while not stalled.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert stalled.exists(), "the stand-in pull never started"
    pid, child, auth_dir = stalled.read_text().split()
    pids = [int(pid), int(child)]
    assert all(process_alive(p) for p in pids)
    if login:
        assert Path(auth_dir).is_dir() and Path(auth_dir).parent == runtime
    return proc, pids, auth_dir


def _gone_soon(pids: list[int], auth_dir: str, seconds: float = 5.0) -> tuple[list[int], bool]:
    """Wait until the pids are gone and the auth dir removed; -> (pids alive, dir left)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not any(process_alive(p) for p in pids) and not (auth_dir != "-" and Path(auth_dir).exists()):
            break
        time.sleep(0.05)
    left = [p for p in pids if process_alive(p)]
    for p in left:  # nothing stays behind for the next test
        os.kill(p, signal.SIGKILL)
    return left, auth_dir != "-" and Path(auth_dir).exists()  # (under tmp_path: removed with it)


@pytest.mark.parametrize("login", [True, False])
def test_a_ctrl_c_of_a_local_run_stops_the_pull(tmp_path: Path, login: bool) -> None:
    proc, pids, auth_dir = _start(tmp_path, login)
    time.sleep(0.3)
    os.killpg(proc.pid, signal.SIGINT)
    proc.wait(timeout=10)
    left, dir_left = _gone_soon(pids, auth_dir)
    assert not left, "the pull still runs after Ctrl-C"
    assert not dir_left, "the temporary auth dir outlived Ctrl-C"
    assert proc.returncode != 0


@pytest.mark.parametrize("login", [True, False])
def test_the_pull_stops_when_its_session_closes_and_is_unchanged_when_it_ends_by_itself(
    tmp_path: Path, login: bool
) -> None:
    """A pull that ends by itself: its output (stderr folded in) on stdout, its exit code, the
    auth dir removed, no wait added. A hanging one: stopped once sshd closes the channel's
    pipes (what the host sees of a client that has gone)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "docker").write_text(
        '#!/bin/sh\n[ "$1" = pull ] || { cat >/dev/null; exit 0; }\n'
        'echo "a1b2c3d4e5f6: Pull complete"; echo "Error: manifest unknown" >&2; exit 3\n'
    )
    (bin_dir / "docker").chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "XDG_RUNTIME_DIR": str(tmp_path)}
    cmd = pull_command(STATE, "registry.example:5000/a:b", ("u1", "registry.example:5000") if login else None)
    start = time.monotonic()
    r = subprocess.run(
        ["sh", "-c", cmd],
        input=b"pw\n",
        capture_output=True,
        env=env,
        timeout=30,
    )
    assert time.monotonic() - start < 0.9  # the watcher's one-second beat never delays the end
    assert r.returncode == 3
    assert r.stdout.decode().endswith("a1b2c3d4e5f6: Pull complete\nError: manifest unknown\n")
    assert not r.stderr.strip()
    assert not list(tmp_path.glob("gpuonboard-auth.*"))

    proc, pids, auth_dir = _start(tmp_path / "stalled", login)
    time.sleep(0.3)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # what sshd does when the client has gone
    proc.stderr.close()
    left, dir_left = _gone_soon(pids, auth_dir)
    proc.wait(timeout=10)
    assert not left, "the pull still runs after its session ended"
    assert not dir_left, "the temporary auth dir outlived the session"
