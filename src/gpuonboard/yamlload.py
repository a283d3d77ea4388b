"""YAML loading that keeps line numbers and refuses duplicate keys (for one-sentence errors)."""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from gpuonboard.errors import GpuonboardError
from gpuonboard.once import lazy_re


class LineDict(dict[str, Any]):
    """A mapping from YAML that remembers the line (1-based) of each key and of itself; and,
    where it was read from another file than the one an error would name by default (an
    Ansible host_vars/ or group_vars/ file merged into a host), that file (`source`), or the
    file of each key merged in from one (`key_sources`)."""

    line: int | None = None
    key_lines: dict[str, int]
    source: Path | None = None
    key_sources: dict[str, Path]

    def line_of(self, key: str) -> int | None:
        """Line of `key` in the source file, else the mapping's own line."""
        return getattr(self, "key_lines", {}).get(key, self.line)

    def file_of(self, key: str | None, default: Path) -> Path:
        """The file `key` (or, for None, the mapping itself) was written in: its own file where
        it came from one, else `default`."""
        own = getattr(self, "key_sources", {}).get(key) if key is not None else None
        return own or self.source or default

    def take_origin(self, key: str, src: Any, file: Path | None = None) -> None:
        """`key` (set from `src`) is said to be written where it was there: in `file`, else in
        the file `src` records for it, at its line in that file; nowhere else (an error about it
        then names the default file) where `src` was not read from another file."""
        self.key_lines.pop(key, None)
        self.key_sources.pop(key, None)
        file = file or getattr(src, "key_sources", {}).get(key)
        if file is not None:
            self.key_sources[key] = file
            if (line := getattr(src, "key_lines", {}).get(key)) is not None:
                self.key_lines[key] = line


def from_file(value: Any, path: Path) -> Any:
    """`value` (parsed from `path`), with every mapping in it marked as written in `path`."""
    if isinstance(value, LineDict):
        value.source = path
        for v in value.values():
            from_file(v, path)
    elif isinstance(value, list):
        for v in value:
            from_file(v, path)
    return value


# Bounds on what one YAML document may hold, checked while it is composed (before any value
# is built), so a hostile or mistaken file costs at most a few seconds and a few hundred MB:
# - MAX_DEPTH: the deepest real inventory nests about 10 levels (an Ansible tree of groups a
#   few more); PyYAML composes and constructs by recursion, so 400 levels crashed the run
#   (RecursionError) and 50,000 did too.
# - MAX_EXPANDED_VALUES / MAX_EXPANDED_CHARS: what the document holds with every alias written
#   out. A few anchors that each repeat the one before ("billion laughs": 9 lines, 10^9 strings)
#   load as shared references in no time, but every walk over the values (rendering a
#   playbook's arguments per host, writing a report) expands them. The count of values alone
#   let 800,000 aliases of one long text through, which reached 10.4 GB: the text they hold is
#   bounded too, at twice what the largest file (MAX_INPUT_BYTES) holds written out.
# - MAX_PARSED_NODES: the values (and keys) the file itself holds, each alias counted once. The
#   file size alone bounded a parse to minutes, not seconds: PyYAML builds a value in about
#   30 us, so a 2 MB flow list of 990,000 items took 38 s and 700 MB. 10,000 hosts of about 10
#   values each (MAX_HOSTS) fit. A value nested in flow brackets (`[[[...]]]`) costs
#   PyYAML's scanner time for each bracket open around it (146 s for 4 MiB of them), so it counts
#   one more for each NODE_DEPTH_WEIGHT levels it is nested.
# - MAX_NUMBER_DIGITS: Python refuses to convert a number of over 4,300 digits (ValueError, a
#   crash); no setting needs more than a few dozen.
MAX_DEPTH = 64
MAX_EXPANDED_VALUES = 1_000_000
MAX_EXPANDED_CHARS = 8 << 20
MAX_NUMBER_DIGITS = 100
MAX_PARSED_NODES = 250_000
NODE_DEPTH_WEIGHT = 16
_TOO_MANY = (
    f"it holds more than {MAX_PARSED_NODES:,} values (keys and values, nested ones counting more);"
    " split it, or remove what is not needed"
)


class InputBomb(yaml.MarkedYAMLError):
    """A document past one of the bounds above (too deep, too much once its aliases expand,
    an alias inside its own anchor, a number too long to be one)."""


