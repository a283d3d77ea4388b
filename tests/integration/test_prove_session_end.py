"""A prove script must not outlive the SSH session that started it. When the local run ended
early (Ctrl-C, SIGTERM, the local process killed, the connection dropped) the smoke training or
the all-reduce (torchrun and its ranks) trained on on the rented host until `train_timeout`,
holding the GPUs and keeping an idle autostop from powering the box off. Now the host stops
the script and every process under it within seconds; a normal run is unchanged (test_prove*).

Each test's remote temp dir is its own (`remote_tmp` under tmp_path), so the processes it
looks for (and kills if the fix is missing) are only those this test started."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import Project, host_entry

from gpuonboard.testing import TestHost, TestHostPool, add_executable

pytestmark = pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch not installed")

GONE_WITHIN_S = 12.0  # the watcher looks every second; SIGKILL follows SIGTERM 5 s later


def _parents() -> dict[int, int]:
    out = {}
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                out[int(proc.name)] = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    return out


def _pids_naming(text: str, extra: str = "", shells: bool = True) -> list[int]:
    """PIDs of processes whose command line names `text` (and `extra`), this one excepted;
    without `shells`, the remote command's own shells (which name every path) are left out."""
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
        if not shells and cmdline.startswith(b"sh -c "):
            continue
        if text.encode() in cmdline and extra.encode() in cmdline:
            pids.append(int(proc.name))
    return pids


def _wait_until(what: str, ok: Any, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not ok():
        assert time.monotonic() < deadline, what
        time.sleep(0.2)


def _wait_started(cli: subprocess.Popen[str], remote_tmp: Path, script: str, count: int) -> None:
    """Until `count` processes (not the remote shells) run `script` on the host."""
    deadline = time.monotonic() + 120
    while len(_pids_naming(str(remote_tmp), script, shells=False)) < count:
        if cli.poll() is not None:
            out, err = cli.communicate()
            pytest.fail(f"the run ended before {script} got going: {out}{err}")
        assert time.monotonic() < deadline, f"{script} never started on the host"
        time.sleep(0.2)


def _kill_leftovers(marker: Path) -> None:
    """Without the fix: stop what this test started (by PID, found by its private temp dir)."""
    for pid in _pids_naming(str(marker)):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _setup(project: Project, tmp_path: Path, **extra: Any) -> Path:
    remote_tmp = tmp_path / "remote tmp"
    remote_tmp.mkdir()
    entry = host_entry(project.pool.hosts["prove"], project.pool)
    entry["vars"].update(
        {"train_python": sys.executable, "train_timeout": 240, "remote_tmp": str(remote_tmp), **extra}
    )
    project.write_inventory({"prove": entry})
    return remote_tmp


def _start_smoke(
    project: Project, tmp_path: Path, playbook: str = "prove"
) -> tuple[subprocess.Popen[str], Path]:
    remote_tmp = _setup(
        project,
        tmp_path,
        train_steps=100_000,  # minutes on the CPU (200 MB of samples): longer than this test
        train_batch_size=8,
        train_workers=1,  # a DataLoader worker: a child of the script that must go too
    )
    only = ["--only", "smoke_train"] if playbook == "prove" else []
    cli = project.start("provision", "--host", "prove", "--playbook", playbook, *only)
    _wait_started(cli, remote_tmp, "smoke_train.py", 3)  # the host's timeout, python, its worker
    return cli, remote_tmp


def _assert_stopped_on_host(remote_tmp: Path) -> None:
    _wait_until(
        f"the script still runs on the host {GONE_WITHIN_S:.0f} s after the session ended",
        lambda: _pids_naming(str(remote_tmp)) == [],
        GONE_WITHIN_S,
    )
    _wait_until("its private temp dir was not removed", lambda: list(remote_tmp.iterdir()) == [], 3)


def _end(cli: subprocess.Popen[str] | None, remote_tmp: Path) -> None:
    """Whatever a test leaves: its local run, and what it started on the host."""
    if cli is not None and cli.poll() is None:
        cli.kill()
        cli.communicate()
    _kill_leftovers(remote_tmp)


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGINT, signal.SIGTERM], ids=lambda s: s.name)
def test_smoke_train_stops_on_the_host_when_the_local_run_ends(
    project: Project, tmp_path: Path, how: signal.Signals
) -> None:
    cli, remote_tmp = (None, tmp_path / "remote tmp")
    try:
        cli, remote_tmp = _start_smoke(project, tmp_path)
        cli.send_signal(how)  # SIGINT: what Ctrl-C sends
        cli.communicate(timeout=30)
        assert cli.returncode != 0
        _assert_stopped_on_host(remote_tmp)
    finally:
        _end(cli, remote_tmp)


