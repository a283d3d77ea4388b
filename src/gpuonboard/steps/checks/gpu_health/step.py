"""The gpu_health step: every rule over the host's GPUs in order (then the fabric rules), the
thresholds from the step's args and `vars.gpu_health`, and `GpuHealthStep`'s plan."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from gpuonboard.connection.gather import Facts, memo
from gpuonboard.facts.gpu_agree import LISTINGS
from gpuonboard.facts.gpu_list import parse_gpu_list
from gpuonboard.facts.gpu_probes import LIST_PROBE
from gpuonboard.facts.kernel_log import sandbox_of
from gpuonboard.facts.nvidia_smi import GpuInfo
from gpuonboard.facts.nvidia_smi.faults import FIELD_RULES, blocked_faults, rule_reads
from gpuonboard.facts.nvidia_smi.reasons import CLOCK_EVENT_REASONS
from gpuonboard.inventory import Host
from gpuonboard.steps.base import Check, Plan, Step, StepArgsError, StepContext
from gpuonboard.steps.checks.gpu_health.clocks import rule_power_limit, rule_temperature, rule_throttle
from gpuonboard.steps.checks.gpu_health.common import (
    BLOCKED_ADVICE,
    DEFAULTS,
    HARD_THROTTLE,
    gpu_label,
    gpu_list,
)
from gpuonboard.steps.checks.gpu_health.guest import wsl_sign
from gpuonboard.steps.checks.gpu_health.memory import (
    UNREADABLE_GPUS,
    rule_ecc_errors,
    rule_ecc_mode,
    rule_memory_repair,
)
from gpuonboard.steps.checks.gpu_health.modes import (
    mig_capable,
    rule_compute_mode,
    rule_mig,
    rule_persistence,
    rule_vgpu_license,
    rule_virtualization,
)
from gpuonboard.steps.checks.gpu_health.pcie import bounded_host_max, rule_pcie_link, rule_pcie_replays
from gpuonboard.steps.checks.gpu_health.readable import (
    rule_nothing_checked,
    rule_sensor_faults,
    rule_unreadable,
)
from gpuonboard.steps.checks.gpu_health.recovery import rule_recovery_action
from gpuonboard.steps.checks.gpu_health.usage import CUT_LIST, rule_foreign_processes
from gpuonboard.steps.checks.missing_facts import (
    CUT_SAID,
    RERUN_ADVICE,
    attached_gap,
    incomplete_said,
    of_those_read,
)
from gpuonboard.steps.checks.model_match import is_vgpu
from gpuonboard.steps.checks.setting_views import FABRIC_SETTINGS, judged_per_reading


def evaluated(facts: Facts, thresholds: Mapping[str, float] | None = None) -> list[Check]:
    """evaluate(), computed once per host's facts and thresholds (gather.memo)."""
    key = ("gpu_health", tuple(sorted((thresholds or {}).items())))
    return list(memo(facts, key, lambda: tuple(evaluate(facts, thresholds))))


def evaluate(facts: Facts, thresholds: Mapping[str, float] | None = None) -> list[Check]:
    """All health rules over the host's GPUs (none when the driver is absent), then the fabric
    rules (kernel Xid/SXid, NVLink links, Fabric Manager: steps/fabric_health.py), which read
    other outputs than nvidia-smi's and so run even when no GPU could be read."""
    from gpuonboard.steps.checks.fabric_health import health_checks

    report = facts.gpu
    if report is None:
        return _gpu_rules(facts, thresholds) + health_checks(facts)

    def seen(gpus: list[GpuInfo]) -> Facts:
        # (a format's reading of a setting the formats read otherwise: setting_views.py)
        same = all(a is b for a, b in zip(report.gpus, gpus, strict=True))
        return facts if same else replace(facts, gpu=replace(report, gpus=tuple(gpus)))

    gpus = list(report.gpus)
    # (the fabric rules read no other setting: their kernel log is not read again for the others)
    return judged_per_reading(gpus, lambda g: _gpu_rules(seen(g), thresholds)) + judged_per_reading(
        gpus, lambda g: health_checks(seen(g)), FABRIC_SETTINGS
    )


def _processes_cut(facts: Facts) -> bool:
    """The nvidia-smi output read is one that lists processes (the table, -q, -q -x) and was
    cut short: the processes of a GPU may be in the part cut away (a CSV lists none, cut or not).
    An output cut after every GPU's record, inside its process list, is complete in its GPU
    facts; its cut is the GPUs' `processes_open` (a table cut under its `Processes:` header)."""
    report = facts.gpu
    if report is None:
        return False
    if any(g.processes_open for g in report.gpus):
        return True
    return not report.complete and any(kind in report.source.split("+") for kind in ("table", "text", "xml"))


