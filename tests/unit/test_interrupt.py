"""interrupt: a signal that stops a run is raised at once outside a shielded region, when the
region ends inside one (over any exception the region raised), and at once for a second signal
of the same kind (the way out of a region that blocks). Real signals, sent to this process."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator

import pytest

from gpuonboard import interrupt
from gpuonboard.errors import Terminated


@pytest.fixture
def handlers() -> Iterator[None]:
    saved = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)}
    for s in saved:
        signal.signal(s, interrupt.handler)
    try:
        yield
    finally:
        for s, h in saved.items():
            signal.signal(s, h)
        interrupt._pending = None
        interrupt._seen.clear()


def _kill(sig: signal.Signals) -> None:
    os.kill(os.getpid(), sig)
    signal.pthread_sigmask(signal.SIG_BLOCK, [])  # (a C call: the handler has run on return)


def test_outside_a_region_a_signal_raises_at_once(handlers: None) -> None:
    with pytest.raises(Terminated):
        _kill(signal.SIGTERM)
    with pytest.raises(KeyboardInterrupt) as caught:
        _kill(signal.SIGINT)
    assert not isinstance(caught.value, Terminated)


def test_inside_a_region_a_signal_is_raised_when_it_ends(handlers: None) -> None:
    reached = []
    with pytest.raises(Terminated), interrupt.shielded():
        _kill(signal.SIGHUP)
        reached.append("after the signal")
    assert reached == ["after the signal"]
    with interrupt.shielded():  # (raised once: the next region ends quietly)
        pass


def test_the_interrupt_wins_over_the_regions_own_error(handlers: None) -> None:
    with pytest.raises(KeyboardInterrupt) as caught, interrupt.shielded():
        _kill(signal.SIGINT)
        raise TimeoutError("the command timed out")
    assert isinstance(caught.value.__context__, TimeoutError)


def test_a_second_signal_of_the_kind_raises_at_once_inside_a_region(handlers: None) -> None:
    reached = []
    with pytest.raises(Terminated), interrupt.shielded():
        _kill(signal.SIGTERM)
        reached.append("first: recorded")
        _kill(signal.SIGTERM)
        reached.append("second: not reached")
    assert reached == ["first: recorded"]


def test_check_raises_inside_a_region_and_nested_regions_wait_for_the_outer(handlers: None) -> None:
    with pytest.raises(Terminated), interrupt.shielded():
        with interrupt.shielded():
            _kill(signal.SIGTERM)
        interrupt.check()
        raise AssertionError("check() did not raise")


def test_a_worker_threads_region_does_not_shield_the_main_thread(handlers: None) -> None:
    inside, leave = threading.Event(), threading.Event()

    def worker() -> None:
        with interrupt.shielded():
            inside.set()
            leave.wait(5)

    t = threading.Thread(target=worker)
    t.start()
    try:
        assert inside.wait(5)
        with pytest.raises(Terminated):
            _kill(signal.SIGTERM)
    finally:
        leave.set()
        t.join()
