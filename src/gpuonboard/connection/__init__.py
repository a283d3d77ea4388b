"""SSH connections via Fabric: one per host per run, host-key policy, jump chains, retries.

Each login is a fabric.Connection (a jump host is the next one's `gateway`); the runner
(SSHRunner) runs gpuonboard's commands on it through the exec protocol of connection.channel and
hands the open Connection to code that wants Fabric's own API (`SSHRunner.connection`).

Host keys live in the project's own known_hosts (`.gpuonboard/known_hosts` by default). A
key we have never seen is refused unless the inventory pins its fingerprint (and it
matches) or the user passed --trust-new-hosts; either way it is then recorded. A key that
differs from the recorded one is always refused: it may be a man-in-the-middle
(connection.hostkeys).
"""

from __future__ import annotations

import contextlib
import errno
import functools
import logging
import os
import secrets
import select
import socket
import stat
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from gpuonboard.connection.channel import (
    _channel_request,
    _drain,
    _exec_pipelined,
    _serve_script,
    _sh_c_script,
)
from gpuonboard.connection.hostkeys import HostKeyPolicy, KnownHosts, fingerprint, known_hosts_name
from gpuonboard.errors import CommandError, ConnectError, ConnectionLost, HostKeyError
from gpuonboard.inventory import Host, Inventory

DEFAULT_KNOWN_HOSTS = Path(".gpuonboard") / "known_hosts"
# Bounds on what the inventory asks, at the point of use (the inventory refuses most at load):
# a connect timeout of 1e300 s raised OverflowError in select/socket/threading (a thread's
# traceback, "internal error" for the host); 1,200 jump hosts nested 1,200 SSH sessions; a key
# file of gigabytes, or a FIFO, was read whole (or forever) to see whether it is a key
MAX_CONNECT_TIMEOUT_S = 3600.0  # the longest wait for a host's TCP connect, banner and login
MAX_WAIT_S = 7 * 86400.0  # the longest wait for a local command (poll() takes under 24.8 days)
MAX_JUMP_HOPS = 16  # OpenSSH sets none; real ProxyJump chains are one to three hops
MAX_KEY_FILE_BYTES = 1 << 20  # a private key is a few KiB (an RSA-16384 PEM, about 12 KiB)
# how long a channel closed without an exit status waits for paramiko to mark a dead
# connection inactive (it closes the channels first); only failures ever wait
_LINK_SETTLE_S = 0.25


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


def known_hosts_problem(
    path: Path, hosts: Sequence[Host], inventory: Inventory | None, trust_new: bool
) -> str | None:
    """Before connecting: why the host keys this run would record (a pinned or, with
    --trust-new-hosts, any key not recorded yet) cannot be written to `path`; None when they can
    or none is to be recorded. (A directory there is refused by KnownHosts itself.) A key that
    could not be written was kept in memory only: the run passed and the next found it unknown."""
    store = KnownHosts(path)
    pending: list[str] = []
    for host in hosts:
        if host.connection != "ssh":
            continue
        for hop in [*(_hop_host(j, inventory, host) for j in host.jump[:MAX_JUMP_HOPS]), host]:
            name = known_hosts_name(hop.address, hop.port)
            if (trust_new or hop.host_key) and hop.name not in pending and not store.lookup(name):
                pending.append(hop.name)
    if not pending:
        return None
    target = path if path.exists() else path.parent
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if not os.access(target, os.W_OK):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES))
    except OSError as exc:
        keys = f"key of {pending[0]}" if len(pending) == 1 else f"keys of {', '.join(pending)}"
        return (
            f"the known_hosts file {path} cannot be written ({exc.strerror or exc}), so the host {keys}"
            " could not be recorded; pass --known-hosts a file you can write to."
        )
    return None


