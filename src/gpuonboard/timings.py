"""Phase timings of one run, for bench/fanout.py: where a command's wall and CPU time go.

Off unless the environment names a file: `GPUONBOARD_TIMINGS=/tmp/t.json gpuonboard check`
writes, when the process exits, a small JSON object: the process start (epoch seconds), and
per phase mark (in the order reached) its wall time since the previous mark and the CPU
seconds (user + system) of this process meanwhile. The first phase, `start`, runs from the
process start (imports, the command line parsed). A mark costs one list append.
"""

from __future__ import annotations

import atexit
import json
import os
import time

ENV = "GPUONBOARD_TIMINGS"

_PATH = os.environ.get(ENV, "")
_MARKS: list[tuple[str, float, float]] = []  # (phase, epoch seconds, process CPU seconds)


def _cpu() -> float:
    t = os.times()
    return t.user + t.system


def process_start() -> float:
    """This process's start in epoch seconds (Linux /proc, to 10 ms), else the first mark's."""
    try:
        with open("/proc/self/stat") as f:
            start_ticks = int(f.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime") as f:
            uptime = float(f.read().split()[0])
        return time.time() - uptime + start_ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return _MARKS[0][1] if _MARKS else time.time()


def mark(phase: str) -> None:
    """The phase named `phase` ends now (a no-op unless GPUONBOARD_TIMINGS names a file)."""
    if not _PATH:
        return
    if not _MARKS:
        atexit.register(write)
    _MARKS.append((phase, time.time(), _cpu()))


def report() -> dict[str, object]:
    """The marks so far as {"process_start", "phases": [{"phase", "wall", "cpu", "at"}]}."""
    start = process_start()
    phases = []
    wall0, cpu0 = start, 0.0
    for phase, wall, cpu in _MARKS:
        phases.append(
            {"phase": phase, "wall": round(wall - wall0, 4), "cpu": round(cpu - cpu0, 4), "at": wall}
        )
        wall0, cpu0 = wall, cpu
    return {"process_start": start, "phases": phases, "cpu_total": round(_cpu(), 4)}


def write() -> None:
    """Write report() to the GPUONBOARD_TIMINGS file (at exit); a failure to write is ignored."""
    if not _PATH:
        return
    try:
        with open(_PATH, "w") as f:
            json.dump(report(), f, indent=1)
    except OSError:
        pass
