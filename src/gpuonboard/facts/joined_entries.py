"""Where an entry a chat or a lost newline joined onto the line before begins again: the one
rule the readers of nvidia-smi's GPU-headed listings share (facts/gpu_list.py's `nvidia-smi -L`,
facts/nvlink.py's `nvlink -s`). An entry begins where its own start (`GPU N:`, `Link N:`)
follows another entry's end (`(UUID: ...)`'s `)`, a speed's `GB/s`, `<inactive>`) and the spaces
(or a comma) a one-line paste put between them: words no value of those outputs holds, so the
cut is certain. A kernel log's lines, whose stamps a message may quote, are cut by their own
reader (facts/joined_log.py)."""

from __future__ import annotations

import functools
import re

__all__ = ["entries"]


@functools.cache
def _cut(after: tuple[str, ...], begins: str) -> re.Pattern[str]:
    ends = "|".join(f"(?<={re.escape(end)})" for end in after)
    return re.compile(rf"(?:{ends})\s*,?\s*(?={begins})")


def entries(line: str, after: tuple[str, ...], begins: str) -> list[str]:
    """`line` cut before each entry `begins` (a pattern) matches right after one of the texts
    `after` (an entry's end) and the spaces or comma between them; `[line]` where none is."""
    return _cut(after, begins).split(line)
