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


# an error sentence longer than this keeps its start (the file, host and field it names) and its
# end (what to do), and says how much of the middle was cut: a value quoted whole (a 4 MB list in
# a step's argument) must not make the one-line error megabytes long
MAX_MESSAGE = 2000


def bounded_message(message: str, limit: int = MAX_MESSAGE) -> str:
    """`message`, or its first and last parts with the number of characters cut between them."""
    if len(message) <= limit:
        return message
    head, tail = limit * 2 // 3, limit // 3
    return f"{message[:head]} [... {len(message) - head - tail:,} characters cut ...] {message[-tail:]}"


class GpuonboardError(Exception):
    """Root of every error the tool reports to the user as one plain sentence (bounded in length)."""

    exit_code: ExitCode = ExitCode.USAGE

    def __init__(self, message: str) -> None:
        message = bounded_message(message)
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


class OtherOutputError(UsageError):
    """A saved output this tool knows but reads no fact from (`nvidia-smi topo -p2p`'s status
    matrix beside `topo -m`): a bad input where it is the file named, one noted as not read in a
    folder whose other files are judged."""


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
