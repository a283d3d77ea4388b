"""One fault event of a kernel log: an Xid (GPU) or SXid (NVSwitch) line, or an NVRM fault
sentence without an Xid (facts/kernel_log.py reads them; facts/kernel_instance.py ties them)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class KernelEvent:
    """One Xid (GPU) or SXid (NVSwitch) line, or one NVRM fault sentence without an Xid."""

    # "xid" | "sxid" | "nvrm"; "xid_unread" / "sxid_unread": a line that says it is an Xid /
    # SXid but whose code cannot be read (message: the line from "NVRM: Xid" / the switch on), or
    # an Xid announced by the driver's preamble whose own line is not in the log (message: the
    # preamble's first line); "cut": the log's last line, cut before it says whose it is (a bare
    # stamp, a partial `NVRM:` / `nvidia-nvswitchN:` tag): it may be an Xid or an SXid line
    kind: str
    code: int  # the Xid / SXid code; 0 for "nvrm" and the unread kinds
    # as printed without the "PCI:" tag: "0000:9b:00" (Xid) / "0000:05:00.0" (SXid, NVRM), an
    # old driver's "0001:00"; "" where the line names no address ("The NVIDIA probe routine
    # failed for 1 device(s).")
    pci: str
    message: str  # the text after the code: "pid=..., name=..., GPU has fallen off the bus."
    device: str | None = None  # "nvidia-nvswitch0" for SXid lines
    timestamp: str | None = None  # the prefix as printed ("[6781741.548779]", ISO, syslog)
    fault: str | None = None  # "nvrm": the data/nvrm_faults.yml row's id ("fallen_off_bus")
    # an Xid whose own line is not in the log, named as the cause by a later Xid's line (that
    # later Xid's code: implied_xids)
    implied_by: int | None = None
    # SXid: the driver's own word for this event, "fatal" / "non-fatal" (its `Fatal` /
    # `Non-fatal`, or its `Severity 1` / `Severity 0` line); None where the log does not say
    severity: str | None = None
    lines: int = 1  # driver lines this event spans (an SXid's `Severity` and `Data` lines)
    # the log ends inside this event (its last line without the newline the kernel prints, or a
    # driver message left unfinished): that text as printed, from the driver's tag on; what
    # followed is not known. None: the event was read whole
    cut: str | None = None
    # logged before the last boot boundary of a log that spans boots (BootCounter): a fault of a
    # boot the box has since left (rebooted since)
    earlier_boot: bool = False
    # the driver load this event is of, counted from the log's first: a boot boundary or the
    # driver's `NVRM: loading NVIDIA UNIX ... Kernel Module` banner starts the next (a fault a
    # driver load explains is one of that load: data/nvrm_faults.yml `explains`)
    load: int = 0
    # an Xid the driver attributes to one MIG instance of its GPU: the attribution as printed
    # after the address, "GPU-I:05" or "GPU-I:01 GPU-CI:02" (kernel_rc.c: "Xid (PCI:%04x:%02x:
    # %02x GPU-I:%02u GPU-CI:%02u): ..."); `pci` is then the GPU's address alone. None: no MIG
    # attribution (the whole GPU)
    instance: str | None = None
    # a driver fault sentence naming no address that the log ties to a GPU (facts/kernel_instance:
    # the driver's instance number `GPU6` paired with an address, an Xid's banner): how ("tied by
    # the log's GPU0 instance"), which gpu_xid says beside the address; `pci` is that address.
    # None: `pci` is as printed
    pci_from: str | None = None
    # a repair the Xid says waits for a GPU reset (Xid 63 `... reset gpu to activate`) that the
    # GPU's nvidia-smi -q given beside the log says is no longer pending (its Remapped Rows
    # `Pending : No`): what -q said (steps/checks/fabric_health); "" where not known so
    repair_done: str = ""
