"""The paste-shape tests' known limits (tests/unit/known_limits.yml): one table, each entry with
why, that tests/unit/facts/test_paste_kinds.py and tests/unit/api/test_paste_backticks.py read.
Before (round 33), each test file kept its own dict of them."""

from __future__ import annotations

import functools
from pathlib import Path

import yaml

TABLE = Path(__file__).with_name("known_limits.yml")


@functools.cache
def _entries() -> tuple[dict[str, str], ...]:
    entries = yaml.safe_load(TABLE.read_text(encoding="utf-8"))
    return tuple(entries)


def known_limits(table: str, by: str = "capture") -> dict[tuple[str, str], str]:
    """(transform, capture or kind) -> why, of the entries of `table` (a test file's name without
    `test_`) named by `by` (`capture`, `kind`)."""
    return {
        (e["transform"], e[by]): " ".join(e["why"].split())
        for e in _entries()
        if e["table"] == table and by in e
    }


def tables() -> set[str]:
    """The test files the entries name."""
    return {e["table"] for e in _entries()}
