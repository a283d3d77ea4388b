"""A simulated host for the autostop watcher script: the installed script in a temp dir, a fake
nvidia-smi first on PATH, a controllable clock (GPUONBOARD_NOW), shared by the autostop tests."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from gpuonboard.steps.autostop import parse_settings, render_script

REPO = Path(__file__).resolve().parents[4]

T0 = 1_800_000_000  # a fixed "now" (2027-01-15T08:00:00Z), a whole hour since the epoch


def session_pids(sid: int) -> list[int]:
    """Processes of session `sid` (a background tick and what it started: `timeout` moves its
    child into a process group of its own, but not out of the session)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            fields = stat.rsplit(")", 1)[1].split()
            if int(fields[3]) == sid and fields[0] != "Z":
                pids.append(int(entry.name))
    return pids


def end_session(proc: subprocess.Popen[str]) -> None:
    """End a background tick started in its own session and everything it started (by pid)."""
    for pid in session_pids(proc.pid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    if proc.poll() is None:
        proc.kill()
    proc.wait(timeout=10)
    if proc.stderr is not None:
        proc.stderr.close()
    if proc.stdout is not None:
        proc.stdout.close()


class Box:
    """One simulated host: the installed watcher in a temp dir, a fake nvidia-smi, a clock."""

    def __init__(self, tmp: Path, **args: Any) -> None:
        self.dir = tmp / "autostop"
        self.dir.mkdir()
        self.tmp = tmp
        self.bin = tmp / "bin"
        self.bin.mkdir()
        self.marker = tmp / "shutdown-ran"
        self.boot_id = "boot-1"
        self.login: list[str] = []  # a command that runs the tick as another user (setpriv ...)
        args.setdefault("shutdown_command", f"touch {self.marker}")
        args.setdefault("grace", "5m")
        settings = parse_settings(args)
        (self.dir / "autostop.sh").write_text(render_script(REPO, "testbox", str(self.dir)))
        (self.dir / "autostop.conf").write_text(settings.conf_text())
        (self.dir / "installed_at").write_text(f"{T0}\n")
        self.gpu("0")

    def gpu(self, *utilisation: str, rc: int = 0) -> None:
        """Make the fake nvidia-smi print these utilisations (one line per GPU)."""
        body = "".join(f"echo {u}\n" for u in utilisation)
        tool = self.bin / "nvidia-smi"
        tool.write_text(f"#!/bin/sh\n{body}exit {rc}\n")
        tool.chmod(0o755)

    def run(self, now: int, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
        """One cron tick (or `status`) at time `now`."""
        # in a session of its own: whatever it leaves running (a hung probe, a before_shutdown
        # that outlived it) is ended here, by pid, even when the tick fails or times out
        proc = subprocess.Popen(
            [*self.login, "/bin/sh", str(self.dir / "autostop.sh"), *args],
            env=self.env(now, **env),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        try:
            out, err = proc.communicate(timeout=20)
        finally:
            end_session(proc)
        r = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
        assert r.returncode == 0, r.stderr
        return r

    def ticks(self, start: int, minutes: int) -> None:
        """One tick per minute from `start` (inclusive) for `minutes` ticks."""
        for m in range(minutes):
            self.run(start + 60 * m)

    def reconfigure(self, **args: Any) -> None:
        """What a rerun of `invoke autostop` with other flags writes: a new config."""
        args.setdefault("shutdown_command", f"touch {self.marker}")
        (self.dir / "autostop.conf").write_text(parse_settings(args).conf_text())

    def env(self, now: int, **env: str) -> dict[str, str]:
        return {
            "PATH": f"{self.bin}:/usr/bin:/bin",
            "GPUONBOARD_NOW": str(now),
            "GPUONBOARD_BOOT_ID": self.boot_id,
            "GPUONBOARD_BOOT_TIME": str(T0),
            # (a run's temp dir: in the test's own dir, never left in /dev/shm by a killed tick)
            "GPUONBOARD_TMP": str(self.tmp),
            **env,
        }

    def start_tick(self, now: int, **env: str) -> subprocess.Popen[str]:
        """A tick in the background, in its own session (ended with end_session), once it holds the lock."""
        proc = subprocess.Popen(
            ["/bin/sh", str(self.dir / "autostop.sh"), "tick"],
            env=self.env(now, **env),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            pid = self.dir / "lock" / "pid"
            if (
                pid.exists()
                and pid.read_text().strip() == str(proc.pid)
                and (self.dir / "lock" / "since").exists()
            ):
                return proc
            time.sleep(0.02)
        end_session(proc)
        raise AssertionError("the background tick never took the lock")

    @property
    def shut_down(self) -> bool:
        return self.marker.exists()

    def log(self) -> str:
        path = self.dir / "autostop.log"
        return path.read_text() if path.exists() else ""

    def state(self) -> dict[str, str]:
        lines = (self.dir / "state").read_text().splitlines()
        return dict(line.split("=", 1) for line in lines)
