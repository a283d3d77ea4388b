"""Which GPU a driver fault sentence naming no PCI address is about, where the kernel log itself
ties it to one (facts/kernel_log.py). The resource manager prefixes its messages with the
driver's instance number of the GPU (`NVRM: GPU6 _kgspRpcRecvPoll: GSP RM heartbeat timed out`,
`NVRM: GPU6 RmInitAdapter: Cannot initialize GSP firmware RM`), not its address; an older one
prints neither (`NVRM: _kgspLogXid119: *** GSP Timeout ***`). The same log pairs the instance
with an address in the driver's own lines:

- an Xid line that names the instance (`Xid (PCI:0000:83:00): 119, ... waiting for RPC response
  from GPU0 GSP!`: kernel_gsp.c prints the GPU's instance in its text);
- `GPU6 RmInitAdapter: ...` followed by the driver's `GPU 0000:a1:00.0: RmInitAdapter failed!`,
  which osinit.c prints next for the same GPU (a bare `RmInitAdapter: Cannot initialize GSP
  firmware RM`, with no instance, is of the GPU of that next line only: one to one);

and a sentence the driver prints as the banner of an Xid (data/nvrm_faults.yml `banner`:
`_kgspLogXid119` prints `*** GSP Timeout ***`, then that GPU's Xid 119 line) is followed by that
Xid's line, no other fault between. (A sentence that is no banner, `... [NV_ERR_GPU_IS_LOST]`
printed after its GPU's Xid 79, `GPU1 _kgspRpcRecvPoll: GSP RM heartbeat timed out` of the same
row as the banner, is never tied to the Xid line next to it: another GPU's may be. A banner that
carries its instance, `GPU6 _kgspLogRpcTimeout: *** GSP Timeout ***`, is GPU6's: an Xid line
after it that names another, `... from GPU4 GSP!`, is another GPU's.)
A sentence so tied takes that address (`pci_from` says how); one the log does not tie stays
without one. Only within one driver load (the instance numbers are counted anew at each).

The probe summary `The NVIDIA probe routine failed for N device(s).` names no GPU; the kernel's
driver core logs each GPU whose probe failed (`nvidia: probe of 0000:3b:00.0 failed with error
-1`, since Linux 5.x `nvidia 0000:3b:00.0: probe with driver nvidia failed with error -1`) in the
same probe pass, before the summary: the summary is of those GPUs, one event a GPU (where the log
has fewer such lines than the count, the devices it does not name stay one event without one).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from gpuonboard.facts.kernel_event import KernelEvent
from gpuonboard.facts.kernel_nvrm import load_nvrm_faults
from gpuonboard.once import lazy_re, loaded_once

# the driver's instance number heading a resource manager message: "GPU6 _kgspBootGspRm: ..."
_INSTANCE_HEAD = lazy_re(r"^GPU(\d+)\s+\w+:")
# an Xid line's text naming the instance it is about ("... RPC response from GPU0 GSP!")
_XID_INSTANCE = lazy_re(r"\bfrom GPU(\d+) GSP\b")
_INIT_FAILED = lazy_re(r"\bRmInitAdapter failed\b", re.IGNORECASE)
_INIT_CAUSE = lazy_re(r"^(?:GPU(\d+)\s+)?RmInitAdapter:")
# the kernel's driver core on a GPU whose probe failed: (the index in the events of the first event
# after it, the address, the line as a fault event of its own: read where no summary of its probe
# pass counts it)
ProbeLine = tuple[int, str, KernelEvent]
# the kernel's driver core on a GPU the nvidia driver failed to probe (drivers/base/dd.c: `nvidia:
# probe of 0000:3b:00.0 failed with error -1`; since Linux 5.x `nvidia 0000:3b:00.0: probe with
# driver nvidia failed with error -1`)
_PROBE_FAILED = lazy_re(
    r"\bnvidia: probe of ([0-9a-f]{4,8}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]) failed\b"
    r"|\bnvidia ([0-9a-f]{4,8}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]): probe with driver nvidia failed\b",
    re.IGNORECASE,
)


def probe_line(line: str, at: int, load: int) -> ProbeLine | None:
    """The kernel's failed-probe line `line` as a ProbeLine (`at`: the index in the events of the
    first event after it; `load`: the driver load it was read in, KernelEvent.load); None where it
    is none. Its event is a failed probe of its own where no probe summary counts it."""
    if (probe := _PROBE_FAILED.search(line)) is None:
        return None
    pci = (probe.group(1) or probe.group(2)).lower()
    head = line[: probe.start()].strip() or None
    said = line[probe.start() :].strip()
    return at, pci, KernelEvent("nvrm", 0, pci, said, None, head, "probe_failed", load=load)


# the kernel's line as the driver opens a GPU and enables its interrupt (old kernels' PCI core:
# `nvidia 0000:02:00.0: irq 43 for MSI/MSI-X`, printed by nv_open_device's MSI set-up right before
# it calls RmInitAdapter): (the index in the events of the first event after it, the address, the
# driver load it was read in). Old drivers' `RmInitAdapter failed!` names no GPU; the GPU being
# opened is this line's (measure35d 04, 07: "a GPU (no PCI address in the message)" below it)
OpenedLine = tuple[int, str, int]
_OPENED = lazy_re(r"\bnvidia ([0-9a-f]{4,8}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]): irq \d+ for MSI", re.IGNORECASE)
_DEVICE_LINE = lazy_re(r"\bnvidia ([0-9a-f]{4,8}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]):", re.IGNORECASE)


def device_line(line: str, at: int, load: int) -> tuple[OpenedLine, bool] | None:
    """The kernel's line about one GPU of the nvidia driver (`nvidia 0000:02:00.0: ...`) as an
    OpenedLine and whether it is the GPU's opening (`irq N for MSI/MSI-X`); None for any other."""
    if (m := _DEVICE_LINE.search(line)) is None:
        return None
    return (at, m.group(1).lower(), load), _OPENED.search(line) is not None


