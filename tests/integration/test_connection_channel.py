"""Over real SSH: the step after the fact probe runs in the probe's own SSH session."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import yaml
from conftest import Project, host_entry

from gpuonboard.testing import TestHostPool


def _book(project: Project, steps: list[dict[str, object]]) -> Path:
    pb = project.root / "serve.yml"
    pb.write_text(yaml.safe_dump({"name": "serve", "steps": steps}))
    return pb


def test_a_changed_file_costs_no_second_session(project: Project, pool: TestHostPool, tmp_path: Path) -> None:
    h = pool.hosts["good"]
    project.write_inventory({"good": host_entry(h, pool)})
    dest = tmp_path / "served" / "acceptance.env"
    pb = _book(
        project,
        [
            {
                "step": "template",
                "name": "file",
                "args": {"src": "remote/acceptance.env.j2", "dest": str(dest), "mode": "0640"},
            }
        ],
    )
    before = pool.log_counts("good")
    r = project.cli("provision", "--playbook", str(pb))
    assert r.returncode == 0, r.stdout + r.stderr
    assert [s["status"] for s in project.summary()["hosts"][0]["steps"]] == ["changed"]
    assert "DELIVERED_GPU_COUNT=8" in dest.read_text()
    assert oct(dest.stat().st_mode & 0o777) == "0o640"
    mid = pool.log_counts("good")
    # probe and write: one connection, one session
    assert (mid["connections"] - before["connections"], mid["sessions"] - before["sessions"]) == (1, 1)
    mtime = dest.stat().st_mtime_ns
    assert project.cli("provision", "--playbook", str(pb)).returncode == 0
    assert [s["status"] for s in project.summary()["hosts"][0]["steps"]] == ["ok"]
    assert dest.stat().st_mtime_ns == mtime
    after = pool.log_counts("good")
    assert (after["connections"] - mid["connections"], after["sessions"] - mid["sessions"]) == (1, 1)
    assert not [p for p in dest.parent.iterdir() if p.name.startswith(".gpuonboard")]


def test_served_command_exit_codes_and_later_steps(
    project: Project, pool: TestHostPool, tmp_path: Path
) -> None:
    h = pool.hosts["good"]
    project.write_inventory({"good": host_entry(h, pool)})
    ran = tmp_path / "ran"
    pb = _book(
        project,
        [
            # served in the probe's session: a failing command is a failed step, exit code kept
            {"step": "command", "name": "fails", "args": {"argv": ["sh", "-c", "echo oops >&2; exit 5"]}},
            {"step": "command", "name": "after", "args": {"argv": ["touch", str(ran)]}},
        ],
    )
    r = project.cli("provision", "--playbook", str(pb))
    assert r.returncode == 1
    steps = project.summary()["hosts"][0]["steps"]
    assert [s["status"] for s in steps] == ["failed", "skipped"]
    assert steps[0]["msg"] == "command sh -c 'echo oops >&2; exit 5' exited 5: oops"
    assert not ran.exists()
    pb = _book(
        project,
        [
            {"step": "command", "name": "one", "args": {"argv": ["sh", "-c", f"echo 1 >> {ran}"]}},
            {"step": "command", "name": "two", "args": {"argv": ["sh", "-c", f"echo 2 >> {ran}"]}},
        ],
    )
    assert project.cli("provision", "--playbook", str(pb)).returncode == 0
    assert ran.read_text() == "1\n2\n"


def test_key_exchange_is_p256_with_an_openssh_host(
    pool: TestHostPool, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """connection.kex_order: a real sshd (which offers curve25519 too) agrees on P-256."""
    caplog.set_level(logging.DEBUG, logger="paramiko.transport")
    from gpuonboard.connection import ConnectOptions, KnownHosts, open_runner
    from gpuonboard.inventory import Host

    h = pool.hosts["good"]
    host = Host(
        name="good",
        address=h.address,
        port=h.port,
        user="root",
        key_file=str(pool.client_key),
        host_key=h.fingerprint,
    )
    runner = open_runner(host, ConnectOptions(known_hosts=tmp_path / "kh"), KnownHosts(tmp_path / "kh"))
    try:
        assert runner.run("echo ok").stdout.strip() == "ok"
        agreed = [r.getMessage() for r in caplog.records if r.getMessage().startswith("Kex: ")]
        assert agreed == ["Kex: ecdh-sha2-nistp256"], agreed
    finally:
        runner.close()
