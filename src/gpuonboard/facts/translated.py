"""Labels a tool prints translated (a box in the zh_CN or de locale), read back as the C locale
prints them: one mechanism for the labels of `free` (data/free_labels.yml) and the header words
of `df` (data/df_labels.yml)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from gpuonboard.once import loaded_once
from gpuonboard.resources import DATA_DIR, table_rows

Label = tuple[str, str, str]  # (language, the label as translated, the C locale's label)


@loaded_once
def labels(table: str) -> tuple[Label, ...]:
    """The rows of data/<table>.yml (its list under the key `table`), read once."""
    rows = table_rows(DATA_DIR / f"{table}.yml", table)
    return tuple((str(r["lang"]), str(r["label"]), str(r["c_locale"])) for r in rows)


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
