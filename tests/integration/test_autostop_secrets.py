"""`invoke autostop` over real SSH with a token in `--before-shutdown` and in the shutdown
command (a checkpoint upload's bearer token, a vendor stop API's key): the token never reaches
`--status`, the watcher's log, the step's messages, the run's log or the reports, nor a process's
arguments on the host (`ps`); each command is shown masked (masking.command_shown) with a digest.
Never a real power-off: the shutdown command only touches a marker in a temp dir.
"""

from __future__ import annotations

import secrets
import subprocess
from pathlib import Path

import pytest
from conftest import Project, argv_watch, host_entry
from test_autostop import cron_daemon, paths

from gpuonboard.testing import TestHostPool

__all__ = ["cron_daemon", "paths"]  # the fixtures, used by name


def _everything_written(project: Project) -> str:
    """The text of every file the runs wrote locally (reports, logs, journal)."""
    texts = []
    for p in sorted(project.root.rglob("*")):
        if p.is_file() and ("reports" in p.parts or ".gpuonboard" in p.parts):
            texts.append(p.read_text(errors="replace"))
    return "\n".join(texts)


@pytest.mark.usefixtures("cron_daemon")
def test_a_token_in_the_commands_never_reaches_status_the_log_or_the_reports(
    project: Project, pool: TestHostPool, paths: dict[str, Path]
) -> None:
    before_token, stop_token = "tok-" + secrets.token_hex(8), "key-" + secrets.token_hex(8)
    before = f"curl -fsS -H 'Authorization: Bearer {before_token}' https://hooks.invalid/ckpt || true"
    # (the shutdown command touches the marker: the box is "shut down"; its key goes nowhere)
    stop = f"STOP_KEY={stop_token} touch {paths['marker']}"
    entry = host_entry(pool.hosts["autostop"], pool)
    entry["vars"].update(
        {"autostop_dir": str(paths["dir"]), "cron_dir": str(paths["cron"]), "autostop_shutdown_command": stop}
    )
    project.write_inventory({"autostop": entry})
    args = ["autostop", "--host", "autostop", "--idle", "30m", "--no-billing-aware"]
    with argv_watch(before_token, stop_token) as seen:
        r = project.cli(*args, "--before-shutdown", before)
        assert r.returncode == 0, r.stdout + r.stderr
        tick = ["sh", str(paths["dir"] / "autostop.sh"), "tick"]
        subprocess.run(tick, check=True, timeout=60, capture_output=True)
        status = project.cli("autostop", "--host", "autostop", "--status")
    assert [s for s in seen if "from gpuonboard.cli import main" not in s] == [], seen
    out = status.stdout + status.stderr
    log = (paths["dir"] / "autostop.log").read_text()
    written = _everything_written(project)
    for token in (before_token, stop_token):
        assert token not in out, out
        assert token not in r.stdout + r.stderr
        assert token not in log, log
        assert token not in written
    assert "before_shutdown: curl -fsS -H ******** ******** ******** true [sha256:" in out
    assert f"shutdown command: STOP_KEY=******** touch {paths['marker']} [sha256:" in out
