"""prove's session watcher (shell.until_session_ends) stops the script's process tree when the
session that started it goes away, and nothing else. A process name may hold a line break (any
process can set its own: prctl, /proc/self/comm), and /proc/PID/stat's first line then ends
inside the name: `a) S 1234` read there made a foreign process look like a child of the
script's pid 1234, so it was SIGTERMed with the script. It must be left running.

The real command text runs with the local /bin/sh under a parent process (the shape of
`connection: local`), as in test_prove_session_bound.py."""

from __future__ import annotations

import contextlib
import ctypes
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gpuonboard.steps.prove import Launch, build_command

from .test_prove_session_bound import PARENT, _wait_until, sandbox

__all__ = ["sandbox"]  # the fixture, used by name

# a process (not the script's) that names itself `a) S <pid>\n<rest>` and waits
DECOY = (
    "import ctypes, sys, time\n"
    "ctypes.CDLL(None).prctl(15, ('a) S ' + sys.argv[1] + '\\nx').encode(), 0, 0, 0)\n"
    "print('named', flush=True)\n"
    "time.sleep(60)\n"
)


def _sleeps(sandbox: Path) -> list[int]:
    """The script's own process: the `sleep` copy in sandbox (its argv[0])."""
    pids = []
    for proc in Path("/proc").iterdir():
        with contextlib.suppress(OSError):
            if (
                proc.name.isdigit()
                and (proc / "cmdline").read_bytes().split(b"\0")[0] == f"{sandbox}/sleep".encode()
            ):
                pids.append(int(proc.name))
    return pids


@pytest.mark.skipif(not hasattr(ctypes.CDLL(None), "prctl"), reason="needs Linux prctl")
def test_a_process_whose_name_fakes_a_stat_line_is_not_killed_with_the_script(sandbox: Path) -> None:
    work = sandbox / "gpuonboard-s-1"
    launch = Launch("/bin/sh", False, "", str(sandbox), 60)
    cmd = build_command(launch, "s.sh", [], str(work), remote_timeout=60)
    parent = subprocess.Popen([sys.executable, "-c", PARENT, cmd, f"{sandbox}/sleep 303\n"])
    decoy: subprocess.Popen[bytes] | None = None
    try:
        _wait_until("the script never started", lambda: _sleeps(sandbox), 10)
        (script_pid,) = _sleeps(sandbox)
        decoy = subprocess.Popen([sys.executable, "-c", DECOY, str(script_pid)], stdout=subprocess.PIPE)
        assert decoy.stdout is not None and decoy.stdout.readline() == b"named\n"
        parent.kill()
        parent.wait()
        _wait_until("the script outlived its session", lambda: not _sleeps(sandbox), 10)
        time.sleep(0.5)
        assert decoy.poll() is None, f"a process that is not the script's was stopped (exit {decoy.poll()})"
    finally:
        if decoy is not None:
            decoy.kill()
            decoy.wait()
        with contextlib.suppress(ProcessLookupError):
            parent.kill()
        parent.wait()
