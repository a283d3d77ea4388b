"""Write src/gpuonboard/data/compiled/NAME.json for each reference table data/NAME.yml: the
YAML's document as JSON, with the sha256 of the YAML's bytes it was made from.

`resources.data_file` reads the JSON (about 40 times faster to load than the YAML: gpu_pci_ids.yml
12 ms, its JSON 0.3) only while the YAML's bytes still have that sha256; the YAML stays the
source. Run after changing a table (tests/unit/test_resources.py fails until then):

    python scripts/data_tables.py

It also writes the tables a rule derives from a table at each process's start (DERIVED: NAME.json
with the sha256 of the YAML it is derived from, read only while that YAML is unchanged;
tests/unit/steps/checks/test_product_variants_compiled.py checks it is what the rule computes).
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from gpuonboard.facts.gpu_ids import IDS_FILE  # noqa: E402
from gpuonboard.resources import COMPILED_DIR, DATA_DIR, parse_table  # noqa: E402
from gpuonboard.steps.checks import product_variants  # noqa: E402

# derived table name -> (the YAML it is derived from, its document)
DERIVED: dict[str, tuple[Path, Callable[[], Any]]] = {
    product_variants.DERIVED: (IDS_FILE, product_variants.learned_doc),
}


def same(a: Any, b: Any) -> bool:
    """Equal and of the same types throughout (1 == True == 1.0 for ==, not here), keys in order."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def compiled(path: Path) -> str:
    """The compiled file's text for the table at `path`; ValueError: its document has what JSON
    does not keep (a date, a non-string key)."""
    data = path.read_bytes()
    doc = parse_table(str(path), data)
    text = json.dumps({"sha256": hashlib.sha256(data).hexdigest(), "doc": doc}, ensure_ascii=False)
    if not same(json.loads(text)["doc"], doc):
        raise ValueError(f"{path}: its document does not survive JSON unchanged")
    return text + "\n"


def derived(name: str) -> str:
    """The compiled file's text for the derived table `name` (DERIVED)."""
    source, make = DERIVED[name]
    text = json.dumps({"sha256": hashlib.sha256(source.read_bytes()).hexdigest(), "doc": make()})
    return text + "\n"


def main() -> int:
    COMPILED_DIR.mkdir(exist_ok=True)
    tables = sorted(DATA_DIR.glob("*.yml"))
    for path in tables:
        (COMPILED_DIR / f"{path.stem}.json").write_text(compiled(path), encoding="utf-8")
    for name in DERIVED:
        (COMPILED_DIR / f"{name}.json").write_text(derived(name), encoding="utf-8")
    made = {p.stem for p in tables} | set(DERIVED)
    for stale in set(COMPILED_DIR.glob("*.json")) - {COMPILED_DIR / f"{n}.json" for n in made}:
        stale.unlink()
    return 0


if __name__ == "__main__":
    sys.exit(main())