def _container_view(facts: Facts) -> str:
    """How every nvidia-smi output given ran in a container or pod (`docker run --gpus all ...
    nvidia-smi`, `kubectl exec POD -- nvidia-smi -q`, a container's log): its words, "" where
    one ran on the box itself (or none says)."""
    from gpuonboard.facts.gpu_merge import GPU_SOURCES

    given = [out for name, _, _ in GPU_SOURCES if (out := facts.raw.get(name)) is not None and not out.absent]
    views = [
        out.in_container or (out.ran_elsewhere if "container" in out.ran_elsewhere else "") for out in given
    ]
    return views[0] if views and all(views) else ""


# the gpu_health rules whose worst verdict is a warn (a setting to change, a sensor to look at):
# every other rule can fail
_WARN_AT_WORST = frozenset({"persistence_mode", "mig_mode", "virtualization", "sensor_faults"})

CUT_MAY_FAIL = (
    "what was read warns, and the part cut from this output (the later fields of a GPU's record,"
    " the later GPUs, the rest of a process list) may hold what fails this check: the warning is"
    " of what was read, the whole box may be worse"
)
UNREAD_MAY_FAIL = (
    "what was read warns, and the GPUs this output did not read (listed but not read, left out of"
    " a view of some GPUs: `-i N`) may hold what fails this check: the warning is of what was"
    " read, the whole box may be worse"
)


def _cut_short(facts: Facts, gpus: list[GpuInfo], rule: str = "", verdict: str = "warn") -> str:
    """Why the GPU facts may hold a fail not read, '' where they cannot: CUT_MAY_FAIL for an
    output cut short (inside a GPU's record, before its last GPU), UNREAD_MAY_FAIL for GPUs it
    did not read (listed and not read, left out of a view); never for whole outputs that
    disagree, nor for CSV rows that are GPUs or samples of one (every row read), nor where the
    only cut is inside records that read whole what can make `rule` worse than `verdict`
    (`cut_read_whole`)."""
    report = facts.gpu
    if report is None or cut_read_whole(facts, gpus, rule, verdict):
        return ""
    whole_set = report.set_whole and not attached_gap(facts)
    if any(g.record_cut and not (whole_set and _read_whole(g, rule, verdict)) for g in gpus):
        return CUT_MAY_FAIL
    if _listed_not_read(gpus) or attached_gap(facts):
        return UNREAD_MAY_FAIL
    if report.complete or report.disagreements:
        return ""
    if not report.gap:
        return CUT_MAY_FAIL  # (an output cut short: no other reason is given)
    if any(g.csv_row is not None for g in gpus):
        return ""
    # a view of some GPUs (`-i 0`): the GPUs it left out may hold the fail, unless a whole `-L`
    # lists no GPU but those read
    return "" if _listing_covers(facts, gpus) else UNREAD_MAY_FAIL


def cut_read_whole(facts: Facts, gpus: list[GpuInfo], rule: str, verdict: str) -> bool:
    """The outputs were cut only inside GPUs' records, every GPU known read (`set_whole`: a whole
    `-L` or `Attached GPUs` of as many; no gap, no disagreement, none listed and not read), and
    each record cut read whole what can make `rule` worse than `verdict` (`_read_whole`): the
    verdict is the whole output's (a 1-GPU `-q` cut in its `Clocks` section read its clock event
    reasons whole: its throttling warning is the box's)."""
    report = facts.gpu
    if report is None or not report.set_whole or report.gap or report.disagreements:
        return False
    listed = _listed_models(facts) if verdict == "pass" and not attached_gap(facts) else {}
    if listed and all(_decided_by_listed_model(g, rule, listed) for g in gpus):
        return True  # (each GPU's model, named by a whole -L, decides it: GPUs the cut left unread too)
    if attached_gap(facts) or _listed_not_read(gpus) or verdict not in ("pass", "warn", "fail"):
        return False
    cut = [g for g in gpus if g.record_cut]
    return bool(cut) and all(_read_whole(g, rule, verdict) for g in cut)


# the fields a rule reads, where a whole record of another format can stand for a record cut
# short; with the formats that carry a field only some do (the table and the CSV query carry no
# slowdown point: a table cut took none)
_RULE_READS: dict[str, tuple[str, ...]] = {"temperature": ("temperature_c", "temperature_slowdown_c")}
_CARRIED_BY: dict[str, tuple[str, ...]] = {"temperature_slowdown_c": ("text", "xml")}

