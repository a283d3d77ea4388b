"""The remote nvidia-smi stream of one host: the commands (the looping query, wrapped so it
dies with our channel; the compute processes), a running command whose stdout is read as it
comes (an exec channel of the host's one SSH connection, or a local process), and the words
for why a stream ended or went silent.
"""

from __future__ import annotations

import contextlib
import select
import subprocess
import tempfile
import time
from collections.abc import Sequence

from gpuonboard import shell
from gpuonboard.connection import Runner, SSHRunner
from gpuonboard.watch.samples import MAX_LINE, MONITOR_FIELDS, PROCESS_FIELDS

MAX_DETAIL = 300  # characters of a host's own error text kept in a stale reason


def loop_args(interval: float) -> list[str]:
    """`-l N` for whole seconds, `-lms N` below or between them."""
    if interval >= 1 and float(interval).is_integer():
        return ["-l", str(int(interval))]
    return ["-lms", str(max(1, round(interval * 1000)))]


def query_command(interval: float | None, fields: Sequence[str] = MONITOR_FIELDS) -> str:
    """The nvidia-smi query; looping (-l/-lms) unless interval is None."""
    argv = ["nvidia-smi", f"--query-gpu={','.join(fields)}", "--format=csv,noheader,nounits"]
    if interval is not None:
        argv += loop_args(interval)
    return shell.join(argv)


def stream_command(interval: float, fields: Sequence[str] = MONITOR_FIELDS) -> str:
    """The looping query, wrapped so it dies when our channel closes."""
    return shell.until_stdin_closes(query_command(interval, fields))


def process_command() -> str:
    """Compute processes per GPU (for the top-process column)."""
    return shell.join(
        ["nvidia-smi", f"--query-compute-apps={','.join(PROCESS_FIELDS)}", "--format=csv,noheader,nounits"]
    )


# ------------------------------------------------------------------ streams


def stream_end_reason(status: int | None, detail: str | None) -> str:
    """Why a host's nvidia-smi stream ended, in the host's own words where it gave any (its
    last stderr line, or a last stdout line that was no sample): `nvidia-smi exited 127: sh: 1:
    nvidia-smi: not found`, never just "ended" when the host said why."""
    head = "the nvidia-smi stream ended" if status is None else f"nvidia-smi exited {status}"
    return _with_detail(head, detail)


def silent_reason(seconds: float, detail: str | None) -> str:
    """Why a host whose stream still runs is stale: no sample for that long, and the last line
    it printed instead, in its own words (`no sample for 11s: Unable to determine the device
    handle for GPU0000:0B:00.0: Unknown Error`)."""
    return _with_detail(f"no sample for {seconds:.0f}s", detail)


def _with_detail(head: str, detail: str | None) -> str:
    detail = (detail or "").strip()
    if len(detail) > MAX_DETAIL:
        detail = detail[: MAX_DETAIL - 3] + "..."
    return f"{head}: {detail}" if detail else head


def last_line(text: str) -> str | None:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else None


class Stream:
    """A running remote command whose stdout we read; close() ends it."""

    def read(self, timeout: float) -> bytes | None:  # pragma: no cover - interface
        """Bytes (b"" when none arrived within timeout), or None at EOF."""
        raise NotImplementedError

    def exit_status(self, wait: float) -> int | None:  # pragma: no cover - interface
        """The command's exit status once it ended (waiting up to `wait` s), else None."""
        raise NotImplementedError

    def stderr_tail(self) -> str | None:  # pragma: no cover - interface
        """The last line the command wrote to stderr, if any."""
        raise NotImplementedError

    def close(self) -> None:  # pragma: no cover - interface
        """End the remote command and release the channel."""
        raise NotImplementedError


class SshStream(Stream):
    def __init__(self, runner: SSHRunner, command: str) -> None:
        self.chan = runner.transport.open_session()
        self.chan.exec_command(shell.login_neutral(command))  # (any login shell)
        self._stderr = b""

    def _drain_stderr(self) -> None:
        while self.chan.recv_stderr_ready():  # nvidia-smi's complaints: not data, but the reason
            self._stderr = (self._stderr + self.chan.recv_stderr(1 << 16))[-MAX_LINE:]

    def read(self, timeout: float) -> bytes | None:
        chan = self.chan
        if not chan.recv_ready() and not (chan.closed or chan.eof_received):
            select.select([chan], [], [], timeout)
        self._drain_stderr()
        if chan.recv_ready():
            return bytes(chan.recv(1 << 16))
        if chan.closed or chan.eof_received or not chan.get_transport().is_active():
            return None
        return b""

    def exit_status(self, wait: float) -> int | None:
        chan = self.chan
        deadline = time.monotonic() + wait
        with contextlib.suppress(Exception):
            while (
                not chan.exit_status_ready()
                and time.monotonic() < deadline
                and chan.get_transport().is_active()
            ):
                time.sleep(0.02)
        if not chan.exit_status_ready():
            return None
        status = int(chan.recv_exit_status())
        return None if status < 0 else status  # -1: paramiko's "no status" (a signal without one)

    def stderr_tail(self) -> str | None:
        with contextlib.suppress(Exception):
            self._drain_stderr()
        return last_line(self._stderr.decode("utf-8", "replace"))

    def close(self) -> None:
        chan = self.chan
        with contextlib.suppress(Exception):
            chan.shutdown_write()  # EOF on the remote stdin: the watcher kills nvidia-smi
            deadline = time.monotonic() + 2
            while (
                not chan.exit_status_ready()
                and time.monotonic() < deadline
                and chan.get_transport().is_active()
            ):
                time.sleep(0.02)
        with contextlib.suppress(Exception):
            chan.close()


class LocalStream(Stream):
    def __init__(self, command: str) -> None:
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 - closed in close()
        self.proc = subprocess.Popen(
            ["/bin/sh", "-c", command],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
        )

    def read(self, timeout: float) -> bytes | None:
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not ready:
            return b""
        data = self.proc.stdout.read1(1 << 16)  # type: ignore[attr-defined]
        return bytes(data) or None

    def exit_status(self, wait: float) -> int | None:
        try:
            status = self.proc.wait(wait)
        except subprocess.TimeoutExpired:
            return None
        return 128 - status if status < 0 else status  # killed by signal N: 128 + N, as a shell says

    def stderr_tail(self) -> str | None:
        self._stderr.seek(0)
        return last_line(self._stderr.read()[-MAX_LINE:].decode("utf-8", "replace"))

    def close(self) -> None:
        with contextlib.suppress(OSError):
            assert self.proc.stdin is not None
            self.proc.stdin.close()
        try:
            self.proc.wait(2)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self._stderr.close()


def open_stream(runner: Runner, command: str) -> Stream:
    if isinstance(runner, SSHRunner):
        return SshStream(runner, command)
    return LocalStream(command)
