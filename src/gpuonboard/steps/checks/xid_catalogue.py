"""The Xid / SXid catalogue (data/xid.yml) and the action each kernel-log event asks for: the
catalogue's row, the driver's own words that change it (an NVLink5 Xid's `Nonfatal`, an
error-containment Xid's `RST: Yes` / `D-RST: Yes`, Xid 154's recovery action), a driver fault
sentence's row of data/nvrm_faults.yml, a GPU's uncorrectable PCIe error (facts/aer.py). The
rules that judge the events are steps/checks/xid_rules.py."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from gpuonboard.facts.aer import AER_FAULTS
from gpuonboard.facts.kernel_log import KernelEvent, load_nvrm_faults, pci_key
from gpuonboard.facts.nvidia_smi.model import GpuInfo
from gpuonboard.once import lazy_re
from gpuonboard.resources import DATA_DIR, table_rows
from gpuonboard.steps.checks.once import loaded_once
from gpuonboard.steps.checks.xid_causes import CAUSE

__all__ = [
    "ACTIONS",
    "FAILING",
    "NOTED",
    "XID_FILE",
    "XidEntry",
    "cleared_by_reset",
    "load_xid_catalogue",
    "noise_alone",
    "repairs_done",
    "xid_action",
]

XID_FILE = DATA_DIR / "xid.yml"
# the actions whose event fails acceptance (each asks for work on the box before it is used)
FAILING = (
    "reset_gpu",
    "reboot",
    "replace",
    "update_driver",
    "install_driver",
    "unload_other_driver",
    "match_driver_versions",
    "fix_bar_mapping",
    "fix_host_setup",
)
# every action data/xid.yml may name: the two that pass (with a note), the failing ones, and
# from_message (the driver's message decides)
ACTIONS = ("ignore", "check_app", *FAILING, "from_message")


@dataclass(frozen=True)
class XidEntry:
    """One row of data/xid.yml."""

    code: int
    name: str
    action: str
    verified: bool
    # (data/xid.yml reset_said: the result's words where the driver's line does not say whether the
    # GPU needs a reset; set, the driver's `RST: No, D-RST: No` lifts the row's reset: watched)
    reset_said: str = ""
    # (data/xid.yml cleared_by_reset: false where a GPU reset or reboot does not undo what the code
    # says, Xid 64's row-remap failure: an earlier boot's still fails, the reboot since no cure)
    cleared_by_reset: bool = True


@loaded_once
def load_xid_catalogue(path: Path = XID_FILE) -> tuple[Mapping[int, XidEntry], Mapping[int, XidEntry]]:
    """(Xid code -> entry, SXid code -> entry) from data/xid.yml; ValueError on a bad row."""
    out: list[dict[int, XidEntry]] = []
    for key in ("xid", "sxid"):
        table: dict[int, XidEntry] = {}
        for row in table_rows(path, key):
            code, action = row.get("code"), row.get("action")
            if not isinstance(code, int) or action not in ACTIONS or code in table:
                raise ValueError(f"{path}: {key} row {row!r}: bad or duplicate code, or unknown action")
            said = str(row.get("reset_said", "") or "")
            cleared = row.get("cleared_by_reset", True) is not False
            table[code] = XidEntry(code, _name(row), str(action), bool(row.get("verified")), said, cleared)
        out.append(table)
    return out[0], out[1]


def _name(row: Mapping[str, object]) -> str:
    """A row's name as a sentence says it: NVIDIA's catalogue calls the codes only old drivers
    logged (Xid 1-12's ROBUST_CHANNEL_* errors) "Unused", which reads as harmless beside the
    action they ask for; such a code is named by its driver mnemonic and said to be no current
    driver's (measure32c 29, 35: "Xid 3 Unused -> replace")."""
    name, mnemonic = str(row.get("name", "")), str(row.get("mnemonic", "") or "")
    if name == "Unused" and mnemonic:
        return f"{mnemonic} (logged only by old drivers; current drivers no longer use this Xid)"
    return name


# the action of a known driver message alone in its boot's log (data/nvrm_faults.yml `noise`): a
# warning naming it, never a fault; its event's `fault` is its row's id with _NOISE and "alone"
NOTED = "noted"
# the Jetson GPU driver's (nvgpu) own `[ERR]` lines: no Xid catalogue covers them, so they warn
IGPU_ERROR = "igpu_error"
# the actions of data/nvrm_faults.yml rows that warn rather than fail
ROW_WARNINGS = ("check_app", IGPU_ERROR)
_NOISE = ":noise-"


def noise_alone(judged: Sequence[KernelEvent], log: Sequence[KernelEvent]) -> list[KernelEvent]:
    """`judged` with each driver sentence of a known driver message (data/nvrm_faults.yml `noise`:
    NVIDIA/open-gpu-kernel-modules#688's bad register reads of the PCI config mirror, printed on
    working GPUs) marked alone, so xid_action warns of it, where its boot's log (`log`) shows no
    sign of a GPU not answering (`fault_with`, `fault_with_xids`, `fault_signs`)."""
    rows = {f.id: f for f in load_nvrm_faults() if f.noise is not None}

    def alone(e: KernelEvent) -> bool:
        row = rows.get(e.fault or "") if e.kind == "nvrm" else None
        if row is None or row.noise is None or not row.noise.search(e.message):
            return False
        boot = [x for x in log if x.earlier_boot == e.earlier_boot]
        signs = row.fault_signs
        return not any(
            (x.kind == "nvrm" and x.fault in row.fault_with)
            or (x.kind == "xid" and x.code in row.fault_with_xids)
            or (x.kind == "nvrm" and x.fault == row.id and bool(signs and signs.search(x.message)))
            for x in boot
        )

    return [replace(e, fault=f"{e.fault}{_NOISE}alone") if alone(e) else e for e in judged]


def xid_action(event: KernelEvent) -> tuple[str, str]:
    """(action, name) of one Xid/SXid event per data/xid.yml; an unknown code is `replace`
    (a code NVIDIA does not list on a box being accepted is for the vendor to explain)."""
    if event.kind == "aer":
        return AER_FAULTS[event.fault or "aer_fatal"][::-1]
    if event.kind == "nvrm":
        # a driver fault sentence without an Xid (data/nvrm_faults.yml); an action the table
        # does not know is `replace` (the vendor explains it)
        row, noise = (event.fault or "").partition(_NOISE)[::2]
        row, cause_id = row.partition(CAUSE)[::2]
        fault = next((f for f in load_nvrm_faults() if f.id == row), None)
        cause = next((f for f in load_nvrm_faults() if f.id == cause_id), None)
        if fault is not None and cause is not None:
            # (a failure the log names the cause of beside it: steps/checks/xid_causes.py)
            said = "the kernel's line beside it" if cause.kernel_line else "the driver's line beside it"
            action = cause.action if cause.action in FAILING else "replace"
            return action, f"{fault.name}; {said}: {cause.name}"
        if fault is None:
            return "replace", "NVRM fault not in data/nvrm_faults.yml"
        if noise == "alone" and fault.noise_name:
            return NOTED, fault.noise_name
        # (a row that warns: an application's fault, the Jetson driver's own errors)
        return (fault.action if fault.action in (*FAILING, *ROW_WARNINGS) else "replace"), fault.name
    xids, sxids = load_xid_catalogue()
    entry = (sxids if event.kind == "sxid" else xids).get(event.code)
    if entry is None:
        return "replace", "not in NVIDIA's catalogue"
    if entry.action == "from_message":
        target = _recovery_target(event.message)
        return _recovery_action(
            event.message
        ), f"{entry.name} (the driver: to {target})" if target else entry.name
    if retired := _page_retirement(event) or _repair_pending(event, entry):
        return retired
    if entry.action in FAILING and _NONFATAL.match(event.message):
        return "watch", f"{entry.name} (non-fatal)"
    return _reset_said(event, entry)


def _reset_said(event: KernelEvent, entry: XidEntry) -> tuple[str, str]:
    """(action, name) of an Xid line by the driver's own word whether the GPU needs a reset
    (`RST: Yes` / `D-RST: Yes`: a reset, whatever the catalogue asks); a row with `reset_said`
    (Xid 94: a GPU error contained to one program, a reset when convenient) watched where the
    driver says `RST: No, D-RST: No`, and its reset asked, named as the row says, where the line
    says neither; any other row as the catalogue says."""
    said = _RESET_SAID.findall(event.message) if entry.action not in FAILING or entry.reset_said else []
    words = said[-1] if said else ("", "")
    asked = [
        f"{word}: Yes" for word, yes in zip(("RST", "D-RST"), words, strict=True) if yes.lower() == "yes"
    ]
    if asked:
        return "reset_gpu", f"{entry.name} (the driver: {', '.join(asked)})"
    if not entry.reset_said:
        return entry.action, entry.name
    if said:
        # (the driver's `RST: No, D-RST: No`: contained, and no reset needed now)
        return (
            "watch",
            f"{entry.name} (contained to one program; the driver: RST: No, D-RST: No, no GPU reset"
            " needed now)",
        )
    return entry.action, f"{entry.name} ({entry.reset_said})"


# The catalogue's Xid 63 / 64 are Ampere's row remapping events; before Ampere the same codes were
# Dynamic Page Retirement's, and the driver says which in its own text: `63, Dynamic Page
# Retirement: New page retired, reboot to activate (0x00000000002ce8ac).` (R390, a V100:
# NVIDIA/nvidia-docker#849). A page retired takes effect at the next reboot (until then the bad
# page may still be handed out), so that line asks for a reboot, never "a remapping to ignore".
_PAGE_RETIREMENT = lazy_re(
    r"Dynamic\s+Page\s+Retirement:\s*(.*?)\s*(?:\(0x[0-9a-f]+\))?\.?\s*$", re.IGNORECASE
)


def _page_retirement(event: KernelEvent) -> tuple[str, str] | None:
    """(action, name) of an Xid line that names itself a Dynamic Page Retirement event (the
    pre-Ampere meaning of Xid 63 / 64), from the driver's own text: 'reboot' where it says
    `reboot to activate`, else the catalogue's action; None for any other line."""
    if event.kind != "xid" or not (m := _PAGE_RETIREMENT.search(event.message)):
        return None
    said = " ".join(m.group(1).split()).rstrip(".")
    name = f"Dynamic Page Retirement (pre-Ampere memory repair): {said}"
    # (NVIDIA's Dynamic Page Retirement guide prints the R3xx form `New retired page, reload the
    # driver to activate.`: the driver's reload, which a reboot does)
    if re.search(r"\b(?:reboot|reload\s+the\s+driver)\s+to\s+activate\b", said, re.IGNORECASE):
        return "reboot", name
    entry = load_xid_catalogue()[0].get(event.code)
    return (entry.action if entry else "replace"), name


# A memory repair the driver recorded and says takes effect only at the GPU's next reset, in its
# own words (src/nvidia/src/kernel/gpu/.../ras_events.c of NVIDIA/open-gpu-kernel-modules: Xid 63
# `Row Remapper: New row (0x%016llx) marked for remapping, reset gpu to activate.`, the
# `Row Remapper: New row marked for remapping, ...` of a control call, `Bank Remapper: New bank
# marked for remapping, reset gpu to activate.`, `Row Remapper: (0x...) - Attempting to remap a
# row that is already pending remapping. Remapping will occur when the GPU is reset`, `Marking
# Channel %d in FBPA %d along with its pair for repair. Perform %s to activate repair.`): a repair
# pending until the GPU is reset, which NVML calls the row-remapping pending flag ("row-remapping
# will happen at the next GPU reset"; memory_repair fails it, remap pending). NVIDIA's catalogue
# lists Xid 63 as a recording event (IGNORE): the event is recorded, the repair is not active yet,
# so the line asks for the reset (measure35a 04: "Xid 63 GPU memory remapping event -> ignore").
_REPAIR_PENDING = lazy_re(
    # (`Row Remapper: New row`, `Bank Remapper: New bank`: both pending forms go on `..., reset
    # gpu to activate.`, which a page's wrap may move to a line of its own)
    r"\breset\s+(?:the\s+)?gpu\s+to\s+activate\b|\bwill\s+occur\s+when\s+the\s+GPU\s+is\s+reset\b"
    r"|\b(?:Row|Bank)\s+Remapper:\s*New\s+(?:row|bank)\b"
    r"|\bPerform\s+(.{1,40}?)\s+to\s+activate\s+repair\b",
    re.IGNORECASE,
)


def _repair_pending(event: KernelEvent, entry: XidEntry) -> tuple[str, str] | None:
    """(action, name) of an Xid line that says its memory repair waits for a GPU reset (or, as
    `Perform %s`, names what activates it: a reboot where it says one): `reset_gpu` (`reboot`),
    its name saying the driver's words; None for any other line, or where the catalogue already
    asks for more (a reboot). Where the GPU's nvidia-smi -q says nothing
    is pending (`repair_done`), the catalogue's own action, the repair named done."""
    if event.kind != "xid" or not (m := _REPAIR_PENDING.search(event.message)):
        return None
    by = m.group(1) or ""
    action = "reboot" if re.search(r"reboot|restart", by, re.IGNORECASE) else "reset_gpu"
    if entry.action in FAILING and entry.action != "reset_gpu":
        return None
    if event.repair_done:  # (the GPU's -q: nothing pending, the reset or reboot was done since)
        return entry.action, f"{entry.name}, its repair done since ({event.repair_done})"
    until = "the box is rebooted" if action == "reboot" else "the GPU is reset"
    said = _driver_words(event.message)
    return action, f"{entry.name}, a repair pending until {until} (the driver: '{said}')"


# the process fields the driver prints before an Xid's text (`pid=1896, `, `pid='<unknown>',
# name=<unknown>, `) and an address in brackets (`New row (0x00000012bac1c3e0) marked`)
_XID_FIELDS = lazy_re(r"^(?:\s*(?:pid|name)=(?:'[^']*'|[^,]*),)*\s*")
_BRACKETED_HEX = lazy_re(r"\s*\(0x[0-9a-f]+\)", re.IGNORECASE)


def _driver_words(message: str) -> str:
    """An Xid line's own text as a sentence quotes it: without the process fields before it, the
    addresses it brackets, its final stop."""
    said = _BRACKETED_HEX.sub("", _XID_FIELDS.sub("", " ".join(message.split()), count=1))
    return said.rstrip(". ")


# the driver's own word that an error-containment Xid (94, 95) left the GPU needing a reset:
# "... RST: %s, D-RST: %s" (kern_gpu_ga100.c _gpuGenerateErrorLog_GA100: bGpuResetReqd,
# bGpuDrainAndResetReqd of error_cont.h's policy table; with MIG memory partitioning, several
# contained errors, Xid 94, set D-RST: the GPU must be drained and reset). After the error's
# `Contained:` / `Uncontained:` word, and its last match: the driver prints it at the line's end
# (rsyslog's `message repeated 3 times: [ ... D-RST: Yes]` adds a bracket), after the process
# name (`name=RST: Yes` is the user's word)
_RESET_SAID = lazy_re(r"ontained:.*?\bRST:\s*(Yes|No),\s*D-RST:\s*(Yes|No)\b", re.IGNORECASE)


# the driver's own word for an NVLink5 Xid event (144-150: `144, SAW_MVB Nonfatal XC0 i0 Link 0
# (0x00000001 0x00000008 ...)`, `Fatal` otherwise): a non-fatal one is an error the link
# recovered from, as a non-fatal SXid is (watched, not a GPU reset; gpud keeps it a warning)
_NONFATAL = lazy_re(r"\s*[A-Z][A-Z0-9_]*\s+non-?\s?fatal\b", re.IGNORECASE)


# Xid 154: the driver prints "GPU recovery action changed from 0x%x (%s) to 0x%x (%s)"; what the
# GPU needs NOW is the value after "to" (the "from" half is the action being left behind).
# Codes: NVML nvmlDeviceGpuRecoveryAction_t (nvml.h; NVIDIA/DCGM sdk/nvidia/nvml/dcgm_nvml.h):
# 0 NONE, 1 GPU_RESET, 2 NODE_REBOOT, 3 DRAIN_P2P, 4 DRAIN_AND_RESET. Actions per NVIDIA's Xid
# catalogue (Xid 154: "follow the recovery action in the message"; data/xid.yml) and DCGM's
# health watch (modules/health/DcgmHealthWatch.cpp; dcgmlib/src/dcgm_errors.c): NONE = healthy;
# GPU_RESET, DRAIN_P2P ("terminate P2P processes, check again") and DRAIN_AND_RESET ("reset the
# GPU after work drained") = a GPU reset (DCGM_ERROR_RESET); NODE_REBOOT = reboot.
_RECOVERY_TO = lazy_re(r"\bto\s+(?:0x([0-9a-f]+))?\s*(?:\(([^)]*)\))?", re.I)


_RECOVERY_CODES = {0: "ignore", 1: "reset_gpu", 2: "reboot", 3: "reset_gpu", 4: "reset_gpu"}


def _recovery_action(message: str) -> str:
    """The action of an Xid 154 message: the recovery action it changed TO. Read by code, else
    by the printed name ("None", "GPU Reset Required" / "PF FLR", "Node Reboot Required" /
    "OS Reboot", "Drain P2P", "Drain and Reset"); a target that cannot be read is `replace`
    (the vendor explains it), never a pass."""
    found = [m for m in _RECOVERY_TO.finditer(message) if m.group(1) or m.group(2)]
    if not found:
        # (its `from ... to` elided by an author's `...`: the last recovery action it names,
        # `GPU recovery action ... Node Reboot Required`, measure34c 15)
        named = _RECOVERY_NAMED.findall(message)
        return _recovery_by_name(named[-1].lower()) if named else "replace"
    code_text, name = found[-1].group(1), (found[-1].group(2) or "").strip().lower()
    if code_text is not None and int(code_text, 16) in _RECOVERY_CODES:
        return _RECOVERY_CODES[int(code_text, 16)]
    return _recovery_by_name(name)


def _recovery_target(message: str) -> str:
    """The printed name of the recovery action an Xid 154 message changed to (`GPU Reset
    Required`), as the driver said it; '' where it names none."""
    found = [(m.group(2) or "").strip() for m in _RECOVERY_TO.finditer(message) if m.group(1) or m.group(2)]
    if found and found[-1]:
        return found[-1]
    named = _RECOVERY_NAMED.findall(message)
    return named[-1] if named and not found else ""


# the recovery actions' printed names (nvml.h's nvmlDeviceGpuRecoveryAction_t as the driver names them)
_RECOVERY_NAMED = lazy_re(
    r"\b(?:Node Reboot Required|OS Reboot|GPU Reset Required|PF FLR|Drain P2P|Drain and Reset)\b", re.I
)


def _recovery_by_name(name: str) -> str:
    """The action of a recovery action's printed name (lower case); `replace` where unknown."""
    if name == "none":
        return "ignore"
    if "reboot" in name:
        return "reboot"
    if "reset" in name or "drain" in name or "flr" in name:
        return "reset_gpu"
    return "replace"


def cleared_by_reset(event: KernelEvent) -> bool:
    """Whether a GPU reset or a reboot undoes what an Xid says (data/xid.yml cleared_by_reset):
    not Xid 64's row-remap failure (NVML: "set if a row remapping ever failed"; NVIDIA's RMA
    threshold), unless that GPU's nvidia-smi -q beside the log says `Remapping Failure Occurred:
    No` (repairs_done). Any other event: True."""
    if event.kind != "xid" or event.repair_done:
        return True
    entry = load_xid_catalogue()[0].get(event.code)
    return entry is None or entry.cleared_by_reset


def repairs_done(events: Sequence[KernelEvent], gpus: Sequence[GpuInfo]) -> tuple[KernelEvent, ...]:
    """`events` with each Xid that says its memory repair waits for a GPU reset (_REPAIR_PENDING)
    marked `repair_done` where that GPU's nvidia-smi -q (given beside the log, read after it was
    logged) says its Remapped Rows `Pending : No`: the reset that activates it was done. `Pending
    : Yes` agrees with the line; not reported: as the line says. And each Xid a reset does not
    clear (cleared_by_reset: Xid 64) where that GPU's -q says `Remapping Failure Occurred: No`."""
    done = {pci_key(g.pci_bus_id): g for g in gpus if g.pci_bus_id and g.remapped_rows_pending is False}
    no_failure = {pci_key(g.pci_bus_id) for g in gpus if g.pci_bus_id and g.remapped_rows_failure is False}
    return tuple(
        replace(e, repair_done="nvidia-smi -q: Remapped Rows Pending: No")
        if e.kind == "xid" and pci_key(e.pci) in done and _REPAIR_PENDING.search(e.message)
        else replace(e, repair_done="nvidia-smi -q: Remapping Failure Occurred: No")
        if e.kind == "xid" and pci_key(e.pci) in no_failure and not cleared_by_reset(e)
        else e
        for e in events
    )