class _LaxLoader(yaml.SafeLoader):
    """Line numbers, duplicate keys refused, keys as written; numbers as YAML 1.1 reads them;
    depth and expanded size bounded while the document is composed."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        self._nodes = 0  # nodes parsed so far (see MAX_PARSED_NODES)
        self._values = 0  # values composed so far, each alias counted as all it holds
        self._chars = 0  # characters of the scalars composed so far, likewise
        self._aliased = False
        self._sizes: dict[str, tuple[int, int]] = {}  # anchor -> (values, chars) it holds
        self._open: set[str] = set()  # anchors whose node is being composed

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        """PyYAML's, counting what each node holds (an alias: what its anchor holds) and refusing
        a document past the bounds as soon as it gets there, before the rest is even parsed."""
        event = self.peek_event()
        mark: Any = event.start_mark
        self._nodes += 1 + self._depth // NODE_DEPTH_WEIGHT
        if self._nodes > MAX_PARSED_NODES:
            raise InputBomb(None, None, _TOO_MANY, mark)
        if isinstance(event, yaml.AliasEvent):
            anchor = str(event.anchor)
            if anchor in self._open:  # `&a [*a]`: a list that contains itself, endless to walk
                raise InputBomb(
                    None,
                    None,
                    f"the alias *{anchor} is inside its own anchor &{anchor}, a value that contains"
                    " itself; write the value out",
                    mark,
                )
            if anchor in self._sizes:  # (an undefined alias: PyYAML's own error below)
                self._aliased = True
                self._count(*self._sizes[anchor], mark)
            return super().compose_node(parent, index)
        self._depth += 1
        if self._depth > MAX_DEPTH:
            raise InputBomb(
                None,
                None,
                f"the values nest more than {MAX_DEPTH} levels deep; write them flatter (an"
                " inventory or playbook nests a few levels)",
                mark,
            )
        named: str | None = getattr(event, "anchor", None)
        before = (self._values, self._chars)
        self._count(1, len(event.value) if isinstance(event, yaml.ScalarEvent) else 0, mark)
        if named is not None:
            self._open.add(named)
        node = super().compose_node(parent, index)
        if named is not None:
            self._open.discard(named)
            self._sizes[named] = (self._values - before[0], self._chars - before[1])
        self._depth -= 1
        return node

    def _count(self, values: int, chars: int, mark: Any) -> None:
        self._values += values
        self._chars += chars
        if self._values <= MAX_EXPANDED_VALUES and self._chars <= MAX_EXPANDED_CHARS:
            return
        amount = (
            f"{MAX_EXPANDED_VALUES:,} values"
            if self._values > MAX_EXPANDED_VALUES
            else f"{MAX_EXPANDED_CHARS >> 20} MiB of text"
        )
        problem = (
            f"its aliases expand to more than {amount} (anchors that repeat each other, a"
            ' "billion laughs"); write the values out instead'
            if self._aliased
            else f"it holds more than {amount}; split it, or remove what is not needed"
        )
        raise InputBomb(None, None, problem, mark)

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        """PyYAML's, with a value its tag cannot hold (`2001-02-30`, `!!int abc`) refused at
        its line instead of escaping as Python's ValueError."""
        try:
            return super().construct_object(node, deep)
        except (ValueError, TypeError, OverflowError) as exc:
            kind = str(node.tag).rsplit(":", 1)[-1]
            raise InputBomb(
                None,
                None,
                f"a value is not a valid {kind} ({' '.join(str(exc).split())[:100]}); quote it where it"
                " is meant as text",
                node.start_mark,
            ) from None


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


def _construct_lax_int(loader: _LaxLoader, node: yaml.ScalarNode) -> int:
    if len(str(node.value)) > MAX_NUMBER_DIGITS:
        raise InputBomb(
            None,
            None,
            f"a number of more than {MAX_NUMBER_DIGITS} digits; quote it where it is meant as text",
            node.start_mark,
        )
    return int(yaml.SafeLoader.construct_yaml_int(loader, node))


def _construct_int(loader: _Loader, node: yaml.ScalarNode) -> int:
    digits = str(node.value).lstrip("+-").replace("_", "")
    octal = len(digits) > 1 and digits.startswith("0") and digits[1:2] in tuple("0123456789")
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
    return _construct_lax_int(loader, node)


_LaxLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
_LaxLoader.add_constructor("tag:yaml.org,2002:int", _construct_lax_int)
_Loader.add_constructor("tag:yaml.org,2002:int", _construct_int)


def load_yaml(path: Path, error: type[GpuonboardError], what: str, strict_numbers: bool = True) -> Any:
    """Parse a YAML file into LineDicts/lists; any problem -> `error` naming file and line."""
    return parse_yaml(read_text(path, error, what), path, error, strict_numbers)


