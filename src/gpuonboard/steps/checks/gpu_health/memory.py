"""The GPU memory rules of gpu_health: ECC mode, uncorrectable ECC errors, and memory repair
(row remapping, page retirement, channel / TPC repair, the row-remapper histogram)."""

from __future__ import annotations

from collections.abc import Mapping

from gpuonboard.facts.gpu_agree import FORMAT_NAMES
from gpuonboard.facts.nvidia_smi import GpuInfo
from gpuonboard.facts.nvidia_smi.faults import blocked_faults
from gpuonboard.steps.base import Check
from gpuonboard.steps.checks.gpu_health.common import (
    BLOCKED_ADVICE,
    gpu_label,
    gpu_list,
    held_as_datacenter,
    may_have_ecc,
    no_ecc_said,
    sandboxed_advice,
)
from gpuonboard.steps.checks.mig_memory import (
    MIG_CUT_ADVICE,
    slice_counts_only,
    slices_cut_said,
    with_slice_ecc,
)
from gpuonboard.steps.checks.ngc import gpu_class

ECC_ENABLE_ADVICE = (
    "enable it with `sudo nvidia-smi -e 1` (per GPU: `-i N -e 1`) and a reboot; ECC costs about"
    " 6 % of usable memory and some memory bandwidth, and without it memory errors corrupt"
    " results silently"
)


def rule_ecc_mode(gpus: list[GpuInfo], sandbox: str | None = None) -> Check:
    """ECC on for data-centre GPUs; a workstation / pro card with ECC switched off is said too.

    `ecc_mode` None (N/A, or not in the output read) is not required of a GeForce card, and is
    unverified for any GPU that has or may have ECC (may_have_ecc: data-centre, workstation or
    unrecognised, as a vGPU profile's name) unless nvidia-smi said N/A for it outside a vGPU
    guest (`no_ecc_said`: a workstation card without ECC); a data-centre GPU's is unverified
    even then. "Disabled" means the card has ECC and it is off: FAIL on a data-centre GPU
    (A100, H100, L40S, A10 ...), WARN on an NVIDIA RTX / Quadro workstation card (RTX A6000,
    RTX 6000 Ada, RTX 4000 SFF Ada ...) or an unrecognised one (ECC is optional there, and costs
    memory), and named without a verdict against it on a GeForce card (a consumer card is not
    expected to run with ECC).
    """
    # a GPU nvidia-smi cannot read is no data (the gpu_health row fails it): said, not counted
    unread = ", ".join(gpu_label(g) for g in gpus if g.faults)
    note = f" ({unread} unreadable)" if unread else ""
    read = [g for g in gpus if not g.faults]
    if not read and unread:
        return Check("ecc_mode", "Enabled", f"not judged: {unread} unreadable", "warn", UNREADABLE_GPUS)
    klass = {g.index: gpu_class(g.name, g.product_brand) for g in read}
    dc = [g for g in read if klass[g.index] == "datacenter"]
    off_dc = [g for g in dc if g.ecc_mode == "Disabled"]
    # (ECC off on a GPU whose model the output does not name, `-q -d ECC`: a fault or not by the model)
    off_nameless = [g for g in read if not g.name.strip() and g.ecc_mode == "Disabled"]
    off_pro = [
        g
        for g in read
        if klass[g.index] in ("professional", "unknown") and g.ecc_mode == "Disabled" and g.name.strip()
    ]
    off_consumer = [g for g in read if klass[g.index] == "consumer" and g.ecc_mode == "Disabled"]
    # (N/A on a data-centre GPU is no answer either: its cards all have ECC)
    unknown = [g for g in read if _ecc_mode_unknown(g)]
    if off_dc:
        return Check(
            "ecc_mode",
            "Enabled",
            f"Disabled on {gpu_list(off_dc, gpus)} (data-centre GPU)"
            + (f"; {_off_pro_said(off_pro, klass, gpus)}" if off_pro else "")
            + note,
            "fail",
            "memory errors go undetected without ECC; ask the vendor to run `sudo nvidia-smi -e 1`"
            " and reboot",
        )
    if off_nameless:
        return _ecc_off_unnamed(off_nameless, gpus, note)
    if off_pro:
        return Check(
            "ecc_mode",
            "Enabled where the GPU supports it",
            _off_pro_said(off_pro, klass, gpus) + note,
            "warn",
            f"this card supports ECC but runs without it; {ECC_ENABLE_ADVICE}",
        )
    if unknown:
        return _ecc_mode_unread(unknown, gpus, note, sandbox)
    if dc:
        read_note = " read" if unread else ""
        # (every GPU read is counted, a data-centre one or not (its name not read, another
        # class): one whose mode is not Enabled is named with it, never dropped from "all N")
        others = [g for g in read if g.ecc_mode != "Enabled"]
        if not others:
            return Check("ecc_mode", "Enabled", f"Enabled on all {len(read)} GPUs{read_note}{note}", "pass")
        said = "; ".join(f"{gpu_label(g)}{_named_as(g)}: {g.ecc_mode or 'not reported'}" for g in others)
        counted = f"Enabled on {len(read) - len(others)} of {len(read)} GPUs{read_note}"
        return Check("ecc_mode", "Enabled", f"{counted} ({said}){note}", "pass")
    return _ecc_not_required(read, gpus, off_consumer, note)


