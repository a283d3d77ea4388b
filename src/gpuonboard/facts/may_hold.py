"""Whether a text may hold a match of a case-insensitive pattern, told by words every match
holds: a search Python's `re` cannot speed up (a pattern anchored at each line's start, `^\\s*...`
with re.M, is tried at every character of the text: ~2.5 ms for an 8-GPU `nvidia-smi -q`) is
skipped where the text lacks them, and made as before where it has them (the same match).

`folded(text)` is the text as re.IGNORECASE compares it with ASCII letters: lower-cased, and the
three characters IGNORECASE also matches to an ASCII letter whose lower case is not that letter
(U+0130 `İ` and U+0131 `ı` to i, U+017F `ſ` to s) written as that letter. So a pattern's literal
ASCII run that a match holds, lower-cased, is in `folded(text)` wherever the pattern matches."""

from __future__ import annotations


def folded(text: str) -> str:
    """`text` lower-cased, `İ`, `ı` and `ſ` as i and s (what re.IGNORECASE matches to them)."""
    low = text.lower()
    if not low.isascii():
        low = low.replace("i\u0307", "i").replace("\u0131", "i").replace("\u017f", "s")
    return low


def may_hold(low: str, *alternatives: tuple[str, ...]) -> bool:
    """Whether `low` (folded) holds every word of one of the `alternatives` (each a match's own
    words, lower case): False where no match of the pattern they stand for can be in it."""
    return any(all(word in low for word in words) for words in alternatives)
