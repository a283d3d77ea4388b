"""`invoke autostop` over real SSH writes its config (which holds --before-shutdown's command, a
token in it perhaps: the file is 0600 for it) through sh's stdin: the command never stands in a
process's arguments on the host, where every user sees it (`ps`), nor in the run's log."""

from __future__ import annotations

import secrets
from pathlib import Path

from conftest import Project, argv_watch
from test_autostop import cron_daemon, inventory, paths, steps

from gpuonboard.testing import TestHostPool

__all__ = ["cron_daemon", "paths"]  # the fixtures, used by name


def test_the_before_shutdown_command_is_never_a_process_argument_or_logged(
    project: Project, pool: TestHostPool, paths: dict[str, Path], cron_daemon: None
) -> None:
    inventory(project, pool, paths)
    token = "tok-" + secrets.token_hex(8)
    before = f"curl -fsS -H 'Authorization: Bearer {token}' https://hooks.invalid/ckpt"
    with argv_watch("autostop.conf", token) as seen:  # (the test hosts' processes are this machine's)
        r = project.cli("autostop", "--host", "autostop", "--idle", "30m", "--before-shutdown", before)
    assert r.returncode == 0, r.stdout + r.stderr
    assert steps(project)[0]["status"] == "changed"
    conf = paths["dir"] / "autostop.conf"
    assert token in conf.read_text()  # it was installed ...
    assert oct(conf.stat().st_mode & 0o777) == "0o600"
    # ... but never through a command line on the host (the local CLI's own argv holds it: the
    # user typed it there)
    assert [s for s in seen if token in s and "from gpuonboard.cli import main" not in s] == [], seen
    log = (project.root / ".gpuonboard" / "logs" / f"{project.summary()['run_id']}.log").read_text()
    assert token not in log
