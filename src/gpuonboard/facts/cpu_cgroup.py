"""A container's cgroup CPU limits as the probe reads them (`FILE<TAB>VALUE` lines): the CPU quota
(v2 `cpu.max`, v1 `cpu.cfs_quota_us` / `cpu.cfs_period_us`) and the CPU set (`cpuset.cpus.effective`,
v1's `cpuset.effective_cpus` / `cpuset.cpus`). Split from facts/cpu.py (round 34: its size)."""

from __future__ import annotations

import re

from gpuonboard.facts.cpu_shape import cpu_list_count as _cpu_list_count

# the cgroup files that hold a CPU quota (v2, v1; v1's period beside it): a limit is known where
# one was read
CPU_LIMIT_FILES = ("cpu.max", "cpu.cfs_quota_us")


def parse_cgroup_cpu_limit(text: str) -> float | None:
    """CPUs the cgroup quota allows (quota / period), the smallest among the probe's
    `FILE<TAB>VALUE` lines (v2 `cpu.max` "QUOTA PERIOD" or "max PERIOD"; v1
    `cpu.cfs_quota_us` -1 for none, with `cpu.cfs_period_us` in the same folder); None: no quota."""
    limits: list[float] = []
    v1: dict[str, dict[str, int]] = {}
    for line in text.splitlines():
        path, _, value = line.partition("\t")
        folder, _, file = path.rpartition("/")
        parts = value.split()
        if file == "cpu.max" and len(parts) == 2 and parts[0].isdecimal() and parts[1].isdecimal():
            if int(parts[1]) > 0:
                limits.append(int(parts[0]) / int(parts[1]))
        elif file in ("cpu.cfs_quota_us", "cpu.cfs_period_us") and re.fullmatch(r"-?\d+", value.strip()):
            v1.setdefault(folder.rstrip("/"), {})[file] = int(value.strip())
    for values in v1.values():
        quota, period = values.get("cpu.cfs_quota_us", -1), values.get("cpu.cfs_period_us", 0)
        if quota > 0 and period > 0:
            limits.append(quota / period)
    return min(limits) if limits else None


# the cgroup files that hold the CPU set a container may run on (v2's effective set; v1's
# effective set, and its configured one where the kernel has no effective file): a list of
# CPUs and ranges, `12-15` (`docker run --cpuset-cpus=12,13,14,15`), `0-3,8-11`
CPUSET_FILES = ("cpuset.cpus.effective", "cpuset.effective_cpus", "cpuset.cpus")


def cgroup_cpuset_read(text: str) -> tuple[int, str] | None:
    """The CPU set of the deepest folder among the probe's `FILE<TAB>VALUE` lines (CPUSET_FILES:
    a container's `--cpuset-cpus`, a Kubernetes pod's exclusive CPUs, a Slurm job's), as (CPUs,
    the file read): a cgroup's own set already lies within its ancestors', and an ancestor's
    may be smaller than it (cgroup v2 takes the CPUs handed to a child partition out of the
    parent's effective set). A folder's effective set where it was read, its configured
    `cpuset.cpus` otherwise (a configured set of no online CPU leaves the effective one the
    parent's); None where none was read (an empty set, one not yet configured, says nothing)."""
    sets: dict[str, dict[str, int]] = {}
    for line in text.splitlines():
        path, _, value = line.partition("\t")
        folder, _, file = path.rpartition("/")
        if file in CPUSET_FILES and (n := _cpu_list_count(value.strip())):
            sets.setdefault(folder.rstrip("/"), {})[file] = n
    if not sets:
        return None
    files = sets[max(sets, key=lambda folder: folder.count("/"))]
    file = next(f for f in CPUSET_FILES if f in files)
    return files[file], file


def parse_cgroup_cpuset(text: str) -> int | None:
    """CPUs in the CPU set of the deepest folder among the probe's `FILE<TAB>VALUE` lines
    (cgroup_cpuset_read); None where none was read."""
    read = cgroup_cpuset_read(text)
    return read[0] if read else None
