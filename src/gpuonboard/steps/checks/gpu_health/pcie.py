"""The PCIe rules of gpu_health: the link's generation and width (the slot's cap included), and
the replay counter against the thresholds of `data/pcie_replay.yml`."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from gpuonboard.facts.gpu_agree import FORMAT_NAMES, link_reads
from gpuonboard.facts.nvidia_smi import GpuInfo
from gpuonboard.resources import DATA_DIR, data_file
from gpuonboard.steps.base import Check
from gpuonboard.steps.checks.gpu_health.common import (
    IDLE_PSTATES,
    gpu_label,
    gpu_list,
    held_as_datacenter,
    is_idle,
)
from gpuonboard.steps.checks.once import loaded_once


def _slot_capped(gpus: list[GpuInfo]) -> list[str]:
    """GPUs whose host slot supports a lower PCIe generation than the card (a Gen4 RTX 4090 in a
    Gen3 slot): the link's max is then the slot's, so a link at that max still runs below the
    card's; nvidia-smi (R520+) reports both as `max_device_link_gen` / `max_host_link_gen`."""
    return [
        f"{gpu_label(g)} in a Gen{g.pcie_gen_host_max} slot (the card is Gen{g.pcie_gen_device_max})"
        for g in gpus
        if g.pcie_gen_host_max and g.pcie_gen_device_max and g.pcie_gen_host_max < g.pcie_gen_device_max
    ]


def bounded_host_max(g: GpuInfo, cell_fault: str) -> bool:
    """Whether `cell_fault` is of the host's maximum link generation (-q `Host Max`, -q -x
    `max_host_link_gen`: `Unknown Error` in many VMs) on a GPU whose link runs at the card's own
    maximum generation at its full width: the slot then runs at least that generation, which is
    all pcie_link asks of it (the host's maximum tells slot from card only for a link below the
    card's maximum, _slot_capped)."""
    field = cell_fault.rsplit(" reads ", 1)[0].lower()
    if "host max" not in field and "max_host_link_gen" not in field:
        return False
    card_max = g.pcie_gen_device_max
    return bool(
        card_max
        and g.pcie_gen_current
        and g.pcie_gen_current >= card_max
        and g.pcie_width_current
        and g.pcie_width_max
        and g.pcie_width_current >= g.pcie_width_max
    )


# a GPU's link as one reading classes it, worst first: below its maximum at load (or lanes lost),
# idle and below, below with the load not read, idle at Gen1 (power saving), at its maximum
_CLASSES = ("busy", "idle", "unknown", "downshift", "")


def _slow_links(gpus: list[GpuInfo]) -> tuple[list[str], list[str], list[str], list[str]]:
    """The links below the card's maximum: (at load or lanes lost, idle and narrower, idle or not
    unknown, idle at a lower generation only: power saving, no slow link). A GPU whose link two
    nvidia-smi formats read (`gpu_agree.link_reads`) is classed by each reading, the worst kept: the CSV's
    Gen1 at P2, 100 % is no power saving because -q read Gen1 at P8 a moment before."""
    out: dict[str, list[str]] = {c: [] for c in _CLASSES}
    for g in gpus:
        readings = [_classed(v, where) for v, where in _readings(g)]
        kind, slow = min(readings, key=lambda r: _CLASSES.index(r[0]))
        if kind:
            out[kind].append(slow)
    return out["busy"], out["idle"], out["unknown"], out["downshift"]


