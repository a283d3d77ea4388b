"""The foreign-processes rule of gpu_health: nobody else's job on the GPUs, from nvidia-smi's
process list or, where it lists none, from utilisation and memory used."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import fields, replace
from typing import Any

from gpuonboard.facts.gpu_agree import FORMAT_NAMES, usage_samples
from gpuonboard.facts.nvidia_smi import GpuInfo, GpuProcess
from gpuonboard.facts.nvidia_smi.faults import _cell_fault
from gpuonboard.facts.nvidia_smi.values import _clean
from gpuonboard.facts.usage_levels import BUSY_MEMORY_MIB, BUSY_UTIL_PCT, IDLE_HELD_MIB
from gpuonboard.resources import DATA_DIR, table_rows
from gpuonboard.steps.base import Check
from gpuonboard.steps.checks.gpu_health.common import gpu_label, gpu_list
from gpuonboard.steps.checks.gpu_health.vgpu_reserve import reserve_counted_as_used as reserve_counted_as_used
from gpuonboard.steps.checks.gpu_health.vgpu_reserve import vgpu_reserve_check as _vgpu_reserve_check
from gpuonboard.steps.checks.gpu_health.vgpu_reserve import vgpu_reserve_only as _vgpu_reserve_only
from gpuonboard.steps.checks.mig_memory import with_slices_used
from gpuonboard.steps.checks.once import loaded_once

# (the levels at which a GPU's numbers count as a job's: facts/usage_levels.py)

# The GPU's other engines, (label, GpuInfo field): a GPU idle by SM utilisation may still be
# encoding or decoding someone's video (NVENC at 100 % with ~800 MiB used: the R610 nvenc-load
# capture). Any non-zero figure is work: an idle engine reads 0 %.
ENGINES = (
    ("encoder", "encoder_util_pct"),
    ("decoder", "decoder_util_pct"),
    ("JPEG", "jpeg_util_pct"),
    ("OFA", "ofa_util_pct"),
)


DESKTOP_PROCESSES_FILE = DATA_DIR / "desktop_processes.yml"


@loaded_once
def desktop_process_names() -> frozenset[str]:
    """The desktop session's own process names of `data/desktop_processes.yml` (display
    servers, compositors, desktop shells, Windows' shell), lower case."""
    return frozenset(str(r["name"]).lower() for r in table_rows(DESKTOP_PROCESSES_FILE, "desktop_processes"))


def is_desktop_process(name: str) -> bool:
    """The process name's last path component (after `/` or `\\`) is a desktop's own process;
    a component nvidia-smi shortened (`...xperienceHost.exe`) is none."""
    base = name.strip().replace("\\", "/").rsplit("/", 1)[-1]
    return not base.startswith("...") and base.lower() in desktop_process_names()


def _engine_work(g: GpuInfo) -> list[str]:
    """'encoder 100 %', '2 encoder sessions': the engine figures that show work."""
    busy = [f"{label} {value:g} %" for label, field in ENGINES if (value := getattr(g, field))]
    if g.encoder_sessions:
        busy.append(f"{g.encoder_sessions} encoder session{'s' if g.encoder_sessions > 1 else ''}")
    return busy


def _engines_unread(g: GpuInfo) -> tuple[list[str], list[str]]:
    """(required, optional) engines whose figures this output did not give. The video encoder
    (utilisation or session count) and decoder are required to call a GPU with no process list
    idle; JPEG and OFA are optional (N/A on GPUs without the engine, and absent before R550)."""
    required = []
    if g.encoder_util_pct is None and g.encoder_sessions is None:
        required.append("encoder")
    if g.decoder_util_pct is None:
        required.append("decoder")
    optional = [label for label, field in ENGINES[2:] if getattr(g, field) is None]
    return required, optional


def _figures_busy(util: int | None, used: int | None) -> bool:
    """Utilisation or memory used (either may be unread) at the busy mark."""
    return (util is not None and util >= BUSY_UTIL_PCT) or (used is not None and used > BUSY_MEMORY_MIB)


def _busy(g: GpuInfo) -> str | None:
    """'at 100 % utilisation with 31.6 GiB used' (plus engine work: 'encoder 100 %') when the
    numbers show work, else None."""
    util = g.utilization_gpu_pct
    used = g.memory_used_mib
    engines = _engine_work(g)
    if not _figures_busy(util, used) and not engines:
        return None
    mem = f"{used / 1024:.1f} GiB used" if used is not None else "memory use not reported"
    at = f"at {util} % utilisation" if util is not None else "utilisation not reported"
    work = f" and {', '.join(engines)}" if engines else ""
    return f"{gpu_label(g)} {at} with {mem}{work}"


