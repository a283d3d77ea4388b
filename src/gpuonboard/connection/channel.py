"""The exec-channel protocol of an SSH connection: commands sent without waiting for the
exec reply, their output drained, a `sh -c` script's session kept serving the next command
(_serve_script), and sshd's exit-signal read as the shell's 128 + N.

The two paramiko internals gpuonboard still uses live here, each for want of a public API
(see _exec_pipelined and _channel_request)."""

from __future__ import annotations

import select
import signal
import time
from collections.abc import Callable
from typing import Any

from gpuonboard import interrupt


def _sh_c_script(command: str) -> str | None:
    """SCRIPT when `command` is exactly shell.sh_c(SCRIPT), else None."""
    from gpuonboard import shell

    if not command.startswith("sh -c "):
        return None
    arg = command[6:]
    script = arg[1:-1].replace("'\"'\"'", "'") if len(arg) > 1 and arg[0] == arg[-1] == "'" else arg
    # a blank script would make `( )`, a syntax error: such a command is run as it is
    return script if script.strip() and shell.sh_c(script) == command else None


def _serve_script(script: str, token: str) -> str:
    """The exec command: SCRIPT in a subshell (stdin /dev/null, as an exec channel's would
    be at EOF), then its exit code and `token` framed on stdout and stderr; then the shell
    reads the next command from stdin, line by line up to a `token` line, and runs it with
    eval, the rest of stdin being that command's stdin. EOF instead ends it (exit 0).

    `read` takes one byte at a time from a pipe (POSIX), so it never eats into the next
    command's stdin. Variables use a prefix no gpuonboard command uses.
    """
    from gpuonboard import shell

    tok = shell.quote(token)
    return shell.sh_c(
        f"(\n{script}\n) </dev/null; __gpo_rc=$?\n"
        f"printf '\\n%s %s\\n' {tok} \"$__gpo_rc\"; printf '\\n%s\\n' {tok} >&2\n"
        "__gpo_c=\n"
        "while IFS= read -r __gpo_l; do\n"
        f'  if [ "$__gpo_l" = {tok} ]; then eval "$__gpo_c"; exit; fi\n'
        '  __gpo_c="$__gpo_c$__gpo_l\n"\n'
        "done\n"
    )


def _exec_pipelined(chan: Any, command: str) -> None:
    """Send the exec request without waiting for the server's reply (saves one round trip).

    Same message as paramiko's Channel.exec_command, minus its wait: stdin and the exit
    status follow on the channel; a refused request closes the channel, which _drain sees.
    One of the two paramiko internals this module still uses (Transport._send_user_message):
    paramiko has no public call that sends a channel request without waiting for its reply,
    and that wait is a round trip per command (20 ms on a 20 ms link).
    """
    from paramiko.common import cMSG_CHANNEL_REQUEST
    from paramiko.message import Message

    from gpuonboard import shell

    m = Message()
    m.add_byte(cMSG_CHANNEL_REQUEST)
    m.add_int(chan.remote_chanid)
    m.add_string("exec")
    m.add_boolean(True)
    # (any login shell: shell.login_neutral; a non-UTF-8 file name: its own bytes)
    m.add_string(shell.login_neutral(command).encode("utf-8", "surrogateescape"))
    chan.transport._send_user_message(m)


def _drain(
    chan: Any,
    timeout: float | None,
    on_output: Callable[[bytes], None] | None = None,
    token: bytes | None = None,
) -> tuple[bytes, bytes, int | None]:
    """stdout and stderr of a channel until its command exits.

    With `token` (a _serve_script session), it stops instead once stdout ends with
    `\\nTOKEN RC\\n` and stderr with `\\nTOKEN\\n`: both markers are cut off and RC is returned.
    """
    out: list[bytes] = []
    err: list[bytes] = []
    out_tail = err_tail = b""
    deadline = time.monotonic() + timeout if timeout else None
    while True:
        interrupt.check()  # (a signal that came while paramiko ran: raised here, between polls)
        if chan.recv_ready():
            out.append(chan.recv(1 << 16))
            if on_output is not None:
                on_output(out[-1])
            if token is None:
                continue
            out_tail = (out_tail + out[-1])[-200:]
        elif chan.recv_stderr_ready():
            err.append(chan.recv_stderr(1 << 16))
            if token is None:
                continue
            err_tail = (err_tail + err[-1])[-200:]
        elif (chan.exit_status_ready() and chan.eof_received) or chan.closed:
            break
        elif deadline is not None and time.monotonic() > deadline:
            chan.close()
            raise TimeoutError(f"command timed out after {timeout:.0f}s")
        elif chan.eof_received:
            # (after the host's EOF, paramiko's pipe stays set for good: a select returns at
            # once, and this loop spun, ~30 times a command at 20 hosts and ~600 at one, until
            # the exit status came; paramiko sets status_event for it and when it closes)
            chan.status_event.wait(0.5)
            continue
        else:
            select.select([chan], [], [], 0.5)
            continue
        if token is not None and err_tail.endswith(b"\n" + token + b"\n"):
            head, sep, rc = out_tail.rpartition(b"\n" + token + b" ")
            if sep and rc.endswith(b"\n") and rc[:-1].lstrip(b"-").isdigit():
                o, e = b"".join(out), b"".join(err)
                return o[: len(o) - len(sep) - len(rc)], e[: len(e) - len(token) - 2], int(rc)
    while chan.recv_ready():
        out.append(chan.recv(1 << 16))
        if on_output is not None:
            on_output(out[-1])
    while chan.recv_stderr_ready():
        err.append(chan.recv_stderr(1 << 16))
    return b"".join(out), b"".join(err), None


def signal_status(name: str) -> int:
    """The exit status a shell gives a command killed by signal NAME ("KILL" -> 137); 255 for a
    name this system does not know."""
    try:
        return 128 + int(signal.Signals["SIG" + name])
    except KeyError:
        return 255


def _channel_request(handle: Callable[[Any, Any], None]) -> Callable[[Any, Any], None]:
    """paramiko's channel-request handler, plus `exit-signal` (RFC 4254 6.10), which paramiko
    ignores: a command killed by a signal (OOM killer, pkill) then ends with the status a shell
    gives it (128 + N) instead of none at all, which read as a refusal or a lost link. The
    other paramiko internal this module uses (a transport's _channel_handler_table, and the
    channel's exit_status and status_event that Channel._handle_request sets for
    `exit-status`): paramiko has no public hook for a channel request it does not handle."""

    def handler(chan: Any, m: Any) -> None:
        start = m.packet.tell()
        if chan is not None and m.get_text() == "exit-signal":
            m.get_boolean()  # want_reply: always false for exit-signal
            # (bytes, not text: a name that is no UTF-8 must not raise in the transport thread)
            chan.exit_status = signal_status(m.get_string().decode("ascii", "replace"))
            chan.status_event.set()
            return
        m.packet.seek(start)
        handle(chan, m)

    return handler
