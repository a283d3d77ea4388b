"""`invoke autostop --gpu-processes` over real SSH: the flag reaches the installed config, the
watcher on the host then counts a process holding a GPU as busy (nvidia-smi on the test host
replays REAL captured outputs: see tests/fixtures/compute-apps/SOURCES.md), and `--status` says
which signal kept the box busy. Never a real power-off: the shutdown command is a marker.
"""

from __future__ import annotations

import csv
import io
import subprocess
import time
from pathlib import Path

import pytest
from conftest import Project
from test_autostop import cron_daemon, inventory, paths, replay_nvidia_smi, steps

from gpuonboard.testing import TestHostPool

__all__ = ["cron_daemon", "paths"]  # fixtures, used by name

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
IDLE_UTIL = FIXTURES / "real" / "nvidia-smi-query-gpu__h100-80gb-hbm3__1gpu__driver590.48.01__idle.csv"
THREE_PROCESSES = (
    FIXTURES / "compute-apps" / "nvidia-smi-query-compute-apps__h200-mig__1gpu__driver590.48.01__load.csv"
)


def pid_column(capture: Path) -> str:
    """`--query-compute-apps=pid --format=csv,noheader` on the captured box: the real capture's
    `pid` column (picked by its header name), one value a line, no header."""
    header, *rows = list(csv.reader(io.StringIO(capture.read_text()), skipinitialspace=True))
    col = [h.strip() for h in header].index("pid")
    return "".join(f"{row[col].strip()}\n" for row in rows)


def install_replay(bin_dir: Path, files: Path) -> Path:
    """nvidia-smi on the test host: an idle H100's 0 % utilisation, an H200's three processes."""
    return replay_nvidia_smi(bin_dir, files, IDLE_UTIL, pid_column(THREE_PROCESSES))


@pytest.mark.usefixtures("cron_daemon")
def test_gpu_processes_flag_reaches_the_host_and_status_names_the_process(
    project: Project, pool: TestHostPool, paths: dict[str, Path], tmp_path: Path
) -> None:
    inventory(project, pool, paths)
    host = pool.hosts["autostop"]
    conf = paths["dir"] / "autostop.conf"
    args = ["autostop", "--host", "autostop", "--idle", "30m", "--no-billing-aware"]
    tool = install_replay(host.bin_dir, tmp_path / "replay")
    try:
        r = project.cli(*args, "--gpu-processes")
        assert r.returncode == 0, r.stdout + r.stderr
        assert steps(project)[0]["status"] == "changed"
        assert "GPU_PROCESSES=1\n" in conf.read_text()

        # the same flags again: up to date (one cron entry, nothing rewritten)
        r = project.cli(*args, "--gpu-processes")
        assert r.returncode == 0 and steps(project)[0]["status"] == "ok", r.stdout

        # a tick on the host, with the host's PATH (the replayed nvidia-smi first): busy
        env = {"PATH": f"{host.bin_dir}:/usr/bin:/bin", "GPUONBOARD_NOW": str(int(time.time()))}
        subprocess.run(["sh", str(paths["dir"] / "autostop.sh"), "tick"], check=True, timeout=30, env=env)
        log = (paths["dir"] / "autostop.log").read_text()
        assert "busy: GPU process 12249 holds GPU memory (and 2 more); idle timer reset" in log

        r = project.cli("autostop", "--host", "autostop", "--status")
        assert r.returncode == 0, r.stdout + r.stderr
        assert "watching: GPU utilisation > 5%; GPU processes (any process holding GPU memory)" in r.stdout
        assert (
            "idle since: - (busy at the last check: GPU process 12249 holds GPU memory (and 2 more))"
            in r.stdout
        )

        # a rerun without the flag turns the signal off again (the default)
        r = project.cli(*args)
        assert r.returncode == 0, r.stdout + r.stderr
        assert steps(project)[0]["msg"].startswith("update the autostop watcher (autostop.conf)")
        assert "GPU_PROCESSES=0\n" in conf.read_text()
        r = project.cli("autostop", "--host", "autostop", "--status")
        assert "GPU processes" not in r.stdout.split("watching: ", 1)[1].splitlines()[0]
    finally:
        tool.unlink()
        project.cli("autostop", "--host", "autostop", "--cancel")
    assert not paths["dir"].exists() and not paths["marker"].exists()
