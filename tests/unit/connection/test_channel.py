"""The probe session that stays open for the next command (connection._serve_script).

A local `sh -c` stands in for the SSH exec channel: same command text, stdout, stderr and
stdin pipes, so the remote side of the protocol runs for real here.
"""

from __future__ import annotations

import subprocess

from hypothesis import given
from hypothesis import strategies as st

from gpuonboard import shell
from gpuonboard.connection import _serve_script, _sh_c_script

TOKEN = "@@gpuonboard-serve-0123456789abcdef01234567"


def _start(script: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        ["/bin/sh", "-c", _serve_script(script, TOKEN)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def _read_until(stream: object, marker: bytes) -> bytes:
    data = b""
    while not data.endswith(marker):
        chunk = stream.read1(1 << 16)  # type: ignore[attr-defined]
        assert chunk, f"stream ended before {marker!r}: {data!r}"
        data += chunk
    return data


def test_script_result_is_framed_then_the_next_command_runs_with_the_rest_of_stdin() -> None:
    proc = _start("echo out; echo err >&2; read x || echo 'stdin at EOF'; exit 3")
    assert proc.stdin and proc.stdout and proc.stderr
    out = _read_until(proc.stdout, f"\n{TOKEN} 3\n".encode())
    err = _read_until(proc.stderr, f"\n{TOKEN}\n".encode())
    assert out == f"out\nstdin at EOF\n\n{TOKEN} 3\n".encode()
    assert err == f"err\n\n{TOKEN}\n".encode()
    # the next command, as SSHRunner sends it: the script in a subshell, the token, its stdin
    nxt = "set -e; cat > /dev/null; echo 'it'\"'\"'s done'; printf 'x\\ny\\n' | wc -l; exit 4"
    proc.stdin.write(f"(\n{nxt}\n)\n{TOKEN}\n".encode() + b"line 1\nline 2 \\ with $(no) `expansion`\n")
    proc.stdin.close()
    assert proc.stdout.read() == b"it's done\n2\n"
    assert proc.wait(5) == 4


def test_stdin_reaches_the_next_command_byte_for_byte() -> None:
    proc = _start("true")
    assert proc.stdin and proc.stdout
    _read_until(proc.stdout, f"\n{TOKEN} 0\n".encode())
    payload = bytes(range(1, 256)) * 64 + b"\nno final newline"
    proc.stdin.write(f"{shell.sh_c('sha256sum')}\n{TOKEN}\n".encode() + payload)
    proc.stdin.close()
    import hashlib

    assert proc.stdout.read().split()[0].decode() == hashlib.sha256(payload).hexdigest()
    assert proc.wait(5) == 0


def test_eof_instead_of_a_command_ends_the_shell_cleanly() -> None:
    proc = _start("echo only")
    assert proc.stdin and proc.stdout
    _read_until(proc.stdout, f"\n{TOKEN} 0\n".encode())
    proc.stdin.close()
    assert proc.stdout.read() == b""
    assert proc.wait(5) == 0


def test_the_script_cannot_reach_the_serving_shell() -> None:
    # exit, exports, traps and cd stay inside the script's subshell
    proc = _start("export LC_ALL=C; cd /; trap 'echo trap' EXIT; exit 7")
    assert proc.stdin and proc.stdout
    out = _read_until(proc.stdout, f"\n{TOKEN} 7\n".encode())
    assert out == f"trap\n\n{TOKEN} 7\n".encode()
    proc.stdin.write(f"{shell.sh_c('echo ${LC_ALL-unset}')}\n{TOKEN}\n".encode())
    proc.stdin.close()
    assert proc.stdout.read() == b"unset\n"


@given(st.text(alphabet=st.characters(blacklist_characters="\x00"), max_size=200))
def test_sh_c_script_inverts_shell_sh_c(script: str) -> None:
    assert _sh_c_script(shell.sh_c(script)) == (script if script.strip() else None)


def test_sh_c_script_refuses_anything_else() -> None:
    assert _sh_c_script("sh -c 'a' 'b'") is None
    assert _sh_c_script("touch /tmp/x") is None
    assert _sh_c_script("sh -c a; rm -rf /") is None
    assert _sh_c_script("sh -c 'echo 'x") is None
    assert _sh_c_script("sh -c ''") is None  # `( )` would be a syntax error


def test_kex_order_keeps_post_quantum_first_then_p256() -> None:
    from gpuonboard.connection import kex_order

    paramiko_default = (
        "mlkem768x25519-sha256",
        "curve25519-sha256@libssh.org",
        "ecdh-sha2-nistp256",
        "ecdh-sha2-nistp384",
        "diffie-hellman-group14-sha256",
    )
    assert kex_order(paramiko_default) == (
        "mlkem768x25519-sha256",
        "ecdh-sha2-nistp256",
        "curve25519-sha256@libssh.org",
        "ecdh-sha2-nistp384",
        "diffie-hellman-group14-sha256",
    )
    # an older paramiko without the hybrid: P-256 simply goes first; nothing is added
    assert kex_order(paramiko_default[1:])[:2] == ("ecdh-sha2-nistp256", "curve25519-sha256@libssh.org")
    assert kex_order(("curve25519-sha256",)) == ("curve25519-sha256",)


def test_drain_waits_for_the_exit_status_after_eof_without_spinning() -> None:
    """A real paramiko Channel (no transport: its buffers and events are what the transport
    thread fills): output and EOF arrive, the exit status 0.3 s later, as a loaded host's
    transport thread may deliver it. paramiko's pipe stays set after EOF, so a select on the
    channel returned at once and _drain spun on the CPU until the status came; it now waits
    on the channel's status event (its thread's CPU over the wait stays far below the wait)."""
    import threading
    import time

    import paramiko
    from paramiko.message import Message

    from gpuonboard.connection.channel import _drain

    chan = paramiko.Channel(3)
    chan.in_buffer.feed(b"out\n")
    chan.in_stderr_buffer.feed(b"err\n")
    chan.fileno()  # (the pipe _drain selects on, as a channel that was selected on has)
    chan._handle_eof(Message())

    def exit_status() -> None:
        time.sleep(0.3)
        chan.exit_status = 5
        chan.status_event.set()

    threading.Thread(target=exit_status, daemon=True).start()
    cpu, wall = time.thread_time(), time.monotonic()
    assert _drain(chan, 10) == (b"out\n", b"err\n", None)
    assert (chan.exit_status, time.monotonic() - wall >= 0.29) == (5, True)
    assert time.thread_time() - cpu < 0.1
