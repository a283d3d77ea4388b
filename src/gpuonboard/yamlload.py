"""YAML loading that keeps line numbers and refuses duplicate keys (for one-sentence errors)."""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from .errors import GpuonboardError


class LineDict(dict[str, Any]):
    """A mapping from YAML that remembers the line (1-based) of each key and of itself."""

    line: int | None = None
    key_lines: dict[str, int]

    def line_of(self, key: str) -> int | None:
        """Line of `key` in the source file, else the mapping's own line."""
        return getattr(self, "key_lines", {}).get(key, self.line)


class _Loader(yaml.SafeLoader):
    pass


class DuplicateKey(yaml.MarkedYAMLError):
    """A key that appears twice in one mapping (PyYAML would silently keep the last)."""


def _construct_mapping(loader: _Loader, node: yaml.MappingNode) -> LineDict:
    # Duplicates are checked among the mapping's own keys only: a key that overrides one
    # pulled in by a `<<: *anchor` merge is the point of the merge, not a mistake.
    first_line: dict[str, int] = {}
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue
        key = _key(loader, key_node)
        if key in first_line:
            raise DuplicateKey(
                None, None, f"duplicate key {key!r} (first on line {first_line[key]})", key_node.start_mark
            )
        first_line[key] = key_node.start_mark.line + 1
    loader.flatten_mapping(node)
    result = LineDict()
    result.line = node.start_mark.line + 1
    result.key_lines = {}
    for key_node, value_node in node.value:
        key = _key(loader, key_node)
        result[key] = loader.construct_object(value_node, deep=True)
        result.key_lines[key] = key_node.start_mark.line + 1
    return result


def _key(loader: _Loader, key_node: yaml.Node) -> str:
    key = loader.construct_object(key_node, deep=True)
    return key if isinstance(key, str) else str(key)


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def load_yaml(path: Path, error: type[GpuonboardError], what: str) -> Any:
    """Parse a YAML file into LineDicts/lists; any problem -> `error` naming file and line."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise error(f"{path}: {what} file not found; check the path.") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise error(f"{path}: cannot read the {what} file ({exc}).") from None
    return parse_yaml(text, path, error)


def parse_yaml(text: str, path: Path, error: type[GpuonboardError]) -> Any:
    """Parse YAML text; errors name the file and line."""
    try:
        return yaml.load(text, Loader=_Loader)  # noqa: S506 - SafeLoader subclass
    except DuplicateKey as exc:
        line = exc.problem_mark.line + 1 if exc.problem_mark else "?"
        raise error(f"{path}, line {line}: {exc.problem}; remove or rename one of them.") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        where = f", line {mark.line + 1}" if mark is not None else ""
        raise error(
            f"{path}{where}: invalid YAML: {' '.join(str(problem).split())}{_context(exc)};"
            " check the indentation, quotes and brackets around that line."
        ) from None


def _context(exc: yaml.YAMLError) -> str:
    """` (in the flow mapping that starts on line 4)` from PyYAML's context, when it has one."""
    context = getattr(exc, "context", None)
    mark = getattr(exc, "context_mark", None)
    match = re.match(r"while (?:parsing|scanning) an? (.+)$", context or "")
    if not match or mark is None:
        return ""
    return f" (in the {match.group(1)} that starts on line {mark.line + 1})"


def where(path: Path, mapping: object, key: str | None = None) -> str:
    """`file, line N` prefix for an error about `key` of `mapping` (line when known)."""
    line = None
    if isinstance(mapping, LineDict):
        line = mapping.line_of(key) if key is not None else mapping.line
    return f"{path}, line {line}" if line else str(path)


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """`; did you mean 'x'?` for the closest choice, or an empty string."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""