# the parts of a GPU's record (GpuInfo.parts_read: -q's sections and lines by label, casefolded,
# -q -x's elements by tag) a rule reads, as groups of the names one part goes by in each format
# and driver (one of a group is printed): (the parts that can make it fail, the parts that can
# make it warn or leave it unverified). A record cut short that read all of the first keeps the
# rule's warning (the part cut away cannot fail it), all of both its pass. One table for every
# rule; a rule not here keeps the cut's demotion.
_NAME = ("product name", "product_name")
_BRAND = ("product brand", "product_brand")
# (or its one line the rules read, whole, in a -q cut inside that section: text_q._lines_read_in_last)
_VIRT = ("gpu virtualization mode", "gpu_virtualization_mode", "gpu virtualization mode/virtualization mode")
_DRIVER_MODEL = ("driver model", "driver_model")
_ECC_MODE = ("ecc mode", "ecc_mode")
_ECC_ERRORS = ("ecc errors", "ecc_errors")
_PCI = ("pci",)
_PSTATE = ("performance state", "performance_state")
_UTIL = ("utilization",)
_REASONS = (
    "clocks event reasons",
    "clocks throttle reasons",
    "clocks_event_reasons",
    "clocks_throttle_reasons",
)
_POWER = ("gpu power readings", "power readings", "gpu_power_readings", "power_readings")
_CLOCKS = (
    ("clocks",),
    ("max clocks", "max_clocks"),
    ("applications clocks", "applications_clocks"),
    ("default applications clocks", "default_applications_clocks"),
)
# the recovery state's two spellings, judged together (facts/nvidia_smi/values.py
# `_recovery_action`: a pending action in either wins): R5xx prints the reset status alone, R570+
# both, R595+ the action alone, always each where the other would be and before the GSP firmware
# version, IBMNPU and PCI (every real -q and -q -x capture)
_RESET_STATUS = ("gpu reset status", "gpu_reset_status")
_RECOVERY_ACTION = ("gpu recovery action", "gpu_recovery_action")
_AFTER_RECOVERY = ("gsp firmware version", "gsp_firmware_version", "ibmnpu", "pci")
# a part some drivers do not print: read whole where the record read a part nvidia-smi prints
# after it (the record went past where it would be)
_MIG_MODE = ("mig mode", "mig_mode")
# a driver that prints MIG mode (R450+) prints it after the persistence and addressing modes and
# before the accounting mode (every real -q and -q -x capture); one older than MIG (R440's -q of a
# GTX 1050 Ti, nvidia-docker#1149) prints no MIG line at all: its record read past that place
# (its accounting mode, driver model, serial, UUID ...) holds no MIG mode to cut away
_AFTER_MIG = (
    "accounting mode",
    "accounting_mode",
    "accounting mode buffer size",
    "accounting_mode_buffer_size",
    "driver model",
    "driver_model",
    "serial number",
    "serial",
    "gpu uuid",
    "uuid",
)
_PRINTED_BEFORE: Mapping[tuple[str, ...], tuple[str, ...]] = {
    _RESET_STATUS: _AFTER_RECOVERY,
    _RECOVERY_ACTION: _AFTER_RECOVERY,
    _MIG_MODE: _AFTER_MIG,
}
_Parts = tuple[tuple[str, ...], ...]
# (each row lists every part whose fields the rule's judge reads: a rule judged from two parts
# read one of them is not judged whole)
RULE_PARTS: Mapping[str, tuple[_Parts, _Parts]] = {
    "gpu_recovery": ((_RESET_STATUS, _RECOVERY_ACTION), ()),
    "ecc_mode": ((_NAME, _BRAND, _ECC_MODE), (_VIRT,)),
    "ecc_uncorrectable": ((_ECC_ERRORS,), (_NAME, _BRAND, _ECC_MODE, _VIRT)),
    "memory_repair": (
        (_ECC_ERRORS, ("retired pages", "retired_pages"), ("remapped rows", "remapped_rows")),
        (_NAME, _BRAND, _ECC_MODE, _VIRT),
    ),
    "pcie_link": ((_PCI, _PSTATE, _UTIL, _REASONS), ()),
    "pcie_replays": ((_PCI,), ()),
    "power_limit": ((_POWER,), ()),
    "throttling": ((_REASONS,), (_PSTATE, _UTIL, _POWER, *_CLOCKS)),
    "temperature": ((("temperature",),), ()),
    "compute_mode": ((("compute mode", "compute_mode"),), ()),
    # (the driver model too: a Windows one has no persistence mode, modes._no_persistence)
    "persistence_mode": ((), (_NAME, ("persistence mode", "persistence_mode"), _DRIVER_MODEL)),
    "mig_mode": ((), (_NAME, _MIG_MODE)),
    "virtualization": ((), (_NAME, _BRAND, _VIRT)),
}


