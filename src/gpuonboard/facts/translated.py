"""Labels a tool prints translated (a box in the zh_CN or de locale), read back as the C locale
prints them: one mechanism for the header words of `free` (facts/memory.py FREE_LABELS) and of
`df` (facts/disks.py DF_LABELS)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping


def word_translator(words: Mapping[str, str]) -> Callable[[str], str]:
    """A function that replaces, in a line, each label of `words` (label -> the C locale's word)
    that stands alone (spaces or the line's ends around it; a label of several words matched
    across any run of spaces, the longest labels first) by its C-locale word."""
    pattern = re.compile(
        r"(?<!\S)(?:"
        + "|".join(re.escape(k).replace(r"\ ", r"\s+") for k in sorted(words, key=len, reverse=True))
        + r")(?!\S)"
    )
    return lambda line: pattern.sub(lambda m: words[" ".join(m.group().split())], line)
