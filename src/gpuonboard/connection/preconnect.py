"""Preconnect: every host's first TCP connection opened in the background while the process
still imports paramiko, so sshd's start-up overlaps ours."""

from __future__ import annotations

import errno
import socket
import threading
import time

from gpuonboard.connection.base import connect_timeout
from gpuonboard.inventory import Host


class Preconnect:
    """TCP connections to every host's first hop, opened in one background thread as soon as
    the inventory is known, so sshd's per-connection start-up (fork, re-exec, banner) runs
    while this process is still importing paramiko and friends. Stdlib only.

    A connection that fails here is simply opened again by the normal path, which owns
    retries and error messages.
    """

    def __init__(self, hosts: list[Host]) -> None:
        self._targets = {
            h.name: (h.address, h.port, connect_timeout(h))
            for h in hosts
            if h.connection == "ssh" and not h.jump and not h.proxy_command
        }
        self._socks: dict[str, socket.socket] = {}
        self._ready = {name: threading.Event() for name in self._targets}
        self._done = threading.Event()
        self._taken: set[str] = set()
        self._lock = threading.Lock()
        threading.Thread(target=self._connect_all, name="preconnect", daemon=True).start()

    def _connect_all(self) -> None:
        import selectors

        sel = selectors.DefaultSelector()
        deadline = time.monotonic() + max((t for _, _, t in self._targets.values()), default=0)
        try:
            for name, (addr, port, _) in self._targets.items():
                try:
                    info = socket.getaddrinfo(addr, port, type=socket.SOCK_STREAM)[0]
                    sock = socket.socket(info[0], info[1], info[2])
                    sock.setblocking(False)
                    if sock.connect_ex(info[4]) not in (0, errno.EINPROGRESS):
                        sock.close()
                        self._ready[name].set()
                        continue
                    sel.register(sock, selectors.EVENT_WRITE, name)
                except OSError:
                    self._ready[name].set()
                    continue
            while sel.get_map() and time.monotonic() < deadline:
                for key, _ in sel.select(timeout=max(0.0, deadline - time.monotonic())):
                    ready = key.fileobj
                    assert isinstance(ready, socket.socket)
                    sel.unregister(ready)
                    if ready.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0:
                        ready.setblocking(True)
                        ready.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                        with self._lock:
                            self._socks[str(key.data)] = ready
                    else:
                        ready.close()
                    self._ready[str(key.data)].set()
            for key in list(sel.get_map().values()):
                key.fileobj.close()  # type: ignore[union-attr]
        finally:
            sel.close()
            for event in self._ready.values():
                event.set()
            self._done.set()

    def take(self, host: Host) -> socket.socket | None:
        """The pre-opened socket for host's first hop (once), or None."""
        if host.name not in self._targets:
            return None
        self._ready[host.name].wait(connect_timeout(host))
        with self._lock:
            if host.name in self._taken:
                return None
            self._taken.add(host.name)
            sock = self._socks.pop(host.name, None)
        if sock is not None:
            sock.settimeout(connect_timeout(host))
        return sock

    def close(self) -> None:
        """Close sockets nobody took (hosts skipped or failed before connecting)."""
        self._done.wait(1)
        with self._lock:
            for sock in self._socks.values():
                sock.close()
            self._socks.clear()
