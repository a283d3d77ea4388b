"""The NVIDIA driver's own messages in a kernel log (facts/kernel_log.py): the GPU fault sentences
that carry no Xid (data/nvrm_faults.yml), and how a driver message printed over several lines is
joined before they are matched (dmesg's indent, one printk's microsecond time, the driver's
"The NVIDIA GPU <address>" messages whose lines are each a record of their own)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from gpuonboard.once import lazy_re, loaded_once
from gpuonboard.resources import DATA_DIR, table_rows

NVRM_FAULTS_FILE = DATA_DIR / "nvrm_faults.yml"


@dataclass(frozen=True)
class NvrmFault:
    """One row of data/nvrm_faults.yml: a driver fault sentence that carries no Xid."""

    id: str
    pattern: re.Pattern[str]
    name: str
    action: str
    verified: bool
    same_as_xid: int | None = None  # the Xid reporting the same fault (not listed twice)
    # the rows this fault causes on its GPU (a driver refusing a GPU then fails to initialise and
    # probe it): where the log has this one, theirs are its consequence, not listed
    explains: tuple[str, ...] = ()
    # the sentence of this row the driver prints as the banner of its `same_as_xid` Xid, right
    # before that Xid's line (kernel_gsp.c _kgspLogXid119: "*** GSP Timeout ***", then the Xid 119
    # line): such a banner naming no GPU is about the GPU of the Xid line that follows it
    # (facts/kernel_instance); the row's other sentences are no banner. None: the row has none
    banner: re.Pattern[str] | None = None
    # a sentence of this row matching `noise` (and not `fault_signs`) is a known driver message on
    # some releases, printed on working GPUs: alone in its boot's log it warns as `noise_name`;
    # with a sign of a GPU not answering there (a row of `fault_with`, an Xid of
    # `fault_with_xids`, a line matching `fault_signs`) it is the row's fault. None: no noise
    noise: re.Pattern[str] | None = None
    noise_name: str = ""
    fault_signs: re.Pattern[str] | None = None
    fault_with: tuple[str, ...] = ()
    fault_with_xids: tuple[int, ...] = ()
    # the failures this row names the cause of when the log prints it next to one (a GPU that
    # failed to initialise, `RmInitAdapter failed!`, beside the driver's or the kernel's line
    # saying why): that failure asks for this row's action (steps/checks/xid_causes.py)
    cause_of: tuple[str, ...] = ()
    # the row is a kernel line, not the driver's (`nvidia 0000:01:00.0: Unable to change power
    # state from D3cold to D0, device inaccessible`, `vmap allocation for size ... failed`): read in
    # the lines without the driver's tag, never in an NVRM message
    kernel_line: bool = False
    # False: the row is only a cause; printed next to no failure it names none (dropped)
    alone: bool = True
    # the row is a cause the kernel prints before any driver loads (the PCI core's `BAR 1: failed to
    # assign`): it names the cause of its GPU's failures in each driver load of its boot
    boot_wide: bool = False
    # the row says the GPU is gone from its bus or its power: a cause line after it, on that GPU,
    # reads what the lost GPU gave the driver, no cause of its own (steps/checks/xid_causes.py)
    lost: bool = False


def _pattern(row: dict[str, object], key: str) -> re.Pattern[str] | None:
    value = row.get(key)
    return re.compile(value, re.IGNORECASE) if isinstance(value, str) else None


@loaded_once
def load_nvrm_faults(path: Path = NVRM_FAULTS_FILE) -> tuple[NvrmFault, ...]:
    """The rows of data/nvrm_faults.yml; ValueError on a bad row (packaged reference data)."""
    out = []
    for row in table_rows(path, "nvrm_faults"):
        got = [row.get(k) for k in ("id", "pattern", "name", "action")]
        fields = [f for f in got if isinstance(f, str) and f]
        if len(fields) != 4:
            raise ValueError(f"{path}: row {row!r} needs id, pattern, name and action")
        out.append(
            NvrmFault(
                fields[0],
                re.compile(fields[1], re.IGNORECASE),
                fields[2],
                fields[3],
                bool(row.get("verified")),
                row.get("same_as_xid") if isinstance(row.get("same_as_xid"), int) else None,
                tuple(str(x) for x in row.get("explains") or ()),
                _pattern(row, "banner"),
                _pattern(row, "noise"),
                str(row.get("noise_name") or ""),
                _pattern(row, "fault_signs"),
                tuple(x for x in row.get("fault_with") or () if isinstance(x, str)),
                tuple(x for x in row.get("fault_with") or () if isinstance(x, int)),
                tuple(str(x) for x in row.get("cause_of") or ()),
                bool(row.get("kernel_line")),
                row.get("alone") is not False,
                row.get("boot_wide") is True,
                row.get("lost") is True,
            )
        )
    return tuple(out)


# the driver's tag: `NVRM: ` (nv.c's nv_printf, and the resource manager's NV_PRINTF since R535),
# or, in the open kernel modules of R515 to R530, `NVRM ` then the resource manager's function and
# its colon (`NVRM RmInitAdapter: Cannot initialize GSP firmware RM`, `NVRM nvAssertOkFailedNoLog:
# ...`): both are the driver's messages, their fault sentences alike. A function's name is
# camelCase or snake_case (a capital or an underscore in it): a lower-case word and its colon is
# no function (`/proc/driver/nvidia/version`'s `NVRM version: NVIDIA UNIX x86_64 Kernel Module ...`
# is the driver's version file, pasted beside a log, no line of the log)
NVRM = re.compile(r"NVRM(?::\s?|\s(?=[a-z]*[A-Z_]\w*:))(.*)$")
# a line of a report the driver prints over several records, indented under its tag: the Xid 120
# (GSP task exception) report's `NVRM:     RISC-V CSR State:` / `NVRM:         s8:0x0000...`
# register dump, the GSP RPC history's `NVRM:     -1    103  GSP_RM_ALLOC ...` rows (Xid 119). One
# blank after the tag is a sentence's own line; two start the lines of the driver's legacy-GPU
# message (`NVRM:  supported through the NVIDIA 580.xx Legacy drivers.`): none of these.
# REPORT_INDENT reads the text after NVRM's `: `, REPORT_LINE a line as said with its tag
REPORT_INDENT = lazy_re(r"[ \t]{3,}\S")
REPORT_LINE = lazy_re(r"NVRM:[ \t]{4,}\S")
# the same lines by their words, where a paste collapsed the blanks (`NVRM: s8:0x0000`): a register
# and its value, the report's headings (`RISC-V CSR State:`, `Reported by libos ...`), the RPC
# history's header and rows (`entry function ...`, `-1 103 GSP_RM_ALLOC 0x...`)
REPORT_WORDS = lazy_re(
    r"NVRM:\s*(?:[a-z]\w{0,11}:0x[0-9a-fA-F]*(?:\s|$)|RISC-V \w+ State:|Reported by libos\b"
    r"|entry\s+function\b|-?\d+\s+\d+\s+[A-Z][A-Z0-9_]{3,})"
)
# the driver's banner as it loads (nv.c: "NVRM: loading %s", pNVRM_ID: "NVIDIA UNIX x86_64 Kernel
# Module  580.105.08 ...", "NVIDIA UNIX Open Kernel Module for x86_64  525.60.11 ..."): printed
# after its probes, before the GPUs are opened (RmInitAdapter)
DRIVER_LOAD = lazy_re(r"loading NVIDIA UNIX\b", re.IGNORECASE)
# a PCI address in an NVRM sentence: "GPU 0000:81:00.0:", "GPU at PCI:0000:3b:00"
# a GPU's PCI address as the driver prints it (domain:bus:device), its function after a dot
_ADDRESS = r"[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}"
_NVRM_PCI = lazy_re(rf"\b({_ADDRESS}(?:\.\d)?)\b")


def prefix(line: str, start: int) -> str | None:
    head = line[:start].strip()
    # journalctl / syslog: "Oct 02 10:41:07 host kernel:"; dmesg: "[  12.3]"; decode: "kern  :warn  : ..."
    head = re.sub(r"\s*kernel:\s*$", "", head)
    return head or None


# a time to the microsecond in a line's prefix (dmesg's `[17257.355375]` kept in syslog,
# journalctl's short-precise `07:39:45.355375`, ISO `07:39:45,355375+00:00`): the kernel stamps
# each printk once, so lines with the same such prefix are lines of one message
_FINE_TIME = lazy_re(r"\d[.,]\d{6}(?!\d)")


@dataclass
class Message:
    """The NVRM message being joined: its lines' prefix, its text so far, whether a line was
    joined to it by the kernel's own marks of one message (dmesg's indent, one printk's
    microsecond time) and, where the log ends inside it, that text (KernelEvent.cut)."""

    head: str | None
    text: str
    firm: bool = False
    cut: str | None = None
    tag: str = "NVRM: "  # (the driver's tag as printed: `NVRM: `, or `NVRM ` before R535's)


# what ends a driver sentence (a message ending otherwise may go on on the next line): a stop, or
# a stop's parenthesised code ("RmInitAdapter failed! (0x22:0x56:884)"); an aside's bracket is
# none ("The NVIDIA GPU 0000:01:00.0 (PCI ID: 10de:0fd3)" / "installed in this system is ...")
_SENTENCE_END = lazy_re(r"[.!](?:\s*\([^()]*\))?$")


def _ends_sentence(text: str) -> bool:
    return _SENTENCE_END.search(text.rstrip()) is not None


# a message whose last word is a GPU's address has not said anything of it yet (the head of
# "The NVIDIA GPU 0000:b3:00.0" / "(PCI ID: ...) installed in this system has" / "fallen off ...")
_ENDS_WITH_PCI = lazy_re(rf"\b{_ADDRESS}(?:\.\d)?$")


# the head of the driver's messages about one GPU that go on over several lines and always end in
# a sentence (kernel-open/nvidia nv.c, nv-pci.c: "The NVIDIA GPU %04x:%02x:%02x.%x" / "(PCI ID:
# %04x:%04x) installed in this system has" / "fallen off the bus ...", "The NVIDIA GPU ... (PCI
# ID: ...)" / "installed in this system is not supported by ..." / "... requires use of the NVIDIA
# open kernel modules."): its address, then nothing, its PCI ID or "installed" (in this system).
# The Grace memory message "The NVIDIA GPU ... installed in the system" / "requires auto onlining
# mode ..." (os-interface.c) ends in no sentence: it is none of these.
_GPU_HEAD = lazy_re(
    rf"The NVIDIA GPU {_ADDRESS}\.\d"
    r"(?:\s*$|\s*\(PCI ID|\s+installed(?:\s*$|\s+in\s+this\b))",
    re.IGNORECASE,
)

# the driver's own next lines of those messages (its records may carry no mark of one message):
# a line of the driver's that says anything else (`GPU 0000:01:00.0: RmInitAdapter failed!`,
# `GPU at PCI:...`, `nvAssertOkFailedNoLog: ...`) starts a message of its own
_GPU_GOES_ON = lazy_re(
    r"\(PCI ID:|installed\b|in this (?:vGPU host )?system\b|fallen off the bus\b|"
    r"requires use of\b|(?:is )?not supported by\b|NVIDIA \S+ driver release\b|"
    r"\S+ NVIDIA Linux\b|graphics driver release\b|nvidia\.ko\b|System Processor\b",
    re.IGNORECASE,
)


def gpu_message_tail(text: str) -> bool:
    """Whether an NVRM line's text (after the tag) is a later line of the driver's message about
    one GPU (_GPU_GOES_ON: `(PCI ID: 10de:26b5) installed in this system has`, `fallen off the bus
    and is not responding to commands.`), never its head (`The NVIDIA GPU 0000:b3:00.0`)."""
    return _GPU_GOES_ON.match(text.strip()) is not None


def open_gpu_message(message: Message | None) -> bool:
    """True while `message` is one of the driver's messages about one GPU (_GPU_HEAD) that has not
    yet ended its sentence: the driver's next lines go on with it."""
    return message is not None and bool(_GPU_HEAD.match(message.text)) and not _ends_sentence(message.text)