def _readings(g: GpuInfo) -> list[tuple[GpuInfo, str]]:
    """`g` as merged, then `g` as each format that read its link saw it, with that format's name
    ('' for the merged GPU). A reading is judged beside its own load (P-state, utilisation,
    gpu_idle): a load read by a format that read another link, or none, is another moment's,
    so it is left out (the load unknown: unverified, never idle nor busy) unless a format read
    that same link generation (and width) with it: -q's Gen1 x16 at P8 lends its P8 to a CSV's
    Gen1 x16 read with no P-state, never to a CSV's Gen1 beside -q's Gen4 at P0, 100 %."""
    reads = [(r[0], r[1:5], r[5:]) for r in link_reads(g)]
    out = [(_own_load(g, reads), "")]
    for label, (gen, gen_max, width, width_max), load in reads:
        lent = [o[2] for o in reads if o[0] != label and _same_link((gen, width), (o[1][0], o[1][2]))]
        pstate, util, idle = (
            next((v for v in [mine, *(o[i] for o in lent)] if v is not None), None)
            for i, mine in enumerate(load)
        )
        link: dict[str, Any] = {
            "pcie_gen_current": gen,
            "pcie_gen_max": gen_max or g.pcie_gen_max,
            "pcie_width_current": width,
            "pcie_width_max": width_max or g.pcie_width_max,
            "performance_state": pstate,
            "utilization_gpu_pct": util,
            "clock_event_reasons": ("gpu_idle",) if idle else (),
            "clock_event_reasons_known": idle is not None,
        }
        out.append((replace(g, **link), FORMAT_NAMES.get(label, label)))
    return out


def _same_link(a: tuple[int | None, int | None], b: tuple[int | None, int | None]) -> bool:
    """Whether two readings' (generation, width) are one link state: the same generation, and
    the same width where both read it."""
    return a[0] is not None and a[0] == b[0] and (a[1] is None or b[1] is None or a[1] == b[1])


_LOAD_FIELDS = ("performance_state", "utilization_gpu_pct", "clock_event_reasons")


def _own_load(g: GpuInfo, reads: list[tuple[str, Any, Any]]) -> GpuInfo:
    """The merged `g` with each load field (its `provenance`) taken from a format that read no
    link, or another link than the merged one, left out: a table's P0, 100 % is no load of a
    CSV's Gen1 read at another moment."""
    came = dict(g.provenance)
    linked = {came[f] for f in ("pcie_gen_current", "pcie_width_current") if f in came}
    if not linked:
        return g
    linked |= {
        label
        for label, link, _ in reads
        if _same_link((g.pcie_gen_current, g.pcie_width_current), (link[0], link[2]))
    }
    other = [f for f in _LOAD_FIELDS if f in came and came[f] not in linked]
    if not other:
        return g
    blank: dict[str, Any] = {f: () if f == "clock_event_reasons" else None for f in other}
    if "clock_event_reasons" in other:
        blank["clock_event_reasons_known"] = False
    return replace(g, **blank)


def _classed(g: GpuInfo, where: str) -> tuple[str, str]:
    """(its class in _CLASSES, the finding) of one reading of `g`'s link (`where`: the format
    that read it, named in the finding; '' for the merged GPU)."""
    # nvidia-smi --help-query-gpu, of the current link generation and width alike: "These may
    # be reduced when the GPU is not in use" (an idle AWS A10G reads x8 of x16, P8, 0 %)
    # (of idle links: every real one narrowed is at a lower generation too, Gen1 of Gen4 on
    # an AWS A10G; power saving drops both, so a link at its top generation but narrower has
    # lost lanes, idle or not: a V100 SXM2 at P0 "Idle: Active" reads x2 of x16 at Gen3 of Gen3)
    below = []
    narrow = bool(g.pcie_width_current and g.pcie_width_max and g.pcie_width_current < g.pcie_width_max)
    top_gen = bool(g.pcie_gen_current and g.pcie_gen_max and g.pcie_gen_current >= g.pcie_gen_max)
    if narrow:
        below.append(f"x{g.pcie_width_current} of x{g.pcie_width_max}")
    if g.pcie_gen_current and g.pcie_gen_max and g.pcie_gen_current < g.pcie_gen_max:
        below.append(f"Gen{g.pcie_gen_current} of Gen{g.pcie_gen_max}")
    if not below:
        return "", ""
    slow = f"{gpu_label(g)} {', '.join(below)}" + (f" (in {where})" if where else "")
    if narrow and top_gen:
        return "busy", f"{slow} at Gen{g.pcie_gen_current} of Gen{g.pcie_gen_max} (not power saving)"
    if _power_saving(g):
        return "downshift", slow
    if is_idle(g):
        return "idle", slow
    if g.performance_state is None and g.utilization_gpu_pct is None and not g.clock_event_reasons_known:
        return "unknown", slow
    return "busy", slow