def _utilisation_alone(g: GpuInfo) -> bool:
    """The GPU's only sign of work is its SM utilisation: memory used read at an idle GPU's
    level (IDLE_HELD_MIB, in every output that read it) and no engine at work. Any job, in
    whatever container or VM, holds GPU memory; utilisation with none held is the known idle
    reading of Kepler boards (a Tesla K80 at 100 % with 0 MiB used, persistence mode off:
    openmm#2386) or a sample of a job that just ended: no job seen, and no idle GPU either."""
    util = g.utilization_gpu_pct
    mems = [g.memory_used_mib] + [m for _f, _u, m, _e in usage_samples(g)]
    return (
        util is not None
        and util >= BUSY_UTIL_PCT
        and all(m is not None and m <= IDLE_HELD_MIB for m in mems[:1])
        and all(m is None or m <= IDLE_HELD_MIB for m in mems[1:])
        and not _engine_work(g)
    )


def _utilisation_memory_unread(g: GpuInfo) -> bool:
    """The GPU's only sign of work is its SM utilisation and no output read its memory used (a
    `--query-gpu` CSV without `memory.used`, a monitoring script's: ksysguard's, an i3 bar's):
    as with utilisation alone (_utilisation_alone), no job is seen, since a job holds memory and
    whether this GPU holds any was not read (an idle Kepler board reads 100 % at 0 MiB, a GPU
    driving a desktop works with no job); the busy mark on utilisation alone is no fail."""
    # (not a GPU whose memory the driver cannot report, the GB10's unified memory, nor one whose
    # process list a cut took: that list, cut away, is the reason then)
    mems = [g.memory_used_mib] + [m for _f, _u, m, _e in usage_samples(g)]
    util = g.utilization_gpu_pct
    unread = all(m is None for m in mems) and not g.memory_unified and not _list_cut_away(g)
    return util is not None and util >= BUSY_UTIL_PCT and unread and not _engine_work(g)


def _memory_unread_check(unread: list[GpuInfo]) -> Check:
    """foreign_processes where a GPU busy by utilisation alone had its memory used not read:
    unverified, naming the fields missing."""
    display = any(g.display_active is None for g in unread)
    figures = "; ".join(
        f"{gpu_label(g)} at {g.utilization_gpu_pct} % utilisation, its memory used not reported"
        + (" (nor whether it drives a display)" if g.display_active is None else "")
        + (", no process listed" if g.processes_known else ", no process list read")
        for g in unread
    )
    fields = "memory.used" + (",display_active" if display else "")
    return Check(
        "foreign_processes",
        "none",
        figures,
        "unverified",
        "utilisation alone is no job's: a job holds GPU memory, and this output did not report the"
        " memory used (a `--query-gpu` CSV without `memory.used`); an idle Kepler board reads 100 %"
        f" at 0 MiB and a GPU that drives a desktop works with no job; add `{fields}` to the"
        " `--query-gpu` list and rerun it, or save `nvidia-smi` (the table: its process list,"
        " memory and display)",
    )


# Work shown beside utilisation with no memory held (_working_without_memory): the driver's own
# `gpu_idle` clock event reason read Not Active, the SM clock at its max (90 % of it or more) and
# the board drawing 40 % of its power limit or more. The real idle captures that read no
# gpu_idle reason come up at P0 with the clock at its max when nvidia-smi wakes them (persistence
# mode off) but draw 10-17 % of their limit (A100 67 W / 400 W, H100 70 W / 700 W, RTX 4090
# 57-68 W / 450 W), a T4 38 % (26.8 W / 70 W) at a third of its max clock; an L40S at 100 % with 0
# MiB used drew 145 W / 350 W (its table 242 W) at 2520 MHz, its max (utkuozdemir/nvidia_gpu_exporter).
WORK_SM_CLOCK_SHARE = 0.9
WORK_POWER_SHARE = 0.4


def _working_without_memory(g: GpuInfo) -> str | None:
    """'drawing 145 W of its 350 W limit, SM clock 2520 MHz of 2520 MHz, the GPU-idle clock reason
    not active' where a GPU busy by its utilisation alone (_utilisation_alone) shows work by its
    power, clocks and idle reason all read (the idle Kepler reading is at no such draw, or
    reads none of them); None otherwise."""
    draw, limit = g.power_draw_w, g.power_limit_w
    clock, top = g.clocks_sm_mhz, g.clocks_sm_max_mhz
    if not g.clock_event_reasons_known or "gpu_idle" in g.clock_event_reasons:
        return None
    if draw is None or not limit or clock is None or not top:
        return None
    if draw < WORK_POWER_SHARE * limit or clock < WORK_SM_CLOCK_SHARE * top:
        return None
    return (
        f"drawing {draw:g} W of its {limit:g} W limit, SM clock {clock} MHz of {top} MHz,"
        " the GPU-idle clock reason not active"
    )


