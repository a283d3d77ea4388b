"""Signals that stop a run (SIGTERM, SIGHUP, Ctrl-C's SIGINT) raised only where raising is safe.

paramiko takes its locks as `lock.acquire()` then `try:`. An exception a signal handler raises
between the two leaves that lock held, and the connection's reader thread then waits on it for
good: every later command on that connection (what an interrupt runs before the exit: an upload's
lease given back) waited for its timeout, or paramiko's hour where it had none.

So the main thread's paramiko work runs `shielded()`: a signal that comes meanwhile is only
recorded, and raised when the region ends, or by check() at a safe point inside it (between the
polls of a command's output, so a long command stops within one poll). A second signal of the
same kind while the first waits raises at once: a user's way out of a region that blocks (a
second Ctrl-C, as with rsync).
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from typing import Any

from gpuonboard.errors import Terminated

# (only the main thread handles signals; a worker thread's shielded() changes nothing)
_depth = 0
_pending: type[KeyboardInterrupt] | None = None
_seen: set[type[KeyboardInterrupt]] = set()


def _exception(signum: int) -> type[KeyboardInterrupt]:
    return KeyboardInterrupt if signum == signal.SIGINT else Terminated


def handler(signum: int, frame: Any) -> None:
    """The handler of SIGTERM, SIGHUP and SIGINT: raise Terminated (KeyboardInterrupt for
    SIGINT) now, or, inside a shielded region, when it ends; at once for a second of its kind."""
    global _pending
    exc = _exception(signum)
    if _depth == 0 or exc in _seen:
        _pending = None
        _seen.clear()
        raise exc
    _seen.add(exc)
    if _pending is None:
        _pending = exc


def install() -> None:
    """Handle SIGTERM and SIGHUP (whose default is an instant death that left rsync writing on
    its own) and SIGINT, each unless ignored (`nohup`, a background job's Ctrl-C) or, for SIGINT,
    given a handler of someone else's; only from the main thread (where signals are handled)."""
    if threading.current_thread() is not threading.main_thread():
        return
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        current = signal.getsignal(sig)
        if current is signal.SIG_IGN:
            continue
        if sig == signal.SIGINT and current is not signal.default_int_handler:
            continue
        signal.signal(sig, handler)


def check() -> None:
    """Raise the signal a shielded region recorded, if any (call it only where no paramiko
    frame is on the stack)."""
    global _pending
    exc = _pending
    if exc is not None and threading.current_thread() is threading.main_thread():
        _pending = None
        _seen.clear()
        raise exc


@contextlib.contextmanager
def shielded() -> Iterator[None]:
    """A region of paramiko calls (on the main thread) that a signal does not cut: it is raised
    as the region ends, even over an exception the region raised (the interrupt wins)."""
    global _depth
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
        if _depth == 0:
            check()