def _off_pro_said(off: list[GpuInfo], klass: Mapping[int, str], gpus: list[GpuInfo]) -> str:
    """'Disabled on GPU 0 (workstation GPU with ECC)' of the workstation cards among `off`, and
    of a card whose name names no family this tool knows (a renamed rental card, 'NVIDIA
    vGPU-48GB'), 'its model not known': its mode says it has ECC, not that it is a workstation's."""
    pro = [g for g in off if klass[g.index] == "professional"]
    other = [g for g in off if g not in pro]
    said = [f"Disabled on {gpu_list(pro, gpus)} (workstation GPU with ECC)"] if pro else []
    if other:
        said.append(f"Disabled on {gpu_list(other, gpus)} (a GPU with ECC, its model not known)")
    return "; ".join(said)


def _named_as(g: GpuInfo) -> str:
    """' (name not read)' or ' (NVIDIA RTX A6000)': what a GPU counted apart from the
    data-centre GPUs is."""
    return f" ({g.name.strip()})" if g.name.strip() else " (name not read)"


def _ecc_not_required(
    read: list[GpuInfo], gpus: list[GpuInfo], off_consumer: list[GpuInfo], note: str
) -> Check:
    """ecc_mode on GPUs of which ECC is not required (GeForce, or of no known class): a pass,
    saying what was read."""
    if off_consumer:
        return Check(
            "ecc_mode",
            "enabled on data-centre GPUs",
            f"Disabled on {gpu_list(off_consumer, gpus)} (GeForce card: ECC optional, not expected)" + note,
            "pass",
        )
    enabled = [g for g in read if g.ecc_mode == "Enabled"]
    if enabled:  # GPUs of no known class (a new model) whose ECC reads Enabled
        return Check("ecc_mode", "Enabled", f"Enabled on {gpu_list(enabled, gpus)}{note}", "pass")
    said = all(map(no_ecc_said, read))
    return Check(
        "ecc_mode",
        "enabled on data-centre GPUs",
        (
            "not applicable (no ECC on these GPUs)"
            if said
            else "not reported (GeForce cards: ECC not required)"
        )
        + note,
        "pass",
    )


def _ecc_off_unnamed(off: list[GpuInfo], gpus: list[GpuInfo], note: str) -> Check:
    """ecc_mode where ECC is off on GPUs whose model the output does not name: unverified."""
    return Check(
        "ecc_mode",
        "Enabled",
        f"Disabled on {gpu_list(off, gpus)} (the model is not in this output)" + note,
        "unverified",
        "ECC off fails a data-centre GPU and is expected of a GeForce card; this output names no"
        " model (`nvidia-smi -q -d ECC` prints none): give `nvidia-smi -L` or the table beside it",
    )


