"""A saved kernel log that starts inside a multi-line record of the drivers' (measure39c 06): its
first SXid line is a record's `Severity` or `Data {...}` line whose `Fatal` / `Non-fatal` line is
not in the log (the NVSwitch driver prints each SXid as `Non-fatal, Link 43 ...`, `Severity 0
Engine instance 43 ...`, `Data {0x0000002b, ...}`: kernel_xid_lines), or its first NVRM line is a
later line of the driver's message about one GPU (`NVRM: (PCI ID: 10de:26b5) installed in this
system has`, its `The NVIDIA GPU 0000:b3:00.0` line not in the log) or of its own multi-line
report (an Xid 119 / 120 report's RPC history rows, register dump or section heads: `NVRM:     -1
103  GSP_RM_ALLOC ...`, `NVRM: GPU0 RPC history (CPU -> GSP):`) whose head, the Xid line among it,
is not. Whatever its stamps say, such a log is an excerpt begun mid-record: the lines logged
before its first are not known, SXids and Xids among them (KernelLog.headless, read by gpu_xid
and nvswitch_sxid as a log narrowed; a live probe's log is judged by its `# first:` line)."""

from __future__ import annotations

import re

from gpuonboard.facts.kernel_nvrm import NVRM, REPORT_LINE, REPORT_WORDS, gpu_message_tail
from gpuonboard.facts.kernel_xid_lines import line_event, sxid_continuation
from gpuonboard.once import lazy_re

__all__ = ["headless_start", "word_cut"]

# the section heads of the driver's Xid 119 GSP RPC timeout report (kernel_gsp.c
# _kgspLogRpcTimeout / _kgspDumpRpcHistory): later lines of the report, never its first
_REPORT_HEAD = lazy_re(r"NVRM:\s*(?:GPU\d+\s+)?(?:GSP RPC buffer contains\b|RPC (?:event )?history\b)")


def headless_start(lines: list[str]) -> str:
    """Why a saved log's lines start inside a driver's record (see the module): its first SXid
    line, or its first NVRM line, is a later line of a record whose first line is not in the log;
    "" where neither is."""
    first_sxid = next((e for line in lines if (e := line_event(line)) is not None and e.kind == "sxid"), None)
    if first_sxid is not None and (part := sxid_continuation(first_sxid.message)):
        shown = word_cut(f"SXid (PCI:{first_sxid.pci}): {first_sxid.code}, {first_sxid.message}", 100)
        missing = "its `Fatal` / `Non-fatal` line" + (" and `Severity` line" if part == "Data" else "")
        return (
            f"it starts inside an SXid record of {first_sxid.device} (its first SXid line, `{shown}`,"
            f" is a record's `{part}` line, {missing} not in the log): the paste begins inside the"
            " log, so the lines logged before it are not known"
        )
    first_nvrm = next((m for line in lines if (m := NVRM.search(line))), None)
    if first_nvrm is None:
        return ""
    said = first_nvrm.string[first_nvrm.start() :]
    shown = word_cut(said, 100)
    if gpu_message_tail(first_nvrm.group(1)):
        return (
            f"it starts inside a message of the GPU driver (its first NVRM line, `{shown}`, goes on with"
            " a message whose first line, `The NVIDIA GPU <address>`, is not in the log): the paste"
            " begins inside the log, so the lines logged before it are not known"
        )
    if not (REPORT_LINE.match(said) or REPORT_WORDS.match(said) or _REPORT_HEAD.match(said)):
        return ""
    return (
        f"it starts inside a multi-line report of the GPU driver (its first NVRM line, `{shown}`,"
        " is a later line of a report whose first lines, the Xid line among them, are not in the log):"
        " the paste begins inside the log, so the lines logged before it are not known"
    )


def word_cut(text: str, most: int) -> str:
    """`text` with its blanks collapsed, cut to at most `most` characters at a word's end
    (`...` after it), never inside a word or a token such as `[NV_WARN_NOTHING_TO_DO]`."""
    said = " ".join(text.split())
    if len(said) <= most:
        return said
    cut = said[: most + 1]
    at = cut.rfind(" ")
    return (cut[:at] if at > 0 else re.split(r"\s", said, maxsplit=1)[0]) + " ..."
