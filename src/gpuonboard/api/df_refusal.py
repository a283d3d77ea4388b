"""The sentence refusing a saved text of df-like rows this tool cannot read (api/saved_forms.py):
rows with no header line above them, under a header a paste broke, or under a header in a
language it does not read; and the df row shape they share."""

from __future__ import annotations

import re

__all__ = ["df_refusal", "df_rows"]


def df_rows(text: str) -> int:
    """The lines of `text` shaped as df's rows: a use percentage, then a mount point (`/...`)."""
    return sum(1 for line in text.splitlines() if re.search(r"\s\d{1,3}%\s+/\S*\s*$", line))


def _df_row_first(text: str) -> bool:
    """The text's first line is a df row: whole, or a device name df wrapped onto a line of its
    own (`/dev/mapper/centos-root` alone, an NFS `server:/export`) above a row."""
    lines = [line for line in text.splitlines() if line.strip()]
    if df_rows(lines[0]):
        return True
    named = lines[0].split()
    return len(named) == 1 and bool(re.search(r"[/:]", named[0])) and len(lines) > 1 and df_rows(lines[1]) > 0


def df_refusal(where: str, text: str) -> str | None:
    """The sentence refusing df-like rows with no header above them or under one this tool
    cannot read, or None."""
    if df_rows(text) >= 2 and _df_row_first(text):
        # (no line above the first row: the output's top, its header among it, was cut off)
        return (
            f"{where}: rows like df's (a mount point, a use %) with no header line above them (the"
            " output's top cut off, or left out by a filter), so neither their units nor whether a"
            " mount was cut away is known: save the whole `df` output (`LC_ALL=C df -P -k`), or its"
            " rows under the copied command (`$ df -h | grep nvme`)."
        )
    if df_rows(text) >= 2 and (broken := _broken_df_header(text)):
        # (English column names, the line's first word split or lost by the paste: no language)
        return (
            f"{where}: rows like df's (a mount point, a use %) under a header line the paste broke"
            f" (`{broken}`: df's English header, its `Filesystem` split across lines or lost): save"
            " the whole `df` output again (`LC_ALL=C df -P -k > df.txt` on the box)."
        )
    if df_rows(text) >= 2:
        return (
            f"{where}: rows like df's (a mount point, a use %) under a header this tool cannot read"
            " (df run in a language other than English, Chinese, German, Spanish, French, Portuguese"
            " or Russian?): save it with"
            " `LC_ALL=C df -P -k`."
        )
    return None


# df's English column names after its first (`Size`/`1K-blocks`, `Used`, `Avail`/`Available`,
# `Use%`/`Capacity`, `Mounted on`)
_DF_ENGLISH = re.compile(r"\b(?:Size|1K-blocks|Used|Avail(?:able)?|Use%|Capacity|Mounted on)\b")


def _broken_df_header(text: str) -> str:
    """The line above df-like rows that holds four of df's English column names but not its
    first, `Filesystem` (a paste that split the word across lines, `Files` / `ystem  Size ...`),
    or ""."""
    for line in text.splitlines():
        plain = line.strip().lstrip("> ").strip()
        if len(set(_DF_ENGLISH.findall(plain))) >= 4:
            return "" if plain.startswith("Filesystem") else plain[:60]
    return ""
