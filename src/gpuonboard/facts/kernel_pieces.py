"""Whether a saved kernel log is excerpts of a log pasted one after the other, not one run of it
(facts/kernel_log.py, KernelLog.pieced). The kernel prints no empty line: a paste's blank lines
between two stamped lines whose stamps leave a gap (seconds since boot, dmesg's `[ 117.98]` or a
syslog's `kernel: [ ... ]`) mark where one copy ended and the next began, and a line whose stamp
lost its `[` (` 4428.423595] bond0: ...`) below the first is a copy begun mid-line. The lines
between are not in it: a pass of it would say nothing of them (m35d 14: an SXid at 117.98 s,
blank lines, then ` 4428.423595] bond0:`, ~4,300 s of log missing, passed gpu_xid).

A paste with a blank line between most of its lines (a forum's double spacing) is no excerpt
for that; a gap below GAP_S is a log's ordinary pause."""

from __future__ import annotations

import re

__all__ = ["GAP_S", "pieced"]

# the seconds between two stamps across blank lines above which the lines between were left out
GAP_S = 10.0
# a line's stamp in seconds since boot: dmesg's `[    0.869739]`, after a syslog's or journal's
# head (`Sep 19 16:18:02 bubz kernel: [68183.615790]`)
_STAMP = re.compile(r"^\s*(?:[^\[\n]{0,80}?\bkernel:\s*)?\[\s*(\d+\.\d+)\]")
# the same stamp without its `[` (a copy begun inside it): its six digits of microseconds
_LOST = re.compile(r"^\s*(?:[^\[\n]{0,80}?\bkernel:\s*)?(\d+\.\d{6})\]\s")


def pieced(lines: list[str]) -> str:
    """Why the log `lines` (as given) is excerpts pasted apart (module doc), "" where it is not."""
    filled = [i for i, line in enumerate(lines) if line.strip()]
    if len(filled) < 2:
        return ""
    spaced = sum(1 for a, b in zip(filled, filled[1:], strict=False) if b > a + 1)
    double = spaced * 2 >= len(filled) - 1
    before: float | None = None
    for i, j in zip(filled, filled[1:], strict=False):
        line, shown = lines[j], lines[j].strip()[:80]
        m = _STAMP.match(lines[i])
        before = float(m.group(1)) if m else before
        lost = _LOST.match(line)
        after = _STAMP.match(line) or lost
        if not double and j > i + 1 and before is not None and after is not None:
            gap = float(after.group(1)) - before
            if gap > GAP_S:
                return (
                    f"it is excerpts of the log pasted together: after blank lines `{shown}` comes"
                    f" {gap:,.0f} s after the line above, and the lines between are not in it"
                )
        if lost:
            return f"it is excerpts of the log pasted together: `{shown}` is a line copied from its middle"
    return ""