def _working_check(working: list[GpuInfo], alone: list[GpuInfo]) -> Check:
    """foreign_processes where a GPU busy by utilisation alone shows work by its power and clocks:
    a warn naming them (a job that just ended, freeing its memory, or one nvidia-smi does not
    list), never the idle Kepler reading's unverified."""
    figures = "; ".join(
        f"{gpu_label(g)} at {g.utilization_gpu_pct} % utilisation with {g.memory_used_mib} MiB used,"
        f" {_working_without_memory(g)}"
        for g in working
    )
    rest = "; ".join(
        f"{gpu_label(g)} at {g.utilization_gpu_pct} % with {g.memory_used_mib} MiB used" for g in alone
    )
    return Check(
        "foreign_processes",
        "none",
        f"{figures}, no process listed" + (f"; {rest}" if rest else ""),
        "warn",
        "the GPU is working (its power draw and SM clock are a job's, and the driver does not call"
        " it idle) while no process is listed and no memory is held: a job that just ended, or one"
        " nvidia-smi does not list (another container's or VM's); rerun `nvidia-smi` a few seconds"
        " later: a GPU still working with no process listed is in someone else's use",
    )


def _utilisation_alone_check(alone: list[GpuInfo], gpus: list[GpuInfo]) -> Check:
    """foreign_processes where the only work seen is utilisation with no memory held and no
    process listed: unverified, with the reason."""
    figures = "; ".join(
        f"{gpu_label(g)} at {g.utilization_gpu_pct} % utilisation with {g.memory_used_mib} MiB used"
        + (f" (persistence mode {g.persistence_mode})" if g.persistence_mode else "")
        for g in alone
    )
    return Check(
        "foreign_processes",
        "none",
        f"{figures}, no process listed",
        "unverified",
        "utilisation with no GPU memory held is no job's (any job, in any container or VM, holds"
        " memory): an idle Kepler board (Tesla K80) reads 100 % with persistence mode off, and a"
        " sample may catch a job that just ended; enable persistence mode (`sudo nvidia-smi -pm 1`)"
        " and rerun `nvidia-smi`: an idle GPU reads 0 %",
    )


def _light_work(g: GpuInfo) -> bool:
    """The GPU does a little work, under the busy mark: utilisation above 0 % and more memory
    held than an idle GPU's (IDLE_HELD_MIB), neither at the busy mark (a busy one makes _busy
    true first). No job is proved (a small one, or a desktop's, of a container, VM or host whose
    processes nvidia-smi does not list here: a pod's view lists none of the host's), and no
    idle GPU either (the idle reading holds its memory at 0 %, or samples a few % with none held)."""
    util, used = g.utilization_gpu_pct, g.memory_used_mib
    return (
        util is not None
        and used is not None
        and 0 < util < BUSY_UTIL_PCT
        and IDLE_HELD_MIB < used <= BUSY_MEMORY_MIB
        and not _engine_work(g)
    )


def _light_work_check(light: list[GpuInfo]) -> Check:
    """foreign_processes where GPUs with no process listed do a little work (_light_work):
    unverified, naming the figures."""
    figures = "; ".join(
        f"{gpu_label(g)} at {g.utilization_gpu_pct} % utilisation with {g.memory_used_mib} MiB used"
        for g in light
    )
    listing = "no process listed" if all(g.processes_known for g in light) else "no process list read"
    return Check(
        "foreign_processes",
        "none",
        f"{figures}, {listing}",
        "unverified",
        "the GPU works a little (utilisation above 0 % with memory held) while no process is"
        " listed: a small job or a desktop in another container, VM or host (a pod's or"
        " container's nvidia-smi lists none of the host's processes; a display does not say whose"
        " work it is) shows just so, and an idle GPU does not; run `nvidia-smi` on the host itself"
        " (not in a container) and again a few seconds later: a GPU idle then reads 0 %",
    )


def _display_held(g: GpuInfo) -> bool:
    """The GPU drives a display and shows no work but its memory: utilisation under the busy
    mark (or not read) and no engine at work."""
    util = g.utilization_gpu_pct
    return g.display_active == "Enabled" and (util is None or util < BUSY_UTIL_PCT) and not _engine_work(g)


def _idle_by_numbers(g: GpuInfo) -> bool:
    """SM utilisation and memory read idle, and the encoder and decoder were read (idle: a busy
    one makes _busy true first)."""
    return (
        g.utilization_gpu_pct is not None
        and g.memory_used_mib is not None
        and g.utilization_gpu_pct < BUSY_UTIL_PCT
        and g.memory_used_mib <= BUSY_MEMORY_MIB
        and not _engines_unread(g)[0]
    )


