"""The CPU shape of a host (CpuInfo), which lscpu's reader (facts/cpu.py) and /proc/cpuinfo's
(facts/cpuinfo.py) both give, and the kernel's CPU lists they read."""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["CPUINFO", "CpuInfo", "cpu_list_count", "cpu_list_numbers", "empty"]

CPUINFO = "/proc/cpuinfo"


@dataclass(frozen=True)
class CpuInfo:
    """CPU shape of a host as lscpu (or /proc/cpuinfo) reports it."""

    architecture: str | None
    model_name: str | None
    sockets: int | None
    cores_per_socket: int | None
    threads_per_core: int | None
    logical_cpus: int | None
    # sockets * cores_per_socket when both are known; clusters * cores per cluster where lscpu
    # says "Socket(s): -" (ARM without socket data)
    physical_cores: int | None
    warnings: tuple[str, ...] = ()
    # CPUs in lscpu's "Off-line CPU(s) list" (counted in logical_cpus, usable by nobody);
    # None when lscpu prints no such line (every CPU online)
    offline_cpus: int | None = None
    # why this lscpu output is not whole, or None: it ends inside its CPU type blocks (nothing
    # lscpu prints after them follows) with CPUs of CPU(s) not in the types read or a type's
    # core count unread; physical_cores is then None (the types cut off are unknown)
    cut: str | None = None
    # what was read: "lscpu", or "/proc/cpuinfo" (CPUINFO: the live probe reads it where lscpu is
    # not installed; it lists the online CPUs only)
    source: str = "lscpu"
    # why a /proc/cpuinfo may hold only some of the kernel's lines (a grep of it), or None: what
    # it counts is there, but a filter may have left CPUs out
    filtered: str | None = None
    # where the output is cut short (`cut`), the fewest cores it proves, or None: /proc/cpuinfo's
    # packages read (each one's `cpu cores` or distinct core ids), lscpu's whole CPU types read;
    # a floor that meets an order proves it met (`at least N read`)
    cores_floor: int | None = None


_CPU_RANGE = re.compile(r"^(\d+)(?:-(\d+))?$")


def cpu_list_numbers(value: str) -> list[int] | None:
    """The CPUs a kernel CPU list names ('0-3,8' -> [0, 1, 2, 3, 8]); None if not a list."""
    numbers: list[int] = []
    for part in value.replace(" ", "").split(","):
        match = _CPU_RANGE.match(part)
        if not match or int(match.group(2) or match.group(1)) < int(match.group(1)):
            return None
        numbers += range(int(match.group(1)), int(match.group(2) or match.group(1)) + 1)
    return numbers


def cpu_list_count(value: str | None) -> int | None:
    """How many CPUs a lscpu CPU list names ('0-3,8,10-11' -> 7, '' -> 0); None if not a list."""
    if value is None:
        return None
    count = 0
    for part in value.replace(" ", "").split(","):
        if not part:
            continue
        match = _CPU_RANGE.match(part)
        if not match:
            return None
        first, last = int(match.group(1)), int(match.group(2) or match.group(1))
        if last < first:
            return None
        count += last - first + 1
    return count


def empty(message: str) -> CpuInfo:
    """A CpuInfo with nothing known and one warning saying why."""
    return CpuInfo(None, None, None, None, None, None, None, (message,))
