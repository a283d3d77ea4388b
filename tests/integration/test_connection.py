"""A connection that drops mid-command (sshd killed under a running step) is `unreachable`
(exit 3) with a sentence that says so, not a command the server "refused" (failed, exit 1);
the rerun with --resume continues at that step."""

from __future__ import annotations

import itertools
import signal
import threading
import time
from pathlib import Path

import fabric
import pytest
from conftest import LongJob, Project, host_entry, ssh_runner, wait_for

from gpuonboard import shell
from gpuonboard.connection import ConnectOptions, KnownHosts, SSHRunner, connect_timeout, open_runner
from gpuonboard.errors import ConnectError, ConnectionLost, ExitCode, HostKeyError
from gpuonboard.inventory import Host, Inventory
from gpuonboard.testing import TestHost, TestHostPool
from gpuonboard.testing.hosts import _descendants, _signal_all

_HOST_NUMBERS = itertools.count(1)


@pytest.fixture
def drop_host(pool: TestHostPool) -> TestHost:
    """A test host of its own for each test: the test kills its sshd."""
    return pool.add(f"h5drop-{next(_HOST_NUMBERS)}")


@pytest.mark.parametrize(
    ("script", "prefetch", "on_output"),
    [
        ("touch {m}; sleep 30", False, False),
        ("echo started; touch {m}; sleep 30", False, True),  # output came before the drop
        ("touch {m}; sleep 30", True, False),  # a served session (another command follows)
    ],
    ids=["plain", "partial-output", "served"],
)
def test_a_dropped_connection_is_lost_not_refused(
    drop_host: TestHost, pool: TestHostPool, tmp_path: Path, script: str, prefetch: bool, on_output: bool
) -> None:
    runner = ssh_runner(drop_host, pool, tmp_path)
    # a command killed by a signal gets no exit status, only sshd's exit-signal, and the
    # connection lives on: the status a shell would give it (128 + 9), and the next command runs
    killed = runner.run(shell.sh_c("echo before; kill -9 $$"))
    assert (killed.exit_code, killed.stdout) == (137, "before\n")
    assert runner.run(shell.sh_c("kill -TERM $$")).exit_code == 143
    assert runner.run(shell.sh_c("echo alive")).stdout == "alive\n"
    started = tmp_path / "started"

    def kill_sshd_once_started() -> None:
        wait_for(started)
        drop_host.stop()  # only this host's sshd (checked by its pid file and config) and sessions

    threading.Thread(target=kill_sshd_once_started, daemon=True).start()
    t0 = time.monotonic()
    with pytest.raises(ConnectionLost) as info:
        runner.run(
            shell.sh_c(script.format(m=shell.quote(str(started)))),
            prefetch=prefetch,
            on_output=(lambda chunk: None) if on_output else None,
        )
    assert time.monotonic() - t0 < 15
    assert info.value.exit_code == ExitCode.UNREACHABLE
    assert str(info.value).startswith(
        f"host {drop_host.name}: the SSH connection was lost while a command was running ("
    )
    assert "the host is unreachable now" in str(info.value) and "--resume" in str(info.value)
    # the next command on the dead connection says the same, not "the server refused"
    with pytest.raises(ConnectionLost):
        runner.run(shell.sh_c("true"))
    runner.close()


def test_sshd_killed_during_a_step_is_unreachable_and_resumable(
    project: Project, pool: TestHostPool, drop_host: TestHost, tmp_path: Path
) -> None:
    job = LongJob.write(project, tmp_path)
    project.write_inventory({"drop": host_entry(drop_host, pool)})
    proc = project.start("provision", "--playbook", str(job.playbook))
    try:
        wait_for(job.started)
        drop_host.stop()  # this host's sshd listener and its session child, by pid
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == ExitCode.UNREACHABLE, out + err
    assert "Traceback" not in out + err and "refused to run a command" not in out + err
    host = project.summary()["hosts"][0]
    assert host["status"] == "unreachable"
    assert host["msg"].startswith("step long-job: ") and (
        "the SSH connection was lost while a command was running" in host["msg"]
    ), host["msg"]
    assert job.ran.read_text() == "first\n"
    # the box is back: --resume continues at the step the connection was lost in
    drop_host.start()
    job.assert_resumes(project)


# The host's one login is a fabric.Connection (issue 28): Fabric's own API works on it, a jump
# chain is Fabric's `gateway`, and host keys are still judged by our policy alone (Fabric's
# default, AutoAddPolicy, would log in to a host whose key nobody vouched for).


def _host(pool: TestHostPool, name: str, **extra: object) -> Host:
    th = pool.hosts[name]
    fields: dict[str, object] = {"key_file": str(pool.client_key), "host_key": th.fingerprint, **extra}
    return Host(name=name, address=th.address, port=th.port, **fields)  # type: ignore[arg-type]


