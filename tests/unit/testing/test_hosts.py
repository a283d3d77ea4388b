"""gpuonboard.testing.hosts: how a test host is stopped. Real processes, no sshd: a copy of
/bin/sh named `sshd` stands in for a connection's sshd, its child for the session's command."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from gpuonboard.testing.hosts import _terminate


def _wait_for(path: Path, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.02)


def test_a_sessions_command_is_signalled_only_once_its_sshd_is_gone(tmp_path: Path) -> None:
    """A dropped box: the connection ends before the session's command dies. Before, sshd and
    the command got SIGTERM together; a command that died first let its sshd, still up, send
    the client its exit status (143), and a test of a lost connection saw a failed command
    (test_connection.py, under load). Here the stand-in sshd takes 0.5 s to go on SIGTERM (as
    a busy sshd is slow to), and its child notes, when its own SIGTERM comes, whether that
    parent still lives."""
    sshd = tmp_path / "sshd"
    sshd.write_bytes(Path("/bin/sh").read_bytes())
    sshd.chmod(0o755)
    seen, ready, child = tmp_path / "seen", tmp_path / "ready", tmp_path / "child.sh"
    # the child: on SIGTERM, is its parent now (its stat's 4th field) still the sshd?
    child.write_text(
        "p=$PPID\n"
        f'trap \'now=$(cut -d\\  -f4 /proc/$$/stat); [ "$now" = "$p" ] && w=alive || w=gone;'
        f" echo $w >{seen}; exit 0' TERM\n"
        f"touch {ready}\n"
        "while :; do sleep 0.05; done\n"
    )
    script = f"trap 'sleep 0.5; exit 0' TERM; /bin/sh {child} & wait; wait"
    proc = subprocess.Popen([str(sshd), "-c", script])
    try:
        _wait_for(ready)
        _terminate({proc.pid})
        proc.wait(timeout=30)
        _wait_for(seen)
        assert seen.read_text() == "gone\n"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