def _unjudged_text(unjudged: list[GpuInfo], gpus: list[GpuInfo]) -> str:
    """Why GPUs with no process list could not be called idle: the figures missing."""
    no_figures = [g for g in unjudged if g.utilization_gpu_pct is None or g.memory_used_mib is None]
    parts = []
    if no_figures:
        # name the figure missing: a CSV of memory.used without utilization.gpu read its memory
        util = any(g.utilization_gpu_pct is None for g in no_figures)
        mem = any(g.memory_used_mib is None for g in no_figures)
        missing = (
            "utilisation / memory figures"
            if util and mem
            else "utilisation figure"
            if util
            else "memory figure"
        )
        parts.append(f"not reported for {gpu_list(no_figures, gpus)}: no process list and no {missing}")
    engines = [g for g in unjudged if g not in no_figures]
    if engines:
        unread = sorted({e for g in engines for e in _engines_unread(g)[0]})
        parts.append(
            f"{gpu_list(engines, gpus)} idle by utilisation and memory, but the video"
            f" {' and '.join(unread)} figures were not read and no process list was read from this output"
        )
    return "; ".join(parts)


CUT_LIST = "the output was cut short: its process list may be in the part cut away"
# (said as missing_facts.of_those_read says a cut: the gap of a table cut in its rows joins it)
CUT_HELD = "of what was read; its process list cut away"
# (a -q record read without its product name: `-q -d MEMORY,...` prints only the sections asked,
# its process list perhaps not among them; the cut took what followed, whatever that was)
CUT_HELD_SECTIONS = "of what was read; no process list read from these sections"


def _held_check(parts: Sequence[str], held: Sequence[GpuInfo]) -> Check:
    """foreign_processes' fail where GPUs whose process list a cut took hold more memory than a
    desktop's display: "drives no display" only where nvidia-smi said Disabled (a table's `Off`),
    else its display was not reported (`N/A`, a -q -d output of other sections)."""
    display = (
        "a GPU that drives no display"
        if all(g.display_active == "Disabled" for g in held)
        else "a GPU whose display nvidia-smi did not report"
    )
    # (a -q record of sections read with no product name: `-q -d ...`, which may not ask the list)
    sections = any(not g.name and g.parts_read for g in held)
    return Check(
        "foreign_processes",
        "none",
        "; ".join(parts) + f" ({CUT_HELD_SECTIONS if sections else CUT_HELD})",
        "fail",
        f"another job is using the GPUs you rent: {display} holds more than"
        f" {BUSY_MEMORY_MIB // 1024} GiB of memory, some job's allocations, whatever process list"
        f" {'these sections left out or ' if sections else ''}the cut took; ask the vendor before you start",
    )


def _held_beyond_desktop(g: GpuInfo) -> bool:
    """A GPU whose process list was not read, driving no display, holds more memory than the
    busy mark: some job's allocations (Xorg on a headless GPU holds a few MiB), whatever its
    list, cut away, would name. A GPU that drives a display may hold GiBs for a desktop's
    applications (the RTX 4000 SFF Ada's 3.5 GiB): no job's from the figures alone; so may a
    GPU under Windows' WDDM driver model, whose desktop (dwm.exe, explorer.exe ...) holds its
    memory with Display Active read Disabled (the real RTX 2080 SUPER's 1296 MiB, 591.86)."""
    return (
        not g.processes_known
        and g.display_active != "Enabled"
        and g.driver_model != "WDDM"
        and g.memory_used_mib is not None
        and g.memory_used_mib > BUSY_MEMORY_MIB
    )


def _as_listed(g: GpuInfo, label: str) -> GpuInfo:
    """`g` with only the figures of the output `label` (one of its `usage_samples`: its
    utilisation and memory sample, and the engines where that output gave them): that output's
    process list and figures, of one moment."""
    samples = usage_samples(g)
    own = next((util, mem) for fmt, util, mem, _empty in samples if fmt == label)
    from_output = {field for field, fmt in g.provenance if fmt == label}
    if not g.provenance and label == samples[0][0]:
        from_output = {f.name for f in fields(g)}  # (no provenance: every field is the richest's)

    def kept(field: str) -> Any:
        return getattr(g, field) if field in from_output else None

    return replace(
        g,
        utilization_gpu_pct=own[0],
        memory_used_mib=own[1],
        encoder_util_pct=kept("encoder_util_pct"),
        decoder_util_pct=kept("decoder_util_pct"),
        jpeg_util_pct=kept("jpeg_util_pct"),
        ofa_util_pct=kept("ofa_util_pct"),
        encoder_sessions=kept("encoder_sessions"),
    )


def _busy_beside_empty_list(g: GpuInfo) -> str | None:
    """The work ('GPU 0 at 54 % utilisation with 17.8 GiB used') that an output whose own
    process list reads empty shows in its own figures, where several outputs read `g`
    (`usage_samples`): another job, whichever output ranks first; None where none does."""
    for label, _util, _mem, empty in usage_samples(g):
        if empty and (b := _busy(_as_listed(g, label))):
            return b
    return None