# the advice of a memory rule none of whose GPUs nvidia-smi could read
UNREADABLE_GPUS = (
    "nvidia-smi cannot read these GPUs, so their memory cannot be judged; the gpu_health row names"
    " them and what to ask the vendor"
)


def _ecc_mode_unknown(g: GpuInfo) -> bool:
    """No ECC mode was read for a GPU that has ECC (a data-centre card) or may have it (a
    workstation or unrecognised card whose output does not say it has none)."""
    return g.ecc_mode is None and (held_as_datacenter(g) or (may_have_ecc(g) and not no_ecc_said(g)))


def _ecc_mode_unread(unknown: list[GpuInfo], gpus: list[GpuInfo], note: str, sandbox: str | None) -> Check:
    """ecc_mode unverified for GPUs that have or may have ECC and whose mode no output gave; a
    mode nvidia-smi tried to read and could not (`Current : Unknown Error`) is said so: the
    driver's NVML call failed, no gap in the output."""
    errors = [f for g in unknown for f in g.cell_faults if f.startswith("ECC")]
    if errors and all(
        f in blocked_faults(g.cell_faults) for g in unknown for f in g.cell_faults if f.startswith("ECC")
    ):
        return Check(
            "ecc_mode",
            "Enabled",
            f"not read on {gpu_list(unknown, gpus)} ({errors[0]}){note}",
            "unverified",
            BLOCKED_ADVICE,
        )
    if errors and sandbox:
        return Check(
            "ecc_mode",
            "Enabled",
            f"not read on {gpu_list(unknown, gpus)} ({errors[0]}){note}",
            "unverified",
            sandboxed_advice(sandbox),
        )
    if errors:
        return Check(
            "ecc_mode",
            "Enabled",
            f"unreadable on {gpu_list(unknown, gpus)} ({errors[0]}){note}",
            "unverified",
            "nvidia-smi could not read the ECC mode (an error from the driver, not a field left"
            " out): often a GPU in a bad state; look for Xid errors in `dmesg` and ask the vendor"
            " to reset the GPU (`nvidia-smi -i N -r`) or reboot, then check again",
        )
    return Check(
        "ecc_mode",
        "Enabled",
        f"not reported for {gpu_list(unknown, gpus)}{note}",
        "unverified",
        "nvidia-smi gave no ECC mode for a GPU that has or may have ECC memory (a data-centre or"
        " workstation card, or one this tool does not recognise); `nvidia-smi -q -d ECC` shows it",
    )


