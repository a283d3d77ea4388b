"""`invoke autostop` over real SSH with a token in `--before-shutdown` and in the shutdown
command (a checkpoint upload's bearer token, a vendor stop API's key): the token never reaches
`--status`, the watcher's log, the step's messages, the run's log or the reports, nor a process's
arguments on the host (`ps`); each command is shown masked (masking.command_shown) with a digest.
Never a real power-off: the shutdown command only touches a marker in a temp dir.
"""

from __future__ import annotations

import secrets
import subprocess
import time
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
    project: Project, pool: TestHostPool, paths: dict[str, Path], tmp_path: Path
) -> None:
    """The watcher runs the REAL commands with their tokens (a short idle: before_shutdown writes
    its token to a file and prints a line that reaches the log, the shutdown command writes its
    key into the marker), while status, the log, the messages and the reports show them masked:
    a watcher that stopped running the real commands (or ran the masked text) fails here."""
    before_token, stop_token = "tok-" + secrets.token_hex(8), "key-" + secrets.token_hex(8)
    upload = tmp_path / "upload.out"
    before = f"printf '%s\\n' 'Authorization: Bearer {before_token}' > {upload}; echo before-ran-ok"
    # (the shutdown command writes its key into the marker: the box is "shut down")
    stop = f"STOP_KEY={stop_token} sh -c 'printf %s \"$STOP_KEY\" > {paths['marker']}'"
    entry = host_entry(pool.hosts["autostop"], pool)
    entry["vars"].update(
        {"autostop_dir": str(paths["dir"]), "cron_dir": str(paths["cron"]), "autostop_shutdown_command": stop}
    )
    project.write_inventory({"autostop": entry})
    args = ["autostop", "--host", "autostop", "--idle", "1m", "--grace", "0", "--no-billing-aware"]
    with argv_watch(before_token, stop_token) as seen:
        r = project.cli(*args, "--before-shutdown", before)
        assert r.returncode == 0, r.stdout + r.stderr
        tick = ["sh", str(paths["dir"] / "autostop.sh"), "tick"]
        now = int(time.time())
        env = {"PATH": "/usr/bin:/bin", "GPUONBOARD_NOW": str(now), "GPUONBOARD_BOOT_ID": "b1"}
        subprocess.run(tick, check=True, timeout=60, capture_output=True, env=env)  # idle timer starts
        env["GPUONBOARD_NOW"] = str(now + 120)
        subprocess.run(tick, check=True, timeout=60, capture_output=True, env=env)  # acts
        status = project.cli("autostop", "--host", "autostop", "--status")
    assert [s for s in seen if "from gpuonboard.cli import main" not in s] == [], seen
    # the real commands ran, with their tokens
    assert upload.read_text() == f"Authorization: Bearer {before_token}\n"
    assert paths["marker"].read_text() == stop_token
    out = status.stdout + status.stderr
    log = (paths["dir"] / "autostop.log").read_text()
    assert "before-ran-ok" in log and "before-ran-ok" in out, out  # (before_shutdown's output)
    written = _everything_written(project)
    for token in (before_token, stop_token):
        assert token not in out, out
        assert token not in r.stdout + r.stderr
        assert token not in log, log
        assert token not in written
    assert f"before_shutdown: printf ******** ******** > {upload}; echo before-ran-ok [sha256:" in out, out
    assert "shutdown command: STOP_KEY=******** sh -c 'printf ******** $STOP_KEY > " in out, out


@pytest.mark.usefixtures("cron_daemon")
def test_lower_case_passwords_given_bare_never_reach_status_the_log_or_the_reports(
    project: Project, pool: TestHostPool, paths: dict[str, Path], tmp_path: Path
) -> None:
    """Review safety32: passwords of plain lower-case letters (which the rule shows as names)
    given bare in the real shapes a before-shutdown command takes: echoed into another
    command's stdin, put in text by printf's format, an env assignment a traced shell prints
    back. The watcher runs them for real, and each command's own output repeats its password
    into the log: the log on the host's disk holds none of them (scrubbed as written; before, it
    kept them in clear and only `--status` hid the words the rule listed), nor do `--status`,
    the messages or the reports."""
    pws = [
        f"{w}{secrets.choice(['alpha', 'bravo', 'delta'])}"
        for w in ("hunter", "sesame", "swordfish", "letmein")
    ]
    before = (
        f"echo {pws[0]} | cat; printf 'Authorization: Bearer %s\\n' {pws[1]}; "
        f"TOKEN={pws[2]} sh -c 'echo token=$TOKEN'; sh -xc 'PASSWORD={pws[3]} true'; echo before-ran-ok"
    )
    stop = f"sh -c 'touch {paths['marker']}'"
    entry = host_entry(pool.hosts["autostop"], pool)
    entry["vars"].update(
        {"autostop_dir": str(paths["dir"]), "cron_dir": str(paths["cron"]), "autostop_shutdown_command": stop}
    )
    project.write_inventory({"autostop": entry})
    args = ["autostop", "--host", "autostop", "--idle", "1m", "--grace", "0", "--no-billing-aware"]
    r = project.cli(*args, "--before-shutdown", before)
    assert r.returncode == 0, r.stdout + r.stderr
    tick = ["sh", str(paths["dir"] / "autostop.sh"), "tick"]
    now = int(time.time())
    env = {"PATH": "/usr/bin:/bin", "GPUONBOARD_NOW": str(now), "GPUONBOARD_BOOT_ID": "b1"}
    subprocess.run(tick, check=True, timeout=60, capture_output=True, env=env)  # idle timer starts
    env["GPUONBOARD_NOW"] = str(now + 120)
    subprocess.run(tick, check=True, timeout=60, capture_output=True, env=env)  # acts
    status = project.cli("autostop", "--host", "autostop", "--status")
    assert paths["marker"].exists()  # (the real commands ran: before_shutdown succeeded)
    out = status.stdout + status.stderr
    log = (paths["dir"] / "autostop.log").read_text()
    assert "before-ran-ok" in log and "before-ran-ok" in out, log
    assert "token=********" in log and "Bearer ********" in log, log  # (their output, masked)
    written = _everything_written(project)
    for pw in pws:
        assert pw not in out, out
        assert pw not in r.stdout + r.stderr
        assert pw not in log, log
        assert pw not in written