def _power_saving(g: GpuInfo) -> bool:
    """A link at Gen1 at its full width (or a width not read) on a GPU in an idle P-state (P5-P15) with no
    utilisation read above 0: the driver's power saving (nvidia-smi: "may be reduced when the
    GPU is not in use"), never a degraded link: the generation the slot allows is the link's
    maximum (NVML: "possible with this device and system"), judged against the card's by
    _slot_capped. Every real idle Gen1 capture is at P8 (RTX 3060 / 3090 / 4090, A10, Titan V,
    Quadro, RTX 4000 SFF); an idle H100 / H200 / A100 sits at P0 ("Idle: Active") at its full
    generation, so Gen1 there, or on a P-state not read, or at 100 %, is no power saving seen.
    (A generation between, Gen3 of Gen4 idle, is no power-saving state seen either: a link that
    may not train higher, so still a warning.) A width not read is no narrower link: the link's
    generation is power saving, its width unknown, and _links_read names it unverified."""
    return (
        g.pcie_gen_current == 1
        and not (g.pcie_width_current and g.pcie_width_max and g.pcie_width_current < g.pcie_width_max)
        and g.performance_state in IDLE_PSTATES
        and not (g.utilization_gpu_pct or 0) > 0
    )


def _links_read(gpus: list[GpuInfo], downshift: list[str]) -> Check:
    """pcie_link where no link is below its maximum (an idle GPU's lower generation, `downshift`,
    is power saving): at max, or what the output did not give."""
    read = [g for g in gpus if not g.faults]  # (a GPU nvidia-smi cannot read: gpu_health fails it)
    note = "".join(f" ({gpu_label(g)} unreadable)" for g in gpus if g.faults)
    unmatched = [g for g in read if not _both_known(g)]
    if read and not unmatched:
        said = "at max" if not downshift else f"at max width; idle, power saving: {'; '.join(downshift)}"
        return Check("pcie_link", "max gen and width", said + note, "pass")
    if any(g.pcie_gen_current or g.pcie_width_current for g in read):
        # a link read without the card's maximum: nothing to compare it with
        shown = "; ".join(_unread_link(g) for g in unmatched)
        return Check(
            "pcie_link",
            "max gen and width",
            f"{shown}{note}",
            "unverified",
            "this nvidia-smi output leaves out part of the link (its current generation or width, or"
            " the card's maximum of them), so a narrowed or slowed link cannot be told; `nvidia-smi"
            " -q -d PCIE` shows both",
        )
    # the plain table carries no link generation / width: a narrowed link (a riser fault) could
    # hide there, so unverified rather than a plain warning
    return Check(
        "pcie_link",
        "max gen and width",
        "not reported",
        "unverified",
        "this nvidia-smi output gives no PCIe link generation or width; `nvidia-smi -q -d PCIE` shows them",
    )


def rule_pcie_link(gpus: list[GpuInfo]) -> Check:
    """PCIe link at the card's max generation and width (both may drop while idle, but a width
    below its maximum at the top generation is lanes lost: it fails, idle or not)."""
    slow_busy, slow_idle, slow_unknown, downshift = _slow_links(gpus)
    if slow_busy:
        return Check(
            "pcie_link",
            "max gen and width",
            "; ".join(slow_busy),
            "fail",
            "a narrower or slower link than the card supports hints at a riser/slot fault or a"
            " virtualisation limit; ask the vendor to check the slot",
        )
    if slow_unknown:
        return Check(
            "pcie_link",
            "max gen and width",
            f"{'; '.join(slow_unknown)} (whether the GPU was idle is not reported)",
            "unverified",
            "an idle GPU's link downshifts to save power, and this output gives no P-state,"
            " utilisation or clock reasons to tell; `nvidia-smi -q -d PCIE,PERFORMANCE` under load"
            " shows whether the link reaches its maximum",
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
                "the GPU is idle and its link may run narrower or slower to save power; rerun under"
                " load (`nvidia-smi -q -d PCIE,PERFORMANCE` while it works): a link still below its"
                " maximum then is a riser or slot fault, or a slot narrower than the card"
            )
        return Check(
            "pcie_link",
            "max gen and width",
            "; ".join(
                capped + slow_idle + ([f"idle, power saving: {'; '.join(downshift)}"] if downshift else [])
            ),
            "warn",
            "; ".join(advice),
        )
    return _links_read(gpus, downshift)


