"""Step `gpu_health`: the checks a careful engineer runs by hand on delivery. Read-only, pure rules.

Each rule covers every GPU of the host and yields expected / actual / verdict with one
sentence of advice. Thresholds come from the step's args, overridden per vendor or host by
`vars.gpu_health` in the inventory (e.g. a vendor whose cards run hot in a known-good way).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..facts.gather import TIMED_OUT, Facts
from ..facts.nvidia_smi import GpuInfo, GpuProcess
from ..facts.nvidia_smi_failure import HUNG_ADVICE, NOT_FOUND_ADVICE, UNKNOWN_CAUSE_ADVICE, nvidia_smi_failure
from ..inventory import Host
from ..ngc import gpu_class
from .acceptance import fault_advice
from .base import Check, Plan, Step, StepArgsError, StepContext, Verdict

DEFAULTS: dict[str, float] = {
    "temperature_warn": 80,  # degrees C
    "temperature_fail": 87,
    "power_cap_warn": 0.98,  # enforced limit / default limit
    "power_cap_fail": 0.85,
}
HARD_THROTTLE = ("hw_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown", "sw_thermal_slowdown")
IDLE_PSTATES = {f"P{i}" for i in range(5, 16)}


def _label(g: GpuInfo) -> str:
    return f"GPU {g.index}"


def _is_idle(g: GpuInfo) -> bool:
    """Idle GPUs downshift their PCIe link and clocks to save power (not a fault)."""
    return (
        "gpu_idle" in g.clock_event_reasons
        or (g.performance_state in IDLE_PSTATES)
        or (g.utilization_gpu_pct == 0 and g.performance_state is None)
    )


def rule_ecc_mode(gpus: list[GpuInfo]) -> Check:
    """ECC on for data-centre GPUs (consumer cards have none to enable)."""
    # a GPU nvidia-smi cannot read is no data (the gpu_health row fails it): said, not counted
    unread = ", ".join(_label(g) for g in gpus if g.faults)
    note = f" ({unread} unreadable)" if unread else ""
    dc = [g for g in gpus if not g.faults and gpu_class(g.name, g.product_brand) == "datacenter"]
    if not dc and unread and all(g.faults for g in gpus):
        return Check("ecc_mode", "Enabled", f"not judged: {unread} unreadable", "warn")
    if not dc:
        return Check(
            "ecc_mode", "enabled on data-centre GPUs", f"not applicable (no data-centre GPU){note}", "pass"
        )
    off = [g for g in dc if g.ecc_mode == "Disabled"]
    unknown = [g for g in dc if g.ecc_mode is None]
    if off:
        return Check(
            "ecc_mode",
            "Enabled",
            f"Disabled on {', '.join(_label(g) for g in off)}",
            "fail",
            "memory errors go undetected without ECC; ask the vendor to run `nvidia-smi -e 1` and reboot",
        )
    if unknown:
        return Check(
            "ecc_mode", "Enabled", f"not reported for {', '.join(_label(g) for g in unknown)}", "warn"
        )
    read = " read" if unread else ""
    return Check("ecc_mode", "Enabled", f"Enabled on all {len(dc)} GPUs{read}{note}", "pass")


def rule_ecc_errors(gpus: list[GpuInfo]) -> Check:
    """No uncorrectable ECC errors, volatile (since boot) or aggregate (lifetime)."""
    bad = []
    for g in gpus:
        vol, agg = g.ecc_volatile_uncorrectable or 0, g.ecc_aggregate_uncorrectable or 0
        if vol or agg:
            bad.append(f"{_label(g)}: {vol} volatile / {agg} aggregate")
    if bad:
        return Check(
            "ecc_uncorrectable",
            "0",
            "; ".join(bad),
            "fail",
            "uncorrectable memory errors corrupt training silently; ask the vendor for another GPU",
        )
    known = [
        g
        for g in gpus
        if g.ecc_volatile_uncorrectable is not None or g.ecc_aggregate_uncorrectable is not None
    ]
    if known:
        return Check("ecc_uncorrectable", "0", "0", "pass")
    if not any(g.ecc_mode == "Enabled" for g in gpus):
        return Check("ecc_uncorrectable", "0", "not applicable (ECC off or unsupported)", "pass")
    return Check(
        "ecc_uncorrectable", "0", "not reported", "warn", "nvidia-smi did not report ECC error counts"
    )


# What each memory-repair finding means and what to ask the vendor (one sentence each).
_REPAIR_ADVICE = {
    "failed": "row remapping failed: a memory bank had no spare row left for a bad row, so the"
    " bad memory stays in use; the GPU needs replacing (ask the vendor for another GPU)",
    "unrepairable": "unrepairable memory: the driver reports memory damage that neither row"
    " remapping nor channel repair can fix; ask the vendor for a replacement GPU",
    "channel": "channel repair pending: a faulty memory channel is marked for repair, which takes"
    " effect only after a GPU reset; ask the vendor to reset the GPU (`nvidia-smi -i N -r`) or"
    " reboot, then check again",
    "tpc": "TPC repair pending: a faulty TPC (a cluster of SMs) is marked to be switched off,"
    " which takes effect only after a GPU reset; ask the vendor to reset the GPU or reboot, then"
    " check again",
    "pending": "a pending row remap / page retirement takes effect only after a GPU reset: until"
    " then the bad memory row stays in use and training may hit uncorrectable errors; ask the"
    " vendor to reset the GPU (`nvidia-smi -i N -r`, no process may use it) or reboot, then check"
    " again (if a remap stays pending or fails after the reset, ask for another GPU)",
    "sram": "SRAM threshold exceeded: the GPU's on-chip SRAM (caches, register files) logged more"
    " uncorrectable errors than NVIDIA's field-diagnostic threshold; ask the vendor to run NVIDIA"
    " field diagnostics and replace the GPU if they fail",
    "unc_rows": "rows were remapped after uncorrectable errors: the memory already lost data once"
    " (contained by the remap); ask the vendor for the GPU's error history"
    " (`nvidia-smi -q -d ROW_REMAPPER`, Xid 63/64/94/95 in `dmesg`)",
    "banks": "the row-remapper histogram shows memory banks with low or no spare rows left; one"
    " more error in a bank with none cannot be remapped (a remap failure needs a new GPU);"
    " ask the vendor whether the GPU is due for replacement",
}


def rule_memory_repair(gpus: list[GpuInfo]) -> Check:
    """No pending or failed memory repair: row remaps, page retirement, channel/TPC repair.

    FAIL: remap failure, unrepairable memory, a pending remap / retirement / channel or TPC
    repair. WARN: SRAM error threshold exceeded, rows remapped after uncorrectable errors,
    banks with low or no spare rows (the row-remapper histogram). Fields a driver does not
    report (older drivers have no repair flags) are not held against the GPU.
    """
    fails: list[tuple[str, str]] = []  # (advice key, finding)
    warns: list[tuple[str, str]] = []
    for g in gpus:
        label = _label(g)
        if g.remapped_rows_failure:
            fails.append(("failed", f"{label}: row remapping FAILED"))
        if g.unrepairable_memory:
            fails.append(("unrepairable", f"{label}: unrepairable memory"))
        if g.remapped_rows_pending:
            fails.append(("pending", f"{label}: row remap pending"))
        if g.retired_pages_pending:
            fails.append(("pending", f"{label}: page retirement pending"))
        if g.channel_repair_pending:
            fails.append(("channel", f"{label}: channel repair pending"))
        if g.tpc_repair_pending:
            fails.append(("tpc", f"{label}: TPC repair pending"))
        if g.sram_threshold_exceeded:
            warns.append(("sram", f"{label}: SRAM error threshold exceeded"))
        if g.remapped_rows_uncorrectable:
            warns.append(
                (
                    "unc_rows",
                    f"{label}: {g.remapped_rows_uncorrectable} row(s) remapped after uncorrectable errors",
                )
            )
        if g.remap_banks_none or g.remap_banks_low:
            warns.append(
                (
                    "banks",
                    f"{label}: {g.remap_banks_none or 0} bank(s) with no spare row left,"
                    f" {g.remap_banks_low or 0} with few",
                )
            )
    findings = fails + warns
    if not findings:
        return Check("memory_repair", "nothing pending", "nothing pending", "pass")
    advice = "; ".join(_REPAIR_ADVICE[k] for k in dict.fromkeys(k for k, _ in findings))
    return Check(
        "memory_repair",
        "nothing pending",
        "; ".join(text for _, text in findings),
        "fail" if fails else "warn",
        advice[0].upper() + advice[1:] + ".",
    )


def _slot_capped(gpus: list[GpuInfo]) -> list[str]:
    """GPUs whose host slot supports a lower PCIe generation than the card (a Gen4 RTX 4090 in a
    Gen3 slot): the link's max is then the slot's, so a link at that max still runs below the
    card's; nvidia-smi (R520+) reports both as `max_device_link_gen` / `max_host_link_gen`."""
    return [
        f"{_label(g)} in a Gen{g.pcie_gen_host_max} slot (the card is Gen{g.pcie_gen_device_max})"
        for g in gpus
        if g.pcie_gen_host_max and g.pcie_gen_device_max and g.pcie_gen_host_max < g.pcie_gen_device_max
    ]