def rule_ecc_errors(gpus: list[GpuInfo]) -> Check:
    """No uncorrectable ECC errors, volatile (since boot) or aggregate (lifetime); a GPU in MIG
    mode's volatile count is its slices' (the table's MIG devices rows)."""
    on_slices = [g.index for g in gpus if slice_counts_only(g)]
    gpus = [with_slice_ecc(g) for g in gpus]
    bad = []
    for g in gpus:
        vol, agg = g.ecc_volatile_uncorrectable or 0, g.ecc_aggregate_uncorrectable or 0
        if vol or agg:
            bad.append(f"{gpu_label(g)}: {vol} volatile / {agg} aggregate")
    if bad:
        return Check(
            "ecc_uncorrectable",
            "0",
            "; ".join(bad),
            "fail",
            "uncorrectable memory errors corrupt training silently; ask the vendor for another GPU",
        )
    # the lifetime (aggregate) count is the GPU's history; the volatile one (the table's only
    # count) starts again at each boot or driver reload, so alone it clears nothing before it
    known = [g for g in gpus if g.ecc_aggregate_uncorrectable is not None]
    counted = {id(g) for g in known}
    # a GPU whose ECC is on (or may be) and whose lifetime count this output left out: another
    # GPU's 0 says nothing of it (the table prints the ECC mode, `On`, in that cell in MIG mode)
    missing = [
        g
        for g in gpus
        if id(g) not in counted
        and not g.faults
        and (g.ecc_mode == "Enabled" or (g.ecc_mode is None and held_as_datacenter(g)))
    ]
    boot_only = [g for g in missing if g.ecc_volatile_uncorrectable is not None]
    if missing and (known or boot_only):
        unread = [g for g in missing if g not in boot_only]
        parts = [f"0 on {gpu_list(known, gpus)}"] if known else []
        own = [g for g in boot_only if g.index not in on_slices]
        sliced = [g for g in boot_only if g.index in on_slices]
        parts += [f"0 since boot on {gpu_list(own, gpus)} (no lifetime count)"] if own else []
        parts += (
            [f"0 since boot on {gpu_list(sliced, gpus)} (its MIG slices' volatile counts; no lifetime count)"]
            if sliced
            else []
        )
        cut = [g for g in unread if g.mig_slices_cut]
        unread = [g for g in unread if g not in cut]
        parts += [f"not reported for {gpu_list(unread, gpus)}"] if unread else []
        parts += [slices_cut_said(cut, "volatile uncorrectable ECC count")] if cut else []
        return Check(
            "ecc_uncorrectable",
            "0",
            "; ".join(parts),
            "unverified",
            "nvidia-smi did not report the lifetime (aggregate) count of uncorrectable errors for"
            " every GPU with ECC on (the table shows only the count since boot, in MIG mode on each"
            " MIG slice's row); `nvidia-smi -q -d ECC` shows it",
        )
    if known or any(g.ecc_volatile_uncorrectable is not None for g in gpus):
        return Check("ecc_uncorrectable", "0", "0", "pass")
    # (an unreadable GPU is the gpu_health row's, not a missing count here)
    # (as ecc_mode: a card that has or may have ECC and whose mode no output gave is no "off")
    unknown = [g for g in gpus if not g.faults and _ecc_mode_unknown(g)]
    if not any(g.ecc_mode == "Enabled" for g in gpus) and not unknown:
        return Check("ecc_uncorrectable", "0", "not applicable (ECC off or unsupported)", "pass")
    if cut_said := slices_cut_said([g for g in gpus if not g.faults], "volatile uncorrectable ECC count"):
        # (in MIG mode the table prints those counts on the slices' rows, and they were cut away)
        actual = f"not read: {cut_said}; incomplete probe"
        return Check("ecc_uncorrectable", "0", actual, "unverified", MIG_CUT_ADVICE)
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
# DCGM's health watch fails a GPU whose retired pages (single- plus double-bit) reach this many
# (NVIDIA/DCGM dcgmlib/dcgm_gpu_hardware_limits.h: DCGM_LIMIT_MAX_RETIRED_PAGES 63, "updated to
# match the field diag"; 60 before): a GPU retires at most about 64 pages, then needs replacing
RETIRED_PAGES_LIMIT = 63

