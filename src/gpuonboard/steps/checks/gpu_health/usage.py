"""The foreign-processes rule of gpu_health: nobody else's job on the GPUs, from nvidia-smi's
process list or, where it lists none, from utilisation and memory used."""

from __future__ import annotations

from gpuonboard.facts.nvidia_smi import GpuInfo, GpuProcess
from gpuonboard.steps.base import Check
from gpuonboard.steps.checks.gpu_health.common import gpu_label, gpu_list

# "Busy" from the numbers alone (when no process list can be read, or the list is empty while
# the GPU works: processes of other containers / VMs are invisible in nvidia-smi's list).
# Utilisation: an idle GPU reads 0 % (every idle capture under tests/fixtures/real); 10 % leaves
# room for a monitoring sample. Memory used: idle GPUs in the real captures hold 0-50 MiB (H100,
# H200, A100, RTX 4090; older drivers count a few hundred MiB of reserved memory as used, and a
# desktop session ~400 MiB); more than 1 GiB is some process's allocations. An absolute floor,
# not a share of total, so that 2 GiB taken on a 141 GiB H200 still counts.
BUSY_UTIL_PCT = 10
BUSY_MEMORY_MIB = 1024


def _busy(g: GpuInfo) -> str | None:
    """'at 100 % utilisation with 31.6 GiB used' when the numbers show work, else None."""
    util = g.utilization_gpu_pct
    used = g.memory_used_mib
    if (util is None or util < BUSY_UTIL_PCT) and (used is None or used <= BUSY_MEMORY_MIB):
        return None
    mem = f"{used / 1024:.1f} GiB used" if used is not None else "memory use not reported"
    at = f"at {util} % utilisation" if util is not None else "utilisation not reported"
    return f"{gpu_label(g)} {at} with {mem}"


def _idle_by_numbers(g: GpuInfo) -> bool:
    return (
        g.utilization_gpu_pct is not None
        and g.memory_used_mib is not None
        and g.utilization_gpu_pct < BUSY_UTIL_PCT
        and g.memory_used_mib <= BUSY_MEMORY_MIB
    )


def rule_foreign_processes(gpus: list[GpuInfo]) -> Check:
    """Nobody else's job runs on 'your' GPUs.

    FAIL: a compute process is listed, or a GPU with no listed process (no list in this output,
    or an empty one) shows utilisation >= 10 % or more than 1 GiB of memory used (another job:
    a container's or VM's processes are not listed). WARN: only graphics processes. PASS: every
    GPU's list is known and empty, or (no list) its utilisation and memory both read idle.
    UNVERIFIED: no list and no utilisation / memory figures to judge from.
    """

    def fmt(g: GpuInfo, p: GpuProcess) -> str:
        return f"{gpu_label(g)}: pid {p.pid} {p.name} ({p.used_memory_mib} MiB)"

    read = [g for g in gpus if not g.faults]
    compute = [fmt(g, p) for g in read for p in g.processes if p.type != "G"]
    graphics = [fmt(g, p) for g in read for p in g.processes if p.type == "G"]
    # GPUs with no process listed: the figures may still show someone's job
    unlisted = [g for g in read if not g.processes]
    busy_listed_empty = [b for g in unlisted if g.processes_known and (b := _busy(g))]
    busy_no_list = [b for g in unlisted if not g.processes_known and (b := _busy(g))]
    if compute or busy_listed_empty or busy_no_list:
        parts = compute + graphics
        if busy_listed_empty:
            parts.append("; ".join(busy_listed_empty) + ", though nvidia-smi lists no process there")
        if busy_no_list:
            parts.append("; ".join(busy_no_list) + ", though this nvidia-smi output lists no processes")
        hidden = (
            " (a job in another container or VM is not listed by nvidia-smi here)"
            if busy_listed_empty or busy_no_list
            else ""
        )
        return Check(
            "foreign_processes",
            "none",
            "; ".join(parts),
            "fail",
            f"another job is using the GPUs you rent{hidden}; ask the vendor before you start",
        )
    if graphics:
        return Check(
            "foreign_processes",
            "none",
            "; ".join(graphics),
            "warn",
            "a graphics process (e.g. a display server) holds GPU memory on a server you rent headless",
        )
    if all(g.processes_known for g in read):
        return Check("foreign_processes", "none", "none", "pass")
    no_list = [g for g in read if not g.processes_known]
    unjudged = [g for g in no_list if not _idle_by_numbers(g)]
    if unjudged:
        return Check(
            "foreign_processes",
            "none",
            f"not reported for {gpu_list(unjudged, gpus)}: no process list and no utilisation /"
            " memory figures",
            "unverified",
            "this nvidia-smi output lists no processes; `nvidia-smi` (the table) or"
            " `nvidia-smi --query-compute-apps=pid,used_memory --format=csv` shows them",
        )
    figures = ", ".join(
        f"{gpu_label(g)} {g.utilization_gpu_pct} % / {g.memory_used_mib} MiB" for g in no_list
    )
    return Check(
        "foreign_processes",
        "none",
        f"none by utilisation and memory used ({figures}); this output lists no processes",
        "pass",
    )