def continues(line: str, start: int, text: str, previous: Message | None) -> bool:
    """True when this NVRM line continues the previous NVRM message: dmesg's continuation lines
    are indented with no timestamp; a log that repeats the prefix on each line (journalctl,
    syslog), or prints none (`dmesg -t`, `journalctl -o cat`: every line reads as a
    continuation's would, unindented), continues where the previous text ends mid-sentence and
    this line has the same prefix, with a time to the microsecond (one printk) or starting lower
    case. A message that
    starts with the driver's `The NVIDIA GPU <address>` (_GPU_HEAD) goes on over the driver's own
    next lines of it (_GPU_GOES_ON) until it ends a sentence, whatever their stamps: a driver that
    prints each of its lines as a record of its own (dmesg stamps each apart, journalctl gives
    each its prefix) still says one thing of that GPU; any other line of the driver's starts a
    message of its own (its fault, its GPU, are its own). The driver's load banner starts a
    message of its own."""
    if previous is None:
        return False
    if not line[:start].strip() and line[:1].isspace():
        return True  # (dmesg's indent; a log without stamps, `dmesg -t`, `journalctl -o cat`, has none)
    head, before = prefix(line, start), previous.text.rstrip()
    if _ends_sentence(before) or DRIVER_LOAD.match(text):
        return False
    if _GPU_HEAD.match(previous.text) and _GPU_GOES_ON.match(text):
        return True  # (the driver's message about one GPU, each of its lines a record of its own)
    if head != previous.head:
        return False
    return text[:1].islower() or (head is not None and _FINE_TIME.search(head) is not None)