def rule_pcie_link(gpus: list[GpuInfo]) -> Check:
    """PCIe link at the card's max generation and width (gen may drop while idle)."""
    narrow: list[str] = []
    slow_busy: list[str] = []
    slow_idle: list[str] = []
    for g in gpus:
        if g.pcie_width_current and g.pcie_width_max and g.pcie_width_current < g.pcie_width_max:
            narrow.append(f"{_label(g)} x{g.pcie_width_current} of x{g.pcie_width_max}")
        if g.pcie_gen_current and g.pcie_gen_max and g.pcie_gen_current < g.pcie_gen_max:
            (slow_idle if _is_idle(g) else slow_busy).append(
                f"{_label(g)} Gen{g.pcie_gen_current} of Gen{g.pcie_gen_max}"
            )
    if narrow or slow_busy:
        return Check(
            "pcie_link",
            "max gen and width",
            "; ".join(narrow + slow_busy),
            "fail",
            "a narrower or slower link than the card supports hints at a riser/slot fault or a"
            " virtualisation limit; ask the vendor to check the slot",
        )
    capped = _slot_capped(gpus)
    if slow_idle or capped:
        advice = []
        if capped:
            advice.append(
                "the host's slot or platform runs the link below the card's own PCIe generation, at"
                " half its host-to-GPU bandwidth or less (slower data loading, offload and"
                " multi-GPU traffic over PCIe); ask the vendor for a slot or server of the card's"
                " generation"
            )
        if slow_idle:
            advice.append(
                "the GPU is idle and its link downshifts to save power; rerun under load to be sure"
            )
        return Check(
            "pcie_link", "max gen and width", "; ".join(capped + slow_idle), "warn", "; ".join(advice)
        )
    known = any(g.pcie_gen_current for g in gpus)
    return Check(
        "pcie_link", "max gen and width", "at max" if known else "not reported", "pass" if known else "warn"
    )


