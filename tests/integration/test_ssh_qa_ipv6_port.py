"""A host reached by IPv6 on a port other than 22: its key is recorded in the `[addr]:port`
form OpenSSH uses, so the rsync path (OpenSSH, same known_hosts, strict) accepts what the
paramiko connection recorded, and both refuse a changed key."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpuonboard.connection import ConnectOptions, KnownHosts, open_runner, openssh
from gpuonboard.errors import HostKeyError
from gpuonboard.inventory import Host
from gpuonboard.testing import TestHost, TestHostPool
from gpuonboard.testing.hosts import SSHD


def _free_v6_port() -> int:
    with socket.socket(socket.AF_INET6) as s:
        s.bind(("::1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def v6(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestHostPool, TestHost, int]]:
    """A test host's sshd (its key, users, PATH) listening on [::1]:PORT instead."""
    try:
        _free_v6_port()
    except OSError:
        pytest.skip("no IPv6 loopback here")
    base = tmp_path_factory.mktemp("sshqa-v6")
    with TestHostPool(base, subnet=210 - os.getpid() % 10) as pool:
        h = pool.add("six")
        h.stop()
        port = _free_v6_port()
        config = h.dir / "sshd_config_v6"
        pid_file = h.dir / "sshd_v6.pid"
        lines = []
        for line in h.config_path.read_text().splitlines():
            if line.startswith("ListenAddress "):
                line = f"ListenAddress [::1]:{port}"
            elif line.startswith("PidFile "):
                line = f'PidFile "{pid_file}"'
            lines.append(line)
        config.write_text("\n".join(lines) + "\n")
        subprocess.run([SSHD, "-f", str(config), "-E", str(h.dir / "sshd_v6.log")], check=True, timeout=15)
        deadline = time.monotonic() + 15
        while not pid_file.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        pid = int(pid_file.read_text().split()[0])
        try:
            yield pool, h, port
        finally:
            os.kill(pid, signal.SIGTERM)  # the daemon this fixture started, by its pid file


def test_ipv6_and_a_port_record_the_openssh_form_and_both_sides_agree(
    v6: tuple[TestHostPool, TestHost, int], tmp_path: Path
) -> None:
    pool, h, port = v6
    known = tmp_path / "known_hosts"
    host = Host(name="six", address="::1", port=port, user="root", key_file=str(pool.client_key))

    def connect(trust: bool = False) -> str | None:
        opts = ConnectOptions(known_hosts=known, trust_new_hosts=trust, retries=0)
        runner = open_runner(host, opts, KnownHosts(known))
        try:
            assert runner.run("echo six").stdout == "six\n"
            return runner.fingerprint
        finally:
            runner.close()

    def openssh_rc() -> int:
        text, alias = openssh.config_text(host, None, known)
        cfg = tmp_path / "ssh.config"
        cfg.write_text(text)
        return subprocess.run(
            ["ssh", "-F", str(cfg), alias, "true"], capture_output=True, timeout=30
        ).returncode

    with pytest.raises(HostKeyError, match="unknown host key"):
        connect()
    assert connect(trust=True) == h.fingerprint
    assert known.read_text() == f"[::1]:{port} {h.host_key_pub}\n"
    assert connect() == h.fingerprint  # recorded: no trust flag needed any more
    assert openssh_rc() == 0
    # a changed key under that name: refused on both sides
    other = subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / "k")], check=True
    )
    assert other.returncode == 0
    changed = " ".join((tmp_path / "k.pub").read_text().split()[:2])
    known.write_text(f"[::1]:{port} {changed}\n")
    with pytest.raises(HostKeyError, match="DIFFERENT host key"):
        connect(trust=True)
    assert openssh_rc() != 0