# The most any input file may hold: a real inventory, playbook or vendor profile is a few kB
# (an Ansible inventory of thousands of hosts a few hundred kB); PyYAML parses about 200 kB/s,
# so this bounds a parse to seconds. `--inventory /dev/zero` read 5.3 GB, then crashed.
MAX_INPUT_BYTES = 4 << 20

_FILE_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def read_bounded(path: Path, error: type[GpuonboardError], what: str, limit: int = MAX_INPUT_BYTES) -> bytes:
    """A regular file's bytes, at most `limit` of them; anything else -> `error` in one sentence.

    Opened without blocking, then checked by fstat (no race with a swapped path): a FIFO given as
    a vendor file waited forever for a writer, and a device (`/dev/zero`) never ends."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise error(f"{path}: {what} file not found; check the path.") from None
    except OSError as exc:
        raise error(f"{path}: cannot read the {what} file ({exc.strerror or exc}).") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = next((name for test, name in _FILE_KINDS if test(mode)), "a special file")
            raise error(
                f"{path}: the {what} file is not a regular file but {kind}; save the {what} to a"
                " file and name that file."
            )
        chunks: list[bytes] = []
        size = 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise error(f"{path}: cannot read the {what} file ({exc.strerror or exc}).") from None
    finally:
        os.close(fd)
    if size > limit:
        most = f"{limit >> 20} MiB" if limit >= 1 << 20 else f"{limit >> 10} KiB"
        raise error(
            f"{path}: the {what} file is larger than {most}, the most gpuonboard reads"
            f" (one is a few kB); check that the path names the {what}."
        )
    return b"".join(chunks)


def read_text(path: Path, error: type[GpuonboardError], what: str, limit: int = MAX_INPUT_BYTES) -> str:
    """A file's text as UTF-8 (read_bounded), without the byte-order mark an editor on Windows
    may write; bytes that are not UTF-8 -> `error` naming the file, the line and what to do."""
    data = read_bounded(path, error, what, limit)
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


# A text this long is first counted by libyaml's parser (C, where PyYAML has it): 250,000
# values in PyYAML's own scanner cost 10-14 CPU-s before MAX_PARSED_NODES refused them, in
# libyaml's 0.5 s. Shorter texts cannot hold enough values for it to matter.
PRECOUNT_BYTES = 256 << 10


def _precount(text: str) -> None:
    """Refuse a text past MAX_PARSED_NODES, counted as compose_node counts, with libyaml's
    events (no values built). It stops, leaving the text to the parse that follows, wherever
    that parse would say something else first: the end of the first document (a second one is
    refused there), a node nested past MAX_DEPTH, an anchor or alias (their errors and the
    expanded size are compose_node's), anything libyaml cannot read, or no libyaml at all."""
    if len(text) < PRECOUNT_BYTES or not getattr(yaml, "__with_libyaml__", False):
        return
    nodes, depth = 0, 0
    opened = (yaml.SequenceStartEvent, yaml.MappingStartEvent)
    closed = (yaml.SequenceEndEvent, yaml.MappingEndEvent)
    try:
        for event in yaml.parse(text, Loader=yaml.CSafeLoader):
            if isinstance(event, closed):
                depth -= 1
                continue
            if isinstance(event, yaml.DocumentEndEvent) or getattr(event, "anchor", None) is not None:
                return
            if not isinstance(event, (yaml.ScalarEvent, *opened)):
                continue
            nodes += 1 + depth // NODE_DEPTH_WEIGHT
            if nodes > MAX_PARSED_NODES:
                break
            if depth + 1 > MAX_DEPTH:
                return
            depth += isinstance(event, opened)
        else:
            return
    except yaml.YAMLError:
        return
    m: Any = event.start_mark  # (libyaml's Mark: PyYAML's own for the sentence)
    raise InputBomb(None, None, _TOO_MANY, yaml.Mark(m.name, m.index, m.line, m.column, None, 0))


class _LibyamlEvents:
    """A loader's events from libyaml's parser (C) in place of PyYAML's scanner and parser
    (Python, three quarters of a load's CPU: 8.6 of 11.4 ms for a 50-host inventory), composed
    and built by the same Python code (the bounds in compose_node, duplicate keys, numbers)."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)  # type: ignore[call-arg]
        events = yaml.cyaml.CParser(stream)  # type: ignore[attr-defined]
        self.check_event = events.check_event
        self.peek_event = events.peek_event
        self.get_event = events.get_event


class _LaxLibyamlLoader(_LibyamlEvents, _LaxLoader):
    pass


class _LibyamlLoader(_LibyamlEvents, _Loader):
    pass


def _compose_and_build(loader: _LaxLoader) -> Any:
    try:
        root = loader.get_single_node()
        if root is None:
            return None
        return loader.construct_document(root)
    finally:
        loader.dispose()


# Where libyaml's parser reads a text otherwise than PyYAML's (found by comparing the two over
# the repository's YAML files and thousands of their mutations): a tab after a value or inside
# a plain one, `?` inside a flow value, `|#` / `>#`, an empty tag `!` (None in PyYAML, '' in
# libyaml), a byte-order mark past the start. A text holding any of these characters, a line
# break other than `\n` (`\r`, NEL, LS, PS), a backslash (escapes) or a `%` (directives) is read
# by PyYAML alone, as is one libyaml refuses (PyYAML's parse then says why, in its own words).
_PYYAML_ONLY = re.compile(r"[\t?!|>%\\\r\x85\u2028\u2029\ufeff]")


def _load(text: str, strict_numbers: bool = True) -> Any:
    _precount(text)
    if getattr(yaml, "__with_libyaml__", False) and not _PYYAML_ONLY.search(text):
        try:
            return _compose_and_build(_LibyamlLoader(text) if strict_numbers else _LaxLibyamlLoader(text))
        except Exception:  # noqa: BLE001 (any problem is said by PyYAML's own parse below, in its
            pass  # words and at its marks, exactly as without libyaml)
    return _compose_and_build(_Loader(text) if strict_numbers else _LaxLoader(text))


def parse_yaml(text: str, path: Path, error: type[GpuonboardError], strict_numbers: bool = True) -> Any:
    """Parse YAML text; errors name the file and line."""
    try:
        return _load(text, strict_numbers)
    except (InputBomb, AmbiguousNumber) as exc:
        line = exc.problem_mark.line + 1 if exc.problem_mark else "?"
        raise error(f"{path}, line {line}: {exc.problem}.") from None
    except DuplicateKey as exc:
        line = exc.problem_mark.line + 1 if exc.problem_mark else "?"
        raise error(f"{path}, line {line}: {exc.problem}; remove or rename one of them.") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        where = f", line {mark.line + 1}" if mark is not None else ""
        if tag := _TAG.search(str(problem)) if isinstance(exc, yaml.constructor.ConstructorError) else None:
            raise error(f"{path}{where}: {_tag_advice(tag.group(1))}") from None
        if "'\\t'" in str(problem) and mark is not None:  # (PyYAML: "found character '\t' that ...")
            raise error(
                f"{path}{where}: a tab (column {mark.column + 1}) where YAML allows only spaces, which"
                " indent and separate its values; replace the tabs with spaces."
            ) from None
        raise error(
            f"{path}{where}: invalid YAML: {' '.join(str(problem).split())}{_context(exc)};"
            " check the indentation, quotes and brackets around that line."
        ) from None


# PyYAML's "could not determine a constructor for the tag '!vault'"
_TAG = lazy_re(r"constructor for the tag '([^']*)'")


def _tag_advice(tag: str) -> str:
    """The sentence for a value under a YAML tag no loader here reads: Ansible Vault's own, or any
    other (not named)."""
    if tag == "!vault":
        return (
            "an Ansible Vault value (!vault), which gpuonboard does not decrypt; pass the inventory"
            " as `--inventory ansible-inventory:FILE` (Ansible decrypts it with your vault password)"
            " or write that value in plain text."
        )
    # (never the tag itself: an unquoted value that starts with `!`, a password, is read as one)
    return (
        "invalid YAML: a value YAML reads as tagged (it starts with `!`), which gpuonboard does not"
        " read; quote the value, or remove the tag."
    )


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
        own = mapping.file_of(None, path)
        # a key merged in from another file (an Ansible vars file) names that file, and its
        # line there, never the line of the mapping in the file it was merged into
        path = mapping.file_of(key, path)
        if key is not None and key not in getattr(mapping, "key_lines", {}) and path != own:
            line = None
    return f"{path}, line {line}" if line else str(path)


def shown(value: object, limit: int = 80) -> str:
    """`repr(value)` for a message, cut to `limit` characters: a value that is a list of a
    million items (or a 4 MB text) must not make the one-line error megabytes long."""
    if isinstance(value, list | dict) and len(value) > limit:
        return f"a {type(value).__name__} of {len(value):,} items"
    text = repr(value)
    return text if len(text) <= limit else f"{text[: limit - 3]}..."


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """`; did you mean 'x'?` for the closest choice, or an empty string."""
    import difflib  # (only where a word is refused: its import was ~1 ms of every run's CPU)

    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""