def rule_power_limit(gpus: list[GpuInfo], warn_ratio: float, fail_ratio: float) -> Check:
    """Enforced power limit not capped below the card's default."""
    capped: list[tuple[GpuInfo, float]] = []
    for g in gpus:
        if (
            g.power_limit_w
            and g.default_power_limit_w
            and g.power_limit_w < g.default_power_limit_w * warn_ratio
        ):
            capped.append((g, g.power_limit_w / g.default_power_limit_w))
    if capped:
        text = "; ".join(
            f"{_label(g)} {g.power_limit_w:.0f} W of {g.default_power_limit_w:.0f} W" for g, _ in capped
        )
        verdict: Verdict = "fail" if any(r < fail_ratio for _, r in capped) else "warn"
        return Check(
            "power_limit",
            "default power limit",
            text,
            verdict,
            "a capped power limit lowers training speed; ask the vendor to restore it (nvidia-smi -pl)",
        )
    # "at default" needs the default: the plain table prints only the enforced cap
    # ("Pwr:Usage/Cap"), which cannot tell a capped card from one at its default
    if any(g.power_limit_w and g.default_power_limit_w for g in gpus):
        return Check("power_limit", "default power limit", "at default", "pass")
    enforced = sorted({f"{g.power_limit_w:.0f} W" for g in gpus if g.power_limit_w})
    return Check(
        "power_limit",
        "default power limit",
        f"enforced {', '.join(enforced)}; default not reported" if enforced else "not reported",
        "warn",
        "this nvidia-smi output does not give the default power limit, so a capped card cannot be"
        " told from one at its default; `nvidia-smi -q -d POWER` shows both"
        if enforced
        else "",
    )


