"""`invoke tensorboard` asks whatever already listens on the host's port for TensorBoard's
`/data/environment` page, over a real sshd test host: that port may be another user's service,
so its reply is untrusted. A reply nested too deep for JSON, or one dripped a byte at a time,
is "not TensorBoard" (None), never a traceback nor a command that hangs for hours."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest
from conftest import Project, host_entry

from gpuonboard import api
from gpuonboard.api import monitor, tunnel
from gpuonboard.connection import Runner
from gpuonboard.testing import TestHost, TestHostPool

NAME = "tbhostile"


@pytest.fixture(scope="module")
def host(pool: TestHostPool) -> Iterator[TestHost]:
    (h,) = pool.add_many([(NAME, None)])
    yield h
    h.stop()


@pytest.fixture
def runner(project: Project, pool: TestHostPool, host: TestHost) -> Iterator[Runner]:
    project.write_inventory({NAME: host_entry(host, pool)})
    settings = api.Settings(project=project.root)
    inv, (entry,) = api.load_hosts(api.Selection(str(project.root / "inventory"), [NAME]), settings)
    r = monitor.connector(settings, inv)(entry)
    yield r
    r.close()


def serve(reply: bytes, drip_s: float = 0.0) -> tuple[int, threading.Event]:
    """A one-connection-at-a-time service on this machine's 127.0.0.1 (the test host's loopback
    too) that answers any request with `reply`, a byte every `drip_s` when set."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    listener.settimeout(0.2)
    done = threading.Event()

    def run() -> None:
        while not done.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            with conn:
                conn.settimeout(1)
                try:
                    conn.recv(4096)
                    if drip_s:
                        for i in range(len(reply)):
                            if done.is_set():
                                break
                            conn.sendall(reply[i : i + 1])
                            time.sleep(drip_s)
                    else:
                        conn.sendall(reply)
                except OSError:
                    pass
        listener.close()

    threading.Thread(target=run, daemon=True).start()
    return listener.getsockname()[1], done


def test_json_nested_too_deep_is_not_tensorboard_and_no_traceback(runner: Runner) -> None:
    port, done = serve(b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n" + b"[" * 60000)
    try:
        assert tunnel.served_logdir(runner, port) is None
    finally:
        done.set()


def test_a_reply_dripped_byte_by_byte_is_given_up_within_the_wait(
    runner: Runner, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tunnel, "ENVIRONMENT_WAIT_S", 2.0, raising=False)
    body = b'{"data_location": "/home/u/runs", "pad": "' + b"x" * 2000 + b'"}'
    port, done = serve(b"HTTP/1.0 200 OK\r\n\r\n" + body, drip_s=0.5)
    got: list[str | None] = []
    reader = threading.Thread(target=lambda: got.append(tunnel.served_logdir(runner, port)), daemon=True)
    try:
        reader.start()
        reader.join(10)  # (was: 5 s allowed per byte, ~17 minutes for this reply)
        assert not reader.is_alive(), "served_logdir still reading a dripped reply after 10 s"
    finally:
        done.set()
        reader.join(10)
    assert got == [None]


def test_a_plain_reply_still_names_the_logdir(runner: Runner) -> None:
    port, done = serve(b'HTTP/1.0 200 OK\r\n\r\n{"data_location": "/home/u/runs"}')
    try:
        assert tunnel.served_logdir(runner, port) == "/home/u/runs"
    finally:
        done.set()