def disagreement(g: GpuInfo) -> str | None:
    """'54 % / 18193 MiB in the CSV query, 0 % / 0 MiB in the table' where the outputs of
    separate calls disagree on whether the GPU works (one sample busy, another idle by both
    figures): the GPU changed between the calls; None where they agree."""
    samples = usage_samples(g)
    idle = [s for s in samples if s[1] is not None and s[2] is not None and not _figures_busy(s[1], s[2])]
    if not idle or not any(_figures_busy(u, m) for _f, u, m, _e in samples):
        return None

    def shown(value: int | None, unit: str) -> str:
        return "N/A" if value is None else f"{value}{unit}"

    return ", ".join(
        f"{shown(u, ' %')} / {shown(m, ' MiB')} in {FORMAT_NAMES.get(f, f)}" for f, u, m, _e in samples
    )


def _judge_unlisted(unlisted: list[GpuInfo]) -> tuple[list[str], list[str], list[str]]:
    """(busy with its list read empty, busy with no list read, disagreeing) of the GPUs with no
    process listed. Where several outputs read a GPU, any output whose own process list reads
    empty beside its own figures' work is another job, whatever the other outputs' samples say;
    where the outputs of separate calls disagree on whether the GPU works and the busy sample
    has no list of its own (a CSV query), no fault is seen from the mix; where they agree,
    another output's figures add what the list's did not read (the engines a table lacks)."""
    listed_empty: list[str] = []
    no_list: list[str] = []
    mixed: list[str] = []
    for g in unlisted:
        listing = "no process listed" if g.processes_known else "no process list read"
        if b := _busy_beside_empty_list(g):
            listed_empty.append(b)
        elif disagree := disagreement(g):
            mixed.append(f"{gpu_label(g)} {disagree}, {listing}")
        elif b := _busy(g):
            (listed_empty if g.processes_known else no_list).append(b)
    return listed_empty, no_list, mixed


def _mixed_check(mixed: list[str], parts: list[str], cut: bool) -> Check:
    """foreign_processes where the only work seen is in figures another call's output gave
    beside this process list (or none): unverified, naming each output's figures."""
    return Check(
        "foreign_processes",
        "none",
        "; ".join(parts + mixed) + (f" ({CUT_LIST})" if cut else ""),
        "unverified",
        "nvidia-smi's outputs are separate calls, at separate moments, and they disagree on whether"
        " the GPU is at work (a job that started or ended between them, or a monitoring sample):"
        " neither is judged from the other's figures; rerun `nvidia-smi` (the table: its process"
        " list and figures of one moment) and check again",
    )


def _work_seen(
    compute: list[str],
    graphics: list[str],
    mixed: list[str],
    busy_listed_empty: list[str],
    busy_no_list: list[str],
    cut: bool,
    held: Sequence[GpuInfo] = (),
) -> Check:
    """rule_foreign_processes where a compute process is listed or a GPU with no process listed
    shows work: a fail, or unverified where the process list that would name whose was cut,
    unless a GPU whose list the cut took holds more memory than a desktop's (`held`)."""
    parts = compute + graphics + mixed
    if busy_listed_empty:
        parts.append("; ".join(busy_listed_empty) + ", though nvidia-smi lists no process there")
    if busy_no_list:
        parts.append("; ".join(busy_no_list) + ", and no process list was read from this output")
    hidden = (
        " (a job in another container or VM is not listed by nvidia-smi here)"
        if busy_listed_empty or busy_no_list
        else ""
    )
    if cut and not compute and not busy_listed_empty and not held:  # (a list read empty is no cut)
        return Check(
            "foreign_processes",
            "none",
            "; ".join(parts) + f" ({CUT_LIST})",
            "unverified",
            "a GPU shows work but the process list that would name whose (a compute job, or a"
            " desktop's graphics processes) was cut from this output: rerun `nvidia-smi` and save"
            " its whole output",
        )
    if held and not compute and not busy_listed_empty:
        # (the rows read are evidence, as in a whole table: memory held beyond a desktop's)
        return _held_check(parts, held)
    return Check(
        "foreign_processes",
        "none",
        "; ".join(parts),
        "fail",
        f"another job is using the GPUs you rent{hidden}; ask the vendor before you start",
    )


