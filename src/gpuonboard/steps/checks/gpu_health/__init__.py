"""Step `gpu_health`: the checks a careful engineer runs by hand on delivery. Read-only, pure rules.

Each rule covers every GPU of the host and yields expected / actual / verdict with one
sentence of advice. Thresholds come from the step's args, overridden per vendor or host by
`vars.gpu_health` in the inventory (e.g. a vendor whose cards run hot in a known-good way).

This package module only re-exports; the modules own, from the bottom up: `common` (default
thresholds, hard-throttle reasons, GPU labels, idleness), `memory` (ECC mode, uncorrectable
ECC errors, memory repair), `pcie` (link generation / width, replay counter), `clocks` (power
limit, throttling, temperature), `usage` (foreign processes), `modes` (persistence, compute mode, MIG,
virtualisation, the vGPU licence), `recovery` (the driver's GPU Recovery Action), `readable` (nothing checked,
unreadable GPUs, sensor faults) and `step`
(evaluate, the thresholds, GpuHealthStep).
"""

from __future__ import annotations

from gpuonboard.steps.base import Check
from gpuonboard.steps.checks.gpu_health.clocks import rule_power_limit, rule_temperature, rule_throttle
from gpuonboard.steps.checks.gpu_health.common import DEFAULTS, HARD_THROTTLE, IDLE_PSTATES
from gpuonboard.steps.checks.gpu_health.memory import (
    ECC_ENABLE_ADVICE,
    rule_ecc_errors,
    rule_ecc_mode,
    rule_memory_repair,
)
from gpuonboard.steps.checks.gpu_health.modes import (
    rule_compute_mode,
    rule_mig,
    rule_persistence,
    rule_vgpu_license,
    rule_virtualization,
)
from gpuonboard.steps.checks.gpu_health.pcie import (
    PCIE_REPLAY_FILE,
    pcie_replay_limits,
    rule_pcie_link,
    rule_pcie_replays,
)
from gpuonboard.steps.checks.gpu_health.readable import (
    rule_nothing_checked,
    rule_sensor_faults,
    rule_unreadable,
)
from gpuonboard.steps.checks.gpu_health.step import GpuHealthStep, evaluate, evaluated, thresholds_from
from gpuonboard.steps.checks.gpu_health.usage import BUSY_MEMORY_MIB, BUSY_UTIL_PCT, rule_foreign_processes

__all__ = [
    "BUSY_MEMORY_MIB",
    "BUSY_UTIL_PCT",
    "DEFAULTS",
    "ECC_ENABLE_ADVICE",
    "HARD_THROTTLE",
    "IDLE_PSTATES",
    "PCIE_REPLAY_FILE",
    "Check",
    "GpuHealthStep",
    "evaluate",
    "evaluated",
    "pcie_replay_limits",
    "rule_compute_mode",
    "rule_ecc_errors",
    "rule_ecc_mode",
    "rule_foreign_processes",
    "rule_memory_repair",
    "rule_mig",
    "rule_nothing_checked",
    "rule_pcie_link",
    "rule_pcie_replays",
    "rule_persistence",
    "rule_power_limit",
    "rule_sensor_faults",
    "rule_temperature",
    "rule_throttle",
    "rule_unreadable",
    "rule_vgpu_license",
    "rule_virtualization",
    "thresholds_from",
]
