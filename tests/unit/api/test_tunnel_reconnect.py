"""`invoke tensorboard`'s reconnection pacing and its "already running" sentence (pure parts)."""

from __future__ import annotations

import itertools
import threading
import time
from typing import Any, cast

import pytest

from gpuonboard.api import tunnel
from gpuonboard.errors import ConnectError, HostKeyError


def test_backoff_doubles_from_one_second_up_to_thirty() -> None:
    assert list(itertools.islice(tunnel.backoff_delays(), 8)) == [1, 2, 4, 8, 16, 30, 30, 30]


def test_reconnect_tries_until_it_connects() -> None:
    tries: list[float] = []
    now = [0.0]

    def connect() -> Any:
        tries.append(now[0])
        if len(tries) < 4:
            raise ConnectError("host h (10.0.0.1:22) is unreachable: connection refused.")
        return "runner"

    class Waits(threading.Event):  # the backoff's waits move the clock instead of sleeping
        def wait(self, timeout: float | None = None) -> bool:
            now[0] += timeout or 0
            return self.is_set()

    assert tunnel.reconnect(connect, 300, Waits(), lambda: now[0]) == ("runner", "")
    assert tries == [0, 1, 3, 7]  # 1, 2, 4 s apart


def test_reconnect_gives_up_after_the_window_with_the_last_reason() -> None:
    calls = 0

    def connect() -> Any:
        nonlocal calls
        calls += 1
        raise ConnectError(f"host h is unreachable: try {calls}.")

    began = time.monotonic()
    runner, why = tunnel.reconnect(connect, 1.5, threading.Event())
    assert runner is None
    assert 1.5 <= time.monotonic() - began < 3
    assert calls == 3 and why == "host h is unreachable: try 3."  # at 0, 1 and 1.5 s


def test_reconnect_never_retries_a_changed_host_key() -> None:
    calls = 0

    def connect() -> Any:
        nonlocal calls
        calls += 1
        raise HostKeyError("host h: host key changed.")

    with pytest.raises(HostKeyError):
        tunnel.reconnect(connect, 300, threading.Event())
    assert calls == 1


def test_reconnect_ends_when_stopped() -> None:
    stop = threading.Event()
    stop.set()
    assert tunnel.reconnect(lambda: cast(Any, "runner"), 300, stop) == (None, "no try was made")


@pytest.mark.parametrize(
    ("served", "wanted", "same"),
    [
        ("/home/u/runs", "/home/u/runs/", True),
        ("/home/u/runs", "runs", True),  # relative: the login directory's
        ("runs", "runs", True),
        ("/home/u/runs-b", "runs", False),
        ("/data/exp1", "/data/exp2", False),
    ],
)
def test_same_logdir(served: str, wanted: str, same: bool) -> None:
    assert tunnel.same_logdir(served, wanted) is same


def test_already_running_line_names_the_logdir_it_serves() -> None:
    assert tunnel.already_running_line("h", 6006, None, "runs") == (
        "h: something already listens on 127.0.0.1:6006; using it."
    )
    assert tunnel.already_running_line("h", 6006, "/data/a", "/data/b") == (
        "h: the TensorBoard already running on 127.0.0.1:6006 serves logdir /data/a, not /data/b;"
        " using it (pass another --port to start one for /data/b)."
    )