def rule_throttle(gpus: list[GpuInfo]) -> Check:
    """No hardware slowdown or thermal throttling active; a software power cap is a warning."""
    hard, soft = [], []
    for g in gpus:
        active = [r for r in g.clock_event_reasons if r in HARD_THROTTLE]
        if active:
            hard.append(f"{_label(g)}: {', '.join(active)}")
        if "sw_power_cap" in g.clock_event_reasons:
            soft.append(f"{_label(g)}: sw_power_cap")
    if hard:
        return Check(
            "throttling",
            "no slowdown active",
            "; ".join(hard + soft),
            "fail",
            "the GPU slows itself down (heat, power brake or a hardware fault);"
            " ask the vendor to check cooling and power",
        )
    if soft:
        return Check(
            "throttling",
            "no slowdown active",
            "; ".join(soft),
            "warn",
            "clocks are held at the power limit; normal under full load, suspicious at idle",
        )
    known = any(g.clock_event_reasons_known for g in gpus)
    return Check(
        "throttling",
        "no slowdown active",
        "none active" if known else "not reported",
        "pass" if known else "warn",
    )


def rule_temperature(gpus: list[GpuInfo], warn_c: float, fail_c: float) -> Check:
    """GPU temperature below the thresholds (lower of the configured and the card's slowdown point)."""
    temps = [(g, g.temperature_c) for g in gpus if g.temperature_c is not None]
    if not temps:
        return Check("temperature", f"< {warn_c:.0f} C", "not reported", "warn")
    g, hottest = max(temps, key=lambda x: x[1] or 0)
    assert hottest is not None
    limit = fail_c if g.temperature_slowdown_c is None else min(fail_c, g.temperature_slowdown_c - 2)
    actual = f"{hottest} C on {_label(g)}"
    if hottest >= limit:
        return Check(
            "temperature",
            f"< {limit:.0f} C",
            actual,
            "fail",
            "the GPU is near its slowdown point; ask the vendor to check airflow and fans",
        )
    if hottest >= warn_c:
        return Check(
            "temperature",
            f"< {warn_c:.0f} C",
            actual,
            "warn",
            "hot for a delivery check; watch it under load",
        )
    return Check("temperature", f"< {warn_c:.0f} C", actual, "pass")


def rule_foreign_processes(gpus: list[GpuInfo]) -> Check:
    """Nobody else's job runs on 'your' GPUs."""

    def fmt(g: GpuInfo, p: GpuProcess) -> str:
        return f"{_label(g)}: pid {p.pid} {p.name} ({p.used_memory_mib} MiB)"

    compute = [fmt(g, p) for g in gpus for p in g.processes if p.type != "G"]
    graphics = [fmt(g, p) for g in gpus for p in g.processes if p.type == "G"]
    if compute:
        return Check(
            "foreign_processes",
            "none",
            "; ".join(compute + graphics),
            "fail",
            "another job is using the GPUs you rent; ask the vendor before you start",
        )
    if graphics:
        return Check(
            "foreign_processes",
            "none",
            "; ".join(graphics),
            "warn",
            "a graphics process (e.g. a display server) holds GPU memory on a server you rent headless",
        )
    known = all(g.processes_known for g in gpus)
    return Check(
        "foreign_processes", "none", "none" if known else "not reported", "pass" if known else "warn"
    )


def rule_persistence(gpus: list[GpuInfo]) -> Check:
    """Persistence mode on (else every CUDA start pays driver initialisation)."""
    off = [_label(g) for g in gpus if g.persistence_mode == "Disabled"]
    if off:
        return Check(
            "persistence_mode",
            "Enabled",
            f"Disabled on {', '.join(off)}",
            "warn",
            "enable it with `sudo nvidia-smi -pm 1` (or the nvidia-persistenced service)",
        )
    # N/A (an integrated GPU, some vGPUs) is not "Enabled": say that it was not reported
    known = [g for g in gpus if g.persistence_mode is not None]
    return Check("persistence_mode", "Enabled", "Enabled" if known else "not reported", "pass")


