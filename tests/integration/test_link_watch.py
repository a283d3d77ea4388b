"""A link that goes silent (no reset: a NAT dropping its state, a pulled cable, a hung host)
ends a running command with ConnectionLost after keepalive * keepalive_count seconds, as
OpenSSH's ServerAliveCountMax does; a quiet but live connection is never given up."""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

import pytest

from gpuonboard import shell
from gpuonboard.connection import ConnectOptions, KnownHosts, Runner, open_runner
from gpuonboard.errors import ConnectionLost
from gpuonboard.inventory import Host
from gpuonboard.testing import TestHost, TestHostPool


class SilentRelay:
    """A TCP relay on loopback to a test host's sshd that can go silent: once `silent` is set
    it keeps both sockets open and reads what arrives, but forwards nothing (a black hole)."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.silent = threading.Event()
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.socks: list[socket.socket] = [self.server]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        try:
            client, _ = self.server.accept()
        except OSError:
            return
        upstream = socket.create_connection(self.target)
        self.socks += [client, upstream]
        for a, b in ((client, upstream), (upstream, client)):
            threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                if not self.silent.is_set():
                    dst.sendall(data)
        except OSError:
            return

    def close(self) -> None:
        for s in self.socks:
            s.close()


@pytest.fixture
def relay(pool: TestHostPool) -> object:
    th: TestHost = pool.hosts["good"]
    r = SilentRelay((th.address, th.port))
    yield r
    r.close()


def _runner(th: TestHost, pool: TestHostPool, port: int, tmp_path: Path) -> Runner:
    host = Host(
        name=th.name, address="127.0.0.1", port=port, key_file=str(pool.client_key), host_key=th.fingerprint
    )
    known = tmp_path / "known_hosts"
    options = ConnectOptions(known_hosts=known, keepalive=1, keepalive_count=2)
    return open_runner(host, options, KnownHosts(known))


def test_a_silent_link_ends_the_running_command_with_connection_lost(
    pool: TestHostPool, relay: SilentRelay, tmp_path: Path
) -> None:
    runner = _runner(pool.hosts["good"], pool, relay.port, tmp_path)
    started = tmp_path / "started"
    try:
        assert runner.run(shell.sh_c("sleep 3; echo alive")).stdout == "alive\n"  # quiet, but live

        def go_silent() -> None:
            deadline = time.monotonic() + 20
            while not started.exists() and time.monotonic() < deadline:
                time.sleep(0.05)
            relay.silent.set()

        threading.Thread(target=go_silent, daemon=True).start()
        t0 = time.monotonic()
        with pytest.raises(ConnectionLost) as info:
            runner.run(shell.sh_c(f"touch {shell.quote(str(started))}; sleep 60"), timeout=30)
        assert time.monotonic() - t0 < 15
        assert "no answer from the host for 2 s: the link is down or the host hangs" in str(info.value)
    finally:
        runner.close()
