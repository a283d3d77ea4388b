"""`invoke tensorboard` on a flaky link, over a real sshd test host: a dropped SSH connection is
made again on the same local port; a TensorBoard that dies mid-session ends the command with
its log's last line; one found running says which logdir it serves.

TensorBoard is the stand-in of test_monitor.py (http.server on --host/--port serving --logdir,
with `tensorboard.main` in its command line); its `/data/environment` page (TensorBoard's JSON
with `data_location`) is a file of that name in the logdir.
"""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import subprocess
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import pytest
from conftest import Project, host_entry
from test_monitor import FAKE_TENSORBOARD, remote_processes, session_pids

from gpuonboard import api
from gpuonboard.api import monitor, tunnel
from gpuonboard.testing import TestHost, TestHostPool, add_executable
from gpuonboard.testing.hosts import process_alive

NAME = "tbflaky"


@pytest.fixture(scope="module")
def host(pool: TestHostPool) -> Iterator[TestHost]:
    (h,) = pool.add_many([(NAME, None)])
    add_executable(h.bin_dir, "python3", FAKE_TENSORBOARD)
    yield h
    h.stop()


class Running:
    """`gpuonboard tensorboard` running, its stdout and stderr lines read as they come."""

    def __init__(self, project: Project, args: list[str]) -> None:
        self.proc = subprocess.Popen(
            [*project.cli_argv(), "tensorboard", "--host", NAME, *args],
            cwd=project.root,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=project.env(),
        )
        self.lines: dict[str, list[str]] = {"out": [], "err": []}
        self._new: queue.Queue[None] = queue.Queue()
        for name, stream in (("out", self.proc.stdout), ("err", self.proc.stderr)):
            threading.Thread(target=self._read, args=(name, stream), daemon=True).start()

    def _read(self, name: str, stream: IO[str] | None) -> None:
        assert stream is not None
        for text in stream:
            self.lines[name].append(text.rstrip("\n"))
            self._new.put(None)

    def wait_for(self, pattern: str, stream: str = "out", timeout: float = 20) -> re.Match[str]:
        """The first line of std{stream} that matches (waiting for it up to `timeout` s)."""
        deadline = time.monotonic() + timeout
        while True:
            for text in list(self.lines[stream]):
                if m := re.search(pattern, text):
                    return m
            assert time.monotonic() < deadline, f"no {pattern!r} on std{stream}: {self.text()}"
            ended = self.proc.poll() is not None
            try:
                self._new.get(timeout=1 if ended else 0.5)
            except queue.Empty:
                assert not ended, f"exited without {pattern!r} on std{stream}: {self.text()}"

    def finish(self, timeout: float = 30) -> int:
        try:
            code = self.proc.wait(timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
        time.sleep(0.1)  # (the readers take the last lines)
        return code

    def text(self) -> str:
        return "stdout:\n" + "\n".join(self.lines["out"]) + "\nstderr:\n" + "\n".join(self.lines["err"])

    def end(self, h: TestHost) -> list[int]:
        """A test's cleanup: this command killed if it still runs, the host's sshd started again
        if the test stopped it; -> the TensorBoard stand-ins that were left (see kill_leftovers)."""
        if self.proc.poll() is None:
            self.proc.kill()
        if not h.is_running():
            h.start()
        return kill_leftovers(h)


def start(
    project: Project, pool: TestHostPool, h: TestHost, logdir: Path, rport: int, *extra: str
) -> tuple[Running, str]:
    project.write_inventory({NAME: host_entry(h, pool)})
    logdir.mkdir(exist_ok=True)
    (logdir / "index.html").write_text("fake tensorboard\n")
    run = Running(project, ["--logdir", str(logdir), "--port", str(rport), "--local-port", "0", *extra])
    url = run.wait_for(r"(http://127\.0\.0\.1:\d+/)").group(1)
    assert get(url) == "fake tensorboard\n"
    return run, url


def get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=15) as resp:
        return str(resp.read().decode())


def tensorboards(h: TestHost) -> list[int]:
    return [int(p.split(":")[0]) for p in remote_processes(h) if "tensorboard.main" in p]


