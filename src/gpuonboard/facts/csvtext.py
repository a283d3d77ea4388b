"""CSV rows of a command's output as nvidia-smi writes them (a space after each comma), read
without ever raising: Python's csv reader refuses some texts (a carriage return inside a line:
"new-line character seen in unquoted field", a cell over its 128 KiB limit), and a saved file
or a replayed output that is no CSV must be "not this format", never a crash."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable


def csv_rows(text: str | Iterable[str], skipinitialspace: bool = True) -> list[list[str]] | None:
    """The rows of `text` (a whole text, or its lines), or None where the csv reader refuses it."""
    lines = io.StringIO(text) if isinstance(text, str) else text
    try:
        return list(csv.reader(lines, skipinitialspace=skipinitialspace))
    except csv.Error:
        return None


def first_csv_row(line: str) -> list[str]:
    """The cells of one line (`[]` where the csv reader refuses it)."""
    rows = csv_rows([line])
    return rows[0] if rows else []