def rule_mig(gpus: list[GpuInfo]) -> Check:
    """MIG splits a GPU into instances: CUDA then sees only MIG instances (one per process, or
    none until instances are created), so a whole-GPU order is not usable for training.

    WARN when MIG is enabled now, or pending (enabled after the next GPU reset / reboot): some
    rentals are MIG slices on purpose, and the order has no field saying which; the report's
    headline names the warning ("GO with 1 warning: mig_mode"), and the message says what to ask.
    """
    on = [g for g in gpus if g.mig_mode == "Enabled"]
    pending_on = [g for g in gpus if g.mig_mode != "Enabled" and g.mig_mode_pending == "Enabled"]
    pending_off = [g for g in on if g.mig_mode_pending == "Disabled"]
    if not on and not pending_on:
        return Check("mig_mode", "Disabled (whole GPUs)", "Disabled", "pass")
    parts = []
    if on:
        text = f"Enabled on {_gpu_list(on, gpus)}"
        if pending_off:
            text += f" (Disabled pending a GPU reset on {_gpu_list(pending_off, gpus)})"
        parts.append(text)
    if pending_on:
        parts.append(f"Enabled pending a GPU reset on {_gpu_list(pending_on, gpus)}")
    todo = [g for g in on + pending_on if g not in pending_off]
    if todo:
        fix = (
            "ask the vendor to disable MIG with `sudo nvidia-smi -i N -mig 0` for N in"
            f" {', '.join(str(g.index) for g in todo)}, then reset those GPUs"
            " (`sudo nvidia-smi -i N -r`) or reboot, and check again"
        )
    else:
        fix = (
            "MIG is already set to Disabled from the next GPU reset: ask the vendor to reset the"
            " GPUs (`sudo nvidia-smi -i N -r`) or reboot, and check again"
        )
    return Check(
        "mig_mode",
        "Disabled (whole GPUs)",
        "; ".join(parts),
        "warn",
        "MIG mode partitions each GPU into instances: CUDA sees only MIG instances (or none), so"
        f" whole GPUs cannot be used for training; if whole GPUs were ordered, {fix}.",
    )


def _gpu_list(some: list[GpuInfo], every: list[GpuInfo]) -> str:
    """'GPU 0, GPU 3', or 'all 8 GPUs' when `some` is every GPU of the host."""
    if len(some) == len(every) > 1:
        return f"all {len(every)} GPUs"
    return ", ".join(_label(g) for g in some)


def rule_virtualization(gpus: list[GpuInfo]) -> Check:
    """Report pass-through or vGPU: bare metal vs a VM changes what you pay for."""
    modes = sorted({g.virtualization_mode for g in gpus if g.virtualization_mode})
    if not modes:
        return Check("virtualization", "(information)", "not reported", "pass")
    vgpu = [m for m in modes if "VGPU" in m.upper()]
    if vgpu:
        return Check(
            "virtualization",
            "bare metal or pass-through",
            ", ".join(modes),
            "warn",
            "a vGPU shares the physical GPU; check the order said so",
        )
    return Check("virtualization", "bare metal or pass-through", ", ".join(modes), "pass")


def rule_nothing_checked(facts: Facts) -> Check:
    """The host has no GPU nvidia-smi could report: not a healthy box, an unchecked one.

    FAIL, like acceptance's `nvidia_driver` rule for the same facts (missing driver, nvidia-smi
    failing, hung or listing no GPU); a failing nvidia-smi is quoted (its own line, as
    `nvidia_driver` quotes it) and the advice follows its cause."""
    raw = facts.raw.get("nvidia_smi")
    line, advice = ("", "") if raw is None else nvidia_smi_failure(raw.stdout, raw.stderr)
    quoted = f": {line[:160]}" if line else ""
    if not facts.nvidia_smi_present:
        actual = "nothing checked: nvidia-smi not found (no NVIDIA driver)"
        advice = NOT_FOUND_ADVICE
    elif raw is not None and raw.exit_code == TIMED_OUT:
        actual = "nothing checked: nvidia-smi did not answer (stopped)"
        advice = HUNG_ADVICE
    elif facts.gpu is None:
        code = "" if raw is None else f" (exit code {raw.exit_code})"
        actual = f"nothing checked: nvidia-smi failed{code}{quoted}"
        advice = advice or UNKNOWN_CAUSE_ADVICE
    else:
        # it answered (exit 0); "No devices were found" is such an answer
        actual = "nothing checked: nvidia-smi listed no GPU" + (quoted if advice else "")
        advice = advice or "run `nvidia-smi -L` on the host to see which GPUs the driver finds"
    return Check(
        "gpu_health",
        "health of every GPU checked",
        actual,
        "fail",
        f"no ECC, memory-repair, PCIe, power, throttling or MIG check could run; {advice}",
    )


