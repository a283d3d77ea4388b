"""SSH connections via Fabric/paramiko: one per host per run, host-key policy, jump chains, retries.

Host keys live in the project's own known_hosts (`.gpuonboard/known_hosts` by default). A
key we have never seen is refused unless the inventory pins its fingerprint (and it
matches) or the user passed --trust-new-hosts; either way it is then recorded. A key that
differs from the recorded one is always refused: it may be a man-in-the-middle.
"""

from __future__ import annotations

import base64
import contextlib
import errno
import fcntl
import functools
import hashlib
import os
import select
import socket
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from .errors import CommandError, ConnectError, HostKeyError
from .inventory import Host, Inventory

DEFAULT_KNOWN_HOSTS = Path(".gpuonboard") / "known_hosts"


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


def fingerprint(key: Any) -> str:
    """OpenSSH-style SHA256 fingerprint of a paramiko public key."""
    digest = hashlib.sha256(key.asbytes()).digest()
    return "SHA256:" + base64.b64encode(digest).decode().rstrip("=")


def known_hosts_name(address: str, port: int) -> str:
    """The known_hosts host pattern OpenSSH uses: `addr` on 22, `[addr]:port` otherwise."""
    return address if port == 22 else f"[{address}]:{port}"


class KnownHosts:
    """Thread-safe known_hosts file of our own; never the user's ~/.ssh/known_hosts."""

    def __init__(self, path: Path) -> None:
        import paramiko
        from paramiko.hostkeys import InvalidHostKey

        self.path = path
        self._lock = threading.Lock()
        self._keys = paramiko.HostKeys()
        if path.is_file():
            try:
                self._keys.load(str(path))
            except (OSError, UnicodeDecodeError, paramiko.SSHException, InvalidHostKey, ValueError) as exc:
                line = exc.args[0] if isinstance(exc, InvalidHostKey) and exc.args else exc
                raise HostKeyError(
                    f"{path}: cannot read the known_hosts file (bad entry: {line}); fix or remove that line."
                ) from None

    def lookup(self, name: str) -> dict[str, Any]:
        """Recorded keys for a host pattern, by key type."""
        with self._lock:
            found = self._keys.lookup(name)
            return dict(found) if found else {}

    def add(self, name: str, key: Any) -> None:
        """Record a key: one appended line (O_APPEND, under flock so parallel runs never
        interleave), like OpenSSH; never a rewrite of the whole file per host."""
        line = f"{name} {key.get_name()} {key.get_base64()}\n".encode()
        with self._lock:
            self._keys.add(name, key.get_name(), key)
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                size = os.fstat(fd).st_size
                if size and os.pread(fd, 1, size - 1) != b"\n":
                    line = b"\n" + line  # a hand-edited file without a final newline
                os.write(fd, line)
            finally:
                os.close(fd)


class HostKeyPolicy:
    """paramiko policy called for every server key (the client's own key list stays empty)."""

    def __init__(self, host_label: str, pinned: str | None, store: KnownHosts, trust_new: bool) -> None:
        self.host_label = host_label
        self.pinned = pinned
        self.store = store
        self.trust_new = trust_new
        self.seen: str | None = None

    def missing_host_key(self, client: Any, hostname: str, key: Any) -> None:
        """Accept a recorded or pinned key, record a trusted new one, refuse the rest."""
        fp = fingerprint(key)
        self.seen = fp
        recorded = self.store.lookup(hostname)
        same_type = recorded.get(key.get_name())
        if same_type is not None and same_type.asbytes() == key.asbytes():
            if self.pinned and fp != self.pinned:
                raise HostKeyError(self._pin_mismatch(hostname, fp))
            return
        if recorded and not (self.pinned and fp == self.pinned):
            # a key of the same type that differs, or a key of a type never recorded for a
            # host we know: both are what a man-in-the-middle would present
            old = same_type or next(iter(recorded.values()))
            raise HostKeyError(
                f"host {self.host_label} ({hostname}) presented a DIFFERENT host key ({fp}) than the"
                f" one recorded in {self.store.path} ({fingerprint(old)}); this may be a"
                " man-in-the-middle attack, so the connection was refused. If the vendor reinstalled"
                " the server, confirm the new fingerprint with them and delete the old line."
            )
        if self.pinned:
            if fp != self.pinned:
                raise HostKeyError(self._pin_mismatch(hostname, fp))
            self.store.add(hostname, key)
            return
        if self.trust_new:
            self.store.add(hostname, key)
            return
        raise HostKeyError(
            f"host {self.host_label} ({hostname}) has an unknown host key {fp}; confirm it with the"
            " vendor, then rerun with --trust-new-hosts or pin it as host_key in the inventory."
        )

    def _pin_mismatch(self, hostname: str, fp: str) -> str:
        return (
            f"host {self.host_label} ({hostname}) presented host key {fp}, but the inventory pins"
            f" {self.pinned}; the connection was refused (possible man-in-the-middle)."
        )