class Preconnect:
    """TCP connections to every host's first hop, opened in one background thread as soon as
    the inventory is known, so sshd's per-connection start-up (fork, re-exec, banner) runs
    while this process is still importing paramiko and friends. Stdlib only.

    A connection that fails here is simply opened again by the normal path, which owns
    retries and error messages.
    """

    def __init__(self, hosts: list[Host]) -> None:
        self._targets = {
            h.name: (h.address, h.port, connect_timeout(h))
            for h in hosts
            if h.connection == "ssh" and not h.jump
        }
        self._socks: dict[str, socket.socket] = {}
        self._ready = {name: threading.Event() for name in self._targets}
        self._done = threading.Event()
        self._taken: set[str] = set()
        self._lock = threading.Lock()
        threading.Thread(target=self._connect_all, name="preconnect", daemon=True).start()

    def _connect_all(self) -> None:
        import selectors

        sel = selectors.DefaultSelector()
        deadline = time.monotonic() + max((t for _, _, t in self._targets.values()), default=0)
        try:
            for name, (addr, port, _) in self._targets.items():
                try:
                    info = socket.getaddrinfo(addr, port, type=socket.SOCK_STREAM)[0]
                    sock = socket.socket(info[0], info[1], info[2])
                    sock.setblocking(False)
                    if sock.connect_ex(info[4]) not in (0, errno.EINPROGRESS):
                        sock.close()
                        self._ready[name].set()
                        continue
                    sel.register(sock, selectors.EVENT_WRITE, name)
                except OSError:
                    self._ready[name].set()
                    continue
            while sel.get_map() and time.monotonic() < deadline:
                for key, _ in sel.select(timeout=max(0.0, deadline - time.monotonic())):
                    ready = key.fileobj
                    assert isinstance(ready, socket.socket)
                    sel.unregister(ready)
                    if ready.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0:
                        ready.setblocking(True)
                        ready.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                        with self._lock:
                            self._socks[str(key.data)] = ready
                    else:
                        ready.close()
                    self._ready[str(key.data)].set()
            for key in list(sel.get_map().values()):
                key.fileobj.close()  # type: ignore[union-attr]
        finally:
            sel.close()
            for event in self._ready.values():
                event.set()
            self._done.set()

    def take(self, host: Host) -> socket.socket | None:
        """The pre-opened socket for host's first hop (once), or None."""
        if host.name not in self._targets:
            return None
        self._ready[host.name].wait(connect_timeout(host))
        with self._lock:
            if host.name in self._taken:
                return None
            self._taken.add(host.name)
            sock = self._socks.pop(host.name, None)
        if sock is not None:
            sock.settimeout(connect_timeout(host))
        return sock

    def close(self) -> None:
        """Close sockets nobody took (hosts skipped or failed before connecting)."""
        self._done.wait(1)
        with self._lock:
            for sock in self._socks.values():
                sock.close()
            self._socks.clear()


@dataclass
class ConnectOptions:
    """Run-wide connection settings."""

    known_hosts: Path = DEFAULT_KNOWN_HOSTS
    trust_new_hosts: bool = False
    retries: int = 2
    backoff: float = 0.5
    keepalive: int = 15
    # unanswered keepalives before the connection is given up (ssh's ServerAliveCountMax)
    keepalive_count: int = 4
    preconnect: Preconnect | None = None


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
        """Run one command on an exec channel of the shared connection (see Runner.run)."""
        try:
            served, self._serving = self._serving, None
            if served is not None:
                chan, token = served
                # the waiting shell reads lines up to the token, then runs them with the rest
                # of the channel as their stdin
                script = _sh_c_script(command)
                text = f"(\n{script}\n)" if script is not None else command
                chan.sendall(f"{text}\n{token}\n".encode("utf-8", "surrogateescape") + (stdin or b""))
                out, err, code = self._collect(chan, timeout, on_output, prefetch)
            else:
                chan, self._spare = self._spare or self.transport.open_session(), None
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
                    if stdin is not None:
                        chan.sendall(stdin)
                    out, err, code = self._collect(chan, timeout, on_output, prefetch)
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
        self, chan: Any, timeout: float | None, on_output: Callable[[bytes], None] | None, prefetch: bool
    ) -> tuple[bytes, bytes, int]:
        """End the command's stdin, open the next channel meanwhile when one follows, then its
        output and exit code (-1 when the server sent none)."""
        chan.shutdown_write()
        if prefetch:
            self._spare = self.transport.open_session()
        out, err, _ = _drain(chan, timeout, on_output)
        code = chan.recv_exit_status() if chan.exit_status_ready() else -1
        chan.close()
        return out, err, code

    def close(self) -> None:
        """Close the connection and every jump hop."""
        for chan in (self._spare, self._serving[0] if self._serving else None):
            if chan is not None:
                with contextlib.suppress(Exception):
                    chan.close()
        self._spare = self._serving = None
        _close_all([*self._hops, self._conn])


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