# a part a rule reads only to explain why a field reads N/A, needed of a record cut short only
# where that field read none: the driver model says why the persistence mode is N/A (a Windows
# one has none); an `Enabled` read before the cut needs no driver model (netdata#15755's -q -x
# cut inside <driver_model>, as the -q text cut there)
_EXPLAINS_UNREAD: Mapping[str, tuple[tuple[str, ...], str]] = {
    "persistence_mode": (_DRIVER_MODEL, "persistence_mode"),
}


def _needed(c: GpuInfo, rule: str, group: tuple[str, ...]) -> bool:
    """Whether the part `group` must have been read whole of the record `c` for `rule`."""
    explains = _EXPLAINS_UNREAD.get(rule)
    return explains is None or explains[0] != group or getattr(c, explains[1]) is None


def _read_whole(g: GpuInfo, rule: str, verdict: str = "warn") -> bool:
    """What can make `rule` worse than `verdict` was read whole of `g`: each of its records cut
    short read those parts (RULE_PARTS) before the cut, or every field `rule` reads was read by a
    format's whole record of `g`, or is one no format whose record of `g` was cut carries."""
    return _parts_read(g, rule, verdict) or _read_by_whole_record(g, rule)


def _listed_models(facts: Facts) -> dict[str, str]:
    """Each GPU's model as a whole `nvidia-smi -L` of the box names it, by its UUID and by its
    index ("GPU 3"); {} where no such listing was given whole (cut, narrowed, failed)."""
    out = facts.raw.get(LIST_PROBE)
    if out is None or out.absent or out.partial or out.exit_code != 0:
        return {}
    listing = parse_gpu_list(out.stdout)
    if not listing.complete:
        return {}
    named = {f"GPU {g.index}": g.name for g in listing.gpus if g.name.strip()}
    return named | {g.uuid: g.name for g in listing.gpus if g.uuid and g.name.strip()}


def _decided_by_listed_model(g: GpuInfo, rule: str, listed: Mapping[str, str]) -> bool:
    """`rule`'s pass of `g` follows from its model alone, named by a whole `-L` line (the
    table's name may end in "..."): a model without MIG has whole GPUs whatever a cut took of
    its rows (its MIG cell reads N/A there), as `-L` alone judges it."""
    name = listed.get(g.uuid or "") or listed.get(f"GPU {g.index}")
    if rule != "mig_mode" or name is None or name != g.name or g.faults:
        return False
    return g.mig_mode is None and g.mig_mode_pending is None and not mig_capable(name)


def _parts_read(g: GpuInfo, rule: str, verdict: str) -> bool:
    """Each record of `g` cut short (each format's reading, or `g` read by one) read whole every
    part of RULE_PARTS that can make `rule` worse than `verdict`."""
    if rule not in RULE_PARTS:
        return False
    fail, worse = RULE_PARTS[rule]
    needed = fail + (worse if verdict == "pass" else ())
    cut = [c for _, c in g.readings if c.record_cut] if g.readings else [g]
    return all(
        all(_group_read(c.parts_read, group) for group in needed if _needed(c, rule, group)) for c in cut
    )


def _group_read(parts_read: tuple[str, ...], group: tuple[str, ...]) -> bool:
    """A part of `group` was read whole, or (a part some drivers do not print) the record read a
    part that nvidia-smi prints after it."""
    return any(name in parts_read for name in group + _PRINTED_BEFORE.get(group, ()))


def _read_by_whole_record(g: GpuInfo, rule: str) -> bool:
    """Every field `rule` reads of `g` was read by a format's whole record of `g`, or is one no
    format whose record of `g` was cut carries: the cut took nothing the rule reads."""
    fields = _RULE_READS.get(rule)
    if not fields or not g.readings:
        return False
    whole = [c for _, c in g.readings if not c.record_cut]
    cut = [kind for kind, c in g.readings if c.record_cut]
    return bool(whole) and all(
        any(getattr(c, f) is not None for c in whole)
        or not any(kind in _CARRIED_BY.get(f, (kind,)) for kind in cut)
        for f in fields
    )


