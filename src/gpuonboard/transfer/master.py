"""The shared OpenSSH master connection of a run: the ssh options that reuse it, starting and
stopping it, and the sweep of the control dirs that killed runs left.

Every rsync and ssh of one upload multiplexes over the one master (one handshake, a warm TCP
window); without it they connect on their own.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

from gpuonboard import shell


def master_options(control_dir: Path) -> list[str]:
    """ssh options that reuse the master connection whose socket lives in control_dir (a private
    0700 dir); with no master there, ssh connects directly. [] when the socket path would be too
    long for a unix socket, or cannot be written for ssh (a `"` or a `${` in $TMPDIR).

    ssh reads the value as a config line (a space splits it: quoted) and %-expands it (a `%` in
    $TMPDIR is written `%%`): else the master never started, or put its socket elsewhere."""
    raw = str(control_dir)
    if len(raw) + 1 + 40 > 100 or '"' in raw or "${" in raw or "\n" in raw:
        return []
    path = raw.replace("%", "%%") + "/%C"
    if shell.quote(raw) != raw:  # (as plain as before where nothing needs it)
        path = f'"{path}"'
    return ["-o", "ControlMaster=no", "-o", f"ControlPath={path}"]


def start_master(config_path: Path, alias: str, control_dir: Path, persist: int = 60) -> list[str]:
    """Open ONE OpenSSH master connection (same config: strict host keys) that every later rsync
    and ssh of this run multiplexes over: one handshake, a warm TCP window. Returns the ssh
    options for the clients ([] when it could not start: they then connect on their own).
    ControlPersist closes it `persist` seconds after the last client if `stop_master` never runs."""
    opts = master_options(control_dir)
    if not opts:
        return []
    control_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(control_dir, 0o700)
    try:
        r = subprocess.run(
            ["ssh", "-F", str(config_path), "-o", "ControlMaster=yes", "-o", opts[-1]]
            + ["-o", f"ControlPersist={persist}", "-N", "-f", alias],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return []
    return opts if r.returncode == 0 else []


CONTROL_PREFIX = "gpob-cm-"


def sweep_control_dirs(parent: Path, keep: Path | None = None, max_age: float = 600.0) -> int:
    """Remove this user's empty `gpob-cm-*` dirs under `parent` (the temp dir) older than
    `max_age` seconds: what a run killed with SIGKILL left (its master, under ControlPersist,
    is gone by then and took its socket along; a dir with a socket in it is never touched).
    Returns how many went."""
    gone = 0
    now = time.time()
    try:
        names = [n for n in os.listdir(parent) if n.startswith(CONTROL_PREFIX)]
    except OSError:
        return 0
    for name in names:
        path = parent / name
        if path == keep:
            continue
        try:
            st = path.lstat()
            if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or now - st.st_mtime < max_age:
                continue
            path.rmdir()  # (only an empty one: ENOTEMPTY otherwise)
            gone += 1
        except OSError:
            continue
    return gone


def stop_master(config_path: Path, alias: str, opts: Sequence[str], wait: float = 5.0) -> None:
    """`ssh -O exit` the master started by start_master (nothing when opts is empty), then
    wait up to `wait` seconds for its process to end: the master answers the exit request
    before it exits, so without the wait a caller could return while it still runs."""
    if not opts:
        return
    base = ["ssh", "-F", str(config_path), *opts, "-O"]
    pid = None
    with contextlib.suppress(OSError, subprocess.TimeoutExpired):
        check = subprocess.run(
            [*base, "check", alias], capture_output=True, stdin=subprocess.DEVNULL, timeout=15, check=False
        )
        found = re.search(rb"\(pid=(\d+)\)", check.stderr)
        pid = int(found.group(1)) if found and check.returncode == 0 else None
    with contextlib.suppress(OSError, subprocess.TimeoutExpired):
        subprocess.run(
            [*base, "exit", alias],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=15,
            check=False,
        )
    deadline = time.monotonic() + wait
    while pid is not None and _running(pid) and time.monotonic() < deadline:
        time.sleep(0.01)


def _running(pid: int) -> bool:
    """Whether process `pid` still runs (a zombie waiting for its parent does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat_line = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return True  # (no /proc: signal 0 is all there is)
    return stat_line[stat_line.rindex(b")") + 2 :][:1] != b"Z"
