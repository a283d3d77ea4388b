"""A test host stops, by pid, only its own sshd: a stale pid file whose pid now belongs to the
sshd of another pool whose config path CONTAINS this host's (a base nested inside another) is
not this host's. The check was a substring match of the config path in the command line, so
TestHost.stop and TestHostPool.stop_all killed the other pool's daemon. Two real sshd test
hosts."""

from __future__ import annotations

import os
from pathlib import Path

from gpuonboard.testing import TestHostPool, process_alive
from gpuonboard.testing.hosts import sshd_of


def test_a_stale_pid_of_a_nested_bases_sshd_is_not_stopped(tmp_path: Path) -> None:
    ours_base = tmp_path / "a"
    # the other pool's host config path holds ours: .../b/<tmp_path>/a/h1/sshd_config
    other_base = tmp_path / "b" / str(ours_base).lstrip("/")
    subnet = 20 + (os.getpid() + 97) % 200
    with TestHostPool(other_base, subnet=subnet) as other, TestHostPool(ours_base, subnet=subnet) as ours:
        theirs = other.add("h1")
        mine = ours.add("h1")
        assert str(mine.config_path) in str(theirs.config_path)  # (the nesting this is about)
        their_pid = theirs.pid
        assert their_pid is not None and sshd_of(their_pid, theirs.config_path)
        assert not sshd_of(their_pid, mine.config_path)
        mine.stop()
        assert not mine.is_running()

        # our h1's pid file, stale: its pid is now the other pool's sshd
        mine.pid_path.write_text(f"{their_pid}\n")
        mine.stop()
        assert process_alive(their_pid), "TestHost.stop stopped another pool's sshd"
        mine.pid_path.write_text(f"{their_pid}\n")
        assert not mine.is_running()
        mine.pid_path.write_text(f"{their_pid}\n")
        ours.stop_all()
        assert process_alive(their_pid), "TestHostPool.stop_all stopped another pool's sshd"
        assert theirs.is_running()
    assert not process_alive(their_pid)
