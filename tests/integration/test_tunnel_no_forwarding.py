"""`invoke tensorboard` on a host whose sshd forbids port forwarding (`AllowTcpForwarding no`,
common on hardened rented boxes), over a real sshd test host.

sshd answers every `direct-tcpip` channel with "administratively prohibited": the port probe
took that for "nothing listens", started TensorBoard, polled the port for 90 s and then blamed
the host's python3 ("is `tensorboard` installed?"), with TensorBoard started for nothing (and a
second one started next to a TensorBoard that already ran)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from conftest import Project, host_entry
from test_monitor import FAKE_TENSORBOARD, remote_processes
from test_tunnel import kill_leftovers

from gpuonboard import api
from gpuonboard.api import monitor, tunnel
from gpuonboard.errors import CommandError
from gpuonboard.testing import TestHost, TestHostPool, add_executable

NAME = "tbnofwd"


@pytest.fixture(scope="module")
def host(pool: TestHostPool) -> Iterator[TestHost]:
    (h,) = pool.add_many([(NAME, None)])
    add_executable(h.bin_dir, "python3", FAKE_TENSORBOARD)
    h.stop()
    config = h.config_path.read_text()
    assert "AllowTcpForwarding yes" in config
    h.config_path.write_text(config.replace("AllowTcpForwarding yes", "AllowTcpForwarding no"))
    h.start()
    yield h
    kill_leftovers(h)  # (what a failing run started on the host: by PID)
    h.stop()


def test_forwarding_forbidden_is_one_sentence_and_starts_nothing(
    project: Project, pool: TestHostPool, host: TestHost
) -> None:
    project.write_inventory({NAME: host_entry(host, pool)})
    rport = tunnel.free_port("127.0.0.1")
    began = time.monotonic()
    r = project.cli(
        "tensorboard",
        "--host",
        NAME,
        "--logdir",
        "my runs",
        "--port",
        str(rport),
        "--local-port",
        "0",
        timeout=40,
    )
    took = time.monotonic() - began
    assert r.returncode == 1, r.stdout + r.stderr
    assert r.stderr == (
        f"error: host {NAME}: its sshd does not allow port forwarding (AllowTcpForwarding no), so"
        " TensorBoard cannot be reached over SSH; ask the provider to allow it, or run"
        " TensorBoard elsewhere.\n"
    ), r.stderr
    assert took < 30, took  # (was: 90 s of polling first)
    assert "started TensorBoard" not in r.stdout
    assert not [p for p in remote_processes(host) if "tensorboard.main" in p]


def test_probe_port_says_forwarding_is_forbidden(
    project: Project, pool: TestHostPool, host: TestHost
) -> None:
    project.write_inventory({NAME: host_entry(host, pool)})
    settings = api.Settings(project=project.root)
    inv, (entry,) = api.load_hosts(api.Selection(str(project.root / "inventory"), [NAME]), settings)
    runner = monitor.connector(settings, inv)(entry)
    try:
        with pytest.raises(CommandError, match="does not allow port forwarding"):
            tunnel.probe_port(runner, "127.0.0.1", tunnel.free_port("127.0.0.1"))
    finally:
        runner.close()