def test_smoke_train_on_a_served_session_stops_when_the_local_process_is_killed(
    project: Project, tmp_path: Path
) -> None:
    """A playbook with a step that changes the host after it: the facts' session stays open and
    serves the smoke training's command (run inside that session's shell, not a new one)."""
    book = {
        "name": "train-then-change",
        "steps": [
            {"step": "smoke_train"},
            {"step": "command", "name": "after", "args": {"argv": ["true"]}},
        ],
    }
    playbook = tmp_path / "train-then-change.yml"
    playbook.write_text(yaml.safe_dump(book))
    cli, remote_tmp = (None, tmp_path / "remote tmp")
    try:
        cli, remote_tmp = _start_smoke(project, tmp_path, str(playbook))
        parents = _parents()
        shells = {parents[pid] for pid in _pids_naming(str(remote_tmp), "timeout", shells=False)}
        assert len(shells) == 1
        assert b"@@gpuonboard-serve-" in Path(f"/proc/{shells.pop()}/cmdline").read_bytes()  # served
        cli.kill()
        cli.communicate(timeout=30)
        _assert_stopped_on_host(remote_tmp)
    finally:
        _end(cli, remote_tmp)


def test_smoke_train_stops_when_the_hosts_sshd_drops_the_connection(project: Project, tmp_path: Path) -> None:
    """The link dropping as the host sees it: its per-connection sshd ends (a reset link,
    ClientAliveInterval giving up). The local run says the connection was lost."""
    listener = project.pool.hosts["prove"]._live_pid()
    assert listener is not None
    cli, remote_tmp = (None, tmp_path / "remote tmp")
    try:
        cli, remote_tmp = _start_smoke(project, tmp_path)
        parents = _parents()
        pid = _pids_naming(str(remote_tmp), "smoke_train.py", shells=False)[0]
        while parents.get(pid, 1) not in (listener, 1):  # up to this connection's sshd
            pid = parents[pid]
        assert parents.get(pid) == listener, "no sshd of this connection above the script"
        os.kill(pid, signal.SIGKILL)
        out, err = cli.communicate(timeout=60)
        assert cli.returncode != 0
        assert "the SSH connection was lost while a command was running" in out + err, out + err
        _assert_stopped_on_host(remote_tmp)
    finally:
        _end(cli, remote_tmp)


def test_allreduce_ranks_stop_on_the_host_when_the_local_process_is_killed(
    project: Project, tmp_path: Path
) -> None:
    """torchrun starts each rank in a session of its own: they must go too, not only torchrun."""
    remote_tmp = _setup(
        project,
        tmp_path,
        allreduce_nproc=2,
        allreduce_iters=10_000_000,  # hours: only the timeout would end it
        allreduce_min_size="4KiB",
        allreduce_max_size="4KiB",
        dcgm_level=0,
    )
    cli = project.start("provision", "--host", "prove", "--playbook", "prove", "--only", "allreduce")
    try:
        _wait_started(cli, remote_tmp, "allreduce.py", 5)  # timeout, launcher, torchrun, 2 ranks
        cli.kill()
        cli.communicate(timeout=30)
        _assert_stopped_on_host(remote_tmp)
    finally:
        if cli.poll() is None:
            cli.kill()
            cli.communicate()
        _kill_leftovers(remote_tmp)


@pytest.fixture(scope="module")
def dcgm_host(pool: TestHostPool) -> Iterator[TestHost]:
    """A host of its own whose `dcgmi diag` runs for minutes (as a level 3 / 4 diag does)."""
    (host,) = pool.add_many([("dcgmlong", None)])
    shutil.copy(shutil.which("sleep") or "/bin/sleep", host.bin_dir / "dcgmi-diag-sleep")
    add_executable(host.bin_dir, "dcgmi", f"#!/bin/sh\nexec {host.bin_dir}/dcgmi-diag-sleep 300\n")
    yield host
    host.stop()


def test_dcgm_diag_stops_on_the_host_when_the_local_process_is_killed(
    project: Project, tmp_path: Path, dcgm_host: TestHost
) -> None:
    marker = str(dcgm_host.bin_dir / "dcgmi-diag-sleep")
    entry = host_entry(dcgm_host, project.pool)
    entry["vars"].update({"train_python": sys.executable, "dcgm_level": 3, "remote_tmp": str(tmp_path)})
    project.write_inventory({"dcgmlong": entry})
    cli = project.start("provision", "--host", "dcgmlong", "--playbook", "prove", "--only", "allreduce")
    try:
        _wait_until("dcgmi diag never started on the host", lambda: _pids_naming(marker), 60)
        cli.kill()
        cli.communicate(timeout=30)
        _wait_until(
            f"dcgmi diag still runs on the host {GONE_WITHIN_S:.0f} s after the session ended",
            lambda: not _pids_naming(marker),
            GONE_WITHIN_S,
        )
    finally:
        if cli.poll() is None:
            cli.kill()
            cli.communicate()
        _kill_leftovers(Path(marker))
