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
from collections.abc import Callable
from typing import Any

_LIVE: weakref.WeakSet[subprocess.Popen[Any]] = weakref.WeakSet()
_LOCK = threading.Lock()
# set once the run is being interrupted: worker threads stop waiting (a --bwlimit throttle
# sleeping through a shard) and start no new step, so the process can exit at once
STOPPING = threading.Event()
# what must happen on the host when an interrupt ends the run (an upload's lease given back),
# run by the main thread before it cuts the connections (a worker thread may be stuck)
_CLEANUPS: dict[int, Callable[[], None]] = {}


def on_interrupt(fn: Callable[[], None]) -> int:
    """Register fn to run if the run is interrupted; -> a key for done()."""
    with _LOCK:
        key = id(fn)
        _CLEANUPS[key] = fn
    return key


def done(key: int) -> None:
    """Forget a cleanup registered with on_interrupt (its work was done the normal way)."""
    with _LOCK:
        _CLEANUPS.pop(key, None)


def run_cleanups(timeout: float = 3.0) -> None:
    """Run every registered cleanup at once, each in a thread, waiting `timeout` seconds in all
    (one stuck on a dead link is left behind: the process is ending)."""
    with _LOCK:
        fns = list(_CLEANUPS.values())
        _CLEANUPS.clear()
    threads = [threading.Thread(target=fn, daemon=True) for fn in fns]
    for t in threads:
        t.start()
    deadline = time.monotonic() + timeout
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))


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
    """stop() every tracked child still running (and tell waiting workers the run is ending:
    STOPPING); -> how many were running."""
    STOPPING.set()
    with _LOCK:
        running = [p for p in _LIVE if p.poll() is None]
    stop(running, grace)
    return len(running)