def kill_leftovers(h: TestHost) -> list[int]:
    """SIGTERM what TensorBoard stand-ins still run on the host (a failed test's), by PID."""
    deadline = time.monotonic() + 20
    while (left := tensorboards(h)) and time.monotonic() < deadline:
        time.sleep(0.1)
    for pid in left:
        os.kill(pid, signal.SIGTERM)
    return left


def test_a_dropped_link_is_made_again_on_the_same_local_port(
    project: Project, pool: TestHostPool, host: TestHost
) -> None:
    rport = tunnel.free_port()
    run, url = start(project, pool, host, host.home / "runs-relink", rport)
    try:
        (tb,) = tensorboards(host)
        before = session_pids(host)
        assert before
        for pid in before:  # this test's connection: the link drops; sshd keeps listening
            os.kill(pid, signal.SIGTERM)
        dropped = (
            f"warning: host {NAME}: the SSH connection dropped; reconnecting for up to 5m (Ctrl-C to stop)."
        )
        run.wait_for(f"^{re.escape(dropped)}$", "err")
        run.wait_for(rf"^{NAME}: the SSH connection is back; TensorBoard at {re.escape(url)} again\.$")
        assert get(url) == "fake tensorboard\n"  # the same local port serves again
        assert tensorboards(host) == [tb]  # the same TensorBoard: never restarted
        assert not set(session_pids(host)) & set(before)  # over a new connection
        time.sleep(6)  # (one every 5 s) a health check ran: still listening, still running
        assert run.proc.poll() is None, run.text()
        run.proc.send_signal(signal.SIGINT)
        code = run.finish()
    finally:
        left = run.end(host)
    assert code == 0, run.text()
    assert f"{NAME}: stopped TensorBoard (pid {tb})." in run.lines["out"], run.text()
    assert not left and "Traceback" not in run.text()
    assert len(run.lines["err"]) == 1, run.text()  # the one drop line
    assert not (host.home / ".cache" / "gpuonboard" / f"tensorboard-{rport}.log").exists()


def test_a_link_that_stays_down_gives_up_naming_the_pid_to_kill(
    project: Project, pool: TestHostPool, host: TestHost
) -> None:
    """The host's sshd is gone (not only the session): after --reconnect-for it ends with exit
    3, and since no connection can stop TensorBoard, says it still runs there and how to stop it."""
    rport = tunnel.free_port()
    run, url = start(project, pool, host, host.home / "runs-giveup", rport, "--reconnect-for", "3s")
    try:
        (tb,) = tensorboards(host)
        host.stop()
        began = time.monotonic()
        code = run.finish(timeout=60)
        took = time.monotonic() - began
    finally:
        left = run.end(host)
    assert code == 3, run.text()
    assert took >= 3, run.text()  # it did try for the whole window
    err = run.lines["err"]
    assert (
        err[0]
        == f"warning: host {NAME}: the SSH connection dropped; reconnecting for up to 3s (Ctrl-C to stop)."
    ), run.text()
    assert err[1].startswith(
        f"error: host {NAME}: the SSH connection dropped and could not be made again within 3s: host {NAME}"
    ), run.text()
    assert "connection refused" in err[1], run.text()
    assert err[2] == (
        f"warning: host {NAME}: could not stop the TensorBoard this command started (pid {tb});"
        f" it still runs there: run `kill {tb}` on the host."
    ), run.text()
    assert left == [tb]  # it did still run, as said (stopped by the test now)
    assert "stopped TensorBoard" not in "\n".join(run.lines["out"])


