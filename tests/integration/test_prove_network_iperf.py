"""`network`'s iperf3 figure, for real between two test hosts of this module's own (loopback):

- a peer port where something that is not the iperf3 server takes the connection and says
  nothing (a port in use, a load balancer that accepts and drops) made the iperf3 client wait
  forever: the step failed with "a remote command timed out" (RTT and upload lost) and the client
  ran on on the rented host. Now the host stops it and `iperf3_<peer>` says why in one sentence.
- a connection from an address to itself is this host talking to itself, not the network: it
  warns instead of passing as a link speed.
"""

from __future__ import annotations

import shutil
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import Project, host_entry

from gpuonboard.testing import TestHost, TestHostPool

pytestmark = pytest.mark.skipif(shutil.which("iperf3") is None, reason="iperf3 not installed")


@pytest.fixture(scope="module")
def hosts(pool: TestHostPool) -> Iterator[dict[str, TestHost]]:
    added = pool.add_many([("iperfa", None), ("iperfb", None)])
    yield {h.name: h for h in added}
    for h in added:
        h.stop()


def _write(project: Project, hosts: dict[str, TestHost], slack: int | None = None, **peer_vars: Any) -> None:
    a = host_entry(hosts["iperfa"], project.pool)
    a["vars"].update({"iperf_seconds": 1, "rtt_count": 2, "network_upload": False})
    if slack is not None:
        a["vars"]["iperf_slack_s"] = slack
    b = host_entry(hosts["iperfb"], project.pool)
    b["vars"].update(peer_vars)
    project.write_inventory({"iperfa": a, "iperfb": b}, groups={"rack": {"hosts": ["iperfa", "iperfb"]}})


def _clients_to(port: int) -> list[int]:
    """PIDs of iperf3 clients to `port` (this test's own port: no one else's)."""
    pids = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                argv = (proc / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if argv[:1] == [b"iperf3"] and b"-c" in argv and str(port).encode() in argv:
                pids.append(int(proc.name))
    return pids


def test_a_port_that_takes_the_connection_and_stays_silent_does_not_hang(
    project: Project, hosts: dict[str, TestHost]
) -> None:
    with socket.socket() as silent:  # listens, never accepts, never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        port = silent.getsockname()[1]
        # vars.iperf_slack_s (default 10) shortened: the client is stopped 1 + 1 s after it started
        _write(project, hosts, slack=1, iperf_address="127.0.0.1", iperf_port=port)
        r = project.cli(
            "provision", "--host", "iperfa", "--playbook", "prove", "--only", "network", timeout=120
        )
        assert r.returncode == 0, r.stdout + r.stderr
        rules = project.rules("iperfa")
        assert rules["ssh_rtt"]["verdict"] == "pass"  # the other figures are kept
        limit = 1 + 1  # iperf_seconds + iperf_slack_s
        assert rules["iperf3_iperfb"]["verdict"] == "warn"
        assert rules["iperf3_iperfb"]["actual"] == (
            f"no result: iperf3 to 127.0.0.1:{port} gave no result within {limit} s and was stopped on"
            " the host: something that is not the iperf3 server took the connection (vars.iperf_port"
            " names a port in use? a load balancer or firewall that accepts and then drops?), or the"
            " link stalled"
        )
        deadline = time.monotonic() + 10  # (stopped on the host: gone at once, later on a loaded machine)
        while _clients_to(port) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _clients_to(port) == [], "the iperf3 client still runs on the host"


def test_a_connection_from_this_host_to_itself_is_not_a_network_figure(
    project: Project, hosts: dict[str, TestHost]
) -> None:
    """The peer's iperf_address is an address of this host (here: both test hosts are this
    machine, as two ordered hosts that are one box would be)."""
    _write(project, hosts, iperf_address="127.0.0.1")
    r = project.cli("provision", "--host", "iperfa", "--playbook", "prove", "--only", "network", timeout=90)
    assert r.returncode == 0, r.stdout + r.stderr
    ip = project.rules("iperfa")["iperf3_iperfb"]
    assert ip["verdict"] == "warn", ip
    assert "Gbit/s received" in ip["actual"]
    assert ip["actual"].endswith("but the connection went from 127.0.0.1 to 127.0.0.1: this host to itself")
    assert ip["detail"].startswith("not a network figure: 127.0.0.1 is an address of this host")


def test_a_taken_port_is_said_at_once_not_after_the_client_gave_up(
    project: Project, hosts: dict[str, TestHost]
) -> None:
    """A port bound by something else (here a socket that never listens; on a box, any outgoing
    connection's own port: the random range overlaps Linux's ephemeral ports): iperf3's server
    exits at once. The client was refused for 15 s and the check said "Connection refused"; the
    server's end is now seen and said (a random port is tried again on another: the CI flake)."""
    with socket.socket() as taken:  # bound, not listening: the iperf3 server cannot listen there
        taken.bind(("0.0.0.0", 0))
        port = taken.getsockname()[1]
        _write(project, hosts, iperf_address="127.0.0.1", iperf_port=port)
        r = project.cli(
            "provision", "--host", "iperfa", "--playbook", "prove", "--only", "network", timeout=90
        )
        assert r.returncode == 0, r.stdout + r.stderr
        ip = project.rules("iperfa")["iperf3_iperfb"]
    assert ip["verdict"] == "warn", ip
    assert ip["actual"] == (
        f"no result: the iperf3 server on iperfb could not listen on port {port} (vars.iperf_port): the"
        " port is in use there; name a free port, or leave vars.iperf_port unset for a random one"
    )