def test_the_runner_hands_out_its_open_fabric_connection(pool: TestHostPool, tmp_path: Path) -> None:
    known = tmp_path / "known_hosts"
    runner = open_runner(_host(pool, "good"), ConnectOptions(known_hosts=known), KnownHosts(known))
    assert isinstance(runner, SSHRunner)
    try:
        conn = runner.connection
        assert isinstance(conn, fabric.Connection)
        assert conn.is_connected and conn.transport is runner.transport
        assert conn.run("echo via-fabric", hide=True, in_stream=False).stdout == "via-fabric\n"
        assert runner.run("echo via-runner").stdout == "via-runner\n"  # the same login, still ours
    finally:
        runner.close()
    assert not conn.is_connected


def test_a_jump_chain_is_fabrics_gateway(pool: TestHostPool, tmp_path: Path) -> None:
    known = tmp_path / "known_hosts"
    bastion = _host(pool, "bastion1", connect_timeout=7)
    target = _host(pool, "behind", jump=("bastion1",), connect_timeout=3)
    inventory = Inventory(
        source=tmp_path, hosts={"bastion1": bastion, "behind": target}, groups={}, vendors={}
    )
    runner = open_runner(target, ConnectOptions(known_hosts=known), KnownHosts(known), inventory)
    assert isinstance(runner, SSHRunner)
    try:
        gateway = runner.connection.gateway
        assert isinstance(gateway, fabric.Connection) and gateway.is_connected
        assert (gateway.host, gateway.port) == (bastion.address, bastion.port)
        # the bastion's forward to the next hop waits that hop's connect timeout, not an hour
        assert gateway.transport.channel_timeout == connect_timeout(target) == 3
        assert runner.run("echo behind").stdout == "behind\n"
    finally:
        runner.close()
    assert not gateway.is_connected


def test_an_unknown_key_is_refused_not_added_as_fabric_would(pool: TestHostPool, tmp_path: Path) -> None:
    known = tmp_path / "known_hosts"
    host = _host(pool, "good", host_key=None)
    with pytest.raises(HostKeyError, match="has an unknown host key"):
        open_runner(host, ConnectOptions(known_hosts=known), KnownHosts(known))
    assert not known.exists()


def test_a_login_bashs_functions_reach_a_wrapped_command_over_real_sshd(
    pool: TestHostPool, tmp_path: Path
) -> None:
    """A function an unguarded ~/.bashrc defines (conda's, Lmod's `module`) reaches a command that
    needs the login shell wrapper, as it reaches one of plain words and as before the wrapper: a
    command step's `module load 'cuda 12'` ran. The wrapped command's bash reads ~/.bashrc a second
    time (sshd's bash read it for the wrapper): its noise twice, its exports once in PATH."""
    th = pool.add(f"rcfile-{next(_HOST_NUMBERS)}")
    (th.home / "cuda" / "bin").mkdir(parents=True)
    (th.home / ".bashrc").write_text(
        'echo sourced >> "$HOME/count"\necho "NOISE $SHLVL"\n'
        'case ":$PATH:" in *":$HOME/cuda/bin:"*) ;; *) export PATH="$HOME/cuda/bin:$PATH";; esac\n'
        'module() { echo "module $*"; }\n'
    )
    runner = ssh_runner(th, pool, tmp_path)
    try:
        wrapped = runner.run("module load 'cuda 12'; echo \"$PATH\" | tr : '\\n' | grep -c cuda")
        plain = runner.run("module load cuda")
    finally:
        runner.close()
    assert wrapped.stdout == "NOISE 1\nNOISE 1\nmodule load cuda 12\n1\n", wrapped.stderr
    assert plain.stdout == "NOISE 1\nmodule load cuda\n"
    assert (th.home / "count").read_text() == "sourced\n" * 3  # (twice wrapped, once plain)


def test_a_command_on_a_connection_that_answers_no_channel_open_fails_in_its_timeout(
    pool: TestHostPool, tmp_path: Path
) -> None:
    """A connection that answers no channel open (here: the host's per-connection sshd stopped;
    in a run, paramiko's reader wedged by a lock a SIGTERM left held while a channel was polled)
    made a command wait paramiko's hour for its channel: the dataset upload's cleanup, giving the
    lease back with a 15 s timeout, hung a `sync` stopped by SIGTERM. Its timeout bounds it now."""
    th = pool.add(f"frozen-{next(_HOST_NUMBERS)}")
    runner = ssh_runner(th, pool, tmp_path)
    daemon = th.pid if th.pid is not None else int(th.pid_path.read_text())
    frozen = _descendants({daemon})  # (the connection's sshd processes, which this test started)
    assert frozen
    try:
        assert runner.run("true", timeout=5).exit_code == 0
        _signal_all(frozen, signal.SIGSTOP)
        start = time.monotonic()
        with pytest.raises(ConnectError, match="Timeout opening channel"):
            runner.run("true", timeout=2)
        assert time.monotonic() - start < 15
    finally:
        _signal_all(frozen, signal.SIGCONT)
        runner.close()
