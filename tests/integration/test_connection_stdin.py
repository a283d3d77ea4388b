"""Over real SSH: a command that answers while it reads a large stdin does not deadlock the
runner (it wrote all of stdin before reading any output: once the output filled the SSH
window and the host's pipes, both ends waited for good; 200,000 files to hash hung)."""

from __future__ import annotations

import hashlib
import os
import signal
import time
from pathlib import Path

from conftest import ssh_runner

from gpuonboard.connection import SSHRunner
from gpuonboard.testing import TestHostPool


def test_output_is_read_while_a_large_stdin_is_written(pool: TestHostPool, tmp_path: Path) -> None:
    th = pool.hosts["good"]
    runner = ssh_runner(th, pool, tmp_path)
    assert isinstance(runner, SSHRunner)
    # 6 MB in, 12 MB out as it reads: far past the 2 MiB window plus the pipe buffers
    stdin = b"".join(
        b"%07d-abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvw\n" % i for i in range(80_000)
    )
    try:
        r = runner.run("sed p", stdin=stdin, timeout=120)
        # a small stdin still goes inline, and a command that reads nothing still ends
        small = runner.run("cat", stdin=b"x" * 1000, timeout=30)
        ignored = runner.run("true", stdin=b"y" * 500_000, timeout=30)
    finally:
        runner.close()
    assert r.exit_code == 0 and len(r.stdout) == 2 * len(stdin)
    want = b"".join(line + line for line in stdin.splitlines(keepends=True))
    assert hashlib.sha256(r.stdout.encode()).hexdigest() == hashlib.sha256(want).hexdigest()
    assert small.stdout == "x" * 1000 and ignored.exit_code == 0


def test_a_served_shell_the_host_killed_is_not_a_dropped_connection(
    pool: TestHostPool, tmp_path: Path
) -> None:
    """The shell kept waiting for the next command (prefetch) is killed on the host while it
    waits: the next command runs on a new channel of the same connection, once, and is not
    reported as the connection dropping (it was "the SSH connection dropped (Socket is
    closed)")."""
    th = pool.hosts["good"]
    runner = ssh_runner(th, pool, tmp_path)
    assert isinstance(runner, SSHRunner)
    pid_file, ran = tmp_path / "served.pid", tmp_path / "ran"
    try:
        # a served script runs in a subshell of the waiting shell, so its $$ is that shell's pid
        assert runner.run(f"sh -c 'echo $$ > {pid_file}'", prefetch=True).ok
        served = runner._serving
        assert served is not None
        os.kill(int(pid_file.read_text()), signal.SIGKILL)  # the test host's shell, started by this test
        deadline = time.monotonic() + 10
        while not served[0].closed and time.monotonic() < deadline:
            time.sleep(0.01)
        assert served[0].closed
        r = runner.run(f"sh -c 'echo x >> {ran}; echo next'")
        again = runner.run("echo again")
    finally:
        runner.close()
    assert (r.exit_code, r.stdout, again.stdout) == (0, "next\n", "again\n")
    assert ran.read_text() == "x\n"