def _opened_gpu(events: Sequence[KernelEvent], at: int, opened: Sequence[tuple[OpenedLine, bool]]) -> str:
    """The address of the GPU the driver was opening when the failure at `at` (naming none) was
    logged: the kernel's last line about one of its GPUs before it, in its driver load, where that
    line is the GPU's opening and no event between names another GPU; ""."""
    e = events[at]
    before = [(o, is_open) for o, is_open in opened if o[0] <= at and o[2] == e.load]
    if not before or not before[-1][1]:
        return ""
    start, pci, _ = before[-1][0]
    between = {x.pci.lower()[:12] for x in events[start:at] if x.pci}
    return pci if between <= {pci[:12]} else ""


# the driver's count of the devices a summary sentence is about ("The NVIDIA probe routine failed
# for 1 device(s).")
DEVICES = lazy_re(r"\bfor (\d+) device", re.IGNORECASE)


def _instances(events: Sequence[KernelEvent]) -> dict[tuple[int, str], str]:
    """(driver load, instance number) -> PCI address, as the log's own lines pair them."""
    pairs: dict[tuple[int, str], str] = {}
    for i, e in enumerate(events):
        if e.kind == "xid" and e.pci.count(":") == 2 and (m := _XID_INSTANCE.search(e.message)):
            pairs.setdefault((e.load, m.group(1)), e.pci)
        nxt = events[i + 1] if i + 1 < len(events) else None
        cause = _INIT_CAUSE.match(e.message) if e.kind == "nvrm" and not e.pci else None
        if cause and nxt is not None and nxt.load == e.load and nxt.pci and _INIT_FAILED.search(nxt.message):
            pairs.setdefault((e.load, cause.group(1) or f"@{i}"), nxt.pci)
    return pairs


def _banner_of(events: Sequence[KernelEvent], at: int, code: int, instance: str | None) -> KernelEvent | None:
    """The Xid `code` line that follows the banner at `at` as its own (the next event of the log,
    of the same load; where the banner carries its instance, an Xid line naming that instance),
    or None."""
    nxt = events[at + 1] if at + 1 < len(events) else None
    if nxt is None or nxt.kind != "xid" or nxt.code != code or nxt.load != events[at].load:
        return None
    named = _XID_INSTANCE.search(nxt.message)
    if instance is not None and (named is None or named.group(1) != instance):
        return None  # (the banner is GPU<instance>'s; this Xid line is of another, or says not)
    return nxt if nxt.pci.count(":") == 2 else None


