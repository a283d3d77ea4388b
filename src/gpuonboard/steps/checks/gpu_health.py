"""Step `gpu_health`: the checks a careful engineer runs by hand on delivery. Read-only, pure rules.

Each rule covers every GPU of the host and yields expected / actual / verdict with one
sentence of advice. Thresholds come from the step's args, overridden per vendor or host by
`vars.gpu_health` in the inventory (e.g. a vendor whose cards run hot in a known-good way).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from typing import Any

import yaml

from gpuonboard.connection.gather import TIMED_OUT, Facts, memo
from gpuonboard.facts.nvidia_smi import GpuInfo, GpuProcess
from gpuonboard.facts.nvidia_smi_failure import (
    HUNG_ADVICE,
    NOT_FOUND_ADVICE,
    UNKNOWN_CAUSE_ADVICE,
    nvidia_smi_failure,
)
from gpuonboard.inventory import Host
from gpuonboard.resources import DATA_DIR
from gpuonboard.steps.base import Check, Plan, Step, StepArgsError, StepContext, Verdict
from gpuonboard.steps.checks.acceptance import fault_advice
from gpuonboard.steps.checks.ngc import gpu_class

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


ECC_ENABLE_ADVICE = (
    "enable it with `sudo nvidia-smi -e 1` (per GPU: `-i N -e 1`) and a reboot; ECC costs about"
    " 6 % of usable memory and some memory bandwidth, and without it memory errors corrupt"
    " results silently"
)


def rule_ecc_mode(gpus: list[GpuInfo]) -> Check:
    """ECC on for data-centre GPUs; a workstation / pro card with ECC switched off is said too.

    `ecc_mode` None is N/A (the card has no ECC to enable: GeForce, integrated GPUs) and is not
    applicable. "Disabled" means the card has ECC and it is off: FAIL on a data-centre GPU (A100,
    H100, L40S, A10 ...), WARN on an NVIDIA RTX / Quadro workstation card (RTX A6000, RTX 6000
    Ada, RTX 4000 SFF Ada ...) or an unrecognised one (ECC is optional there, and costs memory),
    and named without a verdict against it on a GeForce card (a consumer card is not expected to
    run with ECC). A data-centre GPU whose mode could not be read is unverified.
    """
    # a GPU nvidia-smi cannot read is no data (the gpu_health row fails it): said, not counted
    unread = ", ".join(_label(g) for g in gpus if g.faults)
    note = f" ({unread} unreadable)" if unread else ""
    read = [g for g in gpus if not g.faults]
    if not read and unread:
        return Check("ecc_mode", "Enabled", f"not judged: {unread} unreadable", "warn")
    klass = {g.index: gpu_class(g.name, g.product_brand) for g in read}
    dc = [g for g in read if klass[g.index] == "datacenter"]
    off_dc = [g for g in dc if g.ecc_mode == "Disabled"]
    off_pro = [g for g in read if klass[g.index] in ("professional", "unknown") and g.ecc_mode == "Disabled"]
    off_consumer = [g for g in read if klass[g.index] == "consumer" and g.ecc_mode == "Disabled"]
    unknown = [g for g in dc if g.ecc_mode is None]
    if off_dc:
        return Check(
            "ecc_mode",
            "Enabled",
            f"Disabled on {_gpu_list(off_dc, gpus)} (data-centre GPU)"
            + (f"; Disabled on {_gpu_list(off_pro, gpus)} (workstation GPU)" if off_pro else "")
            + note,
            "fail",
            "memory errors go undetected without ECC; ask the vendor to run `sudo nvidia-smi -e 1`"
            " and reboot",
        )
    if off_pro:
        return Check(
            "ecc_mode",
            "Enabled where the GPU supports it",
            f"Disabled on {_gpu_list(off_pro, gpus)} (workstation GPU with ECC)" + note,
            "warn",
            f"this card supports ECC but runs without it; {ECC_ENABLE_ADVICE}",
        )
    if unknown:
        return Check(
            "ecc_mode",
            "Enabled",
            f"not reported for {_gpu_list(unknown, gpus)}{note}",
            "unverified",
            "nvidia-smi gave no ECC mode for a data-centre GPU; `nvidia-smi -q -d ECC` shows it",
        )
    if dc:
        read_note = " read" if unread else ""
        return Check("ecc_mode", "Enabled", f"Enabled on all {len(dc)} GPUs{read_note}{note}", "pass")
    if off_consumer:
        return Check(
            "ecc_mode",
            "enabled on data-centre GPUs",
            f"Disabled on {_gpu_list(off_consumer, gpus)} (GeForce card: ECC optional, not expected)" + note,
            "pass",
        )
    return Check(
        "ecc_mode", "enabled on data-centre GPUs", f"not applicable (no ECC on these GPUs){note}", "pass"
    )


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
    unknown_dc = [
        g for g in gpus if g.ecc_mode is None and gpu_class(g.name, g.product_brand) == "datacenter"
    ]
    if not any(g.ecc_mode == "Enabled" for g in gpus) and not unknown_dc:
        return Check("ecc_uncorrectable", "0", "not applicable (ECC off or unsupported)", "pass")
    # ECC is on but this output carries no error counts (the plain table has only the volatile
    # column): an uncorrectable error could hide there, so it is unverified, not a pass
    return Check(
        "ecc_uncorrectable",
        "0",
        "not reported",
        "unverified",
        "nvidia-smi did not report ECC error counts; `nvidia-smi -q -d ECC` shows them",
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


def _repair_reported(g: GpuInfo) -> bool:
    """The output said something about this GPU's memory repair state."""
    return any(
        v is not None
        for v in (
            g.retired_pages_pending,
            g.remapped_rows_pending,
            g.remapped_rows_failure,
            g.unrepairable_memory,
            g.channel_repair_pending,
            g.tpc_repair_pending,
        )
    )


