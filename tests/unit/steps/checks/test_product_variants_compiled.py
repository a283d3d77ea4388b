"""The pairs steps/checks/product_variants.py learns from the driver's names (an O(n^2) pass over
every name of data/gpu_pci_ids.yml, ~25 ms at the first `match_model` of each process) are read
from data/compiled/product_variants.json, which scripts/data_tables.py writes: it must be what the
rule computes from the table as it is now (rerun the script after changing the table or the words
model_names reads), and it is read only while the table is the one it was learned from."""

from __future__ import annotations

import hashlib
import importlib.util
import json
from pathlib import Path

import pytest

from gpuonboard import resources
from gpuonboard.facts.gpu_ids import IDS_FILE
from gpuonboard.steps.checks import product_variants

COMPILED = resources.COMPILED_DIR / f"{product_variants.DERIVED}.json"


def test_the_compiled_pairs_are_the_computed_ones() -> None:
    assert COMPILED.is_file(), f"{COMPILED} is missing: run scripts/data_tables.py"
    entry = json.loads(COMPILED.read_text(encoding="utf-8"))
    assert entry["sha256"] == hashlib.sha256(IDS_FILE.read_bytes()).hexdigest(), "run scripts/data_tables.py"
    assert entry["doc"] == product_variants.learned_doc(), "run scripts/data_tables.py"
    assert resources.derived_doc(product_variants.DERIVED, IDS_FILE) == (entry["doc"],)


def test_the_script_writes_the_compiled_pairs() -> None:
    path = resources.DATA_DIR.parents[2] / "scripts" / "data_tables.py"
    spec = importlib.util.spec_from_file_location("data_tables", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.derived(product_variants.DERIVED) == COMPILED.read_text(encoding="utf-8")


def test_a_table_changed_since_is_learned_again(tmp_path: Path) -> None:
    """The compiled pairs name the sha256 of the table they were learned from: another table's
    bytes (a table changed since) do not read them."""
    other = tmp_path / "gpu_pci_ids.yml"
    other.write_bytes(IDS_FILE.read_bytes() + b"\n")
    assert resources.compiled_doc(other, other.read_bytes(), resources.COMPILED_DIR, "x") is None
    changed = IDS_FILE.read_bytes() + b"\n"
    assert resources.compiled_doc(IDS_FILE, changed, resources.COMPILED_DIR, product_variants.DERIVED) is None


def test_the_first_lookup_reads_the_compiled_pairs(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pairs are read from the compiled copy, never learned again at a process's first
    lookup (~25 ms of CPU a run: bench/fanout.py's figure)."""

    def learned() -> dict[str, object]:
        raise AssertionError("learned at run time")

    monkeypatch.setattr(product_variants, "learned_doc", learned)
    product_variants._vocabulary.cache_clear()
    try:
        assert "NVL16" in product_variants.data_variant_words(frozenset({"H20", "NVL16"}))
    finally:
        product_variants._vocabulary.cache_clear()
