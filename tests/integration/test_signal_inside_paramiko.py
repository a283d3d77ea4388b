"""A signal that stops a run (SIGTERM, SIGHUP, Ctrl-C's SIGINT) arriving while paramiko works on
the main thread, over the real sshd test host: the process exits at once, its cleanup done over
the same connection (here, as an upload's lease is given back: a file removed on the host).

paramiko takes its locks as `lock.acquire()` then `try:`. The CLI's handler raised in whatever
Python code ran, so a signal handled right after such an acquire left the lock held, and the
connection's reader thread then waited on it for good (`BufferedPipe.close`): the cleanup's
command waited its whole timeout, or paramiko's hour. With real signals sent at random moments
to a loop of commands it happened about once in 50 tries (py-spy showed that wait); here each
child sends itself the signal right after its Nth lock acquire inside paramiko (a profile hook
that sees every C call return), the moment that random timing sometimes hits. Before the fix
most of these children hung."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import ssh_runner

import gpuonboard
from gpuonboard.errors import Terminated
from gpuonboard.testing import TestHostPool
from gpuonboard.testing.hosts import _descendants, _signal_all

SRC = str(Path(gpuonboard.__file__).resolve().parents[1])  # (the gpuonboard this test imported)

# the child: the CLI's own boundary (cli._guard installs the signal handlers) around a loop of
# commands; its `except KeyboardInterrupt` gives the "lease" back over the same connection
CHILD = r"""
import json, os, sys
from pathlib import Path
from invoke import Exit
from gpuonboard import cli
from gpuonboard.connection import ConnectOptions, KnownHosts, open_runner
from gpuonboard.inventory import Host

cfg = json.loads(sys.argv[1])
host = Host(name="h", address=cfg["address"], port=cfg["port"], key_file=cfg["key"], host_key=cfg["fp"])
known = Path(cfg["known"])
runner = open_runner(host, ConnectOptions(known_hosts=known), KnownHosts(known))
lease = cfg["lease"]
runner.run(f"touch {lease}", timeout=10)
seen = 0


def hook(frame, event, arg):
    global seen
    if (
        event == "c_return"
        and getattr(arg, "__name__", "") == "acquire"
        and frame.f_globals.get("__name__", "").startswith("paramiko")
    ):
        seen += 1
        if seen == cfg["nth"]:
            sys.setprofile(None)
            os.kill(os.getpid(), cfg["signal"])


def work():
    try:
        sys.setprofile(hook)
        for i in range(100):
            runner.run(f"echo {i}", prefetch=i % 2 == 0)  # (no timeout, as most steps' commands)
        return 0
    except KeyboardInterrupt:
        sys.setprofile(None)
        runner.run(f"rm -f {lease}", timeout=20)
        raise


try:
    cli._guard(work, debug=False)
except Exit as stop:
    sys.exit(stop.code)