def rule_memory_repair(gpus: list[GpuInfo], detailed: bool = True) -> Check:
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
    silent = [
        g
        for g in gpus
        if not g.faults and not _repair_reported(g) and gpu_class(g.name, g.product_brand) == "datacenter"
    ]
    if not findings and silent and not detailed:
        # a data-centre GPU repairs its memory (row remapping, page retirement): the plain table
        # and the CSV report none of it, so they cannot show a repair pending (-q / -q -x say
        # N/A where there is nothing to report, e.g. in MIG mode)
        return Check(
            "memory_repair",
            "nothing pending",
            f"not reported for {_gpu_list(silent, gpus)}",
            "unverified",
            "`nvidia-smi -q -d ROW_REMAPPER,PAGE_RETIREMENT` shows pending repairs",
        )
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
    if known:
        return Check("pcie_link", "max gen and width", "at max", "pass")
    # the plain table carries no link generation / width: a narrowed link (a riser fault) could
    # hide there, so unverified rather than a plain warning
    return Check(
        "pcie_link",
        "max gen and width",
        "not reported",
        "unverified",
        "this nvidia-smi output gives no PCIe link generation or width; `nvidia-smi -q -d PCIE` shows them",
    )


PCIE_REPLAY_FILE = DATA_DIR / "pcie_replay.yml"


@functools.cache
def pcie_replay_limits() -> dict[str, int]:
    """warn_replays / fail_replays / fail_rollovers from `data/pcie_replay.yml` (sources there)."""
    rows = yaml.safe_load(PCIE_REPLAY_FILE.read_text(encoding="utf-8"))
    limits = {str(r["name"]): int(r["value"]) for r in rows}
    missing = {"warn_replays", "fail_replays", "fail_rollovers"} - set(limits)
    if missing:
        raise ValueError(f"{PCIE_REPLAY_FILE}: missing {', '.join(sorted(missing))}")
    return limits


