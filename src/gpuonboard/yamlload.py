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


class _LaxLoader(yaml.SafeLoader):
    """Line numbers, duplicate keys refused, keys as written; numbers as YAML 1.1 reads them."""


class _Loader(_LaxLoader):
    """... and a number YAML 1.1 reads in another base than it looks is refused."""


class DuplicateKey(yaml.MarkedYAMLError):
    """A key that appears twice in one mapping (PyYAML would silently keep the last)."""


def _construct_mapping(loader: _LaxLoader, node: yaml.MappingNode) -> LineDict:
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


_AS_WRITTEN = {f"tag:yaml.org,2002:{t}" for t in ("int", "float", "bool", "null")}


def _key(loader: _LaxLoader, key_node: yaml.Node) -> str:
    # a plain scalar key is the name as written: a host `01`, `on` or `null` was renamed `1`,
    # `True` or `None` (YAML 1.1 reads them as a number, a boolean, nothing)
    if isinstance(key_node, yaml.ScalarNode) and key_node.tag in _AS_WRITTEN:
        return str(key_node.value)
    key = loader.construct_object(key_node, deep=True)
    return key if isinstance(key, str) else str(key)


class AmbiguousNumber(yaml.MarkedYAMLError):
    """A number YAML 1.1 reads in another base than it looks: `port: 022` is 18 (octal), `1:30`
    is 90 (base 60); YAML 1.2 and most readers take 022 as 22."""


def _construct_int(loader: _Loader, node: yaml.ScalarNode) -> int:
    digits = str(node.value).lstrip("+-").replace("_", "")
    octal = len(digits) > 1 and digits.startswith("0") and digits[1:2].isdigit()
    if octal or ":" in digits:
        # (the value itself is not quoted: it may be a password, say in a vars: block)
        how, keep, fix = (
            (
                "with a leading zero is read by YAML as octal (022 is 18)",
                '("0644")',
                "without the leading zeros",
            )
            if octal
            else ("with ':' is read by YAML in base 60 (1:30 is 90)", '("1:30")', "as the number itself")
        )
        raise AmbiguousNumber(
            None,
            None,
            f"a number written {how}, not as written; quote it {keep} where it is meant as"
            f" written (a file mode, a time), else write it {fix}",
            node.start_mark,
        )
    return int(yaml.SafeLoader.construct_yaml_int(loader, node))


_LaxLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
_Loader.add_constructor("tag:yaml.org,2002:int", _construct_int)


def load_yaml(path: Path, error: type[GpuonboardError], what: str, strict_numbers: bool = True) -> Any:
    """Parse a YAML file into LineDicts/lists; any problem -> `error` naming file and line."""
    return parse_yaml(read_text(path, error, what), path, error, strict_numbers)


def read_text(path: Path, error: type[GpuonboardError], what: str) -> str:
    """A file's text as UTF-8, without the byte-order mark an editor on Windows may write;
    bytes that are not UTF-8 -> `error` naming the file, the line and what to do."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise error(f"{path}: {what} file not found; check the path.") from None
    except OSError as exc:
        raise error(f"{path}: cannot read the {what} file ({exc.strerror or exc}).") from None
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise error(
            f"{path}: the {what} file is UTF-16 text (as Windows PowerShell's `>` writes it);"
            " save it as UTF-8."
        )
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise error(
            f"{path}, line {line}: byte 0x{data[exc.start]:02x} is not UTF-8 text (a file saved in"
            f" another encoding, such as Latin-1 or GBK?); save the {what} file as UTF-8."
        ) from None


# How many values a document may hold once its aliases are expanded. A few anchors that each
# repeat the one before ("billion laughs": 9 lines, 10^9 strings) load as shared references in
# no time, but every walk over the values (rendering a playbook's arguments per host, writing
# a report) expands them: minutes of CPU and gigabytes of memory from a 1 kB file.
MAX_EXPANDED_VALUES = 1_000_000


class AliasBomb(yaml.MarkedYAMLError):
    """Aliases that expand to more than MAX_EXPANDED_VALUES values."""


def _check_expansion(root: yaml.Node) -> None:
    """Count the values `root` holds with every alias expanded (a node counted once per place
    it appears), memoised per node: one pass over the file's nodes, whatever they expand to."""
    sizes: dict[int, int] = {}
    pending: set[int] = set()
    # an iterative post-order walk: a deeply nested file must not hit Python's recursion limit
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        if id(node) in sizes:
            continue
        children = _children(node)
        if not children_done:
            if id(node) in pending:  # an alias inside its own anchor: the constructor refuses it
                continue
            pending.add(id(node))
            stack.append((node, True))
            stack.extend((c, False) for c in children if id(c) not in sizes)
            continue
        pending.discard(id(node))
        sizes[id(node)] = total = 1 + sum(sizes.get(id(c), 0) for c in children)
        if total > MAX_EXPANDED_VALUES:
            raise AliasBomb(
                None,
                None,
                f"its aliases expand to more than {MAX_EXPANDED_VALUES:,} values (anchors that"
                ' repeat each other, a "billion laughs"); write the values out instead',
                node.start_mark,
            )


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return []


def _load(text: str, strict_numbers: bool = True) -> Any:
    loader = _Loader(text) if strict_numbers else _LaxLoader(text)
    try:
        root = loader.get_single_node()
        if root is None:
            return None
        _check_expansion(root)
        return loader.construct_document(root)
    finally:
        loader.dispose()


def parse_yaml(text: str, path: Path, error: type[GpuonboardError], strict_numbers: bool = True) -> Any:
    """Parse YAML text; errors name the file and line."""
    try:
        return _load(text, strict_numbers)
    except (AliasBomb, AmbiguousNumber) as exc:
        line = exc.problem_mark.line + 1 if exc.problem_mark else "?"
        raise error(f"{path}, line {line}: {exc.problem}.") from None
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