def firmly(line: str, start: int) -> bool:
    """True when a line that continues a message carries the kernel's own mark of one message:
    dmesg's indent, or a time to the microsecond in its prefix (one printk)."""
    head = prefix(line, start)
    if head is None:
        return line[:1].isspace()
    return _FINE_TIME.search(head) is not None


# the driver's multi-line messages that end with no stop, said whole (os-interface.c: "... requires
# auto onlining mode online_movable enabled in" / "/sys/devices/system/memory/auto_online_blocks")
_WHOLE_WITHOUT_STOP = lazy_re(r"/sys/devices/system/memory/auto_online_blocks$")


def unfinished(message: Message) -> bool:
    """True when the log ends inside this driver message: it ends no sentence, and it already
    spans lines the kernel printed as one message, announces more (`:`), or ends with the
    address of the GPU it is about, or starts with the driver's "The NVIDIA GPU <address>" (the
    head of "... installed in this system has" / "fallen off the bus ...", which always ends in a
    sentence: its records may carry no mark of one message). One-line messages that end
    without a stop ("loading NVIDIA UNIX ... Module 570.158.01 ... 2025") are whole."""
    text = message.text.rstrip()
    if not text or _ends_sentence(text):
        return False
    if _GPU_HEAD.match(text):
        return True  # (the driver ends its message about a GPU with a sentence: it was cut before)
    if _WHOLE_WITHOUT_STOP.search(text):
        return False
    return message.firm or text.endswith(":") or _ENDS_WITH_PCI.search(text) is not None


def address(text: str) -> str:
    """The first PCI address in a kernel log text (an NVRM sentence, an unreadable Xid line); ""."""
    pci = _NVRM_PCI.search(text)
    return pci.group(1) if pci else ""


def kernel_cause(line: str) -> tuple[NvrmFault, str] | None:
    """The data/nvrm_faults.yml row (`kernel_line`) a kernel line without the driver's tag says,
    and its text from the kernel's device name on (`nvidia 0000:01:00.0: Unable to change power
    state ...`); None for any other line."""
    for fault in load_nvrm_faults():
        if fault.kernel_line and (m := fault.pattern.search(line)):
            return fault, line[m.start() :].strip()
    return None