def _both_known(g: GpuInfo) -> bool:
    """Whether both the link's generation and width were read with the card's maximum."""
    return bool(g.pcie_gen_current and g.pcie_gen_max and g.pcie_width_current and g.pcie_width_max)


_LINK_FIELDS = (
    ("pcie_gen_current", "current generation"),
    ("pcie_gen_max", "max generation"),
    ("pcie_width_current", "current width"),
    ("pcie_width_max", "max width"),
)


def _unread_link(g: GpuInfo) -> str:
    """'GPU 0 Gen5 (the card's maximum not reported)' where only the maxima are missing, else the
    fields actually missing: 'GPU 4 Gen1 (current width not reported)'; 'GPU 1 (no link read)'."""
    missing = [what for attr, what in _LINK_FIELDS if not getattr(g, attr)]
    if len(missing) == len(_LINK_FIELDS):
        return f"{gpu_label(g)} (no link read)"
    if missing == ["max generation", "max width"]:
        return f"{gpu_label(g)} {_link(g)} (the card's maximum not reported)"
    said = ", ".join(missing[:-1]) + " and " + missing[-1] if len(missing) > 1 else missing[0]
    return f"{gpu_label(g)} {_link(g)} ({said} not reported)"


def _link(g: GpuInfo) -> str:
    """The link as read: `Gen1 x16`, `Gen4`, or `-`."""
    parts = [
        f"Gen{g.pcie_gen_current}" if g.pcie_gen_current else "",
        f"x{g.pcie_width_current}" if g.pcie_width_current else "",
    ]
    return " ".join(p for p in parts if p) or "-"


PCIE_REPLAY_FILE = DATA_DIR / "pcie_replay.yml"


@loaded_once
def pcie_replay_limits() -> dict[str, int]:
    """warn_replays / fail_replays / fail_rollovers from `data/pcie_replay.yml` (sources there)."""
    rows = data_file(PCIE_REPLAY_FILE)
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
        return _replays_not_reported(read, expected)
    fails: list[str] = []
    warns: list[str] = []
    for g in known:
        # (a counter printed N/A, empty or as a fault marker is None: unread, never 0 replays)
        replays, rollovers = g.pcie_replays, g.pcie_replay_rollovers or 0
        said = f"{replays} replays" if replays is not None else "replays not reported"
        text = f"{gpu_label(g)}: {said}" + (f", {rollovers} rollover(s)" if rollovers else "")
        if rollovers >= lim["fail_rollovers"] or (replays or 0) >= lim["fail_replays"]:
            fails.append(text)
        elif (replays or 0) >= lim["warn_replays"]:
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
    # a GPU whose replay count or rollover count was not read (N/A, empty, a fault marker) has
    # no count here, never 0; unread on a GPU whose model's others read it, the step's
    # _unread_cells makes the pass unverified
    whole = [g for g in known if g.pcie_replays is not None and g.pcie_replay_rollovers is not None]
    if not whole:
        return _replays_not_reported(read, expected)
    counts = ", ".join(str(g.pcie_replays) for g in whole)
    # (by identity: `in` compared each GPU field by field with those before it, and a GPU equal
    # to one of `whole` is in it, the same fields chose both)
    chosen = {id(g) for g in whole}
    unread = [g for g in read if id(g) not in chosen]
    note = f"; not reported for {gpu_list(unread, gpus)}" if unread else ""
    return Check("pcie_replays", expected, f"{counts} replays since reset, no rollover{note}", "pass")


def _replays_not_reported(read: list[GpuInfo], expected: str) -> Check | None:
    """pcie_replays where no GPU's counter was read: unverified when a data-centre GPU is among
    them (a bad riser / PCIe switch on a rented server hides there), else no row."""
    if not any(held_as_datacenter(g) for g in read):
        return None
    return Check(
        "pcie_replays",
        expected,
        "not reported by this nvidia-smi output",
        "unverified",
        "the PCIe replay counter (a bad riser or slot shows there) is only in `nvidia-smi -q`"
        " (PCI > Replays Since Reset); run it to check",
    )
