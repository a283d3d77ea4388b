"""One exception root; each error carries the sentence a user needs to fix it, and its exit code."""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """Process exit codes, mapped in one place (api/cli), like httpie's."""

    OK = 0
    ACCEPTANCE_FAILED = 1
    USAGE = 2
    UNREACHABLE = 3
    HOST_KEY = 4
    INTERRUPTED = 130
    READER_LEFT = 141  # the reader of our output went away (128 + SIGPIPE, as a shell tool)


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP (`kill PID`, a closed terminal), raised by the CLI's signal handler:
    unwound like Ctrl-C, so the upload's rsync and ssh are stopped and the locks given back,
    instead of the default action's instant death that left rsync writing on its own (exit 143)."""


class GpuonboardError(Exception):
    """Root of every error the tool reports to the user as one plain sentence."""

    exit_code: ExitCode = ExitCode.USAGE

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class InventoryError(GpuonboardError):
    """A malformed, missing or inconsistent inventory file."""


class PlaybookError(GpuonboardError):
    """A malformed or inconsistent playbook file."""


class UsageError(GpuonboardError):
    """A bad command-line option or selector."""


class ConnectError(GpuonboardError):
    """A host could not be reached or logged into."""

    exit_code = ExitCode.UNREACHABLE


class ConnectionLost(ConnectError):
    """An open SSH connection dropped while a command ran (sshd killed, host down, link cut):
    the host is unreachable now, and a rerun (--resume) continues where it stopped."""


class HostKeyError(ConnectError):
    """A host key is unknown (and not trusted) or has changed."""

    exit_code = ExitCode.HOST_KEY


class CommandError(GpuonboardError):
    """A remote command failed in a way the step cannot interpret."""

    exit_code = ExitCode.ACCEPTANCE_FAILED


class TransferError(GpuonboardError):
    """A dataset upload failed (source missing, remote disk full, link drop, verification)."""

    exit_code = ExitCode.ACCEPTANCE_FAILED


class CryptoError(GpuonboardError):
    """Encryption or decryption failed: bad recipient, wrong identity, tampered ciphertext."""
