"""YAML loading that keeps line numbers and refuses duplicate keys (for one-sentence errors)."""

from __future__ import annotations

import difflib
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
    loader.flatten_mapping(node)
    result = LineDict()
    result.line = node.start_mark.line + 1
    result.key_lines = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if not isinstance(key, str):
            key = str(key)
        if key in result:
            raise DuplicateKey(None, None, f"duplicate key {key!r}", key_node.start_mark)
        result[key] = loader.construct_object(value_node, deep=True)
        result.key_lines[key] = key_node.start_mark.line + 1
    return result


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
        raise error(
            f"{path}, line {line}: {exc.problem}; each name may appear only once in a mapping."
        ) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        where = f", line {mark.line + 1}" if mark is not None else ""
        raise error(f"{path}{where}: invalid YAML: {problem}.") from None


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