def test_a_tensorboard_that_died_ends_the_command_with_its_last_log_line(
    project: Project, pool: TestHostPool, host: TestHost
) -> None:
    rport = tunnel.free_port()
    run, url = start(project, pool, host, host.home / "runs-crash", rport)
    log = host.home / ".cache" / "gpuonboard" / f"tensorboard-{rport}.log"
    try:
        (tb,) = tensorboards(host)
        with log.open("a") as f:  # what a crashing TensorBoard writes last
            f.write("Traceback (most recent call last):\nMemoryError: simulated\n")
        os.kill(tb, signal.SIGKILL)
        code = run.finish(timeout=40)  # (a health check every 5 s)
    finally:
        left = run.end(host)
    assert code == 1, run.text()
    assert run.lines["err"] == [
        f"error: host {NAME}: TensorBoard (pid {tb}) stopped listening on 127.0.0.1:{rport}; the last line"
        f" of its log: MemoryError: simulated (all of it in {log} on the host)."
    ], run.text()
    assert not any("stopped TensorBoard" in x for x in run.lines["out"]), run.text()  # (it died)
    assert log.is_file()  # kept: it says why
    log.unlink()
    assert not left and not remote_processes(host)
    with pytest.raises(OSError):
        get(url)  # the forward is closed too


def test_one_already_running_says_which_logdir_it_serves(
    project: Project, pool: TestHostPool, host: TestHost
) -> None:
    project.write_inventory({NAME: host_entry(host, pool)})
    theirs = host.home / "runs-theirs"
    (theirs / "data").mkdir(parents=True, exist_ok=True)
    (theirs / "data" / "environment").write_text(json.dumps({"data_location": str(theirs), "mode": "logdir"}))
    rport = tunnel.free_port()
    settings = api.Settings(project=project.root)
    inv, (entry,) = api.load_hosts(api.Selection(str(project.root / "inventory"), [NAME]), settings)
    runner = monitor.connector(settings, inv)(entry)
    argv = ["python3", "-m", "tensorboard.main", "--logdir", theirs, "--port", rport, "--host", "127.0.0.1"]
    other = tunnel.start_background(runner, argv, str(host.home / "theirs.log"))
    try:
        assert tunnel.wait_remote_port(runner, "127.0.0.1", rport, 10, other)

        def cli(logdir: Path) -> subprocess.CompletedProcess[str]:
            args = ["--logdir", str(logdir), "--port", str(rport), "--local-port", "0", "--duration", "1s"]
            return project.cli("tensorboard", "--host", NAME, *args)

        mine = cli(host.home / "runs-mine")
        same = cli(theirs)
        assert process_alive(other)  # one it found running is left alone
    finally:
        tunnel.stop_background(runner, other)
        runner.close()
    assert mine.returncode == 0, mine.stdout + mine.stderr
    assert mine.stdout.splitlines()[0] == (
        f"{NAME}: the TensorBoard already running on 127.0.0.1:{rport} serves logdir {theirs},"
        f" not {host.home / 'runs-mine'}; using it (pass another --port to start one for"
        f" {host.home / 'runs-mine'})."
    ), mine.stdout
    assert same.returncode == 0, same.stdout + same.stderr
    assert same.stdout.splitlines()[0] == (
        f"{NAME}: TensorBoard already runs on 127.0.0.1:{rport} for logdir {theirs}; using it."
    ), same.stdout


def test_ctrl_c_while_reconnecting_ends_at_once_and_stops_it_when_the_host_is_back(
    project: Project, pool: TestHostPool, host: TestHost
) -> None:
    """Ctrl-C during the reconnection backoff ends the command (exit 0, no traceback); the
    stop of what it started is tried over a new connection, which works once sshd is back."""
    rport = tunnel.free_port()
    run, _ = start(project, pool, host, host.home / "runs-ctrlc", rport)
    try:
        (tb,) = tensorboards(host)
        host.stop()
        run.wait_for("the SSH connection dropped; reconnecting", "err")
        time.sleep(1.5)  # (in the backoff)
        host.start()  # back before the stop's connection, not before Ctrl-C
        run.proc.send_signal(signal.SIGINT)
        began = time.monotonic()
        code = run.finish(timeout=30)
        took = time.monotonic() - began
    finally:
        left = run.end(host)
    assert code == 0, run.text()
    assert took < 10, run.text()
    assert f"{NAME}: stopped TensorBoard (pid {tb})." in run.lines["out"], run.text()
    assert not left and "Traceback" not in run.text()
