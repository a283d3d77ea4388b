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

# a Fabric Manager log line's head: its time (`[Feb 25 2025 13:59:45]`), level and thread
_FM_LINE = re.compile(
    r"^\[\w{3} \d{1,2} \d{4} \d\d:\d\d:\d\d\] \[(INFO|WARNING|ERROR|FATAL|DEBUG)\] \[tid \d+\] "
)
_FM_LEAST = 2  # (lines of its shape; its messages' own continuation lines are not)


def fabric_manager_log(text: str) -> str | None:
    """The sentence refusing a Fabric Manager log (see the module), None for any other text."""
    lines = [line for line in text.splitlines() if line.strip()]
    heads = [m for line in lines[:400] if (m := _FM_LINE.match(line))]
    if len(heads) < _FM_LEAST or not _FM_LINE.match(lines[0]):
        return None
    bad = next((m.string for m in heads if m.group(1) in ("ERROR", "FATAL")), "")
    shown = f"; it logs `{' '.join(bad.split())[:160]}`" if bad else f" ({len(heads)} lines, none an error)"
    return (
        f"a Fabric Manager log (nv-fabricmanager's own record of its work{shown}), which this tool"
        " does not judge: save `systemctl is-active nvidia-fabricmanager` in a file named *fabric*,"
        " `nvidia-smi -q` (its Fabric State and Status) and the kernel log (`sudo dmesg -T`, its"
        " NVSwitch SXid lines) of the box."
    )