def _hop_host(spec: str, inventory: Inventory | None, base: Host) -> Host:
    """A jump hop: an inventory host by name, or `user@addr:port` inheriting base's key."""
    if inventory is not None and spec in inventory.hosts:
        return inventory.hosts[spec]
    user, _, rest = spec.rpartition("@")
    addr, port = rest, 22
    if rest.startswith("["):
        addr, _, tail = rest[1:].partition("]")
        port = int(tail[1:]) if tail.startswith(":") else 22
    elif rest.count(":") == 1:
        addr, p = rest.split(":")
        port = int(p)
    return Host(
        name=spec,
        address=addr,
        port=port,
        user=user or base.user,
        key_file=base.key_file,
        use_agent=base.use_agent,
        connect_timeout=base.connect_timeout,
    )


def _tcp_socket(host: Host) -> socket.socket:
    """TCP connection with TCP_NODELAY, as OpenSSH does: without it Nagle's algorithm holds
    each small SSH packet that follows another (exec request, then stdin, then EOF) for a
    round trip, which on a 20 ms link doubles the time of every command."""
    sock = socket.create_connection((host.address, host.port), timeout=connect_timeout(host))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


@functools.lru_cache(maxsize=32)
def _load_key(path: str, mtime_ns: int) -> tuple[Any, str | None]:
    """Parse a private key file once per run, not once per host: (key, None), or (None, why it
    cannot be used: `KEY_ENCRYPTED` or the parser's reason); paramiko's own key_filename path
    then still tries it, and the agent."""
    paramiko = import_paramiko()

    unreadable = _key_file_unreadable(path)
    if unreadable is not None:
        return None, unreadable
    try:
        return paramiko.PKey.from_path(path), None
    except paramiko.PasswordRequiredException:
        return None, KEY_ENCRYPTED
    except TypeError as exc:  # cryptography's "Key is password-protected, but password was not provided"
        return None, KEY_ENCRYPTED if "password" in str(exc) else str(exc)
    except (paramiko.SSHException, OSError, ValueError):
        return None, _key_file_kind(path)


def _key_file_unreadable(path: str) -> str | None:
    """Why the file at `path` is not even read as a key (checked before reading it): not a
    regular file (a FIFO blocked the run forever), or far larger than any private key."""
    try:
        info = os.stat(path)
    except OSError as exc:
        return exc.strerror or str(exc)
    if stat.S_ISDIR(info.st_mode):
        return "it is a directory"
    if not stat.S_ISREG(info.st_mode):
        return "it is not a regular file"
    if info.st_size > MAX_KEY_FILE_BYTES:
        return f"it is {info.st_size:,} bytes, and a private key is a few KiB"
    return None


KEY_FORMATS = (
    "it is in no private key format that can be read: OpenSSH's BEGIN OPENSSH PRIVATE KEY, or"
    " PEM's BEGIN RSA, EC, DSA or BEGIN PRIVATE KEY"
)


def _key_file_kind(path: str) -> str:
    """Why a key file paramiko cannot parse is no usable private key, in a few words."""
    unreadable = _key_file_unreadable(path)
    if unreadable is not None:
        return unreadable
    try:
        with open(path, "rb") as f:
            head = f.read(64).lstrip()
    except OSError as exc:
        return exc.strerror or str(exc)
    if head.startswith((b"ssh-", b"ecdsa-", b"sk-")) or b"PUBLIC KEY" in head:
        return "it holds a public key"
    return KEY_FORMATS


KEY_ENCRYPTED = "encrypted"


def key_problem_message(label: str, key_file: str, problem: str) -> str:
    """The sentence for a login that failed because key_file cannot be used as it is."""
    if problem == KEY_ENCRYPTED:
        return (
            f"host {label}: key file {key_file} is protected by a passphrase, and no SSH agent offered"
            f" it; load it into your agent (ssh-add {key_file}, with SSH_AUTH_SOCK set) and rerun"
            " (gpuonboard never asks for a passphrase)."
        )
    return (
        f"host {label}: key file {key_file} is not a private key that can be read ({problem});"
        " key_file must name the private key (e.g. ~/.ssh/id_ed25519, not the .pub file)."
    )


