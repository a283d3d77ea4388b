"""`connection: local`: commands run on this machine through /bin/sh (LocalRunner), with the
SSH runner's timeout and exit-status conventions."""

from __future__ import annotations

import contextlib
import os
import select
import subprocess
import threading
import time
from collections.abc import Callable

from gpuonboard.connection.base import MAX_WAIT_S, CommandResult, decode_stdout
from gpuonboard.errors import CommandError
from gpuonboard.inventory import Host


class LocalRunner:
    """`connection: local`: run commands on this machine (when gpuonboard runs on the box)."""

    fingerprint: str | None = None

    def __init__(self, host: Host) -> None:
        self.host = host

    def run(
        self,
        command: str,
        stdin: bytes | None = None,
        timeout: float | None = None,
        prefetch: bool = False,
        on_output: Callable[[bytes], None] | None = None,
    ) -> CommandResult:
        """Run one command through /bin/sh locally (as SSHRunner: a timeout is a CommandError,
        a command killed by a signal ends with 128 + N)."""
        if timeout is not None:
            timeout = min(timeout, MAX_WAIT_S)  # (1e300: OverflowError in subprocess's poll)
        try:
            if on_output is not None:
                return _run_streaming(command, stdin, timeout, on_output)
            proc = subprocess.run(
                ["/bin/sh", "-c", command], input=stdin or b"", capture_output=True, timeout=timeout
            )
        except subprocess.TimeoutExpired:
            raise CommandError(
                f"host {self.host.name}: a command timed out (after {timeout or 0:.0f} s)."
            ) from None
        return CommandResult(
            command,
            _shell_status(proc.returncode),
            decode_stdout(proc.stdout),
            proc.stderr.decode("utf-8", "replace"),
        )

    def close(self) -> None:
        """Nothing to release."""


def _run_streaming(
    command: str, stdin: bytes | None, timeout: float | None, on_output: Callable[[bytes], None]
) -> CommandResult:
    """LocalRunner.run with stdout handed to `on_output` chunk by chunk as it arrives."""
    proc = subprocess.Popen(
        ["/bin/sh", "-c", command], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert proc.stdin and proc.stdout and proc.stderr
    err: list[bytes] = []

    def feed() -> None:
        with contextlib.suppress(OSError):
            proc.stdin.write(stdin or b"")  # type: ignore[union-attr]
            proc.stdin.close()  # type: ignore[union-attr]

    def collect_err() -> None:
        err.append(proc.stderr.read())  # type: ignore[union-attr]

    threads = [threading.Thread(target=feed, daemon=True), threading.Thread(target=collect_err, daemon=True)]
    for t in threads:
        t.start()
    out: list[bytes] = []
    deadline = time.monotonic() + timeout if timeout else None
    fd = proc.stdout.fileno()
    while True:
        wait = 0.5 if deadline is None else max(0.0, min(0.5, deadline - time.monotonic()))
        ready, _, _ = select.select([fd], [], [], wait)
        if ready:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                break
            out.append(chunk)
            on_output(chunk)
        elif deadline is not None and time.monotonic() > deadline:
            proc.kill()
            proc.wait()
            raise subprocess.TimeoutExpired(command, timeout or 0)
    code = proc.wait()
    for t in threads:
        t.join()
    proc.stdout.close()
    proc.stderr.close()
    return CommandResult(
        command, _shell_status(code), decode_stdout(b"".join(out)), b"".join(err).decode("utf-8", "replace")
    )


def _shell_status(returncode: int) -> int:
    """subprocess's -N (killed by signal N) as a shell and sshd's exit-signal give it: 128 + N."""
    return 128 - returncode if returncode < 0 else returncode