def rule_foreign_processes(
    gpus: list[GpuInfo],
    cut: bool = False,
    driver_version: str | None = None,
    container: str = "",
    wsl: str | None = None,
) -> Check:
    """Nobody else's job runs on 'your' GPUs.

    FAIL: a compute process is listed, or a GPU with no listed process (no list in this output,
    or an empty one) shows utilisation >= 10 %, more than 1 GiB of memory used, or any work on
    another engine (encoder / decoder / JPEG / OFA above 0 %, an encoder session): another
    job, whose processes a container or VM hides. WARN: only graphics processes, and a desktop's
    own processes typed C+G or in a compute-apps list (a compositor, Windows' shell:
    data/desktop_processes.yml). PASS: every
    GPU's list is known and empty, or (no list) its utilisation, memory, encoder and decoder
    all read idle (JPEG / OFA when reported). UNVERIFIED: a GPU with no process listed working a
    little (_light_work: some utilisation with memory held, under the busy mark); no list, and
    the utilisation / memory figures or the encoder / decoder figures not reported (named in
    the row); and, where `cut`
    (an output that lists processes, cut short: a table cut before or inside its Processes
    section), a GPU that shows work with no process listed, or only graphics processes listed:
    its (other) processes may be in the part cut away (a desktop's graphics processes, a warn; a
    compute job, a fail), so it is no fault seen, unless a compute process is listed; and a GPU
    with no process listed whose figures in separate calls' outputs disagree on whether it works
    (_judge_unlisted: an empty list is judged by its own output's figures); and, in a
    container's or pod's view (`container`: how the nvidia-smi read ran there), a GPU holding
    more memory than an idle one's with no process listed, at any utilisation: a container's
    nvidia-smi never lists another container's processes (_held_in_view_check); and, on a
    WSL2 guest (`wsl`: its sign, guest.wsl_sign), a GPU with no process listed whose figures show
    work or memory held: they count the Windows host's own use of the card (its desktop's), its
    Disp.A is never On there and it lists no process (_wsl_guest_check).
    """

    def fmt(g: GpuInfo, p: GpuProcess) -> str:
        used = "memory N/A" if p.used_memory_mib is None else f"{p.used_memory_mib} MiB"
        if p.memory_cut:  # (`13020...`: the table's width cut the cell, its GPU's figure stands)
            held = g.memory_used_mib
            beside = f"; {gpu_label(g)} has {held} MiB used" if held is not None else ""
            used = f"memory cell cut by the table's width: {p.memory_cut}{beside}"
        # (a name nvidia-smi could not read, WDDM's `Insufficient Permissions`, a container's
        # `[Not Found]`, is no name)
        unread = p.name.strip() and (
            _cell_fault(p.name) or (p.name.strip() if _clean(p.name) is None else None)
        )
        name = f"(name not read: {unread})" if unread else p.name.strip() or "(no name given)"
        return f"{gpu_label(g)}: pid {p.pid} {name} ({used})"

    # (MIG mode: the GPU's own row says N/A, its slices' rows show the memory a job holds)
    gpus = [with_slices_used(g) for g in gpus]
    read = [g for g in gpus if not g.faults]
    compute, graphics, desktop = _sorted_processes(read, fmt)
    # GPUs with no process listed: the figures may still show someone's job
    unlisted = [g for g in read if not g.processes]
    # (a vGPU's memory under a driver that counts its reserve as used is no job's)
    reserve = [g for g in unlisted if _vgpu_reserve_only(g, driver_version, not _engine_work(g))]
    unlisted = [g for g in unlisted if g not in reserve]
    # memory held with no process listed, on a GPU that drives a display and shows no other
    # work: a desktop's (a Windows host's under WSL, a VM host's: not listed in the guest)
    # (a list the cut took may hold the job that holds it: never a desktop's from the cut)
    display = [g for g in unlisted if _busy(g) and _display_held(g) and not _list_cut_away(g)]
    unlisted = [g for g in unlisted if g not in display]
    # (a WSL2 guest: its figures count the Windows host's own use, and it lists no process)
    guest = [g for g in unlisted if wsl and (_busy(g) or _held_in_view(g))]
    unlisted = [g for g in unlisted if g not in guest]
    # (utilisation with no memory held is no job's: an idle K80 with persistence mode off)
    alone = [g for g in unlisted if _utilisation_alone(g)]
    # (utilisation with the memory used not read: whether a job holds memory is not known)
    mem_unread = [g for g in unlisted if _utilisation_memory_unread(g)]
    unlisted = [g for g in unlisted if g not in alone and g not in mem_unread]
    # (a little work, under the busy mark, with memory held: neither a job seen nor idle)
    light = [g for g in unlisted if _light_work(g) and not disagreement(g) and not _list_cut_away(g)]
    unlisted = [g for g in unlisted if g not in light]
    # (memory held under the busy mark in a container's view: another container's job or none)
    in_view = [g for g in unlisted if container and _held_in_view(g)]
    unlisted = [g for g in unlisted if g not in in_view]
    busy_listed_empty, busy_no_list, mixed = _judge_unlisted(unlisted)
    if mixed and not compute and not busy_listed_empty and not busy_no_list:
        return _mixed_check(mixed, graphics, cut)
    if compute or busy_listed_empty or busy_no_list:
        held = [g for g in unlisted if _held_beyond_desktop(g)] if cut else []
        return _work_seen(compute, graphics, mixed, busy_listed_empty, busy_no_list, cut, held)
    # (a list not known whole, an entry cut short in it, is open too)
    open_lists = [g for g in read if g.processes and (g.processes_open or not g.processes_known)]
    if partial := [b for g in open_lists if (b := _busy(g))]:
        # graphics processes listed beside work, in a list the output cut before it closed: the
        # GPU's other rows (a compute job's: the real T4 table's tritonserver after its Xorg) may
        # be in the part cut away, so the warn of a desktop's processes is no reading of that GPU
        # (a whole list of a view of some GPUs, `nvidia-smi -i 7`, is no cut)
        return Check(
            "foreign_processes",
            "none",
            "; ".join(graphics) + f"; {'; '.join(partial)} ({CUT_LIST})",
            "unverified",
            "a GPU shows work beside the graphics processes listed, and the rest of its process list"
            " (a compute job's rows) may be in the part cut from this output: rerun `nvidia-smi` and"
            " save its whole output",
        )
    if guest and wsl:
        return _wsl_guest_check(guest, wsl)
    if working := [g for g in alone if _working_without_memory(g)]:
        return _working_check(working, [g for g in alone if g not in working])
    if alone:
        return _utilisation_alone_check(alone, gpus)
    if mem_unread:
        return _memory_unread_check(mem_unread)
    if light:
        return _light_work_check(light)
    if in_view:
        return _held_in_view_check(in_view, container)
    if reserve and not graphics:
        return _vgpu_reserve_check(reserve, driver_version)
    if graphics or display:
        return _graphics_check(graphics, display, desktop)
    return _none_listed(read, gpus)