def _fabric() -> Any:
    """fabric, imported on first use (with Invoke, which it is built on)."""
    import fabric

    return fabric


def _login_kwargs(host: Host) -> tuple[dict[str, Any], str | None]:
    """SSHClient.connect's login arguments for `host` (agent, key, banner and auth timeouts),
    and why its key_file cannot be used (None: it can, or there is none)."""
    kwargs: dict[str, Any] = {
        "allow_agent": host.use_agent,
        "look_for_keys": host.key_file is None,
        "banner_timeout": connect_timeout(host),
        "auth_timeout": connect_timeout(host),
    }
    key_problem: str | None = None
    if host.key_file:
        try:
            pkey, key_problem = _load_key(host.key_file, os.stat(host.key_file).st_mtime_ns)
        except OSError as exc:
            pkey, key_problem = None, exc.strerror or str(exc)
        if pkey is not None:
            kwargs["pkey"] = pkey
        elif key_problem == KEY_ENCRYPTED:
            kwargs["key_filename"] = [host.key_file]
        # (a file that is no key: paramiko's own reader would fail too, or stop the host with
        # UnicodeDecodeError on random bytes; the agent is still tried, then the login's
        # failure names the file and why)
    return kwargs, key_problem


def hop_connection(
    host: Host,
    gateway: Any,
    policy: HostKeyPolicy,
    prefer: Sequence[str] = (),
    avoid: frozenset[str] = frozenset(),
    forwards_to: Host | None = None,
    offered: list[str] | None = None,
) -> tuple[Any, str | None]:
    """One login of a host's chain as a fabric.Connection, not opened yet, and why its key_file
    cannot be used (a failed login says so).

    Through `gateway` (the previous hop's open Connection: a direct-tcpip channel on it) when
    given. Every host key goes to `policy` (our known_hosts and pins), never to Fabric's
    default AutoAddPolicy, and the client's own key lists stay empty. Fabric reads no config
    file and no ssh_config here: the inventory has resolved those already. `prefer`, `avoid`:
    the host key types to ask for first and not at all (see _transport); `forwards_to`: the
    next hop, whose forward must not wait paramiko's default hour; `offered` receives the
    host key algorithms paramiko offers."""
    fabric = _fabric()
    kwargs, key_problem = _login_kwargs(host)
    kwargs["transport_factory"] = functools.partial(
        _transport, prefer=tuple(prefer), avoid=avoid, offered=offered
    )
    if forwards_to is not None:
        kwargs["channel_timeout"] = connect_timeout(forwards_to)
    conn = fabric.Connection(
        host.address,
        user=host.user,
        port=host.port,
        # one Config per connection: Connection() writes to its config, and an Invoke config
        # rebuilds its dict on every write, which a thread reading a shared one saw empty
        config=fabric.Config(lazy=True, overrides={"load_ssh_configs": False}),
        gateway=gateway,
        connect_timeout=max(1, round(connect_timeout(host))),
        connect_kwargs=kwargs,
    )
    conn.client.set_missing_host_key_policy(policy)
    return conn, key_problem


def kex_order(available: Sequence[str]) -> tuple[str, ...]:
    """paramiko's key exchanges with ecdh-sha2-nistp256 moved before curve25519 (the
    post-quantum hybrid mlkem768x25519 stays first where paramiko offers it).

    Both classical choices give 128-bit security; OpenSSH computes curve25519 with its own
    portable reference code but P-256 in OpenSSL's optimised constant-time code, which costs
    the host about 3 ms less CPU per login (measured on OpenSSH 9.2: 18.3 -> 15.3 ms per
    connection, host and client together) and answers the key exchange sooner."""
    order = list(available)
    if "ecdh-sha2-nistp256" in order:
        order.remove("ecdh-sha2-nistp256")
        first_classic = next((i for i, k in enumerate(order) if not k.startswith(("mlkem", "sntrup"))), 0)
        order.insert(first_classic, "ecdh-sha2-nistp256")
    return tuple(order)


def host_key_algorithms(key_type: str) -> tuple[str, ...]:
    """The host key algorithms that present a key of `key_type` (an RSA key, "ssh-rsa", is
    presented under its SHA-2 signature names)."""
    if key_type == "ssh-rsa":
        return ("rsa-sha2-512", "rsa-sha2-256", "ssh-rsa")
    return (key_type,)