def _listing_covers(facts: Facts, gpus: list[GpuInfo]) -> bool:
    """A whole `nvidia-smi -L` of the box lists as many GPUs as were read (none left out)."""
    out = facts.raw.get(LIST_PROBE)
    if out is None or out.absent or out.partial or out.exit_code != 0:
        return False
    listing = parse_gpu_list(out.stdout)
    return listing.complete and 0 < len(listing.gpus) == len(gpus)


def _no_milder(check: Check, cut: str) -> Check:
    """A warn of an output `cut` short, by a rule that can fail: the part cut away may hold the
    fail (a later clock event reason, a later GPU's, a compute job after the desktop's rows). The
    warning read of the GPUs read stands (a fault shown is never lost, and a warn ranks above
    unverified), said to be of what was read, its detail saying the whole may be worse. A fail
    read stays a fail; a rule that only warns keeps its warn as it is (the whole can give no
    worse)."""
    if not cut or check.verdict != "warn" or check.name in _WARN_AT_WORST:
        return check
    actual = check.actual
    if "(of what was read; " not in actual and CUT_SAID not in actual:
        said = "cut short" if cut == CUT_MAY_FAIL else "GPUs not read"
        actual += f" ({CUT_LIST})" if check.name == "foreign_processes" else f" (of what was read; {said})"
    return replace(check, actual=actual, detail=f"{check.detail}; {cut}; {RERUN_ADVICE}")


# rows whose fields the table never carries (the PCIe link, its replays, the clock event reasons,
# the virtualization mode, the memory repair state): only -q, -q -x and the CSV query read them
_NOT_IN_TABLE = ("pcie_link", "pcie_replays", "throttling", "virtualization", "memory_repair")


def _cut_may_hold(check: Check, source: str) -> bool:
    """Whether the part an output cut away could have held what `check` judges: not so for an
    unverified row of a field none of the formats read (`source`: "table+csv") carries (the
    table's pcie_link), which says so without the cut's note."""
    if check.verdict != "unverified" or check.name not in _NOT_IN_TABLE:
        return True
    return any(kind in source.split("+") for kind in ("text", "xml", "csv", "csv2"))


def _gpu_rules(facts: Facts, thresholds: Mapping[str, float] | None) -> list[Check]:
    t = {**DEFAULTS, **(thresholds or {})}
    gpus = list(facts.gpu.gpus) if facts.gpu else []
    if not gpus:
        return []
    unreadable = rule_unreadable(gpus)
    # -q or -q -x answered: an unread repair state is N/A there (the table and the CSV carry none);
    # it is unverified either way, the row says which
    source = facts.gpu.source if facts.gpu else ""
    detailed = "xml" in source or "text" in source
    unplaced = facts.gpu.unplaced_faults if facts.gpu else ()
    # (the sandbox's line only where a reading nvidia-smi could not make asks for it: the two rules
    # below read it for an `ERR!` cell, a GPU's or an unplaced one, only)
    sandbox = sandbox_of(facts.raw) if unplaced or any(g.cell_faults for g in gpus) else None
    wsl = wsl_sign(facts)  # (a WSL2 guest: virtualization warns, foreign_processes reads no list)
    rules: list[Callable[[], Check | None]] = [
        lambda: rule_recovery_action(gpus),
        lambda: rule_ecc_mode(gpus, sandbox),
        lambda: rule_ecc_errors(gpus),
        lambda: rule_memory_repair(gpus, detailed, source),
        lambda: rule_pcie_link(gpus),
        lambda: rule_pcie_replays(gpus),
        lambda: rule_power_limit(gpus, t["power_cap_warn"], t["power_cap_fail"]),
        lambda: rule_throttle(gpus),
        lambda: rule_temperature(gpus, t["temperature_warn"], t["temperature_fail"]),
        lambda: rule_sensor_faults(gpus, unplaced, sandbox),
        lambda: rule_foreign_processes(
            gpus,
            _processes_cut(facts),
            facts.gpu.driver_version if facts.gpu else None,
            _container_view(facts),
            wsl,
        ),
        lambda: rule_persistence(gpus),
        lambda: rule_compute_mode(gpus),
        lambda: rule_mig(gpus),
        lambda: rule_virtualization(gpus, wsl),
        lambda: rule_vgpu_license(gpus),
    ]
    checks = [_unread_cells(c, gpus) for r in rules if (c := r()) is not None]
    if gpus and all(g.faults for g in gpus):
        # no GPU nvidia-smi could read (gpu_health fails them): a rule over the GPUs read passes
        # over none ("foreign_processes: none", "no MIG on this model" of an H100); in an output
        # not read whole (a table whose rows a paste mangled below a lost GPU's line) the GPUs
        # not read may be readable: unverified, as any rule of such an output
        said = f"not judged: {gpu_list(gpus, gpus)} unreadable"
        checks = [
            replace(c, actual=said, verdict="warn", detail=UNREADABLE_GPUS) if c.verdict == "pass" else c
            for c in checks
        ]
        if incomplete_said(facts):
            checks = [replace(c, verdict="unverified") if c.actual == said else c for c in checks]
    elif gap := incomplete_said(facts) or _listed_not_read(gpus):
        # (a rule whose parts the records cut read whole is judged as over the whole output)
        checks = [
            of_those_read(c, gap)
            if _cut_may_hold(c, source) and not cut_read_whole(facts, gpus, c.name, c.verdict)
            else c
            for c in checks
        ]
    processes_cut = _processes_cut(facts)
    processes = CUT_MAY_FAIL if processes_cut else ""
    checks = [
        _no_milder(c, processes if c.name == "foreign_processes" else _cut_short(facts, gpus, c.name))
        for c in checks
    ]
    if failed := _q_failed(facts):
        # (the advice "`nvidia-smi -q ...` shows it" of a box where -q itself failed: say so)
        checks = [
            replace(c, detail=f"{c.detail}; on this box {failed}: ask the vendor for it")
            if c.verdict == "unverified" and "nvidia-smi -q" in c.detail
            else c
            for c in checks
        ]
    if _vgpu_guests(gpus):
        checks = [
            replace(c, detail=f"{c.detail}; {VGPU_HOST_ONLY}")
            if c.verdict == "unverified" and c.name in _HOST_ONLY and "host" not in c.detail
            else c
            for c in checks
        ]
    return ([unreadable] if unreadable else []) + checks


