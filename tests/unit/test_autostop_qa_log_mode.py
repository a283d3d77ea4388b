"""The watcher's log holds the before_shutdown command (which may carry a token: the config is
0600 for that reason) and its output. cron's shell creates the log through the entry's
`>>autostop.log` with cron's umask, 022: before, the log was 0644, readable by every user of
the box where the directory is not private (a chosen autostop_dir such as /data keeps its
mode). The real cron entry's command runs with /bin/sh under umask 022; the shutdown command
only creates a marker file (never a power-off).
"""

from __future__ import annotations

import stat
import subprocess
from pathlib import Path

from gpuonboard.steps.autostop import cron_file_text

from .test_autostop_script import T0, Box

TOKEN = "s3cr3t-token-1234"  # a made-up credential in the before_shutdown command


def cron_tick(box: Box, now: int) -> None:
    """cron's own command line for this watcher, as cron runs it (umask 022)."""
    line = cron_file_text(str(box.dir)).splitlines()[1]
    command = line.split(None, 6)[6]
    subprocess.run(["/bin/sh", "-c", f"umask 022; {command}"], env=box.env(now), check=True, timeout=30)


def test_the_log_with_the_before_shutdown_command_is_private(tmp_path: Path) -> None:
    before = f"echo uploading with --token={TOKEN}"
    box = Box(tmp_path, idle="1m", grace="1m", before_shutdown=before)
    box.dir.chmod(0o755)  # a chosen autostop_dir keeps its mode
    for m in range(4):
        cron_tick(box, T0 + 60 * m)
    assert box.marker.exists()
    log = box.dir / "autostop.log"
    assert TOKEN in log.read_text()  # (the log says what ran)
    assert stat.S_IMODE(log.stat().st_mode) == 0o600


def test_a_rotated_log_stays_private(tmp_path: Path) -> None:
    box = Box(tmp_path, idle="30m")
    box.dir.chmod(0o755)
    log = box.dir / "autostop.log"
    log.write_text(f"run before_shutdown: curl --token={TOKEN}\n" + "x" * 1048577)
    log.chmod(0o644)  # as cron's shell created it before
    cron_tick(box, T0)
    rotated = box.dir / "autostop.log.1"
    assert TOKEN in rotated.read_text()
    assert stat.S_IMODE(rotated.stat().st_mode) == 0o600
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
