"""SSHRunner: one open SSH connection (through its jump chain) running gpuonboard's commands as
exec channels, a served shell kept for the next command, and a lost link told apart from a
command's failure."""

from __future__ import annotations

import contextlib
import secrets
import threading
from collections.abc import Callable
from typing import Any

from gpuonboard import interrupt
from gpuonboard.connection.base import CommandResult, decode_stdout
from gpuonboard.connection.channel import _drain, _exec_pipelined, _serve_script, _sh_c_script
from gpuonboard.connection.failures import _reason
from gpuonboard.connection.hostkeys import HostKeyPolicy
from gpuonboard.connection.linkwatch import LinkWatch
from gpuonboard.connection.login import _close_all
from gpuonboard.errors import CommandError, ConnectError, ConnectionLost
from gpuonboard.inventory import Host

# how long a channel closed without an exit status waits for paramiko to mark a dead
# connection inactive (it closes the channels first); only failures ever wait
_LINK_SETTLE_S = 0.25
_STDIN_INLINE = 64 * 1024  # a larger stdin is written by a thread while the output is read


class SSHRunner:
    """One open SSH connection (through its jump chain) running commands as exec channels.

    When a `sh -c SCRIPT` command is run with `prefetch=True` (another command follows),
    its session stays open afterwards: the remote shell, once SCRIPT is done, waits on
    stdin for that next command, so it costs no new SSH session (no channel open, no
    login-shell start on the host). See _serve_script.

    `connection` is the host's open fabric.Connection (its jump hosts are its `gateway`s), for
    code that wants Fabric's own API on the same login: `connection.run(...)`, `.sftp()`,
    `.forward_local(...)`; each such call opens its own session on the connection.
    """

    def __init__(self, host: Host, connection: Any, policy: HostKeyPolicy, hops: list[Any]) -> None:
        self.host = host
        self._conn = self.connection = connection
        self._hops = hops
        self.fingerprint = policy.seen
        self.transport = connection.client.get_transport()
        self._spare: Any = None
        self._serving: tuple[Any, str] | None = None  # (channel, token): a shell awaiting a command
        self.silent_for: float | None = None  # set by LinkWatch when it gave the connection up

    def watch(self, interval: float, count: int) -> None:
        """Give the connection up once the host has answered nothing for interval * count
        seconds (see LinkWatch); a command running then ends with ConnectionLost."""
        if interval > 0 and count > 0:
            LinkWatch(self, interval, count).start()

    def run(
        self,
        command: str,
        stdin: bytes | None = None,
        timeout: float | None = None,
        prefetch: bool = False,
        on_output: Callable[[bytes], None] | None = None,
    ) -> CommandResult:
        """Run one command on an exec channel of the shared connection (see Runner.run).
        A signal that stops the run is raised between the polls of its output, or once paramiko
        is done (interrupt.shielded): raised inside it, it could leave one of paramiko's locks
        held, and every later command on this connection (an interrupt's cleanup) then hung."""
        with interrupt.shielded():
            return self._run(command, stdin, timeout, prefetch, on_output)

    def _run(
        self,
        command: str,
        stdin: bytes | None,
        timeout: float | None,
        prefetch: bool,
        on_output: Callable[[bytes], None] | None,
    ) -> CommandResult:
        try:
            served, self._serving = self._serving, None
            if served is not None and self._hand_to(served, command):
                out, err, code = self._collect(served[0], timeout, on_output, prefetch, stdin)
            else:
                chan, self._spare = _open(self._spare) or self._open_session(timeout), None
                script = _sh_c_script(command) if prefetch and stdin is None and on_output is None else None
                if script is not None:
                    token = "@@gpuonboard-serve-" + secrets.token_hex(12)
                    _exec_pipelined(chan, _serve_script(script, token))
                    out, err, marked = _drain(chan, timeout, None, token.encode())
                    if marked is not None:
                        self._serving, code = (chan, token), marked
                    else:  # the shell ended before serving: an ordinary result
                        code = chan.recv_exit_status() if chan.exit_status_ready() else -1
                        chan.close()
                else:
                    _exec_pipelined(chan, command)
                    out, err, code = self._collect(chan, timeout, on_output, prefetch, stdin)
        except TimeoutError as exc:  # before OSError: TimeoutError is one of them
            raise CommandError(f"host {self.host.name}: a remote command timed out ({exc}).") from None
        except (OSError, EOFError) as exc:
            if self._link_lost():
                raise self._lost(exc) from None
            raise ConnectError(f"host {self.host.name}: the SSH connection dropped ({exc}).") from None
        except Exception as exc:
            if type(exc).__module__.startswith("paramiko"):
                if self._link_lost():  # e.g. "SSH session not active": no channel opens on it
                    raise self._lost(exc, running=False) from None
                raise ConnectError(f"host {self.host.name}: the SSH connection failed ({exc}).") from None
            raise
        if code == -1 and self._link_lost():
            # the channel closed without an exit status because the connection under it went
            # (sshd killed, host rebooted, link cut): not the command's failure, and not a refusal
            raise self._lost(None)
        if code == -1 and not out and not err:
            raise CommandError(
                f"host {self.host.name}: the server refused to run a command on its SSH session."
            )
        return CommandResult(command, code, decode_stdout(out), err.decode("utf-8", "replace"))

    def _open_session(self, timeout: float | None) -> Any:
        """A new exec channel, within the command's timeout (paramiko's own is an hour): a
        connection whose reader thread is wedged (a signal raised inside paramiko's locking, a
        Ctrl-C or SIGTERM while a channel is polled, can leave one of its locks held) answers no
        channel open, and a command then fails in its time, as one over a dead link does."""
        return self.transport.open_session(timeout=timeout)

    def _hand_to(self, served: tuple[Any, str], command: str) -> bool:
        """Send `command` to the shell waiting on its channel: the shell reads lines up to the
        token, then runs them with the rest of the channel as their stdin. False when the host
        closed that shell's channel before it could take the command (it was killed there, say):
        the command never ran, and it runs on a new channel instead; the connection is fine."""
        chan, token = served
        script = _sh_c_script(command)
        text = f"(\n{script}\n)" if script is not None else command
        try:
            if _open(chan) is None:
                return False
            chan.sendall(f"{text}\n{token}\n".encode("utf-8", "surrogateescape"))
        except OSError:  # paramiko's "Socket is closed": nothing of it was sent
            if not chan.closed or not self.transport.is_active():
                raise
            return False
        return True

    def _link_lost(self) -> bool:
        """True when this runner's SSH connection is gone. paramiko's transport thread closes its
        channels just before it marks itself inactive, so a caller that saw its channel close
        waits a moment for that thread to end (one that stays up is a live connection)."""
        transport = self.transport
        if transport.is_active():
            with contextlib.suppress(RuntimeError):  # a transport thread never started
                transport.join(_LINK_SETTLE_S)
        return not transport.is_active()

    def _lost(self, exc: BaseException | None, running: bool = True) -> ConnectionLost:
        """The one sentence for a connection that dropped (while a command ran, or before)."""
        cause = exc if exc is not None else getattr(self.transport, "saved_exception", None)
        why = "closed by the other end" if cause is None or isinstance(cause, EOFError) else _reason(cause)
        if self.silent_for is not None:
            why = f"no answer from the host for {self.silent_for:.0f} s: the link is down or the host hangs"
        when = "while a command was running" if running else "before a command could start"
        return ConnectionLost(
            f"host {self.host.name}: the SSH connection was lost {when} ({why});"
            " the host is unreachable now. Once it answers again, run the command again"
            " (provision --resume continues at the step that was running)."
        )

    def _collect(
        self,
        chan: Any,
        timeout: float | None,
        on_output: Callable[[bytes], None] | None,
        prefetch: bool,
        stdin: bytes | None = None,
    ) -> tuple[bytes, bytes, int]:
        """Send the command's stdin and end it, open the next channel meanwhile when one
        follows, then its output and exit code (-1 when the server sent none).

        A stdin larger than _STDIN_INLINE is sent by a thread while the output is read: a
        command that answers as it reads (hashing a list of 200,000 files) fills the SSH
        window and its pipes with output while its stdin is still being written, and a
        writer that read nothing until it had written everything waited for good."""
        writer, failed = None, list[BaseException]()
        if stdin and len(stdin) > _STDIN_INLINE:
            writer = threading.Thread(target=_send_and_end, args=(chan, stdin, failed), daemon=True)
            writer.start()
        else:
            _send_and_end(chan, stdin)
        if prefetch:
            self._spare = self._open_session(timeout)
        out, err, _ = _drain(chan, timeout, on_output)
        if writer is not None:
            writer.join()
            if failed:
                raise failed[0]
        code = chan.recv_exit_status() if chan.exit_status_ready() else -1
        chan.close()
        return out, err, code

    def close(self) -> None:
        """Close the connection and every jump hop."""
        with interrupt.shielded():
            self._close()

    def _close(self) -> None:
        for chan in (self._spare, self._serving[0] if self._serving else None):
            if chan is not None:
                with contextlib.suppress(Exception):
                    chan.close()
        self._spare = self._serving = None
        _close_all([*self._hops, self._conn])


def _open(chan: Any) -> Any:
    """`chan` when it is a channel the host has not closed (or ended its input of), else None:
    a channel opened ahead of a command (the spare, a served shell) can be closed by the host
    while it waits, and a command sent on it would be taken for the connection dropping."""
    if chan is None or not (chan.closed or chan.eof_received):
        return chan
    with contextlib.suppress(Exception):
        chan.close()
    return None


def _send_and_end(chan: Any, data: bytes | None, failed: list[BaseException] | None = None) -> None:
    """Write a command's stdin and end it (EOF). With `failed` (the writer thread): a channel
    the command closed before it read all of its stdin is not an error (the command's exit
    status says how it went, as subprocess's communicate() ignores a broken pipe; a lost
    connection shows in the output's reader); any other error is kept there for the reader's
    thread to raise."""
    try:
        if data:  # (a memoryview: paramiko's sendall slices what is left after each send, a
            # copy of the rest each time for bytes: twice a 50 MB manifest's size at once)
            chan.sendall(memoryview(data))
        chan.shutdown_write()
    except (OSError, EOFError):
        if failed is None:
            raise
    except Exception as exc:
        if failed is None:
            raise
        failed.append(exc)
