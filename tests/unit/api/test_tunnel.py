"""QA round 3 (tensorboard): the command never says it stopped TensorBoard when it could not."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from gpuonboard import api
from gpuonboard.api import monitor, tunnel
from gpuonboard.api.tunnel import one_host_problem
from gpuonboard.connection import CommandResult, ConnectError


class DroppingRunner:
    """Starts 'TensorBoard' (a local listener), then loses the connection before the stop."""

    def __init__(self, host: Any, listener: socket.socket, fail: str) -> None:
        self.host, self.listener, self.fail = host, listener, fail
        self.commands: list[str] = []

    def run(self, command: str, **_: Any) -> CommandResult:
        self.commands.append(command)
        if "XDG_CACHE_HOME" in command:  # tunnel.private_log: the log's private dir
            return CommandResult(command, 0, "/home/u/.cache/gpuonboard", "")
        if command.startswith("nohup "):
            self.listener.listen(1)  # "TensorBoard" listens now
            return CommandResult(command, 0, "4242\n", "")
        if "kill" in command and "-0" not in command.split("||")[0]:
            if self.fail == "dropped":
                raise ConnectError("host gpu-1: the SSH connection dropped")
            return CommandResult(command, 1, "", "")
        return CommandResult(command, 0, "", "")

    def close(self) -> None:
        pass


@pytest.mark.parametrize("fail", ["dropped", "refused"])
def test_tensorboard_does_not_claim_a_stop_that_failed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], fail: str
) -> None:
    (tmp_path / "hosts.yml").write_text("hosts:\n  gpu-1: {connection: local}\n")
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    runners: list[DroppingRunner] = []

    def connector(*_: Any, **__: Any) -> Any:
        def open_(host: Any) -> DroppingRunner:
            runners.append(DroppingRunner(host, listener, fail))
            return runners[-1]

        return open_

    monkeypatch.setattr(monitor, "connector", connector)
    stop = threading.Event()
    stop.set()
    try:
        code = tunnel.tensorboard(
            api.Selection(str(tmp_path / "hosts.yml"), ["gpu-1"]),
            api.Settings(project=tmp_path),
            logdir="~/runs",
            port=port,
            stop=stop,
        )
    finally:
        listener.close()
    out, err = capsys.readouterr()
    assert code == 0
    assert "started TensorBoard (pid 4242)" in out
    assert "stopped TensorBoard" not in out
    assert "could not stop the TensorBoard this command started (pid 4242)" in err
    assert "kill 4242" in err
    start = next(c for c in runners[0].commands if c.startswith("nohup "))
    assert " --logdir runs " in start  # not a directory literally named '~'


def test_stop_background_is_true_when_signalled_or_gone() -> None:
    class Ok:
        def run(self, command: str, **_: Any) -> CommandResult:
            return CommandResult(command, 0, "", "")

    assert tunnel.stop_background(Ok(), 17) is True  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("given", "sent"),
    [("~/runs", "runs"), ("~", "."), ("~/", "."), ("/data/runs", "/data/runs"), ("runs", "runs")],
)
def test_logdir_under_the_home_directory_is_not_a_literal_tilde(given: str, sent: str) -> None:
    assert tunnel.remote_home_path(given) == sent


# `invoke tensorboard` without --host on an inventory of several hosts: one sentence saying to
# give --host NAME (it said "give exactly one host for tensorboard, not 2."), exit 2.

CLI = [
    sys.executable,
    "-c",
    "import sys; from gpuonboard.cli import main; sys.argv[0] = 'gpuonboard'; main()",
]


def test_one_host_problem_names_the_hosts_and_the_flag() -> None:
    assert one_host_problem(["a", "b"]) == (
        "tensorboard forwards one host's port, and the selection picked 2 hosts (a, b);"
        " give one with --host NAME."
    )
    assert "(h0, h1, h2, h3, h4, ...)" in one_host_problem([f"h{i}" for i in range(7)])
    assert "picked none" in one_host_problem([])


def test_tensorboard_without_host_on_two_hosts_says_to_give_one(tmp_path: Path) -> None:
    (tmp_path / "inventory").mkdir()
    (tmp_path / "inventory" / "hosts.yml").write_text(
        "hosts:\n  gpu-1:\n    address: 127.0.0.1\n  gpu-2:\n    address: 127.0.0.1\n"
    )
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "GPUONBOARD_SSH_CONFIG": "/dev/null"}
    r = subprocess.run(
        [*CLI, "tensorboard"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
    )
    assert r.returncode == 2, r.stdout + r.stderr
    assert "the selection picked 2 hosts (gpu-1, gpu-2); give one with --host NAME." in r.stderr + r.stdout
    assert "Traceback" not in r.stderr
