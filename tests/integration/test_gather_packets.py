"""The fact probe's output reaches the client in few SSH packets: each packet costs the client
CPU (decrypt, queue, wake the reader), so an 8-GPU host's ~200 KB must not arrive as one packet
per probe write (it came in ~90 packets; the probe's stdout and stderr now leave in 16 KiB
blocks).
Counted, not timed: the number of channel data packets the transport received."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conftest import ssh_runner

from gpuonboard.connection import SSHRunner
from gpuonboard.connection.gather import gather
from gpuonboard.testing import TestHostPool

MSG_CHANNEL_DATA, MSG_CHANNEL_EXTENDED_DATA = 94, 95  # RFC 4254


def test_the_probe_output_arrives_in_few_packets(pool: TestHostPool, tmp_path: Path) -> None:
    th = pool.hosts["good"]  # the 8x A100 profile: ~200 KB of probe output
    runner = ssh_runner(th, pool, tmp_path)
    assert isinstance(runner, SSHRunner)
    packetizer = runner.transport.packetizer
    read_message = packetizer.read_message
    kinds: list[int] = []

    def counting() -> Any:
        ptype, message = read_message()
        kinds.append(ptype)
        return ptype, message

    packetizer.read_message = counting  # (this connection's reader only)
    try:
        facts = gather(runner)
    finally:
        runner.close()
    data = sum(k in (MSG_CHANNEL_DATA, MSG_CHANNEL_EXTENDED_DATA) for k in kinds)
    received = sum(len(o.stdout) + len(o.stderr) for o in facts.raw.values())
    assert facts.gpu is not None and len(facts.gpu.gpus) == 8
    assert received > 150_000
    # stdout and stderr each leave in 16 KiB blocks (sshd's read size): 9 packets here, where
    # stdout alone in blocks gave 34-36 (a framing line on stderr per probe, each a packet) and
    # neither ~90
    assert data <= 20, f"{data} data packets for {received:,} bytes"


def test_the_transport_thread_polls_its_socket_once_a_second(pool: TestHostPool, tmp_path: Path) -> None:
    """paramiko's thread woke ten times a second per host to look for a close (its socket's
    0.1 s timeout): one wake-up a second now, and a close still ends it."""
    from gpuonboard.connection.connect import _TRANSPORT_POLL_S

    th = pool.hosts["good"]
    runner = ssh_runner(th, pool, tmp_path)
    assert isinstance(runner, SSHRunner)
    transport = runner.transport
    assert transport.sock.gettimeout() == _TRANSPORT_POLL_S == 1.0
    assert runner.run("echo ok").stdout == "ok\n"
    runner.close()
    transport.join(10)
    assert not transport.is_alive() and not transport.is_active()
