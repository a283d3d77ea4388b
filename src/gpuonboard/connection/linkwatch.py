"""Keepalive that wants an answer (LinkWatch): a connection whose host stays silent is given
up, as OpenSSH's ServerAliveInterval/ServerAliveCountMax do."""

from __future__ import annotations

import contextlib
import threading
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gpuonboard.connection.session import SSHRunner


class LinkWatch(threading.Thread):
    """What OpenSSH's ServerAliveInterval/ServerAliveCountMax do, for a paramiko connection.

    paramiko's keepalive asks for no reply, so a link that goes silent (no reset: a NAT
    dropping state, a cable, a hung host) left a command waiting until TCP gave up, about
    15 minutes. Every `interval` seconds this asks the host for a reply (a global request
    sshd answers "failure" to); when none comes within interval * count seconds it closes
    the connection, and the command running on it ends with ConnectionLost saying so."""

    def __init__(self, runner: SSHRunner, interval: float, count: int) -> None:
        super().__init__(name=f"linkwatch-{runner.host.name}", daemon=True)
        self.runner, self.interval, self.count = runner, interval, count

    def run(self) -> None:
        transport = self.runner.transport
        while transport.is_active():
            time.sleep(self.interval)
            answered = threading.Event()
            threading.Thread(
                target=_ask, args=(transport, answered), name=f"{self.name}-ask", daemon=True
            ).start()
            if not answered.wait(self.interval * self.count) and transport.is_active():
                self.runner.silent_for = self.interval * self.count
                with contextlib.suppress(Exception):
                    transport.close()
                return


def _ask(transport: Any, answered: threading.Event) -> None:
    """One keepalive that wants a reply; `answered` is set once any reply came (or the
    transport closed)."""
    with contextlib.suppress(Exception):  # a transport closing meanwhile
        transport.global_request("keepalive@openssh.com", wait=True)
    answered.set()
