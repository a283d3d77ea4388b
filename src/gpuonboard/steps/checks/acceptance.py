"""Step `acceptance`: does the delivered box match the order? Pure rules over facts.

Each rule yields expected / actual / verdict. `warn` means it works but is below what was
ordered or expected (reported as degraded, never silently passed); any `fail` fails the host.

Tolerances (documented in README): memory sizes are compared after allowing for the usual
reporting gap, because the kernel and firmware reserve part of RAM (free shows ~1-3 % less
than installed), nvidia-smi reports VRAM minus a reserved region, and a filesystem shows
less than the raw disk. Defaults: RAM 3 % + 256 MiB (RAM orders read in binary units),
VRAM 3 %, data disk 5 %; overridable per step.

Modules: `model_match` (is a GPU name the ordered model), `missing_facts` (the wording for facts
not given, refused, cut short or unreadable), `gpu_rules` (driver, GPU model/count, VRAM,
interconnect, minimum driver), `host_rules` (CPU, RAM, data disk); this module holds the rule
table (`evaluate`), the tolerances and the Step.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping

from gpuonboard.connection.gather import Facts, memo
from gpuonboard.inventory import OrderSpec
from gpuonboard.steps.base import Check, Plan, Step, StepArgsError, StepContext
from gpuonboard.steps.checks.display_adapters import named_beside, without_display_adapters
from gpuonboard.steps.checks.driver_min import rule_min_driver
from gpuonboard.steps.checks.gpu_rules import (
    rule_driver,
    rule_gpu_count,
    rule_gpu_model,
    rule_vram,
)
from gpuonboard.steps.checks.host_rules import RAM_RESERVE_BYTES, rule_cpu, rule_data_disk, rule_ram
from gpuonboard.steps.checks.interconnect_rule import rule_interconnect
from gpuonboard.steps.checks.launched import launched_elsewhere
from gpuonboard.steps.checks.missing_facts import RERUN_ADVICE, fault_advice
from gpuonboard.steps.checks.model_match import (
    ModelMatch,
    match_model,
    model_matches,
    model_tokens,
    split_count,
)

__all__ = [
    "DEFAULT_TOLERANCE",
    "RAM_RESERVE_BYTES",
    "RERUN_ADVICE",
    "AcceptanceStep",
    "ModelMatch",
    "evaluate",
    "evaluated",
    "fault_advice",
    "match_model",
    "model_matches",
    "model_tokens",
    "rule_cpu",
    "rule_data_disk",
    "rule_driver",
    "rule_gpu_count",
    "rule_gpu_model",
    "rule_interconnect",
    "rule_min_driver",
    "rule_ram",
    "rule_vram",
    "split_count",
]

# (vram: the driver's reserved region and, on a GDDR card with ECC on, the 1/16 that ECC takes:
# an A10's 23028 MiB of 24 GiB, a T4's 15360 MiB of 16 GiB; the same class gpu_model's size uses)
DEFAULT_TOLERANCE = {"ram": 0.03, "vram": 0.08, "disk": 0.05}


def _fraction(key: str, value: object) -> float:
    """A tolerance argument: a number from 0 to 1, or its text (a templated argument renders
    as text: `"{{ vars.tol | default(0.05) }}"`)."""
    number: float | None = None
    if isinstance(value, int | float) and not isinstance(value, bool):
        number = float(value)
    elif isinstance(value, str):
        with contextlib.suppress(ValueError):
            number = float(value.strip())
    if number is None or not 0 <= number < 1:
        raise StepArgsError(f"argument {key!r} must be a fraction from 0 to 1, like 0.05, not {value!r}")
    return number


def evaluated(order: OrderSpec, facts: Facts, tolerance: Mapping[str, float] | None = None) -> list[Check]:
    """evaluate(), computed once per host's facts, order and tolerances (gather.memo)."""
    key = ("acceptance", order, tuple(sorted((tolerance or {}).items())))
    return list(memo(facts, key, lambda: tuple(evaluate(order, facts, dict(tolerance or {})))))


def evaluate(order: OrderSpec, facts: Facts, tolerance: dict[str, float] | None = None) -> list[Check]:
    """Every rule that the order specifies, in a stable order."""
    tol = {**DEFAULT_TOLERANCE, **(tolerance or {})}
    checks = [rule_driver(facts)]
    # (a DGX Station's display card is listed as a GPU: no GPU the order's model, count or
    # memory speaks of)
    compute, shown = without_display_adapters(facts)
    if order.gpu_model:
        checks.append(named_beside(rule_gpu_model(order, compute), shown))
    if order.gpu_count is not None:
        checks.append(named_beside(rule_gpu_count(order, compute), shown))
    if order.vram_bytes is not None:
        checks.append(named_beside(rule_vram(order, compute, tol["vram"]), shown))
    if order.cpu_cores is not None:
        checks.append(launched_elsewhere(rule_cpu(order, facts), facts))
    if order.ram_bytes is not None:
        checks.append(launched_elsewhere(rule_ram(order, facts, tol["ram"]), facts))
    if order.data_disk is not None:
        checks.append(launched_elsewhere(rule_data_disk(order, facts, tol["disk"]), facts))
    if order.interconnect is not None:
        checks.append(rule_interconnect(order, facts))
    if order.min_driver is not None:
        checks.append(rule_min_driver(order, facts))
    from gpuonboard.steps.checks.fabric_health import rdma_check

    rdma = rdma_check(facts, order)
    return checks + ([rdma] if rdma else [])


class AcceptanceStep(Step):
    """Compare facts with the host's order spec; read-only."""

    name = "acceptance"
    read_only = True
    ARGS = {
        "ram_tolerance": "fraction of ordered RAM that may be missing, besides 256 MiB (default 0.03)",
        "vram_tolerance": "fraction of ordered VRAM that may be missing (default 0.08)",
        "disk_tolerance": "fraction of the data disk size that may be missing (default 0.05)",
    }

    def __init__(self, args: dict[str, object], label: str | None = None) -> None:
        super().__init__(args, label)
        self.tolerance: dict[str, float] = {}
        for key, value in self.args.items():
            self.tolerance[key.removesuffix("_tolerance")] = _fraction(key, value)

    def plan(self, ctx: StepContext) -> Plan:
        """Evaluate every rule; failed when any rule fails."""
        checks = evaluated(ctx.host.order, ctx.facts, self.tolerance)
        fails = [c for c in checks if c.verdict == "fail"]
        warns = [c for c in checks if c.verdict == "warn"]
        unverified = [c.name for c in checks if c.verdict == "unverified"]
        tail = f"; {len(unverified)} unverified: {', '.join(unverified)}" if unverified else ""
        if fails:
            msg = f"{len(fails)} of {len(checks)} acceptance rules failed: " + ", ".join(
                c.name for c in fails
            )
        elif warns:
            msg = f"accepted with {len(warns)} warning(s) (degraded): " + ", ".join(c.name for c in warns)
        elif unverified:
            msg = f"accepted with {len(unverified)} rule(s) unverified: {', '.join(unverified)}"
            tail = ""
        else:
            msg = f"all {len(checks)} acceptance rules passed"
        return Plan(changes=False, msg=msg + tail, checks=checks, failed=bool(fails))
