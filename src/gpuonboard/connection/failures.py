"""The one sentence for each way a login or a link fails: unreachable (retried), refused,
no key to log in with, and the network reason in a few words."""

from __future__ import annotations

import socket

from gpuonboard.connection.auth import key_problem_message
from gpuonboard.connection.base import connect_timeout, import_paramiko
from gpuonboard.connection.hostkeys import HostKeyPolicy
from gpuonboard.errors import ConnectError, HostKeyError
from gpuonboard.inventory import Host


def _login_error(
    exc: BaseException, key_problem: str | None, policy: HostKeyPolicy, hop: Host, label: str
) -> ConnectError | None:
    """The one sentence for a login that failed with `exc` (None: not a login failure, a bug)."""
    paramiko = import_paramiko()
    if isinstance(exc, paramiko.BadHostKeyException):  # pragma: no cover - our policy handles keys
        return HostKeyError(f"host {label}: host key changed ({exc}).")
    if isinstance(exc, paramiko.SSHException):
        if policy.seen is not None and key_problem is not None and hop.key_file:
            # the host key was verified, then our key could not even be offered
            return ConnectError(key_problem_message(label, hop.key_file, key_problem))
        if policy.seen is not None and str(exc) == "No authentication methods available":
            return ConnectError(
                f"host {label} ({hop.user}@{hop.address}:{hop.port}): there is no key to log in"
                " with (no key_file, no SSH agent, no ~/.ssh/id_* key); set key_file in the"
                " inventory, or load the key into your SSH agent."
            )
        if isinstance(exc, paramiko.AuthenticationException):
            return ConnectError(
                f"host {label} ({hop.user}@{hop.address}:{hop.port}) refused the login ({exc});"
                f" check user and key_file{' ' + hop.key_file if hop.key_file else ''}."
            )
        return _unreachable(label, hop, exc)
    if isinstance(exc, OSError | EOFError):
        return _unreachable(label, hop, exc)
    return None


def _unreachable(label: str, hop: Host, exc: BaseException) -> ConnectError:
    """A network-level failure to reach `hop` (retried with backoff by open_runner)."""
    err = ConnectError(
        f"host {label} ({hop.address}:{hop.port}) is unreachable: {_reason(exc, hop)};"
        " check the address, port and firewall, or whether the server is up."
    )
    err.retryable = True  # type: ignore[attr-defined]
    return err


def _closed_early(exc: BaseException) -> bool:
    """Whether the connection was closed under paramiko (an EOF or a reset in the exception's
    chain), rather than left silent until the timeout."""
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            return False
        if isinstance(seen, EOFError | ConnectionResetError):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _reason(exc: BaseException, hop: Host | None = None) -> str:
    if isinstance(exc, socket.timeout | TimeoutError):
        return "connection timed out"
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    if isinstance(exc, socket.gaierror):
        name = f"the name {hop.address!r}" if hop is not None else "the name"
        return f"{name} does not resolve ({exc.strerror or exc}; DNS)"
    text = str(exc) or type(exc).__name__
    if "Unable to connect" in text or "Errno 111" in text:
        return "connection refused"
    if hop is not None and text.startswith("Error reading SSH protocol banner") and _closed_early(exc):
        # (in a split second: not a timeout; a proxy or firewall that takes the connection and
        # drops it, an sshd refusing by MaxStartups or tcp_wrappers, a port of another service)
        return (
            "the server closed the connection before sending its SSH greeting (is this port an SSH"
            " server, or does a firewall or proxy cut it?)"
        )
    if hop is not None and (
        text in ("No existing session", "Negotiation failed.")
        or text.startswith("Error reading SSH protocol banner")
    ):
        # paramiko's words, by timing, for a handshake that did not finish within the connect
        # timeout (a port that is no SSH server, an overloaded sshd)
        return (
            f"the SSH handshake did not finish within {max(1, round(connect_timeout(hop)))} s"
            " (no SSH greeting: is this port an SSH server?)"
        )
    return text