_REPAIR_ADVICE = {
    "retired_limit": f"the GPU has retired {RETIRED_PAGES_LIMIT} or more memory pages, NVIDIA's limit"
    " (DCGM's health check fails it): it cannot retire more, so the next bad page stays in use;"
    " ask the vendor for another GPU",
    "dbe_pages": "memory pages were retired after double-bit (uncorrectable) errors: the memory"
    " already lost data once; ask the vendor for the GPU's error history (`nvidia-smi -q -d"
    " PAGE_RETIREMENT`, Xid 48/63/64 in `dmesg`)",
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


def _repair_state_read(g: GpuInfo) -> bool:
    """The output gave this GPU's row-remapping (Ampere and newer) or page-retirement (older)
    state. Channel / TPC repair and unrepairable memory (R575+ drivers) come beside them, never
    instead: an H100 in MIG mode says "Channel Repair Pending : No" over "Remapped Rows : N/A"."""
    # (both of row remapping's: a CSV of `remapped_rows.failure` alone says nothing of a pending one)
    return g.retired_pages_pending is not None or (
        g.remapped_rows_pending is not None and g.remapped_rows_failure is not None
    )


def _detailed_read(source: str) -> str:
    """'nvidia-smi -q -x', 'nvidia-smi -q -x and -q': the detailed formats (of `source`, the
    formats read joined by '+') that carry the repair state; '-q or -q -x' where not told."""
    names = [FORMAT_NAMES[f] for f in source.split("+") if f in ("xml", "text")]
    return "nvidia-smi " + (" and ".join(names) or "-q or -q -x")


def _unread_repair(silent: list[GpuInfo], gpus: list[GpuInfo], detailed: bool, source: str = "") -> Check:
    """The memory-repair state of GPUs with (or maybe with) ECC that no format reported (N/A, or a format
    without it): unverified, naming them and the format that gave N/A, never "nothing pending"."""
    mig = [g for g in silent if g.mig_mode == "Enabled"]
    where = f"{_detailed_read(source)} gave N/A or no such section"
    if not detailed:
        where = "the formats read gave none: N/A or no such field"
    if any(g.remapped_rows_pending is not None or g.remapped_rows_failure is not None for g in silent):
        where = "the formats read gave only one of pending remaps and remapping failure"
    if mig:
        where += f"; MIG mode on {gpu_list(mig, gpus)}, where nvidia-smi gives N/A for row remapping"
    return Check(
        "memory_repair",
        "nothing pending",
        f"not reported for {gpu_list(silent, gpus)} ({where})",
        "unverified",
        "a pending row remap or page retirement could not be seen; `nvidia-smi -q -d"
        " ROW_REMAPPER,PAGE_RETIREMENT` shows it (with MIG mode off where MIG hides it), or ask"
        " the vendor for it",
    )


# the counts memory_repair judges, each by the repair state that the same section of the output
# gives beside it: where nvidia-smi read that state (Pending / Remapping Failure, Pending Page
# Blacklist) the GPU has the feature, so a count printed `N/A`, `[N/A]` or empty beside it is
# a value not read (every real capture that reads the state reads its counts), never a 0
_COUNTS_BY_STATE: tuple[tuple[tuple[str, ...], str, str], ...] = (
    (
        ("remapped_rows_pending", "remapped_rows_failure"),
        "remapped_rows_uncorrectable",
        "rows remapped after uncorrectable errors",
    ),
    (("retired_pages_pending",), "retired_pages_sbe", "retired pages (single-bit)"),
    (("retired_pages_pending",), "retired_pages_dbe", "retired pages (double-bit)"),
)


def _unread_counts(g: GpuInfo) -> list[str]:
    """The counts memory_repair judges that `g`'s output left without a value where it read the
    repair state of the same section ('rows remapped after uncorrectable errors')."""
    return [
        what
        for states, count, what in _COUNTS_BY_STATE
        if all(getattr(g, s) is not None for s in states) and getattr(g, count) is None
    ]


def _counts_unread(gaps: list[tuple[GpuInfo, list[str]]], warns: list[tuple[str, str]]) -> Check:
    """memory_repair unverified: a GPU whose repair state was read but not a count beside it,
    where what was read fails nothing (a warning read, such as pages retired after double-bit
    errors, may be a fail with the count not read: 59 DBE and SBE N/A may reach the limit)."""
    said = "; ".join(f"{gpu_label(g)}: {', '.join(what)} not reported" for g, what in gaps)
    seen = "; ".join(text for _, text in warns) or "nothing pending"
    advice = "".join(f"{_REPAIR_ADVICE[k]}; " for k in dict.fromkeys(k for k, _ in warns))
    return Check(
        "memory_repair",
        "nothing pending",
        f"{seen} (of what was read; {said})",
        "unverified",
        advice + "nvidia-smi read this GPU's repair state but printed N/A or nothing for a count beside"
        " it, so rows remapped or pages retired after errors could not be counted; rerun"
        " `nvidia-smi -q -d ROW_REMAPPER,PAGE_RETIREMENT`, and if the count stays unreadable ask"
        " the vendor to check that GPU",
    )


def _repair_findings(gpus: list[GpuInfo]) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """memory_repair's failing and warning findings, each (advice key, finding), GPU by GPU."""
    fails: list[tuple[str, str]] = []  # (advice key, finding)
    warns: list[tuple[str, str]] = []
    for g in gpus:
        label = gpu_label(g)
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
        retired = (g.retired_pages_sbe or 0) + (g.retired_pages_dbe or 0)
        counts = f"{g.retired_pages_sbe or 0} single-bit, {g.retired_pages_dbe or 0} double-bit"
        if retired >= RETIRED_PAGES_LIMIT:
            fails.append(("retired_limit", f"{label}: {retired} pages retired ({counts})"))
        elif g.retired_pages_dbe:
            warns.append(
                ("dbe_pages", f"{label}: {g.retired_pages_dbe} page(s) retired after double-bit errors")
            )
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
    return fails, warns


def rule_memory_repair(gpus: list[GpuInfo], detailed: bool = True, source: str = "") -> Check:
    """No pending or failed memory repair: row remaps, page retirement, channel/TPC repair.

    FAIL: remap failure, unrepairable memory, a pending remap / retirement / channel or TPC
    repair, retired pages at NVIDIA's limit (RETIRED_PAGES_LIMIT). WARN: SRAM error threshold
    exceeded, rows remapped or pages retired after uncorrectable (double-bit) errors,
    banks with low or no spare rows (the row-remapper histogram). UNVERIFIED: a GPU that has or
    may have ECC (see may_have_ecc; a workstation card with ECC switched off remaps nothing)
    whose row-remapping / page-retirement state no format gave (the table and the CSV carry
    none; -q says N/A in MIG mode), in every format; any GPU whose state was read but not a
    count judged beside it (`Uncorrectable Error : N/A` under `Pending : No`: _unread_counts).
    The repair flags of newer drivers (channel / TPC repair, unrepairable memory) are not
    required: older drivers do not have them. A GeForce card without any of it is not held to
    it, and is said to be "not reported". `source`, the formats read ('xml+csv'), names the one
    that gave N/A.
    """
    fails, warns = _repair_findings(gpus)
    findings = fails + warns
    # (a workstation card with ECC switched off remaps no rows: its N/A is no gap)
    silent = [
        g
        for g in gpus
        if not g.faults
        and not _repair_state_read(g)
        and (held_as_datacenter(g) or (may_have_ecc(g) and g.ecc_mode != "Disabled" and not no_ecc_said(g)))
    ]
    if not findings and silent:
        return _unread_repair(silent, gpus, detailed, source)
    gaps = [(g, what) for g in gpus if not g.faults and (what := _unread_counts(g))]
    # (an unread retired-page count may reach NVIDIA's limit, a fail; an unread count of rows
    # remapped after uncorrectable errors adds a warning at most: a warning read stays one)
    if not fails and gaps and (not warns or any(w.startswith("retired") for _, what in gaps for w in what)):
        return _counts_unread(gaps, warns)
    # (said beside what the others' outputs read: a GPU whose repair state, or a count, was not)
    unsaid = "; ".join(
        [f"{gpu_label(g)}: repair state not reported" for g in silent]
        + [f"{gpu_label(g)}: {', '.join(what)} not reported" for g, what in gaps]
    )
    unread = [g for g in gpus if g.faults]
    if not findings and unread and len(unread) == len(gpus):
        return Check(
            "memory_repair",
            "nothing pending",
            f"not judged: {gpu_list(unread, gpus)} unreadable",
            "warn",
            UNREADABLE_GPUS,
        )
    if not findings and not any(map(_repair_state_read, gpus)):
        note = f" ({gpu_list(unread, gpus)} unreadable)" if unread else ""
        return Check(
            "memory_repair", "nothing pending", f"not reported (not required of these GPUs){note}", "pass"
        )
    if not findings:
        return Check("memory_repair", "nothing pending", "nothing pending", "pass")
    advice = "; ".join(_REPAIR_ADVICE[k] for k in dict.fromkeys(k for k, _ in findings))
    return Check(
        "memory_repair",
        "nothing pending",
        "; ".join(text for _, text in findings) + (f" (of what was read; {unsaid})" if unsaid else ""),
        "fail" if fails else "warn",
        advice[0].upper() + advice[1:] + ".",
    )