def rule_unreadable(gpus: list[GpuInfo]) -> Check | None:
    """GPUs nvidia-smi lists but cannot read (`ERR!`, `[GPU requires reset]`, `[GPU is lost]`):
    every other rule sees only "not reported" for them, so this one fails. None when every GPU
    answered (the `gpu_health` row appears only when some GPU could not be checked)."""
    bad = [g for g in gpus if g.faults]
    if not bad:
        return None

    def where(g: GpuInfo) -> str:
        bus = f" ({g.pci_bus_id})" if g.pci_bus_id else ""
        return f"{_label(g)}{bus}: nvidia-smi reads {' / '.join(g.faults)}"

    return Check(
        "gpu_health",
        "health of every GPU checked",
        "; ".join(where(g) for g in bad),
        "fail",
        fault_advice(g.index for g in bad),
    )


def evaluate(facts: Facts, thresholds: Mapping[str, float] | None = None) -> list[Check]:
    """All health rules over the host's GPUs (none when the driver is absent)."""
    t = {**DEFAULTS, **(thresholds or {})}
    gpus = list(facts.gpu.gpus) if facts.gpu else []
    if not gpus:
        return []
    unreadable = rule_unreadable(gpus)
    rules: list[Callable[[], Check]] = [
        lambda: rule_ecc_mode(gpus),
        lambda: rule_ecc_errors(gpus),
        lambda: rule_memory_repair(gpus),
        lambda: rule_pcie_link(gpus),
        lambda: rule_power_limit(gpus, t["power_cap_warn"], t["power_cap_fail"]),
        lambda: rule_throttle(gpus),
        lambda: rule_temperature(gpus, t["temperature_warn"], t["temperature_fail"]),
        lambda: rule_foreign_processes(gpus),
        lambda: rule_persistence(gpus),
        lambda: rule_mig(gpus),
        lambda: rule_virtualization(gpus),
    ]
    return ([unreadable] if unreadable else []) + [r() for r in rules]


def thresholds_from(args: Mapping[str, Any], host_vars: Mapping[str, Any]) -> dict[str, float]:
    """Step args, overridden by the inventory's `vars.gpu_health` (vendor, group or host)."""
    overrides = host_vars.get("gpu_health") or {}
    if not isinstance(overrides, Mapping):
        raise StepArgsError("vars.gpu_health must be a mapping of threshold: number")
    merged = {**args, **overrides}
    out: dict[str, float] = {}
    for key, value in merged.items():
        if key not in DEFAULTS:
            raise StepArgsError(f"unknown gpu_health threshold {key!r} (known: {', '.join(DEFAULTS)})")
        try:
            out[key] = float(value)
        except (TypeError, ValueError):
            raise StepArgsError(f"gpu_health threshold {key!r} must be a number, not {value!r}") from None
    return out


class GpuHealthStep(Step):
    """Read-only GPU health checks (ECC, memory repair, PCIe, power, throttling, processes)."""

    name = "gpu_health"
    read_only = True
    ARGS = {k: f"threshold (default {v})" for k, v in DEFAULTS.items()}

    def check_host(self, host: Host) -> None:
        """Thresholds from `vars.gpu_health` must be known names and numbers."""
        thresholds_from(self.args, host.vars)

    def plan(self, ctx: StepContext) -> Plan:
        """Evaluate every rule; failed when any fails, or when no GPU could be checked at all."""
        try:
            thresholds = thresholds_from(self.args, ctx.host.vars)
        except StepArgsError as exc:
            return Plan(False, f"bad gpu_health threshold: {exc}", failed=True)
        checks = evaluate(ctx.facts, thresholds)
        if not checks:
            # Nothing was checked: that is a failure, as acceptance's nvidia_driver rule says.
            check = rule_nothing_checked(ctx.facts)
            return Plan(False, f"no GPU health check could run: {check.actual}", checks=[check], failed=True)
        fails = [c.name for c in checks if c.verdict == "fail"]
        warns = [c.name for c in checks if c.verdict == "warn"]
        if fails:
            msg = f"{len(fails)} of {len(checks)} GPU health checks failed: {', '.join(fails)}"
        elif warns:
            msg = f"GPUs healthy with {len(warns)} warning(s): {', '.join(warns)}"
        else:
            msg = f"all {len(checks)} GPU health checks passed"
        return Plan(False, msg, checks=checks, failed=bool(fails))