def _held_in_view(g: GpuInfo) -> bool:
    """No work at the busy mark, and more memory held than an idle GPU's (IDLE_HELD_MIB)."""
    used = g.memory_used_mib
    return used is not None and used > IDLE_HELD_MIB and _busy(g) is None


def _held_in_view_check(held: list[GpuInfo], container: str) -> Check:
    """foreign_processes where, in a container's or pod's view, GPUs hold memory with no process
    listed: unverified (the view lists none of another container's processes)."""
    figures = "; ".join(
        f"{gpu_label(g)} at {g.utilization_gpu_pct} % utilisation with {g.memory_used_mib} MiB used"
        for g in held
    )
    return Check(
        "foreign_processes",
        "none",
        f"{figures}, no process listed ({container})",
        "unverified",
        "a container's or pod's nvidia-smi lists only its own processes, never another container's:"
        " the memory held may be another container's job at rest; run `nvidia-smi` on the host"
        " itself (not in a container): an idle GPU holds a few MiB at most",
    )


def _wsl_guest_check(held: list[GpuInfo], wsl: str) -> Check:
    """foreign_processes where, on a WSL2 guest, GPUs show work or hold memory with no process
    listed: unverified (the figures count the Windows host's own use; no list is kept there)."""
    figures = "; ".join(
        _busy(g)
        or f"{gpu_label(g)} at {g.utilization_gpu_pct} % utilisation with {g.memory_used_mib} MiB used"
        for g in held
    )
    return Check(
        "foreign_processes",
        "none",
        f"{figures}, no process listed, on a WSL2 guest ({wsl})",
        "unverified",
        "in a WSL2 guest nvidia-smi's memory and utilisation count the Windows host's own use of the"
        " card (its desktop's, its programs'), its Disp.A never reads On and it lists none of the"
        " host's processes, so whether another job holds the GPU cannot be told here: look at the"
        " Windows host's own `nvidia-smi` (or its Task Manager)",
    )


def _list_cut_away(g: GpuInfo) -> bool:
    """The output that would list `g`'s processes was cut before its list (or inside it, before
    an entry of it was read whole): its processes may be in the part cut away."""
    return g.processes_open and not g.processes_known


def _sorted_processes(
    read: list[GpuInfo], fmt: Callable[[GpuInfo, GpuProcess], str]
) -> tuple[list[str], list[str], bool]:
    """(compute, graphics, a desktop's own process among them) of the processes listed: a `G`
    process is graphics, unless it holds most of the GPU's memory (_holds_most: a job); a `C+G`
    one (or one of a `--query-compute-apps` list, which gives no type) whose name is a desktop's
    own process (data/desktop_processes.yml: KDE's kwin_wayland, Windows' dwm.exe and
    explorer.exe) is the box's display, listed with the graphics; any other is compute."""
    compute: list[str] = []
    graphics: list[str] = []
    desktop = False
    for g in read:
        # (`--query-compute-apps` gives no type: its "C" is any process with a compute context,
        # a C+G compositor's too)
        apps = ("processes", "compute_apps") in g.provenance
        for p in g.processes:
            if p.type == "G" and _holds_most(g, p):
                compute.append(
                    f"{fmt(g, p)} (typed G, yet it holds most of the GPU's memory: a job, not a display)"
                )
            elif p.type == "G":
                graphics.append(fmt(g, p))
            elif (p.type == "C+G" or apps) and is_desktop_process(p.name) or _untyped_desktop(p):
                how = "in --query-compute-apps" if apps else p.type or "no type given"
                graphics.append(f"{fmt(g, p)} ({how}: a desktop's own process)")
                desktop = True
            else:
                compute.append(fmt(g, p))
    return compute, graphics, desktop