def rule_pcie_replays(gpus: list[GpuInfo]) -> Check | None:
    """PCIe replays since reset per GPU (`nvidia-smi -q` / `-q -x` only): a link resending packets.

    Thresholds in `data/pcie_replay.yml`, from DCGM's PCIe health watch (more than 8 replays a
    minute, "the maximum recommended by RM", is DCGM_FR_PCI_REPLAY_RATE): one reading has no time
    base, so counts are judged. FAIL: any replay-number rollover (the link retrained after a
    packet was replayed 4 times) or >= 1000 replays; WARN: >= 100; PASS below, with the count.
    Not reported (the plain table and the CSV query carry no replay counter): UNVERIFIED when a
    data-centre GPU is among them (a bad riser / PCIe switch on a rented server hides there);
    otherwise the row is left out (None), as for GPUs whose link is not a rented server's
    concern and where the table is the usual output.
    """
    lim = pcie_replay_limits()
    read = [g for g in gpus if not g.faults]
    known = [g for g in read if g.pcie_replays is not None or g.pcie_replay_rollovers is not None]
    expected = f"< {lim['warn_replays']} replays since reset, no rollover"
    if not known:
        dc = [g for g in read if gpu_class(g.name, g.product_brand) == "datacenter"]
        if not dc:
            return None
        return Check(
            "pcie_replays",
            expected,
            "not reported by this nvidia-smi output",
            "unverified",
            "the PCIe replay counter (a bad riser or slot shows there) is only in `nvidia-smi -q`"
            " (PCI > Replays Since Reset); run it to check",
        )
    fails: list[str] = []
    warns: list[str] = []
    for g in known:
        replays, rollovers = g.pcie_replays or 0, g.pcie_replay_rollovers or 0
        text = f"{_label(g)}: {replays} replays" + (f", {rollovers} rollover(s)" if rollovers else "")
        if rollovers >= lim["fail_rollovers"] or replays >= lim["fail_replays"]:
            fails.append(text)
        elif replays >= lim["warn_replays"]:
            warns.append(text)
    advice = (
        "the PCIe link resends packets (a bad riser, cable, retimer or slot); DCGM warns above 8"
        " replays a minute; ask the vendor to reseat or replace the riser / slot"
    )
    if fails:
        return Check("pcie_replays", expected, "; ".join(fails + warns), "fail", advice)
    if warns:
        return Check(
            "pcie_replays",
            expected,
            "; ".join(warns),
            "warn",
            advice + "; rerun `nvidia-smi -q -d PCIE` a minute later: a count still rising means a bad link",
        )
    counts = ", ".join(str(g.pcie_replays or 0) for g in known)
    unread = [g for g in read if g not in known]
    note = f"; not reported for {_gpu_list(unread, gpus)}" if unread else ""
    return Check("pcie_replays", expected, f"{counts} replays since reset, no rollover{note}", "pass")


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
        "unverified",
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
    if known:
        return Check("throttling", "no slowdown active", "none active", "pass")
    # no clock-event reasons in this output (the plain table): an active hardware slowdown could
    # hide there, so unverified rather than a plain warning
    return Check(
        "throttling",
        "no slowdown active",
        "not reported",
        "unverified",
        "this nvidia-smi output gives no clock-event (throttle) reasons; `nvidia-smi -q -d PERFORMANCE`"
        " shows them",
    )


def rule_temperature(gpus: list[GpuInfo], warn_c: float, fail_c: float) -> Check:
    """GPU temperature below the thresholds (lower of the configured and the card's slowdown point)."""
    temps = [(g, g.temperature_c) for g in gpus if g.temperature_c is not None]
    if not temps:
        return Check(
            "temperature",
            f"< {warn_c:.0f} C",
            "not reported",
            "unverified",
            "no nvidia-smi format that answered reports the GPU temperature",
        )
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
    return f"{_label(g)} {at} with {mem}"


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
        return f"{_label(g)}: pid {p.pid} {p.name} ({p.used_memory_mib} MiB)"

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
            f"not reported for {_gpu_list(unjudged, gpus)}: no process list and no utilisation /"
            " memory figures",
            "unverified",
            "this nvidia-smi output lists no processes; `nvidia-smi` (the table) or"
            " `nvidia-smi --query-compute-apps=pid,used_memory --format=csv` shows them",
        )
    figures = ", ".join(f"{_label(g)} {g.utilization_gpu_pct} % / {g.memory_used_mib} MiB" for g in no_list)
    return Check(
        "foreign_processes",
        "none",
        f"none by utilisation and memory used ({figures}); this output lists no processes",
        "pass",
    )