def key_types_order(
    available: Sequence[str], prefer: Sequence[str], avoid: frozenset[str]
) -> tuple[str, ...]:
    """paramiko's host key algorithms without `avoid`'s, those presenting a key type of `prefer`
    (the recorded keys) first."""
    wanted = {a for t in prefer for a in host_key_algorithms(t)}
    left = [a for a in available if a not in avoid]
    return tuple([a for a in left if a in wanted] + [a for a in left if a not in wanted])


def _transport(
    sock: Any,
    prefer: Sequence[str] = (),
    avoid: frozenset[str] = frozenset(),
    offered: list[str] | None = None,
    **kwargs: Any,
) -> Any:
    """The Transport SSHClient.connect uses, with our key-exchange order (`kex_order`) and host
    key algorithm order (`key_types_order`); `offered` receives paramiko's host key algorithms.
    Plus the exit-signal handler (`_channel_request`): paramiko has no public hook for a
    channel request it ignores, so this transport gets its own copy of the handler table."""
    paramiko = import_paramiko()
    transport = paramiko.Transport(sock, **kwargs)
    options = transport.get_security_options()
    options.kex = kex_order(options.kex)
    if offered is not None:
        offered[:] = options.key_types
    if prefer or avoid:
        options.key_types = key_types_order(options.key_types, prefer, avoid)
    table = dict(transport._channel_handler_table)
    table[paramiko.common.MSG_CHANNEL_REQUEST] = _channel_request(table[paramiko.common.MSG_CHANNEL_REQUEST])
    transport._channel_handler_table = table  # this transport's own copy, not the class's
    return transport


