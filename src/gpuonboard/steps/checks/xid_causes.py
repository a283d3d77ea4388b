"""The cause a kernel log names next to a GPU's failure (data/nvrm_faults.yml `cause_of`): a GPU
that failed to initialise (`RmInitAdapter failed!`) beside the driver's or the kernel's line that
says why (`failed to copy vbios to system memory`, `vmap allocation ... failed: use vmalloc=`,
`... may need to be reset`, `Unable to change power state from D3cold to D0`, `caller ... [nvidia]
mapping multiple BARs`): the failure asks for the cause's action and names it, never "replace the
GPU" where the log says what is wrong (measure35d 04-08, measure35e 20 and 24). A failure with no
cause beside it keeps its own action (replace: the vendor explains it)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from gpuonboard.facts.kernel_log import KernelEvent, NvrmFault, load_nvrm_faults, pci_key

__all__ = ["CAUSE", "with_causes"]

# the mark of a failure whose cause the log names: its event's `fault` is its row's id, CAUSE,
# then the cause's row id (steps/checks/xid_catalogue.xid_action reads both rows)
CAUSE = ":cause-"


def with_causes(events: Sequence[KernelEvent]) -> list[KernelEvent]:
    """`events` (in the log's order) with each failure a cause row names (`cause_of`) marked with
    the nearest such cause beside it: before it, else after it, past only the failures of the same
    kind (the `rm_init_adapter failed, device minor number 0` line after `RmInitAdapter failed!`),
    of the same driver load and boot, on the same GPU where both name one. A cause that marked a
    failure is not listed apart, nor any other line of its row on that GPU in that load (the
    kernel repeats `Unable to change power state ...` at each try); a cause next to no failure is
    listed where its row says so (`alone`), else dropped (a `vmap allocation` failure of another
    driver's is no GPU fault)."""
    rows = {f.id: f for f in load_nvrm_faults()}
    effects = {e for f in rows.values() for e in f.cause_of}
    out = list(events)
    used: set[tuple[str, str, int, bool]] = set()
    for at, e in enumerate(events):
        if e.kind != "nvrm" or e.fault not in effects:
            continue
        if (own := _own_cause(e)) is not None:
            # (the cause's sentence joined into the failure's own message: one line said both)
            out[at] = replace(e, fault=f"{e.fault}{CAUSE}{own.id}")
            continue
        cause = _nearest_cause(events, at, effects)
        if cause is not None and (lost := _lost_before(events, cause, e)) is not None:
            used.add(_key(cause))  # (the GPU's own loss above it says why: the cause is not named)
            row = rows.get(lost.fault or "") if lost.kind == "nvrm" else None
            cause = lost if row is not None and e.fault in row.cause_of else None
        if cause is not None and (said := _cause_of(cause, e)) is not None:
            out[at] = replace(e, fault=f"{e.fault}{CAUSE}{said.id}")
            used.add(_key(cause))
    return [e for e in out if not _cause_row(e, rows) or (rows[e.fault or ""].alone and not _said(e, used))]


def _cause_of(c: KernelEvent, failure: KernelEvent) -> NvrmFault | None:
    """The data/nvrm_faults.yml row by which the event `c` names the cause of `failure` (its
    `cause_of`): a driver's or kernel's line of that row, or the Xid line of a row's `same_as_xid`
    (an Xid 119 GSP timeout before a `RmInitAdapter failed!`); None where it names none."""
    for row in load_nvrm_faults():
        said = c.fault == row.id if c.kind == "nvrm" else c.kind == "xid" and c.code == row.same_as_xid
        if said and failure.fault in row.cause_of:
            return row
    return None


def _own_cause(failure: KernelEvent) -> NvrmFault | None:
    """The driver's cause row (`cause_of`, not a kernel line's) whose sentence the failure's own
    message says before its failure: a paste whose indent joined the driver's lines into one
    message (`guest dmesg: NVRM: _kgspBootGspRm: unexpected WPR2 already up, ...` over an indented
    `NVRM: RmInitAdapter failed! (0x62:0x40:2028)`, measure37d 13); None where it says none."""
    rows = load_nvrm_faults()
    own = next((f for f in rows if f.id == failure.fault), None)
    if own is None or (at := own.pattern.search(failure.message)) is None:
        return None
    return next(
        (
            f
            for f in rows
            if failure.fault in f.cause_of
            and not f.kernel_line
            and (m := f.pattern.search(failure.message)) is not None
            and m.end() <= at.start()
        ),
        None,
    )


def _lost(c: KernelEvent) -> bool:
    """A line that says its GPU is gone from the bus or its power (data/nvrm_faults.yml `lost`, or
    an Xid 79): a cause line below it, on that GPU, reads what a lost GPU gave the driver (a VBIOS
    table of garbage, `too few interface entires found for FWSEC cmd`), no cause of its own."""
    if c.kind == "xid":
        return c.code == 79
    return c.kind == "nvrm" and any(f.lost and f.id == c.fault for f in load_nvrm_faults())


def _lost_before(
    events: Sequence[KernelEvent], cause: KernelEvent, failure: KernelEvent
) -> KernelEvent | None:
    """The failure's GPU's own loss (_lost) logged before the `cause` line, in its driver load and
    boot, if any: the cause is not named (the loss is, where its row is a cause of the failure:
    D3cold)."""
    if _lost(cause):
        return None
    at = next(i for i, c in enumerate(events) if c is cause)
    return next(
        (
            c
            for c in events[:at]
            if (c.load, c.earlier_boot) == (cause.load, cause.earlier_boot)
            and _lost(c)
            and (not c.pci or not failure.pci or pci_key(c.pci) == pci_key(failure.pci))
        ),
        None,
    )


def _cause_row(e: KernelEvent, rows: dict[str, NvrmFault]) -> bool:
    return e.kind == "nvrm" and bool((row := rows.get(e.fault or "")) and row.cause_of)


def _key(e: KernelEvent) -> tuple[str, str, int, bool]:
    return (e.fault or "", pci_key(e.pci), e.load, e.earlier_boot)


def _said(e: KernelEvent, used: set[tuple[str, str, int, bool]]) -> bool:
    """True when a cause line says the cause a failure was marked with: its row's, in its driver
    load, on its GPU (or either naming none)."""
    fault, pci, load, boot = _key(e)
    return any(u[0] == fault and u[2:] == (load, boot) and (not u[1] or not pci or u[1] == pci) for u in used)


def _nearest_cause(events: Sequence[KernelEvent], at: int, effects: set[str]) -> KernelEvent | None:
    """The cause row's event nearest to the failure at `at` (before it first), passing only
    the same GPU's failures a cause may name (its repeat lines, or the same failure's other
    sentence right next to it: _one_failure; a cause naming no GPU binds to
    the failure right next to it, never past another GPU's failure lines, revP F4); None where
    another line comes first on both sides."""
    e = events[at]
    for step in (-1, 1):
        i = at + step
        closed = _closing(e)  # (walking on, past the failure's closing line: F1 of review N)
        while 0 <= i < len(events):
            c = events[i]
            row = _cause_of(c, e)
            if row is not None and step > 0 and closed and not _kernel_after(events, i, row):
                # (a driver's cause printed after a failure's closing nv.c line is the next
                # failure's, another GPU's or the next try's: osinit.c prints it before its own)
                return None
            if row is not None and row.boot_wide:
                # (the kernel's line of its boot's PCI layout: its GPU's failures in any load)
                if c.earlier_boot == e.earlier_boot and _same_gpu(c, e):
                    return c
            elif row is not None and (c.load, c.earlier_boot) == (e.load, e.earlier_boot):
                if not (c.pci and e.pci and pci_key(c.pci) != pci_key(e.pci)):
                    return c
                break
            if c.kind != "nvrm" or (c.load, c.earlier_boot) != (e.load, e.earlier_boot):
                break
            if c.fault not in effects or not (_same_gpu(c, e) or _one_failure(events, i, at)):
                break  # (another GPU's failure, or one naming none: the cause beyond is not this one's)
            closed = closed or _closing(c)
            i += step
    return None


def _closing(e: KernelEvent) -> bool:
    """Whether the failure line `e` is nv.c's closing line of a failed initialisation (`rm_init_adapter
    failed, device minor number 0`, the 2xx-3xx drivers' `rm_init_adapter(0) failed` and `... for device
    bearing minor number 0`), printed after osinit.c's `RmInitAdapter failed!` and its cause."""
    row = next((f for f in load_nvrm_faults() if f.id == e.fault), None)
    m = row.pattern.search(e.message) if row is not None and e.kind == "nvrm" else None
    return m is not None and m.group(0).lower().startswith("rm_init_adapter")


def _kernel_after(events: Sequence[KernelEvent], i: int, row: NvrmFault) -> bool:
    """Whether the cause at `i`, after a failure's closing line, is the kernel's own line (`kernel_line`)
    that its log may print after the driver's (`caller ... [nvidia] mapping multiple BARs` below the
    failure it caused), with no other failure after it in its driver load that it would come before."""
    c = events[i]
    return row.kernel_line and not any(
        x.kind == "nvrm"
        and x.fault == events[i - 1].fault
        and (x.load, x.earlier_boot) == (c.load, c.earlier_boot)
        for x in events[i + 1 :]
    )


def _one_failure(events: Sequence[KernelEvent], i: int, at: int) -> bool:
    """Whether the failure lines at `i` and `at`, next to each other, are the two sentences the
    driver prints for one failure (osinit.c's `RmInitAdapter failed! (0x30:...)`, then nv.c's
    `rm_init_adapter failed, device minor number 0`, older drivers' `rm_init_adapter failed for
    device bearing minor number 0` or `rm_init_adapter(0) failed`): the same row's line in another
    form, of the same driver load and boot, naming no other GPU. (Two lines of one form may be two
    GPUs' failures: neither takes the other's cause.)"""
    c, e = events[i], events[at]
    row = next((f for f in load_nvrm_faults() if f.id == e.fault), None)
    if abs(i - at) != 1 or row is None or c.fault != e.fault:
        return False
    if (c.load, c.earlier_boot) != (e.load, e.earlier_boot) or (c.pci and e.pci and not _same_gpu(c, e)):
        return False
    forms = [m.group(0).lower() if (m := row.pattern.search(x.message)) else "" for x in (c, e)]
    return all(forms) and forms[0] != forms[1]


def _same_gpu(c: KernelEvent, e: KernelEvent) -> bool:
    """Whether two failure lines both name the same GPU."""
    return bool(c.pci and e.pci) and pci_key(c.pci or "") == pci_key(e.pci or "")
