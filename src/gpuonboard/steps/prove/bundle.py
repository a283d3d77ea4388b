"""One shipped script out of several source files: a bundled script (gpuonboard/remote/*.py) may
import names from a part (gpuonboard/remote/_*.py, stdlib only) with a top-level
`from gpuonboard.remote._part import a, b` statement, which works in the package (the tests, the
local side's imports). Shipped, that statement becomes one line that runs the part's code, as a
module of its own, and binds the same names, followed by blank lines for the rest of the
statement's lines: the host gets ONE stdin script that imports nothing of gpuonboard, the
script's line numbers are its source file's, and a traceback in a part's code names the part's
file (`gpuonboard/remote/_part.py`) and its own line numbers."""

from __future__ import annotations

import ast
from collections.abc import Callable
from importlib import resources

PACKAGE = "gpuonboard.remote"


def script_text(name: str) -> str:
    """The source of remote/`name` as shipped: each part's import replaced by the part's code."""
    return inline_parts(
        name, lambda file: resources.files(PACKAGE).joinpath(file).read_text(encoding="utf-8")
    )


def inline_parts(name: str, read: Callable[[str], str], _parents: tuple[str, ...] = ()) -> str:
    """`read(name)` with each top-level `from gpuonboard.remote._part import ...` replaced by
    `_part.py`'s code (itself inlined the same way) in one line and blank lines for the rest of
    the statement. ValueError for an import this cannot ship: of a script, `*`, sharing its
    lines, below the top level, a cycle, or a part that reads `__file__`."""
    if name in _parents:
        raise ValueError(f"remote/{name} imports itself through {' -> '.join(_parents)}")
    text = read(name)
    lines = text.splitlines(keepends=True)
    for node in reversed(ast.parse(text, f"remote/{name}").body):
        if not (isinstance(node, ast.ImportFrom) and (node.module or "").startswith(f"{PACKAGE}.")):
            continue
        module = node.module or ""
        part = f"{module.rsplit('.', 1)[1]}.py"
        if not part.startswith("_") or any(a.name == "*" for a in node.names):
            raise ValueError(f"remote/{name} line {node.lineno}: import named parts (_*.py) only")
        first, last = node.lineno - 1, (node.end_lineno or node.lineno) - 1
        if node.col_offset or lines[last][node.end_col_offset or 0 :].split("#")[0].strip():
            raise ValueError(f"remote/{name} line {node.lineno}: a part's import must have its own lines")
        code = inline_parts(part, read, (*_parents, name))
        pairs = [(a.asname or a.name, a.name) for a in node.names]
        lines[first : last + 1] = [_inline(module, part, code, pairs), *["\n"] * (last - first)]
    out = "".join(lines)
    _check_standalone(name, out)
    return out


def _inline(module: str, part: str, code: str, pairs: list[tuple[str, str]]) -> str:
    """One line: run `code` as module `module` and bind `pairs` (name here, name there)."""
    targets = ", ".join(local for local, _ in pairs)
    values = ", ".join(f"_gpuonboard_part.{there}" for _, there in pairs)
    return (
        f'_gpuonboard_part = __import__("types").ModuleType({module!r}); '
        f"exec(compile({code!r}, {f'gpuonboard/remote/{part}'!r}, 'exec', dont_inherit=True),"
        f" _gpuonboard_part.__dict__); {targets}, = {values},; del _gpuonboard_part\n"
    )


def _check_standalone(name: str, text: str) -> None:
    """The shipped text imports nothing of gpuonboard, and a part does not read `__file__`
    (shipped, it has none: the script passes its own)."""
    for node in ast.walk(ast.parse(text, f"remote/{name}")):
        modules: list[str] = []
        if isinstance(node, ast.ImportFrom):
            modules = [node.module or ""]
        elif isinstance(node, ast.Import):
            modules = [a.name for a in node.names]
        if any(m == "gpuonboard" or m.startswith("gpuonboard.") for m in modules):
            where = getattr(node, "lineno", "?")
            raise ValueError(f"remote/{name} line {where}: only a top-level part import is inlined")
        if name.startswith("_") and isinstance(node, ast.Name) and node.id == "__file__":
            raise ValueError(f"remote/{name} line {node.lineno}: a part has no __file__ when shipped")
