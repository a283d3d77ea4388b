"""Another program's log that quotes nvidia-smi's failure: a watchdog or monitor that ran nvidia-smi
and wrote what it printed between its own time-stamped lines (nvOC's tempcontrol: `WARNING: Tue Mar
5 15:17:06 +0330 2019 - tempcontrol@[GPU0] Problem detected: nvidia-smi failed to query ...`, then
`========= SMI Query output with errors @[GPU0]:`, nvidia-smi's `Unable to determine the device
handle ...`, `========= End of SMI query output`). Such a log is that program's record of an earlier
run (its time stamp says when), never the box's nvidia-smi failing now (docs/guides/offline.md: as
an exporter's journal line quoting it is): read, said in a note, nothing judged from it."""

from __future__ import annotations

import re

_DAY = r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)"
_MONTH = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
# a date and time a program writes in its log line: date(1)'s `Tue Mar  5 15:17:06 +0330 2019`, an
# ISO `2019-03-05 15:17:06` / `2019-03-05T15:17:06`, syslog's `Mar  5 15:17:06`
_STAMP = re.compile(
    rf"\b(?:{_DAY},?[ \t]+)?{_MONTH}[ \t]+\d{{1,2}}[ \t]+\d\d:\d\d:\d\d\b"
    r"|\b\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d\b"
)
# nvidia-smi's own time stamp line above its table (a date alone), and `watch`'s header
_OWN_STAMP = re.compile(
    rf"^[ \t]*(?:{_DAY}[ \t]+{_MONTH}[ \t]+\d{{1,2}}[ \t]+[\d:]+[ \t]+\d{{4}}[ \t]*$|Every )"
)


def failure_record(text: str, failure: str) -> str:
    """Why `text`, which holds nvidia-smi's failure line `failure`, is another program's record of
    it: one clause naming the program's first time-stamped line (which says when), "" where no
    line beside nvidia-smi's own words is such a record (a failing nvidia-smi's whole output)."""
    for raw in text.splitlines():
        line = raw.strip()
        if line and line != failure.strip() and not _OWN_STAMP.match(line) and _STAMP.search(line):
            if "NVRM" in line or " kernel: " in line:  # (the kernel's log: read as such elsewhere)
                continue
            shown = line if len(line) <= 120 else line[:117] + "..."
            return (
                f"another program's log quoting nvidia-smi's failure (`{failure.strip()}`) below its own"
                f" time-stamped line (`{shown}`): that program's record of an earlier run, not the box's"
                " nvidia-smi failing now; nothing is judged from it: save `nvidia-smi` run on the box"
                " (`nvidia-smi > nvidia-smi.txt 2>&1`)"
            )
    return ""


# an arrow a post puts before the output line it shows (`→ NVIDIA-SMI has failed because ...`, `=>
# No devices were found`), before nvidia-smi's own failure words (its capitals; NVML's; a GPU it
# could not open)
_MARKED_FAILURE = re.compile(
    r"^([ \t]*)(?:[→⇒➔➡►▶][ \t]*|[-=]>[ \t]+)(?=(?-i:NVIDIA-SMI has failed)|Failed to initialize NVML:"
    r"|No devices were found|Unable to determine the device handle)",
    re.M,
)


def unmarked_failure(text: str) -> str:
    """`text` without the arrow a post put before nvidia-smi's failure line (_MARKED_FAILURE): the
    line is nvidia-smi's, the arrow the poster's."""
    return (
        _MARKED_FAILURE.sub(r"\1", text) if "NVIDIA" in text or "Unable" in text or "No dev" in text else text
    )
