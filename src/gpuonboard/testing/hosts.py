"""Test hosts: simulated rented GPU servers, one real ``sshd`` per host on loopback.

Each host gets its own loopback address (``127.0.<subnet>.N:22``; or
``127.0.0.1:<free port>`` where binding port 22 on 127.0.x.y fails), its own
ed25519 host key, config, pid file and ``LogLevel VERBOSE`` log, a per-host
``PATH``/``HOME`` set with ``SetEnv`` and, optionally, a replay toolbox built
from a hardware profile (see :mod:`gpuonboard.testing.toolbox`).  Root logs in
with the pool's client key; ``/root/.ssh`` and ``/etc/ssh`` are never touched.
Daemons are stopped by PID, after checking that the PID is an ``sshd`` started
with this host's config file, never by name.
"""

from __future__ import annotations

import base64
import contextlib
import errno
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, ClassVar

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from gpuonboard.testing.toolbox import DEFAULT_FIXTURES_ROOT, PROFILES_DIR, load_profile, render_toolbox

SSHD = "/usr/sbin/sshd"
SFTP_SERVER = "/usr/lib/openssh/sftp-server"
SYSTEM_PATH = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")
DEFAULT_SUBNET = 3
STATE_FILE = "testhosts-state.json"
START_TIMEOUT_S = 15.0
STOP_GRACE_S = 3.0
MAX_BIND_ATTEMPTS = 20
_POLL_S = 0.02
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")

# What log_counts() counts: key -> wording of an sshd (OpenSSH 9.x) LogLevel VERBOSE line.
LOG_PATTERNS: dict[str, str] = {
    "connections": "Connection from ",
    "logins": "Accepted publickey for ",
    "sessions": "Starting session: ",
    "sftp": "Starting session: subsystem 'sftp'",
    "auth_failures": "Connection closed by authenticating user ",
}
_BIND_FAILURE = "Cannot bind any address"

# Addresses claimed by pools of this process (hosts keep theirs while stopped).
_CLAIMED: set[tuple[str, int]] = set()
_CLAIM_LOCK = threading.Lock()
# ... and, for other processes (another pytest worker's pool, a sim.up), an abstract-namespace
# unix socket per claimed address held open meanwhile: bound by one process at a time, freed
# by the kernel when this one exits, no file left behind. Without it a stopped host's address
# looked free to another process, whose new host took it: the restart failed ("taken by
# another") or a connection meant to be refused reached the other pool's sshd.
_HELD: dict[tuple[str, int], socket.socket] = {}


class TestHostError(RuntimeError):
    """A test host could not be prepared, started or stopped."""

    __test__: ClassVar[bool] = False


# --------------------------------------------------------------------------- processes


def process_alive(pid: int) -> bool:
    """True if ``pid`` exists and is not a zombie (PID 1 here may never reap them)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def sshd_of(pid: int, config: Path) -> bool:
    """True only when `pid` is an sshd started with `-f config` (exactly that path): its
    executable is sshd and its command line, as argv (`sshd`, `-f`, `CONFIG`, ...) or as the
    title a listening sshd gives itself (`sshd: /usr/sbin/sshd -f CONFIG -E LOG [listener] ...`),
    names that config. Another config whose path merely contains this one (a base under
    another base, `CONFIG.bak`) is not this host's."""
    try:
        exe = os.readlink(f"/proc/{pid}/exe")
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    if not os.path.basename(exe).startswith("sshd"):
        return False
    want = os.fsencode(config)
    argv = cmdline.rstrip(b"\0").split(b"\0")
    if any(a == b"-f" and b == want for a, b in zip(argv, argv[1:], strict=False)) or b"-f" + want in argv:
        return True
    title = b" ".join(argv) + b" "
    return b" -f " + want + b" " in title