# what a vGPU guest's nvidia-smi cannot read of the physical GPU (N/A there, whatever the format:
# the real RTXA6000-24Q guest's -q, tests/fixtures/real/nvidia-smi-q__rtxa6000-24q-vgpu__*): the
# advice to run `nvidia-smi -q -d ...` in the guest gets N/A again
_HOST_ONLY = ("pcie_link", "pcie_replays", "power_limit", "throttling", "temperature", "memory_repair")
VGPU_HOST_ONLY = (
    "but in this vGPU guest nvidia-smi prints N/A for the physical GPU's link, power, clocks,"
    " temperature and memory repair (only the host reads them): ask the vendor for the host's"
    " `nvidia-smi -q` of this GPU"
)


UNREAD_CELL = (
    "nvidia-smi could not read this field on the GPU named (a fault marker: sensor_faults says"
    " which; or N/A, not supported or nothing where the other GPUs of its model give a value),"
    " so the verdict covers only the values that were read, not that GPU's field; rerun"
    " nvidia-smi, and if the field stays unreadable ask the vendor to check that GPU"
)


# the GpuInfo fields each rule reads, by their reader's names: one GPU without a value where
# another GPU of its model (and MIG mode) has one was not read there (`N/A`, `[Not Supported]`,
# `[Insufficient Permissions]` or an empty cell in one GPU's record), never a pass of it
_RULE_VALUES: Mapping[str, tuple[tuple[str, str], ...]] = {
    "temperature": (("temperature_c", "temperature"),),
    "power_limit": (("power_limit_w", "power cap"), ("default_power_limit_w", "default power limit")),
    "pcie_link": (
        ("pcie_gen_current", "PCIe generation"),
        ("pcie_gen_max", "PCIe max generation"),
        ("pcie_width_current", "PCIe width"),
        ("pcie_width_max", "PCIe max width"),
    ),
    "pcie_replays": (
        ("pcie_replays", "PCIe replay count"),
        ("pcie_replay_rollovers", "PCIe replay rollovers"),
    ),
    "throttling": (("clock_event_reasons_known", "clock event reasons"),),
    "memory_repair": (
        ("remapped_rows_pending", "remapped rows pending"),
        ("remapped_rows_failure", "remapping failure"),
        ("remapped_rows_uncorrectable", "rows remapped after uncorrectable errors"),
        ("remap_banks_none", "remapper banks with no spare row"),
        ("remap_banks_low", "remapper banks with few spare rows"),
        ("retired_pages_sbe", "retired pages (single-bit)"),
        ("retired_pages_dbe", "retired pages (double-bit)"),
        ("retired_pages_pending", "page retirement pending"),
        ("sram_threshold_exceeded", "SRAM error threshold"),
        ("channel_repair_pending", "channel repair pending"),
        ("tpc_repair_pending", "TPC repair pending"),
        ("unrepairable_memory", "unrepairable memory"),
    ),
    "foreign_processes": (("memory_used_mib", "memory used"), ("utilization_gpu_pct", "utilization")),
}


