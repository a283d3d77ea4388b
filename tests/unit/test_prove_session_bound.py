"""prove's remote command stops its script when the process that started it goes away, and
changes nothing else: the exit status, stdout and stderr are the script's own, the host's
`timeout` still ends it with 124, and nothing of the watcher is left once it ends.

These run the real command text with the local /bin/sh under a parent process (the shape of
`connection: local`: `/bin/sh -c COMMAND` under gpuonboard); over SSH the same is tested in
tests/integration/test_prove_session_end.py. Every process they start names this test's
tmp_path (a copy of `sleep` lives there), so that is what they look for and clean up."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from gpuonboard import shell
from gpuonboard.steps.prove import Launch, build_command

PARENT = "import subprocess, sys; subprocess.run(['/bin/sh', '-c', sys.argv[1]], input=sys.argv[2].encode())"


def _pids_naming(text: str) -> list[int]:
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        with contextlib.suppress(OSError):
            if text.encode() in (proc / "cmdline").read_bytes().replace(b"\0", b" "):
                pids.append(int(proc.name))
    return pids


def _wait_until(what: str, ok: Callable[[], object], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not ok():
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


@pytest.fixture
def sandbox(tmp_path: Path) -> Iterator[Path]:
    """tmp_path with a `sleep` copy in it; whatever still names tmp_path afterwards is killed."""
    shutil.copy(shutil.which("sleep") or "/bin/sleep", tmp_path / "sleep")
    yield tmp_path
    for pid in _pids_naming(str(tmp_path)):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _host_command(tmp_path: Path, remote_timeout: float = 60) -> tuple[str, Path]:
    work = tmp_path / "gpuonboard-s-1"
    launch = Launch("/bin/sh", False, "", str(tmp_path), 60)
    return build_command(launch, "s.sh", ["a b"], str(work), remote_timeout=remote_timeout), work


def test_a_normal_run_keeps_its_status_and_output_and_leaves_nothing(sandbox: Path) -> None:
    cmd, work = _host_command(sandbox)
    r = subprocess.run(
        ["/bin/sh", "-c", cmd], input=b'echo "out $1"; echo err >&2; exit 3\n', capture_output=True
    )
    assert (r.returncode, r.stdout, r.stderr) == (3, b"out a b\n", b"err\n")
    _wait_until("the watcher outlived the script", lambda: not _pids_naming(str(sandbox)), 3)
    assert not work.exists()


def test_the_hosts_timeout_still_ends_it_with_124(sandbox: Path) -> None:
    cmd, work = _host_command(sandbox, remote_timeout=1)
    start = time.monotonic()
    r = subprocess.run(["/bin/sh", "-c", cmd], input=f"{sandbox}/sleep 30\n".encode(), capture_output=True)
    assert r.returncode == 124 and time.monotonic() - start < 10
    _wait_until("the watcher outlived the script", lambda: not _pids_naming(str(sandbox)), 3)
    assert not work.exists()


def _start_under_parent(cmd: str, script: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", PARENT, cmd, script])


def test_the_script_and_its_own_session_children_stop_when_the_parent_dies(sandbox: Path) -> None:
    cmd, work = _host_command(sandbox)
    # a child in the script's session and one in a session of its own (as torchrun's ranks)
    parent = _start_under_parent(cmd, f"{sandbox}/sleep 300 & setsid {sandbox}/sleep 301 & wait\n")
    _wait_until("the script never started", lambda: len(_pids_naming(f"{sandbox}/sleep 30")) >= 2, 10)
    parent.kill()
    parent.wait()
    _wait_until("the script outlived the process that started it", lambda: not _pids_naming(str(sandbox)), 8)
    assert not work.exists()


def test_a_script_that_ignores_sigterm_is_killed_after_the_grace(
    sandbox: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(shell, "STOP_GRACE_S", 1)
    cmd, work = _host_command(sandbox)
    parent = _start_under_parent(cmd, f"trap '' TERM; {sandbox}/sleep 300\n")
    _wait_until("the script never started", lambda: _pids_naming(f"{sandbox}/sleep 300"), 10)
    parent.kill()
    parent.wait()
    _wait_until("SIGKILL never followed", lambda: not _pids_naming(str(sandbox)), 8)
    assert not work.exists()


def test_a_containers_script_is_stopped_through_the_runtime_by_its_name(sandbox: Path) -> None:
    """The container's processes are dockerd's, not the session's: `docker kill NAME` stops it."""
    log = sandbox / "docker.log"
    cli = sandbox / "docker"
    cli.write_text(
        f'#!/bin/sh\necho "$*" >> {shell.quote(log)}\n[ "$1" = run ] && exec {sandbox}/sleep 302\n'
    )
    cli.chmod(0o755)
    runtime = SimpleNamespace(cli=str(cli), command=shell.join)
    work = sandbox / "gpuonboard-smoke_train-abc123"
    launch = Launch("python3", True, "img:1", str(sandbox), 60)
    cmd = build_command(launch, "smoke_train.py", [], str(work), runtime, remote_timeout=50)
    parent = _start_under_parent(cmd, "print(1)\n")
    _wait_until("the container never started", lambda: _pids_naming(f"{sandbox}/sleep 302"), 10)
    parent.kill()
    parent.wait()
    _wait_until("the container outlived the session", lambda: not _pids_naming(str(sandbox)), 8)
    calls = log.read_text().splitlines()
    assert calls[0].startswith("run --rm --name gpuonboard-smoke_train-abc123 ")
    assert "kill --signal=TERM gpuonboard-smoke_train-abc123" in calls
