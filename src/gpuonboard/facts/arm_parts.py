"""Arm's own CPU cores (/proc/cpuinfo's `CPU implementer : 0x41` and `CPU part`) that run one
thread a core: every Cortex-A, Cortex-X and Neoverse core but the three with SMT (Cortex-A65,
Cortex-A65AE, Neoverse E1). An arm64 /proc/cpuinfo prints no `core id`; where every CPU's part is
one of these, each CPU listed is a core of its own."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

__all__ = ["ARM", "SMT_PARTS", "no_smt_part"]

# /proc/cpuinfo's `CPU implementer` of Arm Ltd.
ARM = "0x41"

# Arm's part numbers (the Technical Reference Manuals' MIDR PartNum, as the kernel's
# arch/arm64/include/asm/cputype.h and util-linux's lscpu-arm.c name them) of the cores with one
# thread a core
ONE_THREAD_PARTS = {
    "0xc05": "Cortex-A5",
    "0xc07": "Cortex-A7",
    "0xc08": "Cortex-A8",
    "0xc09": "Cortex-A9",
    "0xc0d": "Cortex-A12",
    "0xc0e": "Cortex-A17",
    "0xc0f": "Cortex-A15",
    "0xd01": "Cortex-A32",
    "0xd02": "Cortex-A34",
    "0xd03": "Cortex-A53",
    "0xd04": "Cortex-A35",
    "0xd05": "Cortex-A55",
    "0xd07": "Cortex-A57",
    "0xd08": "Cortex-A72",
    "0xd09": "Cortex-A73",
    "0xd0a": "Cortex-A75",
    "0xd0b": "Cortex-A76",
    "0xd0c": "Neoverse-N1",
    "0xd0d": "Cortex-A77",
    "0xd0e": "Cortex-A76AE",
    "0xd40": "Neoverse-V1",
    "0xd41": "Cortex-A78",
    "0xd42": "Cortex-A78AE",
    "0xd44": "Cortex-X1",
    "0xd46": "Cortex-A510",
    "0xd47": "Cortex-A710",
    "0xd48": "Cortex-X2",
    "0xd49": "Neoverse-N2",
    "0xd4b": "Cortex-A78C",
    "0xd4c": "Cortex-X1C",
    "0xd4d": "Cortex-A715",
    "0xd4e": "Cortex-X3",
    "0xd4f": "Neoverse-V2",
    "0xd80": "Cortex-A520",
    "0xd81": "Cortex-A720",
    "0xd82": "Cortex-X4",
    "0xd84": "Neoverse-V3",
    "0xd85": "Cortex-X925",
    "0xd87": "Cortex-A725",
    "0xd8e": "Neoverse-N3",
}
# Arm's cores with two threads a core: never read as one CPU a core
SMT_PARTS = {"0xd06": "Cortex-A65", "0xd43": "Cortex-A65AE", "0xd4a": "Neoverse-E1"}


def no_smt_part(blocks: Sequence[Mapping[str, str]]) -> str | None:
    """Where every CPU block names an Arm core of one thread a core, those cores as a reader says
    them (`Cortex-A53 (CPU part 0xd03)`, big.LITTLE's two joined by `+`); None where a block
    names no part, another implementer's, an unknown part or an SMT one."""
    parts: list[str] = []
    for block in blocks:
        part = block.get("CPU part", "").lower()
        if block.get("CPU implementer", "").lower() != ARM or part not in ONE_THREAD_PARTS:
            return None
        parts.append(part)
    if not parts:
        return None
    return " + ".join(f"{ONE_THREAD_PARTS[p]} (CPU part {p})" for p in dict.fromkeys(parts))
