"""A host whose SSH config entry reaches it through a ProxyCommand (issue 30): the connection
runs that command instead of dialling (it went direct before), and the run passes through it."""

from __future__ import annotations

import sys
from pathlib import Path

from conftest import Project

from gpuonboard.testing import TestHostPool

RELAY = """\
import os, socket, sys, threading
marker, address, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
open(marker, "a").write(" ".join(sys.argv[4:]) + "\\n")
sock = socket.create_connection((address, port))
def up():
    while data := os.read(0, 65536):
        sock.sendall(data)
    sock.shutdown(socket.SHUT_WR)
threading.Thread(target=up, daemon=True).start()
while data := sock.recv(65536):
    os.write(1, data)
"""


def test_a_proxy_command_from_the_ssh_config_carries_the_connection(
    project: Project, pool: TestHostPool, tmp_path: Path
) -> None:
    h = pool.hosts["good"]
    relay, marker = tmp_path / "relay.py", tmp_path / "relayed"
    relay.write_text(RELAY)
    cfg = project.root / "ssh_config"
    cfg.write_text(
        "Host behind-proxy\n"
        "  HostName unreachable.invalid\n"  # (only the relay knows the way: a direct dial fails)
        f"  Port {h.port}\n  User root\n  IdentityFile {pool.client_key}\n"
        f"  ProxyCommand {sys.executable} {relay} {marker} {h.address} {h.port} %h %p %r %n\n"
    )
    project.write_inventory({"behind-proxy": {"host_key": h.fingerprint}}, ssh_config=str(cfg))
    r = project.cli("check")
    assert r.returncode == 0, r.stdout + r.stderr
    assert project.summary()["hosts"][0]["address"] == "unreachable.invalid"
    assert marker.read_text().splitlines()[0] == f"unreachable.invalid {h.port} root behind-proxy"


def test_an_inventory_proxy_command_carries_the_connection(
    project: Project, pool: TestHostPool, tmp_path: Path
) -> None:
    """A host's `proxy_command` (what an Ansible ProxyCommand with a bastion's own `-i` key
    becomes) is run by the connection, with OpenSSH's tokens expanded, instead of a direct dial."""
    h = pool.hosts["good"]
    relay, marker = tmp_path / "relay.py", tmp_path / "relayed"
    relay.write_text(RELAY)
    command = f"{sys.executable} {relay} {marker} {h.address} {h.port} %h %p %r %n"
    project.write_inventory(
        {
            "behind-proxy": {
                "address": "unreachable.invalid",  # (only the relay knows the way)
                "port": h.port,
                "user": "root",
                "key_file": str(pool.client_key),
                "host_key": h.fingerprint,
                "proxy_command": command,
            }
        }
    )
    r = project.cli("check")
    assert r.returncode == 0, r.stdout + r.stderr
    assert marker.read_text().splitlines()[0] == f"unreachable.invalid {h.port} root behind-proxy"