def _untyped_desktop(p: GpuProcess) -> bool:
    """`p`, of a list that gives no type and its command line (nvidia-htop's), runs a desktop's
    own program (`/usr/lib/xorg/Xorg vt1 -displayfd 3`)."""
    return p.type is None and bool(p.name.split()) and is_desktop_process(p.name.split()[0])


def _holds_most(g: GpuInfo, p: GpuProcess) -> bool:
    """`p` holds more than half of `g`'s memory, and more than a busy GPU's 1 GiB: a job's share,
    whatever its type (a display server or desktop holds tens to hundreds of MiB; a rendering or
    game process, or a job a container's runtime reports as graphics, holds the GPU)."""
    used, total = p.used_memory_mib, g.memory_total_mib
    return used is not None and total is not None and used > BUSY_MEMORY_MIB and 2 * used > total


def _graphics_check(graphics: list[str], display: list[GpuInfo], desktop: bool = False) -> Check:
    """foreign_processes where only graphics processes (or a desktop's own processes, whatever
    their type: `desktop`) are listed, or a GPU that drives a display holds memory with no
    process listed: a warn."""
    shown = [
        f"{gpu_label(g)} drives a display with {(g.memory_used_mib or 0) / 1024:.1f} GiB used"
        for g in display
    ]
    return Check(
        "foreign_processes",
        "none",
        "; ".join(graphics + shown) + (", no process listed" if display else ""),
        "warn",
        "a graphics process (e.g. a display server) holds GPU memory on a server you rent headless"
        + (
            "; a desktop's memory on a GPU that drives a display is not listed where its processes"
            " run outside this system (a Windows host under WSL, a VM's host)"
            if display
            else ""
        )
        + (
            "; a desktop session runs on the GPU you rent (its compositor or shell, which nvidia-smi"
            " lists as C+G or among the compute apps, is the box's display, not another job): ask"
            " the vendor"
            if desktop
            else ""
        ),
    )


def _none_listed(read: list[GpuInfo], gpus: list[GpuInfo]) -> Check:
    """foreign_processes where no GPU read lists a process and none shows work: a pass where
    every list is known beside a figure, or (no list) every figure reads idle; else unverified,
    naming what is missing."""
    # an empty list with no figure beside it (`-q -d PIDS` alone): a job a container hides shows
    # only in the figures, so an empty list alone is no pass
    blind = [
        g for g in read if g.processes_known and g.memory_used_mib is None and g.utilization_gpu_pct is None
    ]
    if blind:
        return Check(
            "foreign_processes",
            "none",
            f"no process listed on {gpu_list(blind, gpus)}, and no utilisation or memory figure read",
            "unverified",
            "a job in another container or VM is not listed by nvidia-smi and shows only in the"
            " GPU's utilisation and memory used, which this output does not give (left out, or N/A"
            " on this GPU)",
        )
    if all(g.processes_known for g in read):
        return Check("foreign_processes", "none", "none", "pass")
    # a list the cut took (an output cut inside its process list, before this GPU's rows): a
    # process that shows in no figure (a desktop's, a small job's) may be there; idle figures
    # pass a GPU whose format lists no processes, never one whose list was cut away
    if cut_away := [g for g in read if _list_cut_away(g)]:
        return Check(
            "foreign_processes",
            "none",
            f"no process list read for {gpu_list(cut_away, gpus)} ({CUT_LIST})",
            "unverified",
            "the process list of the GPU(s) named was cut from this output: rerun `nvidia-smi` and"
            " save its whole output",
        )
    no_list = [g for g in read if not g.processes_known]
    unjudged = [g for g in no_list if not _idle_by_numbers(g)]
    if unjudged:
        return Check(
            "foreign_processes",
            "none",
            _unjudged_text(unjudged, gpus),
            "unverified",
            "no process list was read from this nvidia-smi output; `nvidia-smi` (the table) or"
            " `nvidia-smi --query-compute-apps=pid,used_memory --format=csv` shows them, and"
            " `--query-gpu=utilization.gpu,memory.used,utilization.encoder,utilization.decoder,"
            "encoder.stats.sessionCount` the engines",
        )
    figures = ", ".join(
        f"{gpu_label(g)} {g.utilization_gpu_pct} % / {g.memory_used_mib} MiB" for g in no_list
    )
    optional = sorted({e for g in no_list for e in _engines_unread(g)[1]})
    unread = f" ({' and '.join(optional)} not reported)" if optional else ""
    return Check(
        "foreign_processes",
        "none",
        f"none by utilisation, memory used and the video engines ({figures}){unread};"
        " no process list was read from this output",
        "pass",
    )
