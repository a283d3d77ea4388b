"""The layering rules of docs/architecture.md are import-linter contracts (pyproject.toml,
`lint-imports` in `make lint`). These tests show the tree keeps them and that each kind of
contract bites: a copy of the package with one forbidden import added fails `lint-imports`."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _lint(project: Path, src: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(src)}
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"], cwd=project, env=env, capture_output=True, text=True, timeout=60
    )


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    """A copy of src/gpuonboard and pyproject.toml (the contracts) to add one import to."""
    shutil.copytree(
        ROOT / "src" / "gpuonboard",
        tmp_path / "src" / "gpuonboard",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def test_the_tree_keeps_every_contract() -> None:
    r = _lint(ROOT, ROOT / "src")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "0 broken" in r.stdout


@pytest.mark.parametrize(
    ("module", "line", "contract"),
    [
        ("facts/cpu.py", "from ..connection import Runner", "facts/ is pure"),
        ("report/junit.py", "from ..inventory import Host", "report/ renders"),
        # indirectly: report/ imports results, which names Host only under TYPE_CHECKING
        ("results.py", "from .inventory import Host", "report/ renders"),
        ("report/jsonfile.py", "from .. import runner", "report/ renders"),
        ("inventory/__init__.py", "from gpuonboard import connection", "the inventory model and loaders"),
        ("api/sync.py", "import invoke", "only cli (the Invoke tasks) imports Invoke"),
        # cli goes through api: a feature module imported directly, even one api also imports
        ("cli.py", "from gpuonboard.runner import playbook", "cli (the Invoke tasks) calls only api"),
        ("cli.py", "from gpuonboard.testing import sim", "cli (the Invoke tasks) calls only api"),
        ("inventory/rules.py", "from gpuonboard.inventory import ansible", "no import cycles"),
    ],
)
def test_one_forbidden_import_breaks_its_contract(copy: Path, module: str, line: str, contract: str) -> None:
    path = copy / "src" / "gpuonboard" / module
    path.write_text(path.read_text() + f"\n{line}  # added by the test\n")
    r = _lint(copy, copy / "src")
    assert r.returncode != 0, r.stdout
    # (an import that also closes a cycle breaks "no import cycles" as well)
    broken = r.stdout[r.stdout.index("Broken contracts") :]
    assert contract in broken, r.stdout