# the GpuInfo fields that hold the names of what a GPU's output read, by rule, and the names
# that can change its verdict: a name another GPU of the model (and MIG mode) read and this one
# did not (a reason's state printed N/A or empty while its other reasons were read) was not read
# there, never Not Active. (gpu_idle and the clock settings, applications clocks, sync boost and
# the display clock, change no throttling verdict: unread, they leave the pass as it is; nor
# does NVML's catch-all `unknown`: only the CSV's bitmask reads it, -q and -q -x never print it,
# so a GPU the mask did not cover (a `-i 0` CSV, a row's [N/A]) beside one it did lacks it by
# the format, with every reason -q names read)
_RULE_NAMES: Mapping[str, tuple[str, str, Callable[[str], bool]]] = {
    "throttling": (
        "clock_event_reasons_read",
        "clock event reason",
        lambda name: (
            name != "unknown"
            and (name in (*HARD_THROTTLE, "sw_power_cap") or name not in CLOCK_EVENT_REASONS)
        ),
    ),
}


def _names_unread(check_name: str, read: list[GpuInfo], said: set[int]) -> list[str]:
    """'GPU 1: clock event reason hw_slowdown not reported' for each name of _RULE_NAMES that can
    change the verdict, another GPU of the same model and MIG mode read and this GPU (which read
    some, and whose cell fault does not already say so: its id() in `said`) did not."""
    if check_name not in _RULE_NAMES:
        return []
    attr, what, judged = _RULE_NAMES[check_name]
    kinds: dict[tuple[str, str | None, str | None], set[str]] = {}
    for g in read:
        kinds.setdefault((g.name, g.mig_mode, g.mig_mode_pending), set()).update(getattr(g, attr))
    out = []
    for g in read:
        mine = getattr(g, attr)
        if not mine or id(g) in said:
            continue
        missing = sorted(kinds[(g.name, g.mig_mode, g.mig_mode_pending)] - set(mine))
        out += [f"{gpu_label(g)}: {what} {name} not reported" for name in missing if judged(name)]
    return out


def _value_read(g: GpuInfo, attr: str) -> bool:
    """Whether `g` has a value for `attr` (a `*_known` flag: True)."""
    value = getattr(g, attr)
    return value is True if attr.endswith("_known") else value is not None


def _unread_values(check_name: str, gpus: list[GpuInfo]) -> list[str]:
    """'GPU 1: temperature not reported' for each GPU read whose field `check_name` reads has no
    value where another GPU of the same model and MIG mode has one (that GPU's cell printed
    `N/A`, `[Not Supported]`, `[Insufficient Permissions]` or nothing): the other GPUs' values
    are no reading of it. A GPU whose cell fault already names the field is said there, a GPU
    with no reading at all (only listed: _listed_not_read) by the gap of the whole output; where
    no GPU has one of _READINGS (a CSV that asked a few fields: `index,
    clocks_event_reasons.active`), every GPU it read is judged so, never a GPU only `-L` listed
    (nothing of it read: the incomplete probe says so, no field of that GPU is unread)."""
    whole = [g for g in gpus if not g.faults]
    # (-L was merged where a GPU holds its reading; a GPU with none that is only what -L gives is -L's)
    listing = any(label in LISTINGS for g in whole for label, _ in g.readings)
    read = [g for g in whole if any(getattr(g, f) is not None for f in _READINGS)] or [
        g for g in whole if not (listing and g == _as_listed(g))
    ]
    # (by the GPU itself: a label such as `GPU at PCI 00000000:23:00.0` holds colons)
    faulted = {id(g) for g in read if any(rule_reads(check_name, fault) for fault in g.cell_faults)}
    out: list[str] = []
    for attr, what in _RULE_VALUES.get(check_name, ()):
        # (a GPU whose MIG mode changes at its next reset reads N/A where its peers read values)
        kinds = {(g.name, g.mig_mode, g.mig_mode_pending) for g in read if _value_read(g, attr)}
        for g in read:
            if id(g) in faulted or _value_read(g, attr):
                continue
            if (g.name, g.mig_mode, g.mig_mode_pending) in kinds:
                out.append(f"{gpu_label(g)}: {what} not reported")
    out += _names_unread(check_name, read, faulted)
    return list(dict.fromkeys(out))


