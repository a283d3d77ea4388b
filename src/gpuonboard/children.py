"""Child processes that carry an upload (rsync, a shard stream's ssh and compressor).

A signal reaches only the main thread. With several hosts, their uploads run in worker threads,
so an interrupt (Ctrl-C, SIGTERM) caught on the main thread stops these children here, by the
Popen objects this process made; else they would send on to the end with nobody to verify it.
"""

from __future__ import annotations

import contextlib
import subprocess
import threading
import time
import weakref
from typing import Any

_LIVE: weakref.WeakSet[subprocess.Popen[Any]] = weakref.WeakSet()
_LOCK = threading.Lock()


def track(proc: subprocess.Popen[Any]) -> subprocess.Popen[Any]:
    """Remember a child until it is gone (weakly: a finished one is simply dropped)."""
    with _LOCK:
        _LIVE.add(proc)
    return proc


def stop(procs: list[subprocess.Popen[Any]], grace: float = 5.0) -> None:
    """SIGTERM each child, SIGKILL those alive after `grace` seconds, and reap them all."""
    for p in procs:
        with contextlib.suppress(OSError):
            p.terminate()
    deadline = time.monotonic() + grace
    for p in procs:
        try:
            p.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            with contextlib.suppress(OSError):
                p.kill()
            p.wait()


def stop_all(grace: float = 5.0) -> int:
    """stop() every tracked child still running; -> how many were running."""
    with _LOCK:
        running = [p for p in _LIVE if p.poll() is None]
    stop(running, grace)
    return len(running)
