"""A saved journal (or syslog) whose lines are all of other programs than the kernel:
`journalctl -u nvidia-persistenced`, `journalctl -b -1 -p 3` on a box whose kernel logged nothing
at that priority. It holds no kernel line, so no Xid or SXid can be read from it (rules.md: a
journal of other programs' entries only is no kernel log); it is refused saying so and naming
what it does show of the GPU's driver (`Failed to insert module 'nvidia_drm'`, nvidia-persistenced's
`Failed to query NVIDIA devices`), where it shows a failure. Before, it was refused as "not a
recognised command output" (measure35d 22, 24)."""

from __future__ import annotations

import re

from gpuonboard.facts.kernel_wrap import program_of

__all__ = ["journal_without_kernel"]

# a line a program logs of a failure (`Failed to ...`, `Error running ...`, `... failed to initialize`)
_FAILURE = re.compile(r"\b(?:fail(?:ed|ure)?|error|unable|cannot|could not)\b", re.IGNORECASE)
# the GPU driver's stack among the programs or in a line (its modules, daemons and units)
_NVIDIA = re.compile(r"nvidia", re.IGNORECASE)
_LEAST = 2  # (lines of other programs)


def journal_without_kernel(text: str) -> str | None:
    """The sentence refusing a journal of other programs' lines only (see the module); None for
    any other text (one with a kernel line, or too few journal lines)."""
    lines = [line for line in text.splitlines() if line.strip()]
    programs = [program_of(line) for line in lines]
    named = [(line, p) for line, p in zip(lines, programs, strict=True) if p is not None]
    if len(named) < _LEAST or len(named) * 2 < len(lines) or any(p == "kernel" for _, p in named):
        return None
    kinds = list(dict.fromkeys(re.sub(r"\[\d+\]$", "", p) for _, p in named))
    shown = ", ".join(kinds[:4]) + (" ..." if len(kinds) > 4 else "")
    failures = [line for line, _ in named if _FAILURE.search(_message(line))]
    # (the GPU stack's failures first, two at most: `Failed to insert module 'nvidia_drm'`, and
    # nvidia-persistenced's `Failed to query NVIDIA devices`)
    ours = [line for line in failures if _NVIDIA.search(line)] or failures
    quoted = list(dict.fromkeys(" ".join(_message(line).split())[:110] for line in ours))[:2]
    said = "; it shows " + " and ".join(f"`{q}`" for q in quoted) if quoted else ""
    return (
        f"a journal of other programs' lines only ({len(named)} lines of {shown}), no line of the"
        f" kernel's{said}: no Xid or SXid can be read from it (the NVIDIA driver logs them in the"
        " kernel log): save the kernel log of the box (`sudo dmesg -T`, or `journalctl -k -b`)"
        " and its nvidia-smi."
    )


def _message(line: str) -> str:
    """A journal line's message: what follows its program's `name[pid]: `."""
    return re.split(r"\]?: ", line, maxsplit=1)[-1] if ": " in line else line