class Preconnect:
    """TCP connections to every host's first hop, opened in one background thread as soon as
    the inventory is known, so sshd's per-connection start-up (fork, re-exec, banner) runs
    while this process is still importing paramiko and friends. Stdlib only.

    A connection that fails here is simply opened again by the normal path, which owns
    retries and error messages.
    """

    def __init__(self, hosts: list[Host]) -> None:
        self._targets = {
            h.name: (h.address, h.port, h.connect_timeout)
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
        self._ready[host.name].wait(host.connect_timeout)
        with self._lock:
            if host.name in self._taken:
                return None
            self._taken.add(host.name)
            sock = self._socks.pop(host.name, None)
        if sock is not None:
            sock.settimeout(host.connect_timeout)
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
    preconnect: Preconnect | None = None


class SSHRunner:
    """One open SSH connection (through its jump chain) running commands as exec channels."""

    def __init__(self, host: Host, connection: Any, policy: HostKeyPolicy, hops: list[Any]) -> None:
        self.host = host
        self._conn = connection
        self._hops = hops
        self.fingerprint = policy.seen
        self.transport = connection.client.get_transport()
        self._spare: Any = None

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
            chan, self._spare = self._spare or self.transport.open_session(), None
            _exec_pipelined(chan, command)
            if stdin is not None:
                chan.sendall(stdin)
            chan.shutdown_write()
            if prefetch:
                self._spare = self.transport.open_session()
            out, err = _drain(chan, timeout, on_output)
            code = chan.recv_exit_status() if chan.exit_status_ready() else -1
            chan.close()
        except TimeoutError as exc:  # before OSError: TimeoutError is one of them
            raise CommandError(f"host {self.host.name}: a remote command timed out ({exc}).") from None
        except (OSError, EOFError) as exc:
            raise ConnectError(f"host {self.host.name}: the SSH connection dropped ({exc}).") from None
        except Exception as exc:
            if type(exc).__module__.startswith("paramiko"):
                raise ConnectError(f"host {self.host.name}: the SSH connection failed ({exc}).") from None
            raise
        if code == -1 and not out and not err:
            raise CommandError(
                f"host {self.host.name}: the server refused to run a command on its SSH session."
            )
        return CommandResult(command, code, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"))

    def close(self) -> None:
        """Close the connection and every jump hop."""
        if self._spare is not None:
            with contextlib.suppress(Exception):
                self._spare.close()
        _close_all([*self._hops, self._conn])


def _exec_pipelined(chan: Any, command: str) -> None:
    """Send the exec request without waiting for the server's reply (saves one round trip).

    Same message as paramiko's Channel.exec_command, minus its wait: stdin and the exit
    status follow on the channel; a refused request closes the channel, which _drain sees.
    """
    from paramiko.common import cMSG_CHANNEL_REQUEST
    from paramiko.message import Message

    m = Message()
    m.add_byte(cMSG_CHANNEL_REQUEST)
    m.add_int(chan.remote_chanid)
    m.add_string("exec")
    m.add_boolean(True)
    m.add_string(command)
    chan.transport._send_user_message(m)


def _drain(
    chan: Any, timeout: float | None, on_output: Callable[[bytes], None] | None = None
) -> tuple[bytes, bytes]:
    out: list[bytes] = []
    err: list[bytes] = []
    deadline = time.monotonic() + timeout if timeout else None
    while True:
        if chan.recv_ready():
            out.append(chan.recv(1 << 16))
            if on_output is not None:
                on_output(out[-1])
            continue
        if chan.recv_stderr_ready():
            err.append(chan.recv_stderr(1 << 16))
            continue
        if (chan.exit_status_ready() and chan.eof_received) or chan.closed:
            break
        if deadline is not None and time.monotonic() > deadline:
            chan.close()
            raise TimeoutError(f"command timed out after {timeout:.0f}s")
        select.select([chan], [], [], 0.5)
    while chan.recv_ready():
        out.append(chan.recv(1 << 16))
        if on_output is not None:
            on_output(out[-1])
    while chan.recv_stderr_ready():
        err.append(chan.recv_stderr(1 << 16))
    return b"".join(out), b"".join(err)


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
        """Run one command through /bin/sh locally."""
        if on_output is not None:
            return _run_streaming(command, stdin, timeout, on_output)
        proc = subprocess.run(
            ["/bin/sh", "-c", command], input=stdin or b"", capture_output=True, timeout=timeout
        )
        return CommandResult(
            command,
            proc.returncode,
            proc.stdout.decode("utf-8", "replace"),
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
        command, code, b"".join(out).decode("utf-8", "replace"), b"".join(err).decode("utf-8", "replace")
    )


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
    sock = socket.create_connection((host.address, host.port), timeout=host.connect_timeout)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


@functools.lru_cache(maxsize=1)
def _fabric_config() -> Any:
    """One Fabric Config for every connection (building one reads files and the user db)."""
    from fabric import Config

    return Config(overrides={"load_ssh_configs": False})


@functools.lru_cache(maxsize=32)
def _load_key(path: str, mtime_ns: int) -> Any:
    """Parse a private key file once per run, not once per host (None: let paramiko try)."""
    import paramiko

    try:
        return paramiko.PKey.from_path(path)
    except (paramiko.SSHException, OSError, ValueError):
        return None  # encrypted or odd: paramiko's own key_filename path handles it (agent, errors)


def _fabric_connection(host: Host, gateway: Any, policy: HostKeyPolicy) -> Any:
    from fabric import Connection

    cfg = _fabric_config()
    kwargs: dict[str, Any] = {
        "allow_agent": host.use_agent,
        "look_for_keys": host.key_file is None,
        "banner_timeout": host.connect_timeout,
        "auth_timeout": host.connect_timeout,
    }
    if host.key_file:
        try:
            pkey = _load_key(host.key_file, os.stat(host.key_file).st_mtime_ns)
        except OSError:
            pkey = None
        if pkey is not None:
            kwargs["pkey"] = pkey
        else:
            kwargs["key_filename"] = [host.key_file]
    conn = Connection(
        host=host.address,
        user=host.user,
        port=host.port,
        config=cfg,
        gateway=gateway,
        connect_timeout=max(1, round(host.connect_timeout)),
        connect_kwargs=kwargs,
    )
    conn.client.set_missing_host_key_policy(policy)
    return conn


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
    import paramiko

    chain = [_hop_host(h, inventory, host) for h in host.jump] + [host]
    for hop in chain:
        if hop.key_file and not os.path.isfile(hop.key_file):
            raise ConnectError(
                f"host {hop.name}: key file {hop.key_file} does not exist; fix key_file in the inventory."
            )
    gateway = None
    opened: list[Any] = []
    policy = None
    for i, hop in enumerate(chain):
        label = host.name if i == len(chain) - 1 else f"{hop.name} (jump host for {host.name})"
        policy = HostKeyPolicy(label, hop.host_key, store, options.trust_new_hosts)
        conn = _fabric_connection(hop, gateway, policy)
        try:
            if gateway is None:
                early = options.preconnect.take(hop) if options.preconnect and hop is host else None
                conn.connect_kwargs["sock"] = early or _tcp_socket(hop)
            conn.open()
        except HostKeyError:
            _close_all([*opened, conn])
            raise
        except paramiko.BadHostKeyException as exc:  # pragma: no cover - our policy handles keys
            _close_all(opened)
            raise HostKeyError(f"host {label}: host key changed ({exc}).") from None
        except paramiko.AuthenticationException as exc:
            _close_all([*opened, conn])
            raise ConnectError(
                f"host {label} ({hop.user}@{hop.address}:{hop.port}) refused the login ({exc});"
                f" check user and key_file{' ' + hop.key_file if hop.key_file else ''}."
            ) from None
        except (OSError, EOFError, paramiko.SSHException) as exc:
            _close_all([*opened, conn])
            err = ConnectError(
                f"host {label} ({hop.address}:{hop.port}) is unreachable: {_reason(exc)};"
                " check the address, port and firewall, or whether the server is up."
            )
            err.retryable = True  # type: ignore[attr-defined]
            raise err from None
        conn.transport.set_keepalive(options.keepalive)
        if i < len(chain) - 1:
            # this hop forwards to the next one: opening that forward must not wait paramiko's
            # default hour when the bastion cannot reach the next host
            conn.transport.channel_timeout = chain[i + 1].connect_timeout
        opened.append(conn)
        gateway = conn
    assert policy is not None
    return SSHRunner(host, opened[-1], policy, opened[:-1])


def _close_all(conns: list[Any]) -> None:
    for c in reversed(conns):
        with contextlib.suppress(Exception):  # closing a dead transport may raise anything
            c.close()


def _reason(exc: BaseException) -> str:
    if isinstance(exc, socket.timeout | TimeoutError):
        return "connection timed out"
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    text = str(exc) or type(exc).__name__
    if "Unable to connect" in text or "Errno 111" in text:
        return "connection refused"
    return text
