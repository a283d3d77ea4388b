"""The plain-text `nvidia-smi -q` layout read into a tree: each line read once (:class:`_Lines`,
its node, whether it is a section header or heads a GPU record), the indented `key : value`
lines nested into sections (:func:`_text_tree`), and the lookups of a value in that tree (labels
matched case-insensitively). `text_q` reads a GPU record's fields from it."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from gpuonboard.facts.nvidia_smi.values import _clean

# "Key   : value"; the separator is a colon followed by a space or the line's end, so "GPU
# 00000000:07:00.0" is a header; a label as long as the colon's column meets it: `...Specification: 0 C`
_TEXT_LINE = re.compile(r"^(\s*)(\S.*?)(?:\s*:(?:\s(.*)|$))?\s*$")


def _indent(line: str) -> int:
    """The columns of a line's leading whitespace (tabs at 8)."""
    spread = line.expandtabs()
    return len(spread) - len(spread.lstrip())


class _Line(NamedTuple):
    """What the -q parse reads of one line: its node of the text tree (indent, label, value;
    None for a blank line, the banner's `=====` or no label), whether it is blank, whether it
    is a `key : value` line (`key :` too: a value left empty, or wrapped onto the next line),
    whether it is a section header ('FB Memory Usage': no value, no colon, not the banner; R610
    prints 'Memory Max Operating T.Limit Temp Specification: 0 C', the label too long for its
    column), its indent (_indent), and whether it heads a GPU record (_gpu_head)."""

    node: tuple[int, str, str | None] | None
    blank: bool
    keyed: bool
    header: bool
    indent: int
    gpu_head: bool


def _read_line(raw: str) -> _Line:
    """_Line of one line (one _TEXT_LINE match serves the tree node, _keyed and _header)."""
    text = raw.strip()
    match = _TEXT_LINE.match(raw)
    keyed = match is not None and (match.group(3) is not None or raw.rstrip().endswith(" :"))
    node = None
    if match is not None and text and not text.startswith("====="):
        value = match.group(3)
        node = (len(match.group(1).expandtabs()), match.group(2), None if value is None else value.strip())
    header = bool(text) and not keyed and not text.startswith("=") and not re.search(r":(\s|$)", text)
    return _Line(node, not text, keyed, header, _indent(raw), _gpu_head(raw))


# _read_line's answers by the line as printed, across parses: the boxes of one fleet print most
# lines of their -q texts alike (its labels, and values such as `Persistence Mode : Enabled`,
# `Pending : N/A`), each read the same every time (_read_line reads the line alone; forgotten
# all at once when full)
_READ_LINES: dict[str, _Line] = {}
_READ_LINES_MAX = 4096


class _Lines(dict[str, _Line]):
    """The _Line of each distinct line of one -q text, read at its first lookup: a record's
    lines are read once for the whole text's tree, the record's, the re-join and the flatten
    check (the GPUs of one box print many lines alike); a line read by an earlier parse is
    taken from _READ_LINES."""

    def __missing__(self, raw: str) -> _Line:
        line = _READ_LINES.get(raw)
        if line is None:
            line = _read_line(raw)
            if len(raw) <= 256:  # (a long line is seldom printed twice)
                if len(_READ_LINES) >= _READ_LINES_MAX:
                    _READ_LINES.clear()
                _READ_LINES[raw] = line
        self[raw] = line
        return line


class _Section(dict[str, Any]):
    """A section of a -q text tree (its label -> a value or a sub-section), with its labels
    casefolded for _tree_child, gathered at the first lookup of a label not printed exactly
    (the tree is whole by then: it is never changed once built)."""

    __slots__ = ("_folded",)
    _folded: dict[str, Any]

    def folded(self) -> dict[str, Any]:
        """casefolded label -> the value of the first label so folded."""
        try:
            return self._folded
        except AttributeError:
            folded: dict[str, Any] = {}
            for label, value in self.items():
                folded.setdefault(label.casefold(), value)
            self._folded = folded
            return folded


def _text_tree(lines: Iterable[str], read: _Lines) -> _Section:
    """Nested dict from the indented `key : value` layout of `nvidia-smi -q` (`lines` as
    str.splitlines gives them)."""
    root = _Section()
    stack: list[tuple[int, _Section]] = [(-1, root)]
    for raw in lines:
        node = read[raw].node
        if node is None:
            continue
        indent, key, value = node
        while stack[-1][0] >= indent:
            stack.pop()
        parent = stack[-1][1]
        if value is None:  # a section header such as "FB Memory Usage"
            section = _Section()
            parent.setdefault(key, section)
            stack.append((indent, section))
        else:
            parent.setdefault(key, value)
    return root


def _tree_child(node: Mapping[str, Any], key: str) -> Any:
    """`node[key]`, the label matched case-insensitively when not printed exactly: drivers
    R418-R470 print `Ecc Mode` and `Virtualization mode` where newer ones print `ECC Mode` and
    `Virtualization Mode`. The exact label wins where both are present. None when absent."""
    if key in node:
        return node[key]
    if isinstance(node, _Section):
        return node.folded().get(key.casefold())
    low = key.casefold()
    return next((value for label, value in node.items() if label.casefold() == low), None)


def _tree_get(tree: Mapping[str, Any], *path: str) -> str | None:
    """Value at `path` in a text tree (labels case-insensitive); None when missing or N/A."""
    return _clean(_tree_raw(tree, *path))


def _tree_raw(tree: Mapping[str, Any], *path: str) -> str | None:
    """Value at `path` in a text tree as written (labels case-insensitive); None when missing."""
    node: Any = tree
    for key in path:
        if not isinstance(node, dict):  # (a text tree's sections are dicts)
            return None
        # (a label printed exactly, most of them: looked up here, without _tree_child's call; a
        # tree's values are never None)
        child = node.get(key)
        node = _tree_child(node, key) if child is None else child
        if node is None:
            return None
    return node if isinstance(node, str) else None


_TEXT_GPU_HEADER = re.compile(r"^GPU\s+\S+\s*$")


def _gpu_head(line: str) -> bool:
    """A 'GPU 00000000:07:00.0' line, the head of a GPU record of `nvidia-smi -q`."""
    return line.startswith("GPU") and _TEXT_GPU_HEADER.match(line) is not None


def _tree_first(tree: Mapping[str, Any], *paths: tuple[str, ...]) -> str | None:
    """The first of `paths` in a text tree that has a value."""
    for path in paths:
        value = _tree_get(tree, *path)
        if value is not None:
            return value
    return None


def _tree_section(tree: Mapping[str, Any], *names: str) -> Mapping[str, Any]:
    """The first sub-section of `names` present (labels case-insensitive), else an empty one."""
    for name in names:
        section = _tree_child(tree, name)
        if isinstance(section, dict):
            return section
    return {}


def _tree_values(tree: Mapping[str, Any], into: list[str]) -> list[str]:
    """`into` with the values of _tree_leaves(tree) appended, in its order (no paths)."""
    for key, value in tree.items():
        if key == "Processes":
            continue
        if isinstance(value, dict):
            _tree_values(value, into)
        else:
            into.append(value)
    return into


def _tree_leaves(tree: Mapping[str, Any], prefix: str = "") -> Iterable[tuple[str, str]]:
    """(path, value) of every value of a -q text tree, the process list left out (a process
    name is free text)."""
    for key, value in tree.items():
        if key == "Processes":
            continue
        path = f"{prefix}{key}"
        if isinstance(value, dict):
            yield from _tree_leaves(value, f"{path}/")
        else:
            yield path, value
