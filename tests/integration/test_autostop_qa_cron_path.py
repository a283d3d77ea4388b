"""`invoke autostop` over real SSH on a test host whose nvidia-smi (the replay toolbox, REAL
captured utilisation of an H200 under load: 100 %) lies on the login's PATH but not on cron's:
the installed cron entry, run with cron's environment (PATH=/usr/bin:/bin), must still see the
busy GPU. Before, it found no nvidia-smi, judged the box idle, and shut it down 35 minutes into
a training run. Never a real power-off: the shutdown command is a marker.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from conftest import Project
from test_autostop import cron_d_entries, cron_daemon, inventory, paths, replay_nvidia_smi, steps

from gpuonboard.testing import TestHostPool

__all__ = ["cron_daemon", "paths"]  # fixtures, used by name

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
LOAD_UTIL = FIXTURES / "real" / "nvidia-smi-query-gpu__h200__1gpu__driver590.48.01__load.csv"


@pytest.mark.usefixtures("cron_daemon")
def test_the_cron_entry_sees_a_busy_gpu_the_login_found_outside_crons_path(
    project: Project, pool: TestHostPool, paths: dict[str, Path], tmp_path: Path
) -> None:
    inventory(project, pool, paths)
    host = pool.hosts["autostop"]
    tool = replay_nvidia_smi(host.bin_dir, tmp_path / "replay", LOAD_UTIL)
    try:
        r = project.cli("autostop", "--host", "autostop", "--idle", "30m", "--no-billing-aware")
        assert r.returncode == 0, r.stdout + r.stderr
        assert steps(project)[0]["status"] == "changed"

        # cron's own command, in cron's environment
        [entry] = cron_d_entries((paths["cron"] / "gpuonboard-autostop").read_text())
        env = {"PATH": "/usr/bin:/bin", "HOME": "/root", "SHELL": "/bin/sh", "LOGNAME": "root"}
        subprocess.run(["/bin/sh", "-c", entry[6]], check=True, timeout=30, env=env)
        log = (paths["dir"] / "autostop.log").read_text()
        assert "busy: GPU 0 utilisation 100% > 5%; idle timer reset" in log, log
        assert f"NVIDIA_SMI={tool}\n" in (paths["dir"] / "autostop.conf").read_text()

        # the same flags again: up to date (the recorded path is stable)
        r = project.cli("autostop", "--host", "autostop", "--idle", "30m", "--no-billing-aware")
        assert r.returncode == 0 and steps(project)[0]["status"] == "ok", r.stdout
    finally:
        tool.unlink()
        project.cli("autostop", "--host", "autostop", "--cancel")
    assert not paths["dir"].exists() and not paths["marker"].exists()
