"""steps.prove.bundle: a shipped script is ONE file built from its source and the parts it imports
(remote/_*.py): it imports nothing of gpuonboard, keeps its source's line numbers, and a traceback
in a part's code names the part's file and line; imports it cannot ship are refused."""

from __future__ import annotations

import ast
import importlib.util
import subprocess
import sys
import traceback
from pathlib import Path
from types import ModuleType

import pytest

from gpuonboard.steps.prove import parse_result, script_bytes
from gpuonboard.steps.prove.bundle import PACKAGE, inline_parts

REMOTE = Path(__file__).resolve().parents[4] / "src" / "gpuonboard" / "remote"
SCRIPTS = sorted(p.name for p in REMOTE.glob("[!_]*.py"))
needs_torch = pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch not installed")


def _gpuonboard_imports(text: str) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.ImportFrom):
            found.append(node.module or "")
        elif isinstance(node, ast.Import):
            found += [a.name for a in node.names]
    return [m for m in found if m.split(".")[0] == "gpuonboard"]


@pytest.mark.parametrize("name", SCRIPTS)
def test_a_shipped_script_is_one_file_with_its_sources_line_numbers(name: str) -> None:
    source = (REMOTE / name).read_text().splitlines()
    shipped = script_bytes(name).decode().splitlines()
    assert _gpuonboard_imports("\n".join(shipped)) == []
    assert len(shipped) == len(source)
    imports = set()
    for node in ast.parse("\n".join(source)).body:
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(PACKAGE):
            imports.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    # every line but a part's import is where it was: a traceback's line is the source's
    assert [x for i, x in enumerate(shipped, 1) if i not in imports] == [
        x for i, x in enumerate(source, 1) if i not in imports
    ]


def test_the_split_scripts_ship_their_parts() -> None:
    assert _gpuonboard_imports((REMOTE / "gpu_perf.py").read_text())  # (the source imports them)
    shipped = script_bytes("gpu_perf.py").decode()
    assert "gpuonboard/remote/_perf_sampler.py" in shipped and "gpuonboard/remote/_common.py" in shipped


def _shipped_module(name: str) -> ModuleType:
    module = ModuleType(name.removesuffix(".py"))
    module.__file__ = f"/tmp/gpuonboard-x/{name}"
    exec(compile(script_bytes(name), module.__file__, "exec"), module.__dict__)
    return module


def test_a_traceback_in_a_part_names_the_parts_file_and_line() -> None:
    gp = _shipped_module("gpu_perf.py")
    with pytest.raises(AttributeError) as info:
        gp.parse_samples(None)  # not text: fails in the part's first use of it
    last = traceback.extract_tb(info.value.__traceback__)[-1]
    assert last.filename == "gpuonboard/remote/_perf_sampler.py"
    part = (REMOTE / "_perf_sampler.py").read_text().splitlines()
    assert "text.splitlines()" in part[(last.lineno or 0) - 1]


def test_shipped_names_are_the_parts_own() -> None:
    """As in the package: a part's functions see their own module's names, the script binds only
    what it imports."""
    gp = _shipped_module("gpu_perf.py")
    assert gp.summarize_window.__module__ == "gpuonboard.remote._perf_sampler"
    assert gp.summarize_window([], 0, None, None)["reasons"] == dict.fromkeys(gp.REASONS, 0)
    assert not hasattr(gp, "reason_names") and not hasattr(gp, "_gpuonboard_part")
    assert gp.private_dir(gp.__file__) == "/tmp/gpuonboard-x"


@needs_torch
def test_the_shipped_script_runs_where_gpuonboard_cannot_be_imported(tmp_path: Path) -> None:
    shadow = tmp_path / "shadow" / "gpuonboard"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('gpuonboard is not on the box')\n")
    work = tmp_path / "gpuonboard-perf-test"
    work.mkdir()
    (work / "gpu_perf.py").write_bytes(script_bytes("gpu_perf.py"))
    args = ["--size-scale", "0.02", "--seconds", "0.1", "--sustain", "0", "--cpu-workers", "1"]
    r = subprocess.run(
        [sys.executable, str(work / "gpu_perf.py"), *args],
        capture_output=True,
        text=True,
        timeout=240,
        env={"PYTHONPATH": str(shadow.parent), "PATH": "/usr/bin:/bin"},
        check=False,
    )
    result = parse_result(r.stdout)
    assert r.returncode == 0 and result is not None, r.stdout + r.stderr
    assert result["ok"] and result["worker_errors"] == [] and result["gpus"][0]["matmul_tflops"]


PART = '"""A part."""\n\nX = 1\n\n\ndef f() -> int:\n    return X\n'


@pytest.mark.parametrize(
    ("script", "why"),
    [
        ("from gpuonboard.remote._part import *\n", "import named parts"),
        ("from gpuonboard.remote.other import f\n", "import named parts"),
        ("import os; from gpuonboard.remote._part import f\n", "its own lines"),
        ("from gpuonboard.remote._part import f; import os\n", "its own lines"),
        ("def g():\n    from gpuonboard.remote._part import f\n", "top-level part import"),
        ("import gpuonboard.remote._part\n", "top-level part import"),
        ("from gpuonboard.remote._loop import f\n", "imports itself"),
        ("from gpuonboard.remote._file import f\n", "no __file__"),
    ],
)
def test_an_import_that_cannot_ship_is_refused(script: str, why: str) -> None:
    files = {
        "s.py": script,
        "_part.py": PART,
        "_loop.py": "from gpuonboard.remote._loop import f\n",
        "_file.py": "def f() -> str:\n    return __file__\n",
    }
    with pytest.raises(ValueError, match=why):
        inline_parts("s.py", files.__getitem__)


def test_a_multi_line_import_keeps_the_lines_after_it_and_its_aliases() -> None:
    script = "from gpuonboard.remote._part import (  # x\n    X as Y,\n    f,\n)\nZ = Y + f()\n"
    shipped = inline_parts("s.py", {"s.py": script, "_part.py": PART}.__getitem__)
    assert shipped.splitlines()[1:] == ["", "", "", "Z = Y + f()"]
    scope: dict[str, object] = {}
    exec(compile(shipped, "s.py", "exec"), scope)
    assert (scope["Y"], scope["Z"], "X" in scope) == (1, 2, False)


@pytest.mark.parametrize("name", sorted(p.name for p in REMOTE.glob("*.py") if p.name != "__init__.py"))
def test_scripts_and_parts_keep_to_older_host_pythons_grammar(name: str) -> None:
    """Python 3.8's grammar, as the scripts were written before parts; smoke_train (host Pythons
    before 3.10) and the part every script ships, `_common`, call no `zip(strict=)` either."""
    text = (REMOTE / name).read_text()
    tree = ast.parse(text, feature_version=(3, 8))
    if name in ("smoke_train.py", "_common.py"):
        calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)]
        assert not [c for c in calls if any(k.arg == "strict" for k in c.keywords)]
