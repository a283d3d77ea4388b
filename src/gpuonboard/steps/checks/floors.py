"""Floors of outputs cut short: the least a cut `numactl --hardware` (RAM) or a cut /proc/cpuinfo
or lscpu (cores) proves. No total is read from such an output, but a floor that already meets a
`>=` order proves the order met: a pass, worded `at least X read`; a floor below the order says
nothing (the rest was cut off), and the rule stays unverified."""

from __future__ import annotations

from collections.abc import Callable

from gpuonboard.connection.gather import Facts
from gpuonboard.steps.base import Check
from gpuonboard.units import format_bytes


def ram_floor_met(facts: Facts, wanted: int, need: float, decimals: Callable[..., int]) -> Check | None:
    """ram where an output cut short gave no total but a floor (numactl's nodes with CPUs read
    before the cut) that already meets `need` (the order less the kernel's share), with no cgroup
    limit below it: a pass, `at least X read`; None otherwise."""
    memory = facts.memory
    if memory is None or memory.total_bytes is not None or memory.floor_bytes is None:
        return None
    least, limit = memory.floor_bytes, facts.memory_limit_bytes
    if least < need or (limit is not None and limit < need):
        return None
    places = decimals(least, wanted)
    said = memory.warnings[0] if memory.warnings else "the output is cut short"
    return Check(
        "ram",
        f">= {format_bytes(wanted, True, places)}",
        f"at least {format_bytes(least, True, places)} read ({said}), already enough",
        "pass",
    )


def cores_floor_met(ordered: int, expected: str, facts: Facts) -> Check | None:
    """cpu_cores where the CPU listing is cut short but the cores it proves (CpuInfo.cores_floor)
    already meet the order: a pass, `at least N cores read`; None otherwise."""
    cpu = facts.cpu
    if cpu is None or not cpu.cut or cpu.cores_floor is None or cpu.cores_floor < ordered:
        return None
    model = f" ({cpu.model_name})" if cpu.model_name else ""
    cores = f"{cpu.cores_floor} core{'s' if cpu.cores_floor != 1 else ''}"
    return Check(
        "cpu_cores",
        expected,
        f"at least {cores} read{model} ({cpu.source} cut short: {cpu.cut}), already enough",
        "pass",
    )
