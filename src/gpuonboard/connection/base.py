"""What every runner shares: the command result, the Runner contract, and the bounds on what
the inventory asks (connect timeout, jump hops, key file size, local waits).

paramiko is imported on first use (`import_paramiko`), not with this package."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from gpuonboard.inventory import Host

DEFAULT_KNOWN_HOSTS = Path(".gpuonboard") / "known_hosts"
# Bounds on what the inventory asks, at the point of use (the inventory refuses most at load):
# a connect timeout of 1e300 s raised OverflowError in select/socket/threading (a thread's
# traceback, "internal error" for the host); 1,200 jump hosts nested 1,200 SSH sessions; a key
# file of gigabytes, or a FIFO, was read whole (or forever) to see whether it is a key
MAX_CONNECT_TIMEOUT_S = 3600.0  # the longest wait for a host's TCP connect, banner and login
MAX_WAIT_S = 7 * 86400.0  # the longest wait for a local command (poll() takes under 24.8 days)
MAX_JUMP_HOPS = 16  # OpenSSH sets none; real ProxyJump chains are one to three hops
MAX_KEY_FILE_BYTES = 1 << 20  # a private key is a few KiB (an RSA-16384 PEM, about 12 KiB)


@dataclass(frozen=True)
class CommandResult:
    """What one remote (or local) command returned."""

    command: str
    exit_code: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        """True when the command exited 0."""
        return self.exit_code == 0


class Runner(Protocol):
    """Something that runs a built command string on a host (SSH or local)."""

    host: Host
    fingerprint: str | None

    def run(
        self,
        command: str,
        stdin: bytes | None = None,
        timeout: float | None = None,
        prefetch: bool = False,
        on_output: Callable[[bytes], None] | None = None,
    ) -> CommandResult:
        """Run `command` (built by gpuonboard.shell) and capture its output.

        `prefetch=True` hints that another command will follow, so the SSH runner opens
        the next channel while this command runs (its round trip then costs nothing).
        `on_output`, when given, is called with each chunk of stdout as it arrives (live
        progress); the result still holds the whole output.
        """
        ...

    def close(self) -> None:
        """Release the connection."""
        ...


def decode_stdout(data: bytes) -> str:
    """A command's stdout as text: bytes that are not UTF-8 (a file name from an old archive in a
    listing) kept as lone surrogates, so the name matches the local one (os.fsdecode does the
    same) and encodes back to the same bytes; stderr is only shown, so it uses "replace"."""
    return data.decode("utf-8", "surrogateescape")


def connect_timeout(host: Host) -> float:
    """The host's connect timeout as waited: at most MAX_CONNECT_TIMEOUT_S (a NaN or a value
    that is not positive: the default 10 s)."""
    seconds = host.connect_timeout
    if not seconds > 0:  # (NaN too)
        return 10.0
    return min(float(seconds), MAX_CONNECT_TIMEOUT_S)


# paramiko logs a refused port forward ("Secsh channel 0 open FAILED: Connection refused", once
# per try) through Python's last-resort handler, onto stderr before our one sentence; every
# failure it logs also reaches us as an exception, which says it once, plainly
logging.getLogger("paramiko").addHandler(logging.NullHandler())


def import_paramiko() -> Any:
    """paramiko, imported on first use rather than with this module: Preconnect's TCP
    connections open while it loads."""
    import paramiko

    return paramiko
