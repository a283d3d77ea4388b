"""A test host behind a link that can be cut silently: two network namespaces joined by a veth
pair, an sshd test host in one, the client's commands run in the other (root only).

`cut()` drops every packet on the host's side of the link (iptables DROP: no FIN, no RST ever
reaches either end, as when a NAT forgets its state or a cable is pulled); `mend()` lets new
connections through again while the connections that were open at the cut stay dead for good
(the host never hears of them again: their sessions, and what runs in them, live on until the
host's own TCP gives up). `rate(mbit)` shapes the upload direction with `tc ... tbf`
(`netem` is not available here). Used by tests/integration/test_dataset_link_drop.py and
bench/link_drop.py.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from gpuonboard.testing.hosts import (
    SSHD,
    TestHost,
    TestHostError,
    _read_public_key,
    _write_ed25519_key,
    fingerprint,
    process_alive,
    read_pid,
    render_sshd_config,
)

CLIENT_IP = "198.51.100.1"  # TEST-NET-2: no address or route is added to the root namespace
HOST_IP = "198.51.100.2"


def _ip(*argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", *argv], capture_output=True, text=True, check=check, timeout=30)


@dataclass
class CutLink:
    """Two namespaces (`client_ns`, `host_ns`) joined by a veth pair, an sshd test host listening
    on HOST_IP:22 in `host_ns`. A context manager: everything it made goes at its end."""

    base: Path
    tag: str = field(default_factory=lambda: f"{os.getpid() % 100000}-{time.monotonic_ns() % 10000}")
    mbit: float | None = None
    host: TestHost | None = None
    _cut_ports: list[int] = field(default_factory=list)
    _made: list[str] = field(default_factory=list)

    @property
    def client_ns(self) -> str:
        return f"gpob-lc-{self.tag}"

    @property
    def host_ns(self) -> str:
        return f"gpob-lh-{self.tag}"

    @property
    def host_if(self) -> str:
        return f"gpobh{self.tag.replace('-', '')}"[:15]

    @property
    def client_if(self) -> str:
        return f"gpobc{self.tag.replace('-', '')}"[:15]

    @property
    def client_key(self) -> Path:
        return self.base / "client_ed25519"

    def __enter__(self) -> CutLink:
        try:
            self._setup()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _setup(self) -> None:
        self.base.mkdir(parents=True, exist_ok=True)
        c, h = self.client_ns, self.host_ns
        for ns in (c, h):
            _ip("netns", "add", ns)
            self._made.append(ns)
        pair = ("type", "veth", "peer", "name", self.host_if)
        _ip("netns", "exec", c, "ip", "link", "add", self.client_if, *pair)
        _ip("netns", "exec", c, "ip", "link", "set", self.host_if, "netns", h)
        for ns, dev, addr in ((c, self.client_if, CLIENT_IP), (h, self.host_if, HOST_IP)):
            _ip("netns", "exec", ns, "ip", "addr", "add", f"{addr}/30", "dev", dev)
            _ip("netns", "exec", ns, "ip", "link", "set", dev, "up")
            _ip("netns", "exec", ns, "ip", "link", "set", "lo", "up")
        if self.mbit:
            self.rate(self.mbit)
        self.host = self._start_sshd()

    def _start_sshd(self) -> TestHost:
        hdir = self.base / "host"
        hdir.mkdir(parents=True, exist_ok=True)
        key = hdir / "ssh_host_ed25519_key"
        pub = _read_public_key(key) if key.exists() else _write_ed25519_key(key, "cutlink-host")
        host = TestHost("cutlink", HOST_IP, 22, None, hdir, None, pub, fingerprint(pub), hdir / "sshd.log")
        host.home.mkdir(parents=True, exist_ok=True)
        host.bin_dir.mkdir(parents=True, exist_ok=True)
        for rc in (".bashrc", ".profile"):
            (host.home / rc).write_text("")
        if not self.client_key.exists():
            _write_ed25519_key(self.client_key, "cutlink-client")
        auth = self.base / "authorized_keys"
        auth.write_text(_read_public_key(self.client_key) + "\n")
        auth.chmod(0o600)
        host.config_path.write_text(render_sshd_config(host, auth))
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
        _ip("netns", "exec", self.host_ns, SSHD, "-f", str(host.config_path), "-E", str(host.log_path))
        deadline = time.monotonic() + 15
        # (sshd makes its pid file, then writes it: an empty one is not yet its pid)
        while (pid := read_pid(host.pid_path)) is None or not self._answers():
            if time.monotonic() > deadline:
                raise TestHostError(f"sshd in {self.host_ns} did not come up: {host.log_path.read_text()}")
            time.sleep(0.05)
        host.pid = pid
        return host

    def _answers(self) -> bool:
        probe = f"import socket; s = socket.create_connection(('{HOST_IP}', 22), 2); print(s.recv(4))"
        r = subprocess.run(
            ["ip", "netns", "exec", self.client_ns, "python3", "-c", probe],
            capture_output=True,
            text=True,
            check=False,
        )
        return "SSH-" in r.stdout

    def client_argv(self, argv: list[str]) -> list[str]:
        """argv run in the client's namespace (where its connections to the host leave from)."""
        return ["ip", "netns", "exec", self.client_ns, *argv]

    def _iptables(self, *argv: str, check: bool = True) -> None:
        _ip("netns", "exec", self.host_ns, "iptables", "-w", *argv, check=check)

    def rate(self, mbit: float | None) -> None:
        """Shape the client -> host direction to `mbit` Mbit/s (None: unshaped)."""
        dev = self.client_if
        _ip("netns", "exec", self.client_ns, "tc", "qdisc", "del", "dev", dev, "root", check=False)
        if mbit:
            _ip(
                "netns", "exec", self.client_ns, "tc", "qdisc", "add", "dev", dev, "root", "tbf",
                "rate", f"{mbit}mbit", "burst", "32kbit", "latency", "400ms",
            )  # fmt: skip

    def ssh_peers(self) -> list[int]:
        """The client ports of the host's TCP connections to its sshd (any state but listening)."""
        r = _ip("netns", "exec", self.host_ns, "ss", "-Htn", "( sport = :22 )")
        ports = []
        for line in r.stdout.splitlines():
            fields = line.split()
            if len(fields) >= 5 and fields[4].rsplit(":", 1)[-1].isdecimal():  # (State Recv Send Local Peer)
                ports.append(int(fields[4].rsplit(":", 1)[-1]))
        return ports

    def cut(self) -> None:
        """Drop everything on the host's side of the link, both ways, silently."""
        self._cut_ports = self.ssh_peers()
        self._iptables("-I", "INPUT", "-i", self.host_if, "-j", "DROP")
        self._iptables("-I", "OUTPUT", "-o", self.host_if, "-j", "DROP")

    def mend(self) -> None:
        """New connections pass again; those open at the cut stay dead (never heard of again)."""
        for port in self._cut_ports:
            self._iptables("-A", "INPUT", "-p", "tcp", "--sport", str(port), "-j", "DROP")
            self._iptables("-A", "OUTPUT", "-p", "tcp", "--dport", str(port), "-j", "DROP")
        self._iptables("-D", "INPUT", "-i", self.host_if, "-j", "DROP")
        self._iptables("-D", "OUTPUT", "-o", self.host_if, "-j", "DROP")

    def host_pids(self) -> list[int]:
        """The processes running in the host's namespace (sshd, its sessions, what they run)."""
        r = _ip("netns", "pids", self.host_ns, check=False)
        return [int(p) for p in r.stdout.split() if p.isdecimal()]

    def close(self) -> None:
        """Stop everything in the namespaces and delete them (the veth pair and qdisc go along)."""
        for ns in self._made:
            left = _ip("netns", "pids", ns, check=False).stdout.split()
            for p in left:
                with contextlib.suppress(ProcessLookupError, ValueError):
                    os.kill(int(p), signal.SIGKILL)
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline and any(p.isdecimal() and process_alive(int(p)) for p in left):
                time.sleep(0.02)
        for ns in reversed(self._made):
            _ip("netns", "del", ns, check=False)
        self._made.clear()