# the rows that name why a GPU failed to initialise (data/nvrm_faults.yml cause_of)
@loaded_once
def _causes() -> frozenset[str]:
    """The rows that name a failure's cause (read when a log is, not at import: the table's
    patterns are compiled once, by the first log read)."""
    return frozenset(f.id for f in load_nvrm_faults() if f.cause_of)


def tie_instances(
    events: Sequence[KernelEvent],
    probes: Sequence[ProbeLine] = (),
    opened: Sequence[tuple[OpenedLine, bool]] = (),
) -> list[KernelEvent]:
    """The events, each driver fault sentence that names no address given the one the log ties
    it to (this module's docstring), `pci_from` saying how; `probes`: the kernel's `probe of ADDR
    failed` lines; `opened`: its lines about one GPU (device_line), for a failure to initialise
    logged as the driver opened that GPU."""
    pairs = _instances(events)
    banners: dict[str, tuple[re.Pattern[str], int]] = {
        f.id: (f.banner, f.same_as_xid)
        for f in load_nvrm_faults()
        if f.banner is not None and f.same_as_xid is not None
    }
    out = list(events)
    for i, e in enumerate(events):
        if e.kind != "nvrm" or e.pci:
            continue
        head = _INSTANCE_HEAD.match(e.message)
        instance = head.group(1) if head is not None else None
        pci = pairs.get((e.load, instance)) if instance is not None else None
        if pci:
            said = f"tied by the log's GPU{instance} instance"
            out[i] = replace(e, pci=pci, pci_from=said)
            continue
        if pci := pairs.get((e.load, f"@{i}"), ""):
            said = f"tied by the `GPU {pci}: RmInitAdapter failed!` line right after it"
            out[i] = replace(e, pci=pci, pci_from=said)
            continue
        init = e.fault == "rm_init_adapter_failed" or e.fault in _causes()
        if init and (pci := _opened_gpu(events, i, opened)):
            said = (
                f"tied by the kernel's `nvidia {pci}: irq ... for MSI` line before it, the GPU being opened"
            )
            out[i] = replace(e, pci=pci, pci_from=said)
            continue
        row = banners.get(e.fault or "")
        xid = _banner_of(events, i, row[1], instance) if row and row[0].search(e.message) else None
        if row is not None and xid is not None:
            said = f"tied as the banner of the Xid {row[1]} line after it"
            out[i] = replace(e, pci=xid.pci, pci_from=said)
    return _split_probe_summaries(out, probes)


def _split_probe_summaries(events: list[KernelEvent], probes: Sequence[ProbeLine]) -> list[KernelEvent]:
    """The events, each probe summary naming no GPU split into one event a GPU the kernel's
    `probe of ADDR failed` lines of its probe pass name (since the previous summary or driver
    load, before it), where there are any."""
    out: list[KernelEvent] = []
    start = 0  # the index of the first event of the current probe pass
    for i, e in enumerate(events):
        count = DEVICES.search(e.message) if e.kind == "nvrm" and e.fault == "probe_failed" else None
        if i and events[i - 1].load != e.load:
            start = i
        out += [p[2] for p in probes if p[0] == i and not _counted(events, p)]
        if count is None:
            out.append(e)
            continue
        if e.pci:
            out.append(e)
            continue
        named = list(dict.fromkeys(pci for at, pci, _ in probes if start <= at <= i))
        start = i + 1
        # (the kernel printed each address: no tie to say, as for a line naming its GPU)
        out += [replace(e, pci=pci) for pci in named]
        if len(named) < int(count.group(1)):
            out.append(e)
    return out + [p[2] for p in probes if p[0] >= len(events) and not _counted(events, p)]


def _counted(events: Sequence[KernelEvent], probe: ProbeLine) -> bool:
    """True when a probe summary of the probe line's own pass counts it (`The NVIDIA probe routine
    failed for N device(s).` after it in its load, before the next driver load): the summary is
    its fault, split per GPU. A probe line no summary counts (a grep's excerpt, a log cut after
    it, a driver that printed `None of the NVIDIA devices were initialized.` alone) is a failed
    probe of its own (measure34d 16, measure34e 23)."""
    at, _, line = probe
    return any(
        e.kind == "nvrm" and e.fault == "probe_failed" and DEVICES.search(e.message) is not None
        for e in events[at:]
        if e.load == line.load
    )