def parent_map() -> dict[int, int]:
    """pid -> parent pid of every process this machine's /proc shows."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdecimal():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        parents[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
    return parents


def _descendants(pids: set[int]) -> set[int]:
    """All descendants of ``pids`` (per-connection sshd processes and their sessions)."""
    parents = parent_map()
    found: set[int] = set()
    frontier = set(pids)
    while frontier:
        frontier = {p for p, pp in parents.items() if pp in frontier and p not in found}
        found |= frontier
    return found


def _signal_all(pids: set[int], sig: signal.Signals) -> None:
    for pid in sorted(pids):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)


def _is_sshd(pid: int) -> bool:
    """True when `pid`'s executable name is sshd's (the listener, a connection's privileged
    monitor or its session process; OpenSSH 9.8+ names the latter `sshd-session`)."""
    try:
        return Path(f"/proc/{pid}/comm").read_text().startswith("sshd")
    except OSError:
        return False


def _end(pids: set[int]) -> None:
    """SIGTERM `pids`, SIGKILL what is left after a grace, and wait (a grace) until none lives."""
    _signal_all(pids, signal.SIGTERM)
    deadline = time.monotonic() + STOP_GRACE_S
    while time.monotonic() < deadline and any(process_alive(p) for p in pids):
        time.sleep(_POLL_S)
    _signal_all({p for p in pids if process_alive(p)}, signal.SIGKILL)
    deadline = time.monotonic() + STOP_GRACE_S
    while time.monotonic() < deadline and any(process_alive(p) for p in pids):
        time.sleep(_POLL_S)


def _terminate(listeners: set[int]) -> None:
    """Stop the listeners and their descendants as a box that drops off the network: sshd's own
    processes first (the connections end with no word from the server), only then the commands
    the sessions ran. Before, all were signalled at once: on a loaded machine a session's
    command could die of the SIGTERM first, and its sshd, still up, sent the client the
    command's exit status (143) before the connection ended, so a test of a lost connection saw
    a failed command instead (the descendants are listed first: once sshd is gone they are
    another parent's children)."""
    targets = listeners | _descendants(listeners)
    daemons = {p for p in targets if _is_sshd(p)} | listeners
    _end(daemons)
    _end(targets - daemons)


# --------------------------------------------------------------------------- keys


def _write_ed25519_key(path: Path, comment: str) -> str:
    """Write a new ed25519 key pair (OpenSSH format, 0600); return ``"ssh-ed25519 AAAA..."``."""
    key = Ed25519PrivateKey.generate()
    private = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.OpenSSH,
        serialization.NoEncryption(),
    )
    public = (
        key.public_key()
        .public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
        .decode()
    )
    path.unlink(missing_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(private)
    Path(f"{path}.pub").write_text(f"{public} {comment}\n")
    return public


def _read_public_key(path: Path) -> str:
    """``"keytype base64"`` from an OpenSSH ``.pub`` file (comment dropped)."""
    return " ".join(Path(f"{path}.pub").read_text().split()[:2])


def fingerprint(public_key: str) -> str:
    """The ``SHA256:...`` fingerprint OpenSSH prints for a ``"keytype base64"`` key."""
    blob = base64.b64decode(public_key.split()[1])
    digest = base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")
    return f"SHA256:{digest}"


# --------------------------------------------------------------------------- addresses


def _bind_free(address: str, port: int) -> bool:
    """True if nothing listens on ``address:port`` (probed by binding it like sshd does)."""
    return _bind_errno(address, port) == 0


def _bind_errno(address: str, port: int) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((address, port))
        except OSError as exc:
            return exc.errno or -1
    return 0


def _free_port(address: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((address, 0))
        port: int = sock.getsockname()[1]
        return port


def _claim_name(candidate: tuple[str, int]) -> str:
    return f"\0gpuonboard-testhost-{candidate[0]}:{candidate[1]}"


def _hold(candidate: tuple[str, int]) -> socket.socket | None:
    """The machine-wide claim on `candidate` (None: another process holds it)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(_claim_name(candidate))
    except OSError:
        sock.close()
        return None
    return sock


def _claimed_elsewhere(candidate: tuple[str, int]) -> bool:
    """True when another process holds the claim on `candidate`."""
    if candidate in _HELD:
        return False
    sock = _hold(candidate)
    if sock is None:
        return True
    sock.close()
    return False


def _claim(candidate: tuple[str, int]) -> bool:
    if candidate in _CLAIMED or not _bind_free(*candidate):
        return False
    sock = _hold(candidate)
    if sock is None:
        return False
    _HELD[candidate] = sock
    _CLAIMED.add(candidate)
    return True


def _release(candidate: tuple[str, int]) -> None:
    with _CLAIM_LOCK:
        _CLAIMED.discard(candidate)
        held = _HELD.pop(candidate, None)
        if held is not None:
            held.close()


def _loopback_candidates(subnet: int) -> Iterator[tuple[str, int]]:
    for third in range(subnet, 255):
        for last in range(1, 255):
            yield f"127.0.{third}.{last}", 22


# --------------------------------------------------------------------------- hosts


@dataclass
class TestHost:
    """One simulated server: an sshd daemon with its own address, host key and PATH."""

    __test__: ClassVar[bool] = False

    name: str
    address: str
    port: int
    profile: str | None
    dir: Path
    pid: int | None
    host_key_pub: str
    fingerprint: str
    log_path: Path

    @property
    def config_path(self) -> Path:
        return self.dir / "sshd_config"

    @property
    def host_key_path(self) -> Path:
        return self.dir / "ssh_host_ed25519_key"

    @property
    def pid_path(self) -> Path:
        return self.dir / "sshd.pid"

    @property
    def home(self) -> Path:
        return self.dir / "home"

    @property
    def bin_dir(self) -> Path:
        return self.dir / "bin"

    @property
    def path_env(self) -> str:
        """The PATH sessions on this host get."""
        return ":".join([str(self.bin_dir), *SYSTEM_PATH])

    def known_hosts_line(self) -> str:
        """``"addr keytype key"`` (port 22) or ``"[addr]:port keytype key"``."""
        pattern = self.address if self.port == 22 else f"[{self.address}]:{self.port}"
        return f"{pattern} {self.host_key_pub}"

    def is_running(self) -> bool:
        return self._live_pid() is not None

    def start(self) -> None:
        """(Re)start this host's daemon on its address; no-op while it runs."""
        if self.is_running():
            return
        offset = self._launch()
        if not self._wait_ready(offset, time.monotonic() + START_TIMEOUT_S):
            raise TestHostError(f"{self.name}: {self.address}:{self.port} is taken by another")

    def stop(self) -> None:
        """Stop this host's daemon and its sessions (by PID); no-op when stopped."""
        pid = self._live_pid()
        if pid is not None:
            _terminate({pid})
        self.pid_path.unlink(missing_ok=True)
        self.pid = None

    def regenerate_host_key(self) -> None:
        """Give the host a new host key (restarting a running daemon): a "changed key"."""
        running = self.is_running()
        self.stop()
        self.host_key_pub = _write_ed25519_key(self.host_key_path, f"testhost-{self.name}")
        self.fingerprint = fingerprint(self.host_key_pub)
        if running:
            self.start()

    def probe_connections(self) -> int:
        """TCP connections the harness itself made (readiness probes), for log_counts."""
        try:
            return int((self.dir / "probe-connections").read_text())
        except (OSError, ValueError):
            return 0

    def _count_probe(self) -> None:
        (self.dir / "probe-connections").write_text(f"{self.probe_connections() + 1}\n")

    def _live_pid(self) -> int | None:
        pid = self.pid if self.pid is not None else read_pid(self.pid_path)
        if pid is not None and sshd_of(pid, self.config_path) and process_alive(pid):
            return pid
        return None

    def _launch(self) -> int:
        """Start sshd (it daemonises); return the log offset its start-up lines begin at."""
        self.pid_path.unlink(missing_ok=True)
        self.pid = None
        offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        done = subprocess.run(
            [SSHD, "-f", str(self.config_path), "-E", str(self.log_path)],
            capture_output=True,
            text=True,
            timeout=START_TIMEOUT_S,
            check=False,
        )
        if done.returncode != 0:
            raise TestHostError(
                f"{self.name}: sshd exited {done.returncode}: "
                f"{done.stderr.strip() or self._log_since(offset)}"
            )
        return offset

    def _wait_ready(self, offset: int, deadline: float) -> bool:
        """Wait for our pid file and banner; False if the address was taken meanwhile."""
        while True:
            pid = read_pid(self.pid_path)
            if pid is not None and sshd_of(pid, self.config_path) and self._banner():
                self.pid = pid
                return True
            log = self._log_since(offset)
            if _BIND_FAILURE in log:
                return False
            if "fatal:" in log:
                raise TestHostError(f"{self.name}: sshd failed: {log.strip()}")
            if time.monotonic() > deadline:
                raise TestHostError(f"{self.name}: sshd did not come up; log: {log.strip()}")
            time.sleep(_POLL_S)

    def _banner(self) -> bool:
        try:
            with socket.create_connection((self.address, self.port), timeout=2) as sock:
                self._count_probe()
                return sock.recv(64).startswith(b"SSH-")
        except OSError:
            return False

    def _log_since(self, offset: int) -> str:
        try:
            with self.log_path.open("rb") as fh:
                fh.seek(offset)
                return fh.read().decode(errors="replace")
        except OSError:
            return ""

    def to_state(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "address": self.address,
            "port": self.port,
            "profile": self.profile,
            "dir": str(self.dir),
            "pid": self.pid,
        }

    @classmethod
    def from_state(cls, data: dict[str, Any]) -> TestHost:
        host_dir = Path(data["dir"])
        public = _read_public_key(host_dir / "ssh_host_ed25519_key")
        host = cls(
            name=data["name"],
            address=data["address"],
            port=int(data["port"]),
            profile=data.get("profile"),
            dir=host_dir,
            pid=None,
            host_key_pub=public,
            fingerprint=fingerprint(public),
            log_path=host_dir / "sshd.log",
        )
        host.pid = host._live_pid()
        return host


def read_pid(path: Path) -> int | None:
    """The pid a daemon wrote to `path`; None while it is missing, empty or not a number."""
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _quote(value: str | Path) -> str:
    text = str(value)
    if '"' in text or "\n" in text:
        raise TestHostError(f"unsupported character in path {text!r}")
    return f'"{text}"'


def render_sshd_config(host: TestHost, authorized_keys: Path) -> str:
    """The sshd_config of a test host."""
    env = [f"PATH={host.path_env}", f"HOME={host.home}", f"GPUONBOARD_TESTHOST={host.name}"]
    return "\n".join(
        [
            f"# sshd config for test host {host.name} (gpuonboard.testing)",
            f"ListenAddress {host.address}:{host.port}",
            f"HostKey {_quote(host.host_key_path)}",
            f"PidFile {_quote(host.pid_path)}",
            f"AuthorizedKeysFile {_quote(str(authorized_keys).replace('%', '%%'))}",
            "PermitRootLogin prohibit-password",
            "PubkeyAuthentication yes",
            "AuthenticationMethods publickey",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            "UsePAM no",
            "UseDNS no",
            # Harness dirs may live under /tmp (world-writable): skip the ownership walk.
            "StrictModes no",
            "LogLevel VERBOSE",
            "AllowTcpForwarding yes",
            "MaxStartups 100:30:200",
            "PrintMotd no",
            "PrintLastLog no",
            "X11Forwarding no",
            "SetEnv " + " ".join(_quote(item) for item in env),
            f"Subsystem sftp {SFTP_SERVER}",
            "",
        ]
    )


# --------------------------------------------------------------------------- pool


@dataclass
class TestHostPool:
    """A set of test hosts sharing a base directory and one client key.

    ``subnet`` is the third octet addresses are allocated from (127.0.<subnet>.1
    upwards); give concurrent pools different subnets to keep them apart (a
    taken address is skipped either way).  Use as a context manager to stop
    every daemon on exit.
    """

    __test__: ClassVar[bool] = False

    base: Path
    subnet: int = DEFAULT_SUBNET
    fixtures_root: Path = DEFAULT_FIXTURES_ROOT
    profiles_dir: Path = PROFILES_DIR
    hosts: dict[str, TestHost] = field(default_factory=dict)
    client_key: Path = field(init=False)
    mode: str | None = None  # "addr" (127.0.<subnet>.N:22) or "ports" (127.0.0.1:<port>)

    def __post_init__(self) -> None:
        if not 3 <= self.subnet <= 254:
            raise TestHostError(f"subnet must be 3..254, not {self.subnet}")
        self.base = Path(self.base).resolve()
        self.base.mkdir(parents=True, exist_ok=True)
        self.client_key = self.base / "client_ed25519"
        if not self.client_key.exists():
            _write_ed25519_key(self.client_key, "gpuonboard-testhosts-client")
        self.authorized_keys.write_text(Path(f"{self.client_key}.pub").read_text())
        self.authorized_keys.chmod(0o600)

    @property
    def authorized_keys(self) -> Path:
        return self.base / "authorized_keys"

    @property
    def state_path(self) -> Path:
        return self.base / STATE_FILE

    def __enter__(self) -> TestHostPool:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop_all()

    def add(self, name: str, profile: str | Path | None = None) -> TestHost:
        """Prepare and start one host."""
        return self.add_many([(name, profile)])[0]

    def add_many(self, names_profiles: Sequence[tuple[str, str | Path | None]]) -> list[TestHost]:
        """Prepare hosts, start every daemon, then wait for all of them in parallel."""
        self._check_names([name for name, _ in names_profiles])
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege-separation dir
        workers = max(1, min(16, len(names_profiles)))
        with ThreadPoolExecutor(max_workers=workers) as pool:
            hosts = list(pool.map(lambda spec: self._prepare(*spec), names_profiles))
        try:
            self._start_batch(hosts)
        except BaseException:
            self._discard(hosts)
            raise
        self.hosts.update((host.name, host) for host in hosts)
        self.write_state()
        return hosts

    def unreachable_address(self) -> tuple[str, int]:
        """A loopback ``(address, port)`` where nothing listens (connections are refused)."""
        if self._mode() == "ports":
            return "127.0.0.1", _free_port("127.0.0.1")
        for last in range(254, 0, -1):
            candidate = (f"127.0.{self.subnet}.{last}", 22)
            if candidate not in _CLAIMED and _bind_free(*candidate) and not _claimed_elsewhere(candidate):
                return candidate
        raise TestHostError(f"no free address in 127.0.{self.subnet}.0/24")

    def stop_all(self) -> None:
        """Stop every host's daemon and sessions (by PID)."""
        listeners = {pid for host in self.hosts.values() if (pid := host._live_pid())}
        if listeners:
            _terminate(listeners)
        for host in self.hosts.values():
            host.pid_path.unlink(missing_ok=True)
            host.pid = None
            _release((host.address, host.port))
        if self.state_path.exists():
            self.write_state()

    def log_counts(self, name: str) -> dict[str, int]:
        """Counts of :data:`LOG_PATTERNS` lines in a host's sshd log.

        ``connections`` excludes the harness's own readiness probes.
        """
        host = self.hosts[name]
        try:
            text = host.log_path.read_text(errors="replace")
        except FileNotFoundError:
            text = ""
        counts = {key: text.count(wording) for key, wording in LOG_PATTERNS.items()}
        counts["connections"] = max(0, counts["connections"] - host.probe_connections())
        return counts

    def write_state(self) -> None:
        """Save the pool to ``<base>/testhosts-state.json`` (for another process)."""
        state = {
            "version": 1,
            "subnet": self.subnet,
            "mode": self.mode,
            "fixtures_root": str(self.fixtures_root),
            "profiles_dir": str(self.profiles_dir),
            "hosts": [host.to_state() for host in self.hosts.values()],
        }
        tmp = self.state_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(state, indent=1) + "\n")
        tmp.replace(self.state_path)

    @classmethod
    def load_state(cls, base: Path) -> TestHostPool:
        """Recreate a pool saved by :meth:`write_state` (pids re-read from pid files)."""
        base = Path(base).resolve()
        try:
            state = json.loads((base / STATE_FILE).read_text())
        except (OSError, ValueError) as exc:
            raise TestHostError(f"no test-host state in {base}: {exc}") from exc
        pool = cls(
            base=base,
            subnet=int(state["subnet"]),
            fixtures_root=Path(state["fixtures_root"]),
            profiles_dir=Path(state["profiles_dir"]),
        )
        pool.mode = state.get("mode")
        for data in state["hosts"]:
            host = TestHost.from_state(data)
            pool.hosts[host.name] = host
            with _CLAIM_LOCK:
                _CLAIMED.add((host.address, host.port))
        return pool

    # ----------------------------------------------------------------- internals

    def _check_names(self, names: list[str]) -> None:
        if len(set(names)) != len(names):
            raise TestHostError(f"duplicate host names in {names}")
        for name in names:
            if not _NAME_RE.match(name):
                raise TestHostError(f"invalid host name {name!r}")
            if name in self.hosts:
                raise TestHostError(f"host {name!r} already exists in {self.base}")

    def _prepare(self, name: str, profile: str | Path | None) -> TestHost:
        """Create the host directory, key, home and toolbox (address comes later)."""
        host_dir = self.base / "hosts" / name
        key = host_dir / "ssh_host_ed25519_key"
        host = TestHost(
            name=name,
            address="",
            port=0,
            profile=None if profile is None else str(profile),
            dir=host_dir,
            pid=None,
            host_key_pub="",
            fingerprint="",
            log_path=host_dir / "sshd.log",
        )
        host.stop()  # a daemon left over from an earlier run in this base
        for stale in (host.bin_dir, host_dir / "fixtures"):
            shutil.rmtree(stale, ignore_errors=True)
        host.bin_dir.mkdir(parents=True)
        host.home.mkdir(exist_ok=True)
        for rc in (".bashrc", ".profile"):
            (host.home / rc).write_text("")
        public = _read_public_key(key) if key.exists() else _write_ed25519_key(key, f"testhost-{name}")
        host.host_key_pub, host.fingerprint = public, fingerprint(public)
        (host_dir / "probe-connections").unlink(missing_ok=True)
        if profile is not None:
            loaded = load_profile(profile, self.profiles_dir)
            render_toolbox(loaded, host_dir, self.fixtures_root, SYSTEM_PATH)
        return host

    def _mode(self) -> str:
        if self.mode is None:
            err = _bind_errno(f"127.0.{self.subnet}.1", 22)
            self.mode = "addr" if err in (0, errno.EADDRINUSE) else "ports"
        return self.mode

    def _next_address(self) -> tuple[str, int]:
        with _CLAIM_LOCK:
            if self._mode() == "ports":
                candidate = ("127.0.0.1", _free_port("127.0.0.1"))
                _CLAIMED.add(candidate)
                return candidate
            for candidate in _loopback_candidates(self.subnet):
                if _claim(candidate):
                    return candidate
        raise TestHostError(f"no free loopback address from 127.0.{self.subnet}.1 upwards")

    def _start_batch(self, hosts: list[TestHost]) -> None:
        """Start daemons; hosts whose address got taken meanwhile move to the next one."""
        pending = list(hosts)
        for _ in range(MAX_BIND_ATTEMPTS):
            offsets = [self._launch_at_next_address(host) for host in pending]
            deadlines = [time.monotonic() + START_TIMEOUT_S] * len(pending)
            workers = max(1, min(16, len(pending)))
            with ThreadPoolExecutor(max_workers=workers) as pool:
                ready = list(pool.map(TestHost._wait_ready, pending, offsets, deadlines))
            pending = [host for host, ok in zip(pending, ready, strict=True) if not ok]
            if not pending:
                return
        raise TestHostError(f"could not find free addresses for {[h.name for h in pending]}")

    def _launch_at_next_address(self, host: TestHost) -> int:
        if host.address:  # taken by someone else since the probe: move on
            _release((host.address, host.port))
        host.address, host.port = self._next_address()
        host.config_path.write_text(render_sshd_config(host, self.authorized_keys))
        return host._launch()

    def _discard(self, hosts: list[TestHost]) -> None:
        for host in hosts:
            host.stop()
            if host.address:
                _release((host.address, host.port))


def this_machines_record() -> str:
    """The name the test hosts' `sync` gives its record of uploads (uploadlock.MACHINE_SH): the
    test hosts run on this machine, so its host name and /etc/machine-id."""
    from gpuonboard.transfer import uploadlock

    try:
        machine_id = Path("/etc/machine-id").read_text()
    except OSError:
        machine_id = ""
    return uploadlock.record_name(os.uname().nodename, machine_id)