def open_runner(
    host: Host,
    options: ConnectOptions,
    store: KnownHosts,
    inventory: Inventory | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> Runner:
    """Open the ONE connection this run uses for `host` (through its jump chain), with retries."""
    if host.connection == "local":
        return LocalRunner(host)
    attempt = 0
    while True:
        try:
            return _connect_once(host, options, store, inventory)
        except HostKeyError:
            raise
        except ConnectError as exc:
            if not getattr(exc, "retryable", False) or attempt >= options.retries:
                raise
            sleep(options.backoff * (2**attempt))
            attempt += 1


def _connect_once(
    host: Host, options: ConnectOptions, store: KnownHosts, inventory: Inventory | None
) -> Runner:
    if len(host.jump) > MAX_JUMP_HOPS:
        raise ConnectError(
            f"host {host.name}: its jump chain has {len(host.jump):,} hops, and gpuonboard opens at"
            f" most {MAX_JUMP_HOPS} (OpenSSH's ProxyJump chains are a few hops); shorten the host's"
            " 'jump' in the inventory."
        )
    chain = [_hop_host(h, inventory, host) for h in host.jump] + [host]
    for hop in chain:
        if hop.key_file and not os.path.isfile(hop.key_file):
            raise ConnectError(
                f"host {hop.name}: key file {hop.key_file} does not exist; fix key_file in the inventory."
            )
    gateway: Any = None  # the previous hop's fabric.Connection
    opened: list[Any] = []
    policy = None
    for i, hop in enumerate(chain):
        label = host.name if i == len(chain) - 1 else f"{hop.name} (jump host for {host.name})"
        forwards_to = chain[i + 1] if i < len(chain) - 1 else None
        try:
            conn, policy = _open_hop(hop, label, gateway, store, options, forwards_to)
        except ConnectError:
            _close_all(opened)
            raise
        conn.transport.set_keepalive(options.keepalive)
        opened.append(conn)
        gateway = conn
    assert policy is not None
    runner = SSHRunner(host, opened[-1], policy, opened[:-1])
    runner.watch(options.keepalive, options.keepalive_count)
    return runner


def _open_hop(
    hop: Host,
    label: str,
    gateway: Any,
    store: KnownHosts,
    options: ConnectOptions,
    forwards_to: Host | None,
) -> tuple[Any, HostKeyPolicy]:
    """Log in to one hop of the chain (its failure as one ConnectError sentence): its open
    fabric.Connection, through `gateway`'s when given; `forwards_to`: the next hop, if any.

    A server holds several host keys (ed25519, ECDSA, RSA) and presents one per login: the
    type of a recorded key first; when the key presented does not match the inventory's pin,
    the login is tried again without that type, since the vendor may have sent the fingerprint
    of another of its keys. Every key is still judged by HostKeyPolicy; when none matches,
    the first refusal is the answer."""
    recorded = store.lookup(known_hosts_name(hop.address, hop.port))
    # (the type of a recorded key the pin names first: one handshake, not one per type)
    prefer = sorted(recorded, key=lambda t: fingerprint(recorded[t]) != hop.host_key)
    avoid: frozenset[str] = frozenset()
    first_refusal: HostKeyError | None = None
    while True:
        policy = HostKeyPolicy(label, hop.host_key, store, options.trust_new_hosts)
        offered: list[str] = []
        conn, key_problem = hop_connection(hop, gateway, policy, prefer, avoid, forwards_to, offered)
        try:
            if gateway is None:
                # (the pre-opened socket is the target's: a first hop that forwards opens its own)
                early = options.preconnect.take(hop) if options.preconnect and forwards_to is None else None
                conn.connect_kwargs["sock"] = early or _tcp_socket(hop)
            conn.open()
            return conn, policy
        except Exception as exc:
            _close_all([conn])
            if isinstance(exc, HostKeyError) and policy.pin_missed is not None:
                first_refusal = first_refusal or exc
                avoid |= _tried(policy)
                if any(a not in avoid for a in offered):  # another key type to ask for
                    continue
                raise first_refusal from None
            if first_refusal is not None and policy.seen is None:
                raise first_refusal from None  # no other key type to present (or no answer)
            if isinstance(exc, HostKeyError):
                raise
            err = _login_error(exc, key_problem, policy, hop, label)
            if err is None:
                raise
            raise err from None


def _tried(policy: HostKeyPolicy) -> frozenset[str]:
    """The host key algorithms of the key type a login was refused for."""
    return frozenset(host_key_algorithms(policy.pin_missed)) if policy.pin_missed else frozenset()


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


class LinkWatch(threading.Thread):
    """What OpenSSH's ServerAliveInterval/ServerAliveCountMax do, for a paramiko connection.

    paramiko's keepalive asks for no reply, so a link that goes silent (no reset: a NAT
    dropping state, a cable, a hung host) left a command waiting until TCP gave up, about
    15 minutes. Every `interval` seconds this asks the host for a reply (a global request
    sshd answers "failure" to); when none comes within interval * count seconds it closes
    the connection, and the command running on it ends with ConnectionLost saying so."""

    def __init__(self, runner: SSHRunner, interval: float, count: int) -> None:
        super().__init__(name=f"linkwatch-{runner.host.name}", daemon=True)
        self.runner, self.interval, self.count = runner, interval, count

    def run(self) -> None:
        transport = self.runner.transport
        while transport.is_active():
            time.sleep(self.interval)
            answered = threading.Event()
            threading.Thread(
                target=_ask, args=(transport, answered), name=f"{self.name}-ask", daemon=True
            ).start()
            if not answered.wait(self.interval * self.count) and transport.is_active():
                self.runner.silent_for = self.interval * self.count
                with contextlib.suppress(Exception):
                    transport.close()
                return


def _ask(transport: Any, answered: threading.Event) -> None:
    """One keepalive that wants a reply; `answered` is set once any reply came (or the
    transport closed)."""
    with contextlib.suppress(Exception):  # a transport closing meanwhile
        transport.global_request("keepalive@openssh.com", wait=True)
    answered.set()


def _unreachable(label: str, hop: Host, exc: BaseException) -> ConnectError:
    """A network-level failure to reach `hop` (retried with backoff by open_runner)."""
    err = ConnectError(
        f"host {label} ({hop.address}:{hop.port}) is unreachable: {_reason(exc, hop)};"
        " check the address, port and firewall, or whether the server is up."
    )
    err.retryable = True  # type: ignore[attr-defined]
    return err


def _close_all(conns: list[Any]) -> None:
    """Close fabric Connections, last hop first: each SSHClient itself too, since Connection.close
    skips a client whose login failed (its socket and transport thread stay open otherwise)."""
    for c in reversed(conns):
        with contextlib.suppress(Exception):  # closing a dead transport may raise anything
            c.close()
        with contextlib.suppress(Exception):
            c.client.close()


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
