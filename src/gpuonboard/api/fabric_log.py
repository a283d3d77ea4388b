"""A saved Fabric Manager log (`/var/log/fabricmanager.log`: `[Feb 25 2025 13:59:45] [INFO] [tid
1803] ...` lines, NVIDIA's nv-fabricmanager daemon of an NVSwitch box) is no output this tool
reads: the daemon's own record of its work (multicast teams set up and freed, partitions, NVLink
training), not the box's state now. It is refused naming it, quoting its first ERROR / FATAL line
where it has one, and saying what to save instead: the daemon's state (`systemctl is-active
nvidia-fabricmanager`), the GPUs' fabric state (`nvidia-smi -q`) and the NVSwitch driver's SXid
lines in the kernel log (`sudo dmesg -T`). Before, it was refused as "not a recognised command
output" (measure33d 04, leptonai/gpud's testdata)."""

from __future__ import annotations

import re

from gpuonboard.facts.kernel_headless import word_cut

# a Fabric Manager log line's head: its time (`[Feb 25 2025 13:59:45]`), level and thread
_FM_LINE = re.compile(
    r"^\[\w{3} \d{1,2} \d{4} \d\d:\d\d:\d\d\] \[(INFO|WARNING|ERROR|FATAL|DEBUG)\] \[tid \d+\] "
)
_FM_LEAST = 2  # (lines of its shape; its messages' own continuation lines are not)


# a command line typed above it that reads the log (`$ grep -i "Fatal" fabricmanager.log* -A 11`,
# `cat /var/log/fabricmanager.log`), grep's `--` between its matches' groups, and the file's name
# grep puts before each line of several files (`fabricmanager.log.1:[Oct 13 2025 ...`, `-` on a
# context line)
_FM_TYPED = re.compile(r"^\S*[$#>]\s*\S.*\bfabricmanager\.log")
_GREP_GROUP = "--"
_GREP_FILE = re.compile(r"^(?:\S*/)?fabricmanager\.log[\w.]*[:-](?=\[|\S)")


def _log_lines(text: str) -> tuple[list[str], bool]:
    """The log's lines as the daemon wrote them (a grep's file names and `--` lines taken out),
    and whether a command line above them names the log file or grep's `--` lines are among them
    (a grep's output, whose one line of the log's shape is enough)."""
    lines = [line for line in text.splitlines() if line.strip()]
    typed = bool(lines) and _FM_TYPED.match(lines[0]) is not None
    lines = lines[1:] if typed else lines
    grouped = any(line.strip() == _GREP_GROUP for line in lines)  # (a grep's: its command taken off above)
    return [_GREP_FILE.sub("", line) for line in lines if line.strip() != _GREP_GROUP], typed or grouped


def fabric_manager_log(text: str) -> str | None:
    """The sentence refusing a Fabric Manager log (see the module), None for any other text: the
    log itself, or a grep of it (its command line above it, `--` between its groups: measure35d
    27's `grep -i "Fatal" fabricmanager.log* -A 11` of a GB200 rack, one ERROR line and its
    context lines, was refused as no output)."""
    lines, typed = _log_lines(text)
    heads = [m for line in lines[:400] if (m := _FM_LINE.match(line))]
    if not lines or len(heads) < (1 if typed else _FM_LEAST) or not _FM_LINE.match(lines[0]):
        return None
    bad = next((m.string for m in heads if m.group(1) in ("ERROR", "FATAL")), "")
    shown = f"; it logs `{word_cut(bad, 200)}`" if bad else f" ({len(heads)} lines, none an error)"
    return (
        f"a Fabric Manager log (nv-fabricmanager's own record of its work{shown}{nothing_to_do(text)}),"
        " which this tool"
        " does not judge: save `systemctl is-active nvidia-fabricmanager` in a file named *fabric*,"
        " `nvidia-smi -q` (its Fabric State and Status) and the kernel log (`sudo dmesg -T`, its"
        " NVSwitch SXid lines) of the box."
    )


def nothing_to_do(text: str) -> str:
    """What the fabric manager's `NV_WARN_NOTHING_TO_DO` means where `text` (its log or journal)
    shows it (`request to query NVSwitch device information from NVSwitch driver failed with
    error:WARNING Nothing to do [NV_WARN_NOTHING_TO_DO]`), as a clause: the NVSwitch driver found no
    NVSwitch, expected on a box without one, a fault on an NVSwitch box; "" where it does not."""
    if "NV_WARN_NOTHING_TO_DO" not in text:
        return ""
    return (
        ": the fabric manager stopped because the NVSwitch driver found no NVSwitch"
        " (`NV_WARN_NOTHING_TO_DO`), which is expected on a box without NVSwitches (PCIe GPUs, alone or"
        " joined by NVLink bridges) and a fault on an NVSwitch box (HGX, DGX), whose GPUs then cannot"
        " use their NVLink fabric"
    )
