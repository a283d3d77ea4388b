"""Integration tests of the test-host harness against real sshd daemons."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpuonboard.testing import ProfileError, TestHost, TestHostPool, process_alive
from gpuonboard.testing.hosts import SSHD, _descendants

pytestmark = pytest.mark.skipif(
    not Path(SSHD).exists() or shutil.which("ssh") is None or os.geteuid() != 0,
    reason="needs root, /usr/sbin/sshd and the OpenSSH client",
)

QX = (
    b'<?xml version="1.0" ?>\n<nvidia_smi_log>\n  <attached_gpus>8</attached_gpus>\n'
    b"  <product_name>A100 'SXM4' & \"80GB\"</product_name>\n</nvidia_smi_log>\n"
)
TOPO = b"\tGPU0\tGPU1\nGPU0\t X \tNV12\nGPU1\tNV12\t X \n"
LSCPU = b"Architecture:  x86_64\nCPU(s):        64\n"
PROFILE = """\
description: Two-GPU test profile written by the test.
replay:
  nvidia-smi:
    - args: "-q -x"
      file: real/nvidia-smi q x.xml
    - args: "topo -m"
      file: real/topo.txt
  lscpu:
    - args: "*"
      file: real/lscpu.txt
absent: []
"""
NO_DRIVER = "description: No driver.\nreplay: {}\nabsent: [nvidia-smi]\n"


def write_profiles(root: Path) -> Path:
    """Fixtures under root/fixtures and profiles under root/profiles; return fixtures root."""
    fixtures = root / "fixtures"
    (fixtures / "real").mkdir(parents=True)
    (fixtures / "real" / "nvidia-smi q x.xml").write_bytes(QX)
    (fixtures / "real" / "topo.txt").write_bytes(TOPO)
    (fixtures / "real" / "lscpu.txt").write_bytes(LSCPU)
    (root / "profiles").mkdir()
    (root / "profiles" / "twogpu.yml").write_text(PROFILE)
    (root / "profiles" / "nodriver.yml").write_text(NO_DRIVER)
    return fixtures


def ssh(
    pool: TestHostPool, host: TestHost, *command: str, known_hosts: Path | None = None
) -> subprocess.CompletedProcess[bytes]:
    """Run a command on a host with the real OpenSSH client and strict host-key checking."""
    if known_hosts is None:
        known_hosts = host.dir.parent / f"{host.name}.known_hosts"
        known_hosts.write_text(host.known_hosts_line() + "\n")
    args = [
        "ssh", "-F", "/dev/null", "-i", str(pool.client_key),
        "-o", f"UserKnownHostsFile={known_hosts}", "-o", "GlobalKnownHostsFile=/dev/null",
        "-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes", "-o", "ConnectTimeout=5",
        "-p", str(host.port), f"root@{host.address}", *command,
    ]  # fmt: skip
    return subprocess.run(args, capture_output=True, timeout=30, check=False)


def refused(address: str, port: int) -> bool:
    try:
        socket.create_connection((address, port), timeout=2).close()
    except ConnectionRefusedError:
        return True
    return False


def is_sleep(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"sleep\0")
    except OSError:
        return False


@pytest.fixture(scope="module")
def pool(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestHostPool]:
    root = tmp_path_factory.mktemp("testhosts")
    fixtures = write_profiles(root)
    with TestHostPool(root / "base", fixtures_root=fixtures, profiles_dir=root / "profiles") as p:
        p.add_many(
            [
                ("gpu1", "twogpu"),
                ("gpu2", root / "profiles" / "twogpu.yml"),
                ("counted", None),
                ("nodriver", "nodriver"),
            ]
        )
        yield p


def test_replays_fixture_bytes(pool: TestHostPool) -> None:
    host = pool.hosts["gpu1"]
    assert host.address.startswith("127.0.") and host.pid and process_alive(host.pid)
    result = ssh(pool, host, "nvidia-smi", "-q", "-x")
    assert result.returncode == 0, result.stderr
    assert result.stdout == QX
    assert ssh(pool, host, "nvidia-smi topo -m").stdout == TOPO
    assert ssh(pool, host, "lscpu", "-J", "--whatever").stdout == LSCPU


def test_unmatched_arguments_exit_2(pool: TestHostPool) -> None:
    result = ssh(pool, pool.hosts["gpu1"], "nvidia-smi", "-L")
    assert result.returncode == 2
    assert result.stdout == b""
    assert result.stderr == b"nvidia-smi: this test host replays no capture for arguments: -L\n"


def test_session_environment(pool: TestHostPool) -> None:
    host = pool.hosts["gpu1"]
    result = ssh(pool, host, 'echo "$HOME|$GPUONBOARD_TESTHOST|$(command -v nvidia-smi)"')
    assert result.stdout.decode() == f"{host.home}|gpu1|{host.bin_dir / 'nvidia-smi'}\n"


def test_absent_command_is_not_found(pool: TestHostPool) -> None:
    result = ssh(pool, pool.hosts["nodriver"], "nvidia-smi")
    assert result.returncode == 127


def test_absent_command_present_on_path_is_refused(pool: TestHostPool, tmp_path: Path) -> None:
    profile = tmp_path / "bad.yml"
    profile.write_text("description: x\nreplay: {}\nabsent: [sh]\n")
    with pytest.raises(ProfileError, match="must be absent"):
        pool.add("bad", profile)
    assert "bad" not in pool.hosts


def test_log_counts_one_connection_one_session(pool: TestHostPool) -> None:
    assert ssh(pool, pool.hosts["counted"], "true").returncode == 0
    expected = {"connections": 1, "logins": 1, "sessions": 1, "sftp": 0, "auth_failures": 0}
    deadline = time.monotonic() + 5
    while pool.log_counts("counted") != expected and time.monotonic() < deadline:
        time.sleep(0.05)
    assert pool.log_counts("counted") == expected


def test_fingerprint_matches_ssh_keygen(pool: TestHostPool) -> None:
    host = pool.hosts["gpu1"]
    out = subprocess.run(
        ["ssh-keygen", "-lf", f"{host.host_key_path}.pub"], capture_output=True, text=True
    ).stdout
    assert out.split()[1] == host.fingerprint
    assert host.known_hosts_line() == f"{host.address} {host.host_key_pub}"


def test_regenerated_host_key_is_refused_by_old_known_hosts(pool: TestHostPool, tmp_path: Path) -> None:
    host = pool.hosts["gpu2"]
    old = tmp_path / "old_known_hosts"
    old.write_text(host.known_hosts_line() + "\n")
    assert ssh(pool, host, "true", known_hosts=old).returncode == 0
    before = host.fingerprint
    host.regenerate_host_key()
    assert host.fingerprint != before and host.fingerprint.startswith("SHA256:")
    result = ssh(pool, host, "true", known_hosts=old)
    assert result.returncode == 255
    assert b"REMOTE HOST IDENTIFICATION HAS CHANGED" in result.stderr
    assert ssh(pool, host, "true").returncode == 0


def test_stop_refuses_connections_and_start_brings_it_back(pool: TestHostPool) -> None:
    host = pool.hosts["gpu2"]
    old_pid = host.pid
    host.stop()
    assert host.pid is None and old_pid is not None and not process_alive(old_pid)
    assert refused(host.address, host.port)
    assert ssh(pool, host, "true").returncode == 255
    host.start()
    assert ssh(pool, host, "nvidia-smi", "-q", "-x").stdout == QX


def test_unreachable_address_refuses(pool: TestHostPool) -> None:
    address, port = pool.unreachable_address()
    assert address not in {h.address for h in pool.hosts.values()}
    assert refused(address, port)


def test_state_reload_and_stop_all_leave_no_process(tmp_path: Path) -> None:
    pool = TestHostPool(tmp_path / "base", subnet=5)
    hosts = pool.add_many([("a", None), ("b", None)])
    session = subprocess.Popen(
        ["ssh", "-F", "/dev/null", "-i", str(pool.client_key), "-o", "BatchMode=yes",
         "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
         "-p", str(hosts[0].port), f"root@{hosts[0].address}", "sleep 60"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    listeners = {h.pid for h in hosts if h.pid}
    deadline = time.monotonic() + 5
    while not any(map(is_sleep, _descendants(listeners))) and time.monotonic() < deadline:
        time.sleep(0.05)
    children = _descendants(listeners)  # the connection's sshd and the session's `sleep`
    assert len(listeners) == 2 and any(map(is_sleep, children))

    loaded = TestHostPool.load_state(tmp_path / "base")  # as `invoke sim.down` would
    assert {h.name: h.pid for h in loaded.hosts.values()} == {h.name: h.pid for h in hosts}
    loaded.stop_all()
    assert not [pid for pid in listeners | children if process_alive(pid)]
    assert session.wait(timeout=10) != 0
    assert all(refused(h.address, h.port) for h in hosts)


def test_ports_fallback_mode(tmp_path: Path) -> None:
    with TestHostPool(tmp_path / "base", mode="ports") as pool:
        host = pool.add("p1")
        assert host.address == "127.0.0.1" and host.port != 22
        assert host.known_hosts_line().startswith(f"[127.0.0.1]:{host.port} ssh-ed25519 ")
        result = ssh(pool, host, "echo $GPUONBOARD_TESTHOST")
        assert result.stdout == b"p1\n", result.stderr
        pid = host.pid
    assert pid is not None and not process_alive(pid)
