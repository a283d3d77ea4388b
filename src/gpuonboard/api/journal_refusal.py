"""A saved journal (or syslog) whose lines are all of other programs than the kernel:
`journalctl -u nvidia-persistenced`, `journalctl -b -1 -p 3` on a box whose kernel logged nothing
at that priority. It holds no kernel line, so no Xid or SXid can be read from it (rules.md: a
journal of other programs' entries only is no kernel log); it is refused saying so and naming
what it does show of the GPU's driver (`Failed to insert module 'nvidia_drm'`, nvidia-persistenced's
`Failed to query NVIDIA devices`), where it shows a failure. Before, it was refused as "not a
recognised command output" (measure35d 22, 24).

A failing unit's own program says why before systemd's generic `Control process exited ...
status=1/FAILURE`: its lines are quoted first, whole up to a word's end (never cut inside a token,
`[NV_WARN_NOTHING_TO_DO]`). A journal of the NVIDIA fabric manager (`nv-fabricmanager[PID]:`,
`nvidia-fabricmanager-start.sh[PID]:`, the `nvidia-fabricmanager.service` unit) is named so, with
what its error code means and what the `fabric_manager` rule reads instead (measure39c 10, 11)."""

from __future__ import annotations

import re

from gpuonboard.api.fabric_log import nothing_to_do
from gpuonboard.facts.kernel_headless import word_cut
from gpuonboard.facts.kernel_wrap import program_of
from gpuonboard.once import lazy_re

__all__ = ["journal_without_kernel"]

# a line a program logs of a failure (`Failed to ...`, `Error running ...`, `... failed to initialize`)
_FAILURE = re.compile(r"\b(?:fail(?:ed|ure)?|error|unable|cannot|could not)\b", re.IGNORECASE)
# the GPU driver's stack among the programs or in a line (its modules, daemons and units; the
# fabric manager's `nv-fabricmanager` and its NVSwitch words)
_NVIDIA = re.compile(r"nvidia|\bnv-fabricmanager\b|nvswitch", re.IGNORECASE)
# the service manager's own lines about a unit (`nvidia-fabricmanager.service: Control process
# exited, code=exited, status=1/FAILURE`): its summary, after the unit's own words
_SERVICE_MANAGER = lazy_re(r"^(?:systemd|init)$")
# the NVIDIA fabric manager's programs and unit
_FABRIC = lazy_re(r"fabric-?manager", re.IGNORECASE)
_LEAST = 2  # (lines of other programs)
# `systemctl status UNIT`'s first line (`● mcelog.service - Machine Check ...`; `○` inactive, `×`
# failed, `*` without UTF-8) and its `Active:` field
_STATUS_HEAD = lazy_re(r"^[ \t]*[●○×*↻][ \t]+(\S+?)(?:\.service)?[ \t]+-[ \t]")
_STATUS_ACTIVE = lazy_re(r"^[ \t]+Active:[ \t]+(\S+(?:[ \t]+\([^)]*\))?)")
_QUOTE_MOST = 200  # (characters of a quoted line, cut at a word's end)


def journal_without_kernel(text: str) -> str | None:
    """The sentence refusing a journal of other programs' lines only (see the module); None for
    any other text (one with a kernel line, or too few journal lines)."""
    lines = [line for line in text.splitlines() if line.strip()]
    status, lines = _status_head(lines)
    programs = [program_of(line) for line in lines]
    named = [(line, p) for line, p in zip(lines, programs, strict=True) if p is not None]
    if len(named) < _LEAST or len(named) * 2 < len(lines) or any(p == "kernel" for _, p in named):
        return None
    kinds = list(dict.fromkeys(re.sub(r"\[\d+\]$", "", p) for _, p in named))
    shown = ", ".join(kinds[:4]) + (" ..." if len(kinds) > 4 else "")
    failures = [(line, p) for line, p in named if _FAILURE.search(_message(line))]
    # (the GPU stack's failures first, two at most: `Failed to insert module 'nvidia_drm'`, and
    # nvidia-persistenced's `Failed to query NVIDIA devices`; a unit's own words before the service
    # manager's summary of it)
    ours = [(line, p) for line, p in failures if _NVIDIA.search(line)] or failures
    ours.sort(key=lambda pair: _SERVICE_MANAGER.match(re.sub(r"\[\d+\]$", "", pair[1])) is not None)
    quoted = list(dict.fromkeys(word_cut(_message(line), _QUOTE_MOST) for line, _ in ours))[:2]
    said = "; it shows " + " and ".join(f"`{q}`" for q in quoted) if quoted else ""
    lines_of = f"{len(named)} lines of {shown}"
    if any(_FABRIC.search(p) or _FABRIC.search(line) for line, p in named):
        return _fabric_manager(lines_of, said, text)
    return (
        f"{status}a journal of other programs' lines only ({lines_of}), no line of the kernel's{said}:"
        " no Xid or SXid can be read from it (the NVIDIA driver logs them in the"
        " kernel log): save the kernel log of the box (`sudo dmesg -T`, or `journalctl -k -b`)"
        " and its nvidia-smi."
    )


def _status_head(lines: list[str]) -> tuple[str, list[str]]:
    """A `systemctl status UNIT`'s head (its `● UNIT - Description` line, its `Loaded:`,
    `Active:`, `Main PID:` fields) above the journal lines it ends with, and the lines pasted above
    that head (other commands, `lsmod | grep edac`): said, and left out of the journal's lines;
    ("", lines) where no such head is there."""
    head = next((i for i, line in enumerate(lines) if _STATUS_HEAD.match(line)), None)
    if head is None:
        return "", lines
    body = lines[head + 1 :]
    first = next((i for i, line in enumerate(body) if program_of(line) is not None), len(body))
    if not any(_STATUS_ACTIVE.match(line) for line in body[:first]):
        return "", lines
    unit = _STATUS_HEAD.match(lines[head])
    active = next(m.group(1) for line in body[:first] if (m := _STATUS_ACTIVE.match(line)))
    above = " (below other commands' lines)" if head > 0 else ""
    return f"`systemctl status {unit.group(1) if unit else ''}` (Active: {active}){above} and ", body[first:]


def _fabric_manager(lines_of: str, said: str, text: str) -> str:
    """The refusal of a journal of the NVIDIA fabric manager (`lines_of`: whose lines it holds; `said`:
    the failures it shows): named so, its error code said where it is the NVSwitch driver's "no
    NVSwitch", and what `fabric_manager` and the kernel-log rules read instead."""
    return (
        f"an nvidia-fabricmanager journal ({lines_of}; no line of the kernel's){said}{nothing_to_do(text)};"
        " this"
        " tool does not judge the fabric manager from its journal; `fabric_manager` reads `systemctl"
        " is-active nvidia-fabricmanager` saved in a file named *fabric* (e.g. fabric.txt) and the"
        " box's `nvidia-smi -q` (its Fabric section), and no Xid or SXid can be read from a journal"
        " without the kernel's lines: save those and the kernel log of the box (`sudo dmesg -T`, or"
        " `journalctl -k -b`)."
    )


def _message(line: str) -> str:
    """A journal line's message: what follows its program's `name[pid]: `."""
    return re.split(r"\]?: ", line, maxsplit=1)[-1] if ": " in line else line
