"""The process table nvidia-htop (peci1/nvidia-htop) and its derivatives (`nvidia-smi2`) print
under nvidia-smi's GPU rows in place of nvidia-smi's own `Processes:` table:

    |  GPU    PID     USER    GPU MEM  %CPU  %MEM      TIME  COMMAND               |
    |    0 232843   user@+     236MiB   100   0.1  01:00:20  /usr/bin/python3 tor  |

Each row is a process on a GPU with its memory, but no type (compute or graphics): read as the
GPUs' process lists, so a job it shows is named, never "no process list was read"."""

from __future__ import annotations

import re
from collections.abc import Sequence

from gpuonboard.facts.nvidia_smi.model import GpuProcess
from gpuonboard.once import lazy_re

_HEADER = lazy_re(r"^\|?\s*GPU\s+PID\s+USER\s+GPU MEM\s+%CPU\s+%MEM\s+TIME\s+COMMAND\b")
# `|    0  6963  anonym1    2365MiB   2.9   3.1    7 days  python train.py   |`
_ROW = lazy_re(
    r"^\|?\s*(\d+)\s+(\d+)\s+\S+\s+(\d+)MiB\s+[\d.]+\s+[\d.]+\s+(\d+\s+days?|[\d:-]+)\s+(.*?)\s*\|?\s*$"
)
# the same row read loosely: its GPU, PID and memory, whatever the cells between and after hold
# (`|    0  1032              745MiB                     |`: a process `ps` could not see, in
# another pid namespace, under hidepid or gone, its USER, %CPU, %MEM, TIME and COMMAND empty)
_LOOSE_ROW = lazy_re(r"^\|?\s*(\d+)\s+(\d+)\s+(?:\S+\s+)?(\d+)MiB(?:\s.*)?$")
_BORDER = lazy_re(r"^\s*\+-[-+]*\+\s*$")

WRAPPER_PROCESSES = (
    "the process table is nvidia-htop's (GPU, PID, USER, GPU MEM ... COMMAND), not nvidia-smi's: its"
    " processes are read, without their type"
)


def htop_processes(lines: Sequence[str]) -> tuple[dict[int, list[GpuProcess]], bool, bool] | None:
    """(processes per GPU index, whether the table closed, whether every row of it was read) of
    nvidia-htop's process table; None where the output holds none. A row of a process `ps` could
    not see is read by its GPU, PID and memory (its command not shown: named by its pid); a line
    inside the table that is no row read leaves the lists unknown, never a process skipped
    (before, such a row was left out and the GPU read as running no process)."""
    start = next((i for i, line in enumerate(lines) if _HEADER.match(line.strip())), None)
    if start is None:
        return None
    by_gpu: dict[int, list[GpuProcess]] = {}
    closed, every = False, True
    for line in lines[start + 1 :]:
        if _BORDER.match(line):
            closed = True
            break
        if not line.strip().strip("|").strip():
            continue
        match = _ROW.match(line.strip())
        if match is not None:
            name = re.sub(r"\s+", " ", match.group(5))
            by_gpu.setdefault(int(match.group(1)), []).append(
                GpuProcess(int(match.group(2)), name, None, int(match.group(3)))
            )
        elif (loose := _LOOSE_ROW.match(line.strip().rstrip("|").rstrip())) is not None:
            by_gpu.setdefault(int(loose.group(1)), []).append(
                GpuProcess(int(loose.group(2)), "", None, int(loose.group(3)))
            )
        else:
            every = False
    return by_gpu, closed, closed and every
