"""Per-run log `.gpuonboard/logs/<run-id>.log`: every remote command, its exit code and duration.

Lines pass through `masking.mask`, so no Secret's value can reach the file; long scripts
(the batched probe) are shortened to their first line.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from gpuonboard import masking

if TYPE_CHECKING:
    from gpuonboard.connection import CommandResult, Runner

MAX_COMMAND = 300


class RunLog:
    """Append-only, thread-safe log file of one run."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._lock = threading.Lock()
        self._file: TextIO = path.open("a", encoding="utf-8", errors="backslashreplace")  # names not UTF-8

    def write(self, host: str, message: str) -> None:
        """One masked line: time, host, message."""
        line = masking.mask(f"{time.strftime('%H:%M:%S')} {host}: {message}")
        with self._lock:
            if self._file.closed:  # a host thread still ending after a Ctrl-C closed the run
                return
            self._file.write(line.replace("\n", " | ") + "\n")
            self._file.flush()

    def command(self, host: str, command: str, exit_code: int, seconds: float) -> None:
        """Log one remote command (shortened) with its result."""
        first = command.strip().splitlines()[0] if command.strip() else ""
        more = " ..." if "\n" in command.strip() or len(first) > MAX_COMMAND else ""
        self.write(host, f"$ {first[:MAX_COMMAND]}{more} -> exit {exit_code} in {seconds:.2f}s")

    def close(self) -> None:
        """Close the file."""
        with self._lock:
            self._file.close()


class LoggedRunner:
    """A Runner that logs each command it runs (the connection stays the wrapped one's)."""

    def __init__(self, inner: Runner, log: RunLog) -> None:
        self.inner = inner
        self.log = log
        self.host = inner.host
        self.fingerprint = inner.fingerprint
        # the host's fabric.Connection (SSH hosts), for a user's `python` step; its own
        # sessions are not logged here (Fabric runs them)
        self.connection = getattr(inner, "connection", None)

    def run(
        self,
        command: str,
        stdin: bytes | None = None,
        timeout: float | None = None,
        prefetch: bool = False,
        on_output: Callable[[bytes], None] | None = None,
    ) -> CommandResult:
        """Run through the wrapped runner and log the command with its result."""
        start = time.monotonic()
        result = self.inner.run(command, stdin=stdin, timeout=timeout, prefetch=prefetch, on_output=on_output)
        self.log.command(self.host.name, command, result.exit_code, time.monotonic() - start)
        return result

    def close(self) -> None:
        """Close the wrapped runner."""
        self.inner.close()