def _as_listed(g: GpuInfo) -> GpuInfo:
    """`g` as `nvidia-smi -L` alone gives it (gpu_merge._listed_gpu): equal to `g` where no other
    format read anything of it."""
    return GpuInfo(
        index=g.index,
        name=g.name,
        uuid=g.uuid,
        mig_mode=g.mig_mode,
        faults=g.faults,
        cell_faults=g.cell_faults,
    )


# a cell fault a rule reads whose value the rest of the GPU's record bounds enough for that
# rule: the host's max link generation of a link at the card's own max generation and width
_BOUNDED: dict[str, Callable[[GpuInfo, str], bool]] = {"pcie_link": bounded_host_max}


def _bounded(rule: str, g: GpuInfo, fault: str) -> bool:
    """Whether `rule` needs no reading of `g`'s faulted field (_BOUNDED)."""
    judge = _BOUNDED.get(rule)
    return judge is not None and judge(g, fault)


def _refused(gpus: list[GpuInfo]) -> set[str]:
    """'GPU 0: ECC reads GPU access blocked by the operating system' for each cell fault the
    operating system's refusal explains (faults.blocked_faults), as _unread_cells names it."""
    return {
        f"{gpu_label(g)}: {fault}" for g in gpus if not g.faults for fault in blocked_faults(g.cell_faults)
    }


def _unread_cells(check: Check, gpus: list[GpuInfo]) -> Check:
    """A pass of a rule whose field one GPU's output printed as a fault marker (its cell fault),
    or left without a value that the other GPUs of its model have (_unread_values), is
    unverified, naming that GPU's cell: the rule read the others only."""
    if check.verdict != "pass" or check.name not in FIELD_RULES:
        return check
    unread = [
        f"{gpu_label(g)}: {fault}"
        for g in gpus
        if not g.faults
        for fault in g.cell_faults
        if rule_reads(check.name, fault) and not _bounded(check.name, g, fault)
    ] + _unread_values(check.name, gpus)
    if not unread:
        return check
    return replace(
        check,
        actual=f"{check.actual} (of what was read; {'; '.join(unread)})",
        verdict="unverified",
        detail=BLOCKED_ADVICE if set(unread) <= _refused(gpus) else UNREAD_CELL,
    )


def _vgpu_guests(gpus: list[GpuInfo]) -> bool:
    """Every GPU read is a vGPU guest's: the mode VGPU, or (no mode reported) a vGPU profile's
    name or brand; a GPU passed through is read whole, whatever its licence's brand."""
    read = [g for g in gpus if not g.faults]
    return bool(read) and all(
        (g.virtualization_mode or "").upper() == "VGPU"
        or (not g.virtualization_mode and is_vgpu(g.name, g.product_brand))
        for g in read
    )


def _q_failed(facts: Facts) -> str:
    """'`nvidia-smi -q` failed (exit 4: Insufficient Permissions)' where both `-q` and `-q -x`
    ran and failed with a message (not missing, not hung); '' otherwise."""
    outs = [facts.raw.get(name) for name in ("nvidia_smi_q", "nvidia_smi")]
    if not all(out is not None and out.exit_code not in (0, 124, 127) for out in outs):
        return ""
    out = outs[0]
    assert out is not None
    return f"`nvidia-smi -q` failed ({out.failure()})"


# the readings every nvidia-smi format that reads a GPU gives (a listing, `-L`, gives none)
_READINGS = ("memory_total_mib", "temperature_c", "power_limit_w", "performance_state", "utilization_gpu_pct")


def _listed_not_read(gpus: list[GpuInfo]) -> str:
    """'GPU 1, GPU 2 listed but not read' where some GPUs have readings and others only a
    listing gave (`nvidia-smi -L` beside a `-q -i 0`): a pass over the GPUs read is no pass of
    those. A GPU nvidia-smi could not read (ERR!) is gpu_health's failure, not counted here."""
    bare = [g for g in gpus if not g.faults and all(getattr(g, f) is None for f in _READINGS)]
    if not bare or len(bare) == len(gpus):
        return ""
    return f"{', '.join(gpu_label(g) for g in bare)} listed but not read"


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
