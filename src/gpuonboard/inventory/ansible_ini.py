"""Ansible's INI inventory read as Ansible's `ini` plugin reads it: [group], [group:vars],
[group:children], host lines with `name=value` variables, and each value typed as Ansible
types it (`ast.literal_eval`: ints, floats, lists, dicts, None, True/False; anything else stays
text; tuples and sets become lists, bytes text, `...` and complex numbers their text).
"""

from __future__ import annotations

import ast
import re
import shlex
import warnings
from pathlib import Path
from typing import Any

from gpuonboard.errors import InventoryError
from gpuonboard.inventory.ansible import _bracketed_ipv6, _Builder, _check_name
from gpuonboard.yamlload import LineDict, read_text

# a value longer than this is kept as text, not evaluated (literal_eval's parser is recursive)
MAX_LITERAL_CHARS = 64 << 10


def load_ini(path: Path, text: str | None = None) -> LineDict:
    """Parse Ansible's INI inventory into our shape, with the group_vars/ and host_vars/
    beside it (`text`: the file's, when the caller has read it)."""
    if text is None:
        text = read_text(path, InventoryError, "inventory")
    b = _Builder(path)
    _read_ini_lines(b, path, text)
    return b.result(path.parent)


def _read_ini_lines(b: _Builder, path: Path, text: str) -> None:
    """Read an INI inventory's lines in order into `b`: hosts with their vars, each group's
    vars, child groups and the hosts it lists."""
    section, kind = "ungrouped", "hosts"
    for lineno, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if not s or s.startswith(("#", ";")):
            continue
        m = re.match(r"^\[([^\]:\s]+)(?::(vars|children|hosts))?\]\s*(?:[#;].*)?$", s)
        if m:
            _check_name(path, lineno, "group", m.group(1))
            section, kind = m.group(1), m.group(2) or "hosts"
            b.add_group(section, {}, [], lineno)
            continue
        if s.startswith("[") and not _bracketed_ipv6(s.split()[0]):  # `[2001:db8::8]:2222` is a host
            raise InventoryError(
                f"{path}, line {lineno}: malformed section header {s!r}; write [group],"
                " [group:vars] or [group:children]."
            )
        if kind == "vars":
            _ini_group_var(b, path, lineno, s, section)
            continue
        try:
            words = shlex.split(s, comments=True)
        except ValueError as exc:
            raise InventoryError(f"{path}, line {lineno}: cannot parse this line ({exc}).") from None
        if not words:
            continue
        if kind == "children":
            _check_name(path, lineno, "group", words[0])
            b.add_child(section, words[0])
            b.add_group(words[0], {}, [], lineno)
        else:
            hvars = _ini_host_vars(path, lineno, words)
            b.add_group(section, {}, b.add_pattern(words[0], hvars, lineno), None)


def _ini_group_var(b: _Builder, path: Path, lineno: int, s: str, section: str) -> None:
    """Record one `name=value` line of a [group:vars] section."""
    key, eq, value = s.partition("=")
    if not eq:
        # the line is not echoed: it may hold a secret (`ansible_become_password: ...`)
        raise InventoryError(
            f"{path}, line {lineno}: a line in [{section}:vars] must be written name=value"
            f" (this one, starting {_first_word(s)!r}, has no '='); fix that line."
        )
    gv = _line_dict(lineno)
    gv[key.strip()] = ini_value(value.strip())
    gv.key_lines[key.strip()] = lineno
    b.add_group(section, gv, [], None)


def _ini_host_vars(path: Path, lineno: int, words: list[str]) -> LineDict:
    """The `name=value` variables after the host pattern on one host line."""
    hvars = _line_dict(lineno)
    for w in words[1:]:
        key, eq, value = w.partition("=")
        if not eq:
            raise InventoryError(
                f"{path}, line {lineno}: host {words[0]!r} variable {w!r} must be written"
                " name=value, with no spaces around '='."
            )
        hvars[key] = ini_value(value)
        hvars.key_lines[key] = lineno
    return hvars


def _first_word(line: str) -> str:
    """The variable name a malformed vars line starts with (never its value, maybe a secret)."""
    return re.split(r"[\s:=]", line, maxsplit=1)[0][:40]


def _line_dict(line: int) -> LineDict:
    """An empty LineDict for variables read from one INI line (errors then name that line)."""
    out = LineDict()
    out.line = line
    out.key_lines = {}
    return out


def ini_value(text: str) -> Any:
    """An INI value typed as Ansible's ini plugin types it: `ast.literal_eval`, else the text."""
    if len(text) > MAX_LITERAL_CHARS:
        return text
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SyntaxWarning)
            value = ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return text
    return _coerce(value)


def _coerce(value: Any) -> Any:
    """literal_eval's result as Ansible keeps it: tuples and sets as lists, bytes as text,
    `...` and complex numbers as their text."""
    if isinstance(value, list | tuple | set | frozenset):
        return [_coerce(v) for v in value]
    if isinstance(value, dict):
        return {_coerce(k): _coerce(v) for k, v in value.items()}
    if value is ...:
        return "..."
    if isinstance(value, complex):
        return str(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", "surrogateescape")
    return value


_SECTION = re.compile(r"^\[([^:\]\s]+)(?::(\w+))?\]\s*(?:#.*)?$")
_GROUP_NAME = re.compile(r"^([^:\]\s]+)\s*(?:#.*)?$")


def adds_anything(text: str, known: frozenset[str] | None) -> bool:
    """Whether Ansible's `ini` plugin, reading `text` line by line as it does, adds a host, a
    group's var or a child group before the first line it fails on (what it added is kept); a
    file it reads as nothing but empty groups (a `[defaults]` of an `ansible.cfg.example`, a
    README) adds nothing. `known`: the groups the sources Ansible read before declared (None:
    any may be)."""
    declared: set[str] = {"all", "ungrouped", *(known or ())}
    pending: set[str] = set()  # (children named before their group is declared)
    kind = "hosts"
    for line in text.splitlines():
        s = line.strip()
        if not s or s[0] in "#;":
            continue
        if m := _SECTION.match(s):
            kind = m.group(2) or "hosts"
            if kind not in ("hosts", "children", "vars"):
                return False
            if kind != "vars" and m.group(1) in pending:
                return True  # (a child named above is declared: linked to its parents)
            declared.add(m.group(1))
            continue
        if s.startswith("[") and s.endswith("]"):
            return False
        if kind == "vars":
            return "=" in s
        if kind == "children":
            if not (m := _GROUP_NAME.match(s)):
                return False
            if known is None or m.group(1) in declared:
                return True
            pending.add(m.group(1))
            continue
        return _host_line(s)
    return False


def section_names(text: str) -> frozenset[str]:
    """The groups an INI inventory's [section] headers declare."""
    found = (_SECTION.match(line.strip()) for line in text.splitlines())
    return frozenset(m.group(1) for m in found if m)


def _host_line(s: str) -> bool:
    """Whether Ansible's ini plugin adds the host of host line `s` (it fails on the line else)."""
    try:
        words = shlex.split(s, comments=True)
    except ValueError:
        return False
    return (
        bool(words)
        and all("=" in w for w in words[1:])
        and not words[0].endswith(":")
        and words[0].strip() != "---"
    )
