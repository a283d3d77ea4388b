"""What `--before-shutdown` prints is in the watcher's log, scrubbed, when the shutdown command
runs, also where a child it started holds its output open (a daemon, an uploader's helper): the
scrub reads it line by line. Before (review revF), mawk, Debian's and Ubuntu's awk, read the
fifo a block at a time: the lines reached the log only once the child ended, after the box was
shut down (an upload's last words never logged). The real awks of the hosts: mawk and
busybox's (Alpine), where installed here."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from .box import T0, Box

TOKEN = "tok-3c9e07b15d2a48f6"


@pytest.mark.parametrize("awk", ["mawk", "busybox"])
def test_before_shutdowns_output_is_in_the_log_when_the_shutdown_runs(tmp_path: Path, awk: str) -> None:
    if shutil.which(awk) is None:
        pytest.skip(f"{awk} is not installed here")
    saw = tmp_path / "log-at-shutdown.txt"
    before = f"uname -s; echo {TOKEN}; (sleep 12 &); true"
    box = Box(
        tmp_path,
        idle="1m",
        grace="1m",
        before_shutdown=before,
        shutdown_command=f"cp {tmp_path}/autostop/autostop.log {saw} && touch {tmp_path}/shutdown-ran",
    )
    shim = box.bin / "awk"  # (the watcher's `awk`: this one)
    shim.write_text(f'#!/bin/sh\nexec {"busybox awk" if awk == "busybox" else awk} "$@"\n')
    shim.chmod(0o755)
    box.ticks(T0, 3)  # (the third runs the shutdown: the log as it saw it kept)
    assert box.shut_down
    logged = saw.read_text()
    assert "Linux\n********\n" in logged, logged
    assert TOKEN not in logged
