"""`invoke autostop --heartbeat` over real SSH writes, with the lease, its moment in seconds since
boot and the boot (lease_up), so that the watcher counts the lease's age on the uptime: a step of
the wall clock (chrony, ntpd, a resumed VM) does not make it run out early. The test host shares
this machine's kernel, so its /proc/uptime and boot id are the ones read here.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from conftest import Project
from test_autostop import cron_daemon, inventory, paths, steps

from gpuonboard.testing import TestHostPool

__all__ = ["cron_daemon", "paths"]  # fixtures, used by name


@pytest.mark.usefixtures("cron_daemon")
def test_each_run_writes_the_leases_uptime_and_boot_and_cancel_removes_it(
    project: Project, pool: TestHostPool, paths: dict[str, Path]
) -> None:
    inventory(project, pool, paths)
    before = int(float(Path("/proc/uptime").read_text().split()[0]))
    r = project.cli("autostop", "--host", "autostop", "--heartbeat", "6h", "--no-billing-aware")
    assert r.returncode == 0, r.stdout + r.stderr
    after = int(float(Path("/proc/uptime").read_text().split()[0]))
    lease = (paths["dir"] / "lease").read_text().split()
    epoch, up, boot = (paths["dir"] / "lease_up").read_text().split()
    assert [epoch] == lease and abs(int(epoch) - time.time()) < 60
    assert before <= int(up) <= after
    assert boot == Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    r = project.cli("autostop", "--host", "autostop", "--status")
    assert r.returncode == 0, r.stdout + r.stderr
    m = re.search(r"heartbeat: lease renewed (\S+Z), expires (\S+Z)", r.stdout)
    assert m, r.stdout
    assert steps(project)[0]["status"] == "ok"
    assert project.cli("autostop", "--host", "autostop", "--cancel").returncode == 0
    assert not paths["dir"].exists()