"""

CASES = [(sig, nth) for sig in (signal.SIGTERM, signal.SIGINT) for nth in (1, 2, 3, 8, 13, 21, 34)] + [
    (signal.SIGHUP, nth) for nth in (2, 13)
]


def _signals_as_a_terminal_gives_them() -> None:
    """The child's SIGHUP, SIGTERM and SIGINT at their defaults, whatever this test run inherited
    (a CI started under `nohup` ignores SIGHUP, and the CLI keeps an ignored signal ignored)."""
    for sig in (signal.SIGHUP, signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, signal.SIG_DFL)


def test_a_signal_right_after_a_paramiko_lock_is_taken_stops_the_run_with_its_cleanup_done(
    pool: TestHostPool, tmp_path: Path
) -> None:
    th = pool.add("sigpara")
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    env = {**os.environ, "PYTHONPATH": SRC}
    failures = []
    for sig, nth in CASES:
        lease = tmp_path / f"lease-{sig.name}-{nth}"
        cfg = {
            "address": th.address,
            "port": th.port,
            "key": str(pool.client_key),
            "fp": th.fingerprint,
            "known": str(tmp_path / "known_hosts"),
            "lease": str(lease),
            "nth": nth,
            "signal": int(sig),
        }
        start = time.monotonic()
        proc = subprocess.Popen(
            [sys.executable, str(script), json.dumps(cfg)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            preexec_fn=_signals_as_a_terminal_gives_them,
        )
        try:
            _, err = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            failures.append(f"{sig.name} after paramiko's lock #{nth}: still running after 10 s")
            continue
        want = 130 if sig == signal.SIGINT else 143
        if proc.returncode != want or lease.exists():
            failures.append(
                f"{sig.name} after lock #{nth}: exit {proc.returncode}, lease left: {lease.exists()},"
                f" {time.monotonic() - start:.1f} s; {err.strip()[-300:]}"
            )
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_long_command_still_stops_within_a_poll_of_its_output(
    pool: TestHostPool, tmp_path: Path, sig: signal.Signals
) -> None:
    """The signal that comes while a command runs is raised between the polls of its output,
    not once the command is done (`sleep 30`)."""
    th = pool.add(f"siglong-{sig.name.lower()}")
    script = tmp_path / "child.py"
    script.write_text(CHILD.replace('f"echo {i}"', '"sleep 30"'))
    lease = tmp_path / "lease"
    cfg = {
        "address": th.address,
        "port": th.port,
        "key": str(pool.client_key),
        "fp": th.fingerprint,
        "known": str(tmp_path / "known_hosts"),
        "lease": str(lease),
        "nth": 10**9,  # (never: the signal comes from here)
        "signal": int(sig),
    }
    proc = subprocess.Popen(
        [sys.executable, str(script), json.dumps(cfg)],
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": SRC},
        preexec_fn=_signals_as_a_terminal_gives_them,
    )
    try:
        deadline = time.monotonic() + 15
        while not lease.exists():
            assert time.monotonic() < deadline and proc.poll() is None, "the child never started"
            time.sleep(0.02)
        time.sleep(1.0)  # (inside `sleep 30` by now)
        start = time.monotonic()
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=10)
        took = time.monotonic() - start
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == (130 if sig == signal.SIGINT else 143), err
    assert not lease.exists()
    assert took < 3, took


def test_a_second_signal_stops_a_command_whose_channel_never_opens(
    pool: TestHostPool, tmp_path: Path
) -> None:
    """The first SIGTERM waits for paramiko's call to end; when that call blocks (the host's
    sshd stopped: no channel opens, and a command without a timeout waits paramiko's hour),
    a second one raises at once: the user's way out."""
    from gpuonboard import interrupt  # (here: the tests above also run on the code before it)

    th = pool.add("sigfrozen")
    runner = ssh_runner(th, pool, tmp_path)
    daemon = th.pid if th.pid is not None else int(th.pid_path.read_text())
    frozen = _descendants({daemon})  # (the connection's sshd processes, which this test started)
    saved = signal.signal(signal.SIGTERM, interrupt.handler)
    sent: list[float] = []

    def send_twice() -> None:
        for _ in range(2):
            time.sleep(0.7)
            sent.append(time.monotonic())
            os.kill(os.getpid(), signal.SIGTERM)

    try:
        assert runner.run("true", timeout=5).exit_code == 0
        _signal_all(frozen, signal.SIGSTOP)
        sender = threading.Thread(target=send_twice, daemon=True)
        sender.start()
        with pytest.raises(Terminated):
            runner.run("true")
        stopped = time.monotonic()
        sender.join(5)
        assert len(sent) == 2 and sent[1] <= stopped < sent[1] + 2, (sent, stopped)
    finally:
        signal.signal(signal.SIGTERM, saved)
        interrupt._pending = None
        interrupt._seen.clear()
        _signal_all(frozen, signal.SIGCONT)
        runner.close()
