"""A container image's start-up banner printed above a tool's output (`docker run IMAGE nvidia-smi`).

NVIDIA's CUDA and NGC images print, before the command they run, a banner of their own: a framed
title (`==========` / `== CUDA ==` / `==========`), then paragraphs of the image's version
(`CUDA Version 11.4.0`, `NVIDIA Release 23.05`), copyright and license text, notices (`****` /
`** DEPRECATION NOTICE! **` / `THIS IMAGE IS DEPRECATED and is scheduled for DELETION.` and the
support policy's address) and warnings (`WARNING: The NVIDIA Driver was not detected.`, `NOTE: The
SHMEM allocation limit is set to the default of 64MB.`). Those are the image's words, never the
tool's: not a refusal of the tool by a provider's policy. Pure: no I/O.
"""

from __future__ import annotations

import re

from gpuonboard.once import lazy_re

# the framed title: a line of `=` only, `== NAME ==`, a line of `=` only
_RULE = lazy_re(r"^\s*={4,}\s*$")
_TITLE = lazy_re(r"^\s*==\s+\S.*\s==\s*$")
# a paragraph of the banner holds one of these (the image's version, its license, a notice)
_BANNER_WORDS = lazy_re(
    r"\bVersion\b|\bRelease\b|Copyright|\blicen[cs]e|DEPRECAT|^[^\S\n]*\*{3,}|\bNOTE:|\bWARNING:|"
    r"container|docs\.nvidia\.com|gitlab\.com/nvidia|\bNGC\b",
    re.IGNORECASE | re.MULTILINE,
)


def banner_lines(lines: list[str]) -> set[int]:
    """The indices of `lines` that are a container image's start-up banner: its framed title and
    each blank-separated paragraph after it that holds a banner's words, up to the first paragraph
    that holds none (the tool's own output); empty where no framed title is in `lines`."""
    start = next(
        (
            i
            for i in range(len(lines) - 2)
            if _RULE.match(lines[i]) and _TITLE.match(lines[i + 1]) and _RULE.match(lines[i + 2])
        ),
        None,
    )
    if start is None:
        return set()
    found = set(range(start, start + 3))
    at = start + 3
    while at < len(lines):
        if not lines[at].strip():
            found.add(at)
            at += 1
            continue
        end = at
        while end < len(lines) and lines[end].strip():
            end += 1
        if not _BANNER_WORDS.search("\n".join(lines[at:end])):
            break
        found.update(range(at, end))
        at = end
    return found
