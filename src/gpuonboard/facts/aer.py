"""PCIe AER (Advanced Error Reporting) lines of a kernel log that concern an NVIDIA GPU: an
uncorrectable error on the GPU's function, or the kernel's word that it could not recover the GPU
from one. Corrected errors are not read (the link retried and recovered by itself).

    nvidia 0000:03:00.0: PCIe Bus Error: severity=Uncorrected (Fatal), type=Transaction Layer, ...
    pcieport 0000:00:03.0: AER: Uncorrected (Non-Fatal) error received: 0000:03:00.0
    nvidia 0000:03:00.0: AER: can't recover (no error_detected callback)
    nvidia 0000:02:00.0: device has no AER-aware driver        (kernels before 5.x)

A device is the GPU's where the log itself names it with the `nvidia` driver's prefix
(`nvidia 0000:03:00.0:`): an error received from that address, reported by its root port,
is the GPU's too. Each becomes a KernelEvent of kind "aer" (fault: `aer_fatal`,
`aer_nonfatal`, `aer_unrecovered`), judged by gpu_xid."""

from __future__ import annotations

import dataclasses
import re

from gpuonboard.facts.aer_lines import AER_RECEIVED, AER_UNRECOVERED, NVIDIA_CUT, NVIDIA_LINE
from gpuonboard.facts.kernel_log import BootCounter, KernelEvent, is_probe_header
from gpuonboard.facts.kernel_shapes import plain_kernel_text
from gpuonboard.once import lazy_re

__all__ = ["AER_FAULTS", "aer_events"]

# "Uncorrected" until Linux 6.x, "Uncorrectable" since
_SEVERITY = lazy_re(r"Uncorrect(?:ed|able) \((Fatal|Non-Fatal)\)", re.IGNORECASE)

# fault id -> (name, action as in data/xid.yml): an uncorrectable fatal error resets the link
# (the GPU's in-flight work is lost; the kernel could not hand it back to the driver, which has
# no AER handler); a non-fatal one is a transaction the device reported as lost
AER_FAULTS = {
    "aer_fatal": ("PCIe uncorrectable fatal error (AER)", "reboot"),
    "aer_unrecovered": ("the kernel could not recover the GPU from a PCIe error (AER)", "reboot"),
    "aer_nonfatal": ("PCIe uncorrectable non-fatal error (AER)", "watch"),
}


def aer_events(text: str) -> tuple[KernelEvent, ...]:
    """The GPU's AER events in a kernel log text, one per line that says one (see the module)."""
    text = plain_kernel_text(text)  # (a journal's JSON / export, `dmesg -r`: facts/kernel_shapes)
    gpus = {m.group(1).lower() for m in NVIDIA_LINE.finditer(text)}
    events: list[tuple[int, KernelEvent]] = []
    boots = BootCounter()
    for line in text.splitlines():
        if is_probe_header(line):
            continue  # (the probe's `# first:` line repeats the log's first line)
        boots.read(line)
        own = NVIDIA_LINE.search(line)
        received = AER_RECEIVED.search(line)
        pci = own.group(1) if own else (received.group(1) if received else "")
        if not pci or pci.lower() not in gpus:
            continue
        severity = _SEVERITY.search(line)
        if AER_UNRECOVERED.search(line) and own:
            fault = "aer_unrecovered"
        elif severity and (own and "PCIe Bus Error" in line or received):
            fault = "aer_fatal" if severity.group(1).lower() == "fatal" else "aer_nonfatal"
        else:
            continue
        where = own or received
        message = line[where.start() :].strip() if where else line.strip()
        events.append((boots.boot, KernelEvent("aer", 0, pci, message, fault=fault)))
    # an error logged before the log's last boot boundary is of a boot the box has since left
    last = boots.boot if boots.disorder is None else 0  # (pieces out of order: not known)
    return _with_cut_end(text, tuple(dataclasses.replace(e, earlier_boot=boot < last) for boot, e in events))


def _with_cut_end(text: str, events: tuple[KernelEvent, ...]) -> tuple[KernelEvent, ...]:
    """`events`, where the log ends inside a line of the nvidia driver about a GPU (no newline
    after it), with the event read from that line marked `cut`, or, where none could be read
    (`AER: can't` of "can't recover"), an unread one added: what the line went on to say is not
    known, so the log's Xid verdict cannot pass (as for a cut NVRM line)."""
    body = text.rstrip(" \t")
    if not body.strip() or body.endswith(("\n", "\r")):
        return events
    last = body.rsplit("\n", 1)[-1]
    m = NVIDIA_CUT.search(last) if "nvidia" in last else None
    if m is None:
        return events
    said = last[m.start() :].strip()
    if events and events[-1].message == said:
        return (*events[:-1], dataclasses.replace(events[-1], cut=said))
    own = NVIDIA_LINE.search(last)
    return (*events, KernelEvent("xid_unread", 0, own.group(1) if own else "", said, cut=said))
