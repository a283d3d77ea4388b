"""Where the shipped playbooks and templates live when the current directory has none.

A project directory (the repository, or a team's own copy) wins; outside one, the console
script `gpuonboard` falls back to the copies installed with the package
(`<prefix>/share/gpuonboard/`, or the user base's after `pip install --user`) or, in a
source checkout, the repository's own. The same goes for what `sim.up` needs: the demo's
vendor files and the captured outputs its test hosts replay.
"""

from __future__ import annotations

import hashlib
import json
import site
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from gpuonboard.once import loaded_once

#: the package's reference tables (data/*.yml), each row with its source
DATA_DIR = Path(__file__).resolve().parent / "data"
#: each table's document as JSON (data/compiled/NAME.json: {"sha256": of the YAML's bytes, "doc"}),
#: written by scripts/data_tables.py: read in a fiftieth of the YAML's time (gpu_pci_ids.yml
#: 12 ms -> 0.3), and only while its YAML is the one it was made from (the YAML stays the source)
COMPILED_DIR = DATA_DIR / "compiled"


def data_file(path: Path) -> Any:
    """A packaged data file's YAML, parsed once per process while the file is unchanged (several
    rules read their own key of one table: gpu_name_markers.yml was parsed six times a run).
    The document is shared: callers read it, never change it. ValueError: not valid YAML."""
    st = path.stat()
    return _parsed(str(path), st.st_mtime_ns, st.st_size)


@loaded_once(maxsize=64)
def _parsed(path: str, _mtime_ns: int, _size: int) -> Any:
    data = Path(path).read_bytes()
    compiled = compiled_doc(Path(path), data)
    if compiled is not None:
        return compiled[0]
    return parse_table(path, data)


def parse_table(path: str, data: bytes) -> Any:
    """A table's YAML bytes, parsed; ValueError: not valid YAML."""
    try:
        # the C loader where PyYAML has it (the NGC release table's notes: ~80 ms in the pure one)
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        return yaml.load(data.decode("utf-8"), Loader=loader)
    except yaml.YAMLError as exc:
        raise ValueError(f"{path}: not valid YAML: {exc}") from exc


def compiled_doc(
    path: Path, data: bytes, compiled_dir: Path = COMPILED_DIR, name: str | None = None
) -> tuple[Any] | None:
    """A packaged table's compiled document (in a 1-tuple: the document may be None), when
    `compiled_dir` holds one made from exactly these YAML bytes; None otherwise (another
    directory's table, no compiled copy, a YAML changed since: the YAML is parsed). `name`: a
    table derived from the YAML's (compiled/NAME.json), not the YAML's own document."""
    if path.parent.resolve() != compiled_dir.parent.resolve():
        return None
    try:
        entry = json.loads((compiled_dir / f"{name or path.stem}.json").read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(entry, dict) or entry.get("sha256") != hashlib.sha256(data).hexdigest():
        return None
    return (entry.get("doc"),)


def derived_doc(name: str, source: Path) -> tuple[Any] | None:
    """A table scripts/data_tables.py derived from a packaged table (data/compiled/NAME.json, made
    from `source`'s bytes: what a rule would otherwise compute from it at each process's start),
    in a 1-tuple, while `source` is unchanged; None otherwise (the caller computes it)."""
    try:
        data = source.read_bytes()
    except OSError:
        return None
    return compiled_doc(source, data, COMPILED_DIR, name)


def table_rows(path: Path, key: str) -> list[dict[str, Any]]:
    """The rows (mappings) under `key` of a packaged reference table; ValueError otherwise."""
    data = data_file(path)
    rows = data.get(key) if isinstance(data, dict) else None
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise ValueError(f"{path}: '{key}' must be a list of mappings")
    return rows


def installed_root() -> Path:
    """Where a (non-editable) install puts the package's data files: `<prefix>/share/gpuonboard`."""
    return Path(sys.prefix) / "share" / "gpuonboard"


def user_root() -> Path:
    """Where `pip install --user` (outside a venv) puts them: `<user base>/share/gpuonboard`
    (`~/.local/share/gpuonboard` on Linux)."""
    return Path(site.getuserbase()) / "share" / "gpuonboard"


def installed_roots() -> list[Path]:
    """`<prefix>/share/gpuonboard`, then the `--user` install's when that is another place."""
    roots = [installed_root()]
    if user_root() != roots[0]:
        roots.append(user_root())
    return roots


def checkout_root() -> Path:
    """The source checkout this module runs from (meaningless for an installed package)."""
    return Path(__file__).resolve().parents[2]


@lru_cache(maxsize=1)
def shipped_root() -> Path | None:
    """The installed (or source-checkout) directory holding playbooks/ and templates/."""
    for candidate in (*installed_roots(), checkout_root()):
        if (candidate / "playbooks").is_dir():
            return candidate
    return None


def shipped_dir(installed: str, checkout: str) -> Path | None:
    """A shipped data directory: `<prefix>/share/gpuonboard/<installed>` of an installed
    package (or of a `pip install --user`'s user base), else the source checkout's
    `<checkout>`; None when none is there."""
    for candidate in (*(root / installed for root in installed_roots()), checkout_root() / checkout):
        if candidate.is_dir():
            return candidate
    return None


def search_dirs(project: Path, kind: str) -> list[Path]:
    """`project/<kind>` first, then the shipped copy (kind: playbooks or templates)."""
    dirs = [project / kind]
    root = shipped_root()
    if root is not None and (root / kind).resolve() != (project / kind).resolve():
        dirs.append(root / kind)
    return dirs
