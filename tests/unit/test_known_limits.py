"""tests/unit/known_limits.yml, the paste-shape tests' one table of known limits: each entry
names the test file that reads it, a transform of that file, a real capture (or a kind) and why;
each test file asserts its entries are still limits (test_every_*_left_is_still_a_limit)."""

from __future__ import annotations

from pathlib import Path

from .known_limits import known_limits, tables

REAL = Path(__file__).parents[1] / "fixtures" / "real"
HERE = Path(__file__).parent


def test_every_entry_names_a_test_that_reads_it_a_real_capture_and_why() -> None:
    assert tables() == {"paste_kinds", "paste_backticks"}
    for table in tables():
        readers = list(HERE.rglob(f"test_{table}.py"))
        assert readers and f'known_limits("{table}"' in readers[0].read_text(), table
        captures, kinds = known_limits(table, "capture"), known_limits(table, "kind")
        assert captures or kinds, table
        for (transform, name), why in captures.items():
            assert (REAL / name).is_file() and transform and len(why) > 40, (table, name)
        for (transform, kind), why in kinds.items():
            assert transform and kind and len(why) > 40, (table, kind)