def rule_sensor_faults(gpus: list[GpuInfo]) -> Check | None:
    """A sensor nvidia-smi cannot read on a GPU that otherwise answers (`cell_faults`, e.g. the
    fan column reading `ERR!`): WARN, naming it; the GPU is not failed for it (a whole GPU that
    cannot be read is the `gpu_health` row's). None when no such fault (the row appears only
    then)."""
    found = [f"{_label(g)}: {fault}" for g in gpus for fault in g.cell_faults]
    if not found:
        return None
    return Check(
        "sensor_faults",
        "every sensor readable",
        "; ".join(found),
        "warn",
        "a sensor the driver cannot read often means a failing fan or sensor (a fan that has"
        " stopped lets the GPU overheat under load); ask the vendor to check it",
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


# GPUs that have MIG (NVIDIA's MIG user guide, "Supported GPUs": A100, A30, H100, H200, H800,
# H20, A800, B200, GB200, RTX PRO 6000 Blackwell); others print N/A, which is no MIG at all
_MIG_CAPABLE = re.compile(
    r"\b(A100|A30|A800|H100|H200|H800|H20|GH200|B200|GB200|B300|GB300)\b", re.IGNORECASE
)


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
    unknown = [g for g in gpus if g.mig_mode is None and _MIG_CAPABLE.search(g.name)]
    if not on and not pending_on and unknown:
        # a MIG-capable GPU whose mode no format reported: whole GPUs are not shown
        return Check(
            "mig_mode",
            "Disabled (whole GPUs)",
            f"not reported for {_gpu_list(unknown, gpus)}",
            "unverified",
            "`nvidia-smi -L` lists MIG devices under a GPU in MIG mode; `nvidia-smi -q` shows the mode",
        )
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
    raw = facts.gpu_raw if "nvidia_smi" in facts.raw else None
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
    unread = facts.unread_not_a_fault()
    if unread:
        # a provider's policy, an output cut short, text that is no listing: the GPUs could not
        # be read, which says nothing about them
        return Check(
            "gpu_health",
            "health of every GPU checked",
            f"nothing checked: {unread}",
            "unverified",
            "the GPUs could not be read (not a broken driver): rerun `invoke check`; where the"
            " provider blocks nvidia-smi's formats, ask which format they allow",
        )
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


def evaluated(facts: Facts, thresholds: Mapping[str, float] | None = None) -> list[Check]:
    """evaluate(), computed once per host's facts and thresholds (gather.memo)."""
    key = ("gpu_health", tuple(sorted((thresholds or {}).items())))
    return list(memo(facts, key, lambda: tuple(evaluate(facts, thresholds))))


def evaluate(facts: Facts, thresholds: Mapping[str, float] | None = None) -> list[Check]:
    """All health rules over the host's GPUs (none when the driver is absent), then the fabric
    rules (kernel Xid/SXid, NVLink links, Fabric Manager: steps/fabric_health.py), which read
    other outputs than nvidia-smi's and so run even when no GPU could be read."""
    from gpuonboard.steps.checks.fabric_health import health_checks

    return _gpu_rules(facts, thresholds) + health_checks(facts)


def _gpu_rules(facts: Facts, thresholds: Mapping[str, float] | None) -> list[Check]:
    t = {**DEFAULTS, **(thresholds or {})}
    gpus = list(facts.gpu.gpus) if facts.gpu else []
    if not gpus:
        return []
    unreadable = rule_unreadable(gpus)
    # -q or -q -x answered: their N/A is an answer (the table and the CSV carry no repair state)
    source = facts.gpu.source if facts.gpu else ""
    detailed = "xml" in source or "text" in source
    rules: list[Callable[[], Check | None]] = [
        lambda: rule_ecc_mode(gpus),
        lambda: rule_ecc_errors(gpus),
        lambda: rule_memory_repair(gpus, detailed),
        lambda: rule_pcie_link(gpus),
        lambda: rule_pcie_replays(gpus),
        lambda: rule_power_limit(gpus, t["power_cap_warn"], t["power_cap_fail"]),
        lambda: rule_throttle(gpus),
        lambda: rule_temperature(gpus, t["temperature_warn"], t["temperature_fail"]),
        lambda: rule_sensor_faults(gpus),
        lambda: rule_foreign_processes(gpus),
        lambda: rule_persistence(gpus),
        lambda: rule_mig(gpus),
        lambda: rule_virtualization(gpus),
    ]
    checks = [c for r in rules if (c := r()) is not None]
    return ([unreadable] if unreadable else []) + checks


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
        checks = evaluated(ctx.facts, thresholds)
        if not (ctx.facts.gpu and ctx.facts.gpu.gpus):
            # No GPU was checked: that is a failure, as acceptance's nvidia_driver rule says (the
            # kernel log's Xid lines still say why, when it could be read)
            check = rule_nothing_checked(ctx.facts)
            # (a provider's policy block is unverified, not a failure of the box)
            failed = check.verdict == "fail" or any(c.verdict == "fail" for c in checks)
            return Plan(
                False,
                f"no GPU health check could run: {check.actual}",
                checks=[check, *checks],
                failed=failed,
            )
        fails = [c.name for c in checks if c.verdict == "fail"]
        warns = [c.name for c in checks if c.verdict == "warn"]
        unverified = [c.name for c in checks if c.verdict == "unverified"]
        if fails:
            msg = f"{len(fails)} of {len(checks)} GPU health checks failed: {', '.join(fails)}"
        elif warns:
            msg = f"GPUs healthy with {len(warns)} warning(s): {', '.join(warns)}"
        elif unverified:
            msg = f"all {len(checks) - len(unverified)} GPU health checks that could run passed"
        else:
            msg = f"all {len(checks)} GPU health checks passed"
        if unverified:
            msg += f"; {len(unverified)} unverified: {', '.join(unverified)}"
        return Plan(False, msg, checks=checks, failed=bool(fails))
