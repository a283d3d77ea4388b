"""The host's one login is a fabric.Connection (issue 28): Fabric's own API works on it, a jump
chain is Fabric's `gateway`, and host keys are still judged by our policy alone (Fabric's
default, AutoAddPolicy, would log in to a host whose key nobody vouched for)."""

from __future__ import annotations

from pathlib import Path

import fabric
import pytest

from gpuonboard.connection import ConnectOptions, KnownHosts, SSHRunner, connect_timeout, open_runner
from gpuonboard.errors import HostKeyError
from gpuonboard.inventory import Host, Inventory
from gpuonboard.testing import TestHostPool


def _host(pool: TestHostPool, name: str, **extra: object) -> Host:
    th = pool.hosts[name]
    fields: dict[str, object] = {"key_file": str(pool.client_key), "host_key": th.fingerprint, **extra}
    return Host(name=name, address=th.address, port=th.port, **fields)  # type: ignore[arg-type]


def test_the_runner_hands_out_its_open_fabric_connection(pool: TestHostPool, tmp_path: Path) -> None:
    known = tmp_path / "known_hosts"
    runner = open_runner(_host(pool, "good"), ConnectOptions(known_hosts=known), KnownHosts(known))
    assert isinstance(runner, SSHRunner)
    try:
        conn = runner.connection
        assert isinstance(conn, fabric.Connection)
        assert conn.is_connected and conn.transport is runner.transport
        assert conn.run("echo via-fabric", hide=True, in_stream=False).stdout == "via-fabric\n"
        assert runner.run("echo via-runner").stdout == "via-runner\n"  # the same login, still ours
    finally:
        runner.close()
    assert not conn.is_connected


def test_a_jump_chain_is_fabrics_gateway(pool: TestHostPool, tmp_path: Path) -> None:
    known = tmp_path / "known_hosts"
    bastion = _host(pool, "bastion1", connect_timeout=7)
    target = _host(pool, "behind", jump=("bastion1",), connect_timeout=3)
    inventory = Inventory(
        source=tmp_path, hosts={"bastion1": bastion, "behind": target}, groups={}, vendors={}
    )
    runner = open_runner(target, ConnectOptions(known_hosts=known), KnownHosts(known), inventory)
    assert isinstance(runner, SSHRunner)
    try:
        gateway = runner.connection.gateway
        assert isinstance(gateway, fabric.Connection) and gateway.is_connected
        assert (gateway.host, gateway.port) == (bastion.address, bastion.port)
        # the bastion's forward to the next hop waits that hop's connect timeout, not an hour
        assert gateway.transport.channel_timeout == connect_timeout(target) == 3
        assert runner.run("echo behind").stdout == "behind\n"
    finally:
        runner.close()
    assert not gateway.is_connected


def test_an_unknown_key_is_refused_not_added_as_fabric_would(pool: TestHostPool, tmp_path: Path) -> None:
    known = tmp_path / "known_hosts"
    host = _host(pool, "good", host_key=None)
    with pytest.raises(HostKeyError, match="has an unknown host key"):
        open_runner(host, ConnectOptions(known_hosts=known), KnownHosts(known))
    assert not known.exists()
