"""`pip install --user` outside a venv puts the data files under the user base
(`~/.local/share/gpuonboard`), not `<sys.prefix>/share/gpuonboard`: they are found there too,
after the prefix's and before the source checkout's."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import site
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from gpuonboard import resources


@pytest.fixture
def places(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Path]]:
    """An empty prefix, a user base and a checkout, each with nothing shipped yet."""
    p = {name: tmp_path / name for name in ("prefix", "userbase", "checkout")}
    for d in p.values():
        d.mkdir()
    monkeypatch.setattr(sys, "prefix", str(p["prefix"]))
    monkeypatch.setattr(site, "USER_BASE", str(p["userbase"]))
    monkeypatch.setattr(resources, "checkout_root", lambda: p["checkout"])
    resources.shipped_root.cache_clear()
    yield p
    resources.shipped_root.cache_clear()


def test_a_user_install_is_found_after_the_prefix_and_before_the_checkout(places: dict[str, Path]) -> None:
    user = places["userbase"] / "share" / "gpuonboard"
    for root in (user, places["checkout"]):
        (root / "playbooks").mkdir(parents=True)
        (root / "fixtures").mkdir(parents=True)
    assert resources.shipped_root() == user
    assert resources.shipped_dir("fixtures", "fixtures") == user / "fixtures"
    # the prefix's copy (a venv's, a system install's) comes first
    prefix = places["prefix"] / "share" / "gpuonboard"
    (prefix / "playbooks").mkdir(parents=True)
    (prefix / "fixtures").mkdir(parents=True)
    resources.shipped_root.cache_clear()
    assert resources.shipped_root() == prefix
    assert resources.shipped_dir("fixtures", "fixtures") == prefix / "fixtures"


def test_the_user_base_is_looked_at_once_when_it_is_the_prefix(
    places: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert resources.installed_roots() == [
        places["prefix"] / "share" / "gpuonboard",
        places["userbase"] / "share" / "gpuonboard",
    ]
    monkeypatch.setattr(site, "USER_BASE", str(places["prefix"]))
    assert resources.installed_roots() == [places["prefix"] / "share" / "gpuonboard"]


def _data_tables() -> ModuleType:
    """scripts/data_tables.py, which writes data/compiled/ (not a package module)."""
    path = Path(__file__).resolve().parents[2] / "scripts" / "data_tables.py"
    spec = importlib.util.spec_from_file_location("data_tables", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("table", sorted(resources.DATA_DIR.glob("*.yml")), ids=lambda p: p.name)
def test_each_table_has_its_compiled_copy_made_from_its_yaml(table: Path) -> None:
    """data/compiled/NAME.json is what scripts/data_tables.py writes from the YAML as it is now
    (its sha256, the same document, types included): rerun the script after changing a table."""
    data_tables = _data_tables()
    compiled = resources.COMPILED_DIR / f"{table.stem}.json"
    assert compiled.is_file(), f"{compiled} is missing: run scripts/data_tables.py"
    assert compiled.read_text(encoding="utf-8") == data_tables.compiled(table), "run scripts/data_tables.py"
    doc = resources.parse_table(str(table), table.read_bytes())
    assert data_tables.same(resources.data_file(table), doc)


def test_a_compiled_copy_is_read_only_while_its_yaml_is_the_one_it_was_made_from(tmp_path: Path) -> None:
    """A table whose YAML changed after its compiled copy was made is parsed from the YAML (the
    compiled copy says another sha256); one in another directory than the compiled copies' too."""
    data = tmp_path / "data"
    (data / "compiled").mkdir(parents=True)
    table = data / "t.yml"
    table.write_text("rows: [{a: 1}]\n")
    made = hashlib.sha256(table.read_bytes()).hexdigest()
    (data / "compiled" / "t.json").write_text(json.dumps({"sha256": made, "doc": {"rows": [{"a": 2}]}}))
    assert resources.compiled_doc(table, table.read_bytes(), data / "compiled") == ({"rows": [{"a": 2}]},)
    table.write_text("rows: [{a: 3}]\n")  # changed since: the YAML is read
    assert resources.compiled_doc(table, table.read_bytes(), data / "compiled") is None
    assert resources.data_file(table) == {"rows": [{"a": 3}]}
    elsewhere = tmp_path / "t.yml"  # not beside the compiled copies
    elsewhere.write_bytes(b"rows: [{a: 1}]\n")
    assert resources.compiled_doc(elsewhere, elsewhere.read_bytes(), data / "compiled") is None
