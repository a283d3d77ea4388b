"""The code Python generates at every start of the CLI, kept between runs: the dataclasses'
methods and the regular expressions' engine code (~45 and ~35 ms of CPU a check's start-up,
the same every run).

`dataclasses` writes each generated method (`__init__`, `__repr__`, `__eq__`, `__hash__`, a
frozen class's `__setattr__` and `__delattr__`) as source text and runs it through `exec`, which
compiles it: ~560 texts for what a check imports (~113 classes). `install` gives the dataclasses
module an `exec` of its own (a name it looks up in its module before the builtins) that runs the
code compiled from that very text, taken from the cache, else compiled as `exec` compiles it
(`compile(text, "<string>", "exec")`, no `__future__` flag inherited: dataclasses.py has none).
re's compiler (`re._compiler.compile`, under re.compile, re.search ... and their own cache of
512) parses each pattern and generates its engine code in Python (~290 patterns a check):
`install` replaces it with one that takes what it hands to `_sre.compile` (the flags, the
code, the groups) from the cache, else makes it as it does; a pattern the parser may warn of
(`may_warn`) is compiled as before each time, so that it still warns.

The functions and patterns are the same either way (tests/unit/test_codecache.py compares the
code of every dataclass method and the engine code of every pattern of the package); only where
their code comes from differs. Each cache is a marshal in the user's cache folder, per Python
build (its version and -O level; the patterns also per engine version); a file that cannot be
read, is not the user's own, is writable by others or holds entries of other types is not used,
one that cannot be written is not written; GPUONBOARD_CODE_CACHE=0 keeps them in memory only.
"""

from __future__ import annotations

import _sre  # (re's own engine: its compile and MAGIC)
import atexit
import builtins
import contextlib
import hashlib
import importlib.util
import marshal
import os
import re
import stat
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from types import CodeType
from typing import Any

_compiler: Any = getattr(re, "_compiler", None)
_parser: Any = getattr(re, "_parser", None)
_re_compile: Any = getattr(_compiler, "compile", None)

# a file holding more entries than this (of older versions' classes and patterns) is written
# anew with only those this process used
MAX_ENTRIES = 4000
# a cache file is read only up to this size, and only where its digest matches its content (a
# damaged file is not handed to marshal, which may fail in ways of its own or ask for gigabytes)
MAX_BYTES = 32 << 20
_HEAD = b"gpuonboard code cache\n"
# (per interpreter build: its bytecode, its version, which may fix re's code generation or its
# Unicode tables under the same bytecode, and -O)
_TAG = "-".join(
    (
        sys.implementation.cache_tag,
        importlib.util.MAGIC_NUMBER.hex(),
        f"{sys.hexversion:x}",
        f"O{sys.flags.optimize}",
    )
)
_FILE = f"dataclass-code-{_TAG}.marshal"
_PATTERN_FILE = f"re-code-{_TAG}-{_sre.MAGIC}.marshal"

_builtin_exec = builtins.exec


class _Store:
    """key -> value entries loaded from `path` (None: kept in memory only), saved by `save`;
    `sound(key, value)` tells a loaded entry of the right types."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.known: dict[Any, Any] = {}
        with contextlib.suppress(Exception):  # (a file of other entries: none of them)
            self.known = {k: v for k, v in _load(path).items() if self.sound(k, v)} if path else {}
        self.used: dict[Any, Any] = {}
        self.added = 0
        self._lock = threading.Lock()

    @staticmethod
    def sound(key: Any, value: Any) -> bool:
        raise NotImplementedError

    def _keep(self, key: Any, value: Any) -> None:
        with self._lock:
            self.known[key] = value
            self.added += 1

    def save(self) -> None:
        """The entries made here written to the file with those it held (only those this
        process used where that makes more than MAX_ENTRIES); nothing where none was added."""
        if self.path is None or not self.added:
            return
        with self._lock:
            entries = dict(self.known) if len(self.known) <= MAX_ENTRIES else dict(self.used)
        with contextlib.suppress(OSError, ValueError):
            _write(self.path, framed(marshal.dumps(entries)))


class CodeCache(_Store):
    """A dataclass method's text -> its code."""

    @staticmethod
    def sound(key: Any, value: Any) -> bool:
        return type(key) is str and type(value) is CodeType

    def code(self, text: str) -> CodeType:
        """The code `exec(text)` compiles and runs."""
        code = self.known.get(text)
        if code is None:
            code = compile(text, "<string>", "exec", dont_inherit=True)
            self._keep(text, code)
        self.used[text] = code
        return code

    def exec(self, source: Any, globals: Any = None, locals: Any = None) -> None:  # noqa: A002 (exec's own)
        """`exec` as dataclasses calls it (text, globals, namespace); anything else: the builtin."""
        if type(source) is not str or globals is None or locals is None:
            # (what exec reads where a mapping is not given: its caller's, dataclasses' frame)
            frame = sys._getframe(1)
            g = frame.f_globals if globals is None else globals
            _builtin_exec(source, g, (frame.f_locals if globals is None else g) if locals is None else locals)
            return
        _builtin_exec(self.code(source), globals, locals)


_INLINE_VERBOSE = re.compile(r"\(\?[aiLmsu-]*x")


def may_warn(pattern: str | bytes, flags: int = 0) -> bool:
    """Whether re's parser may warn while it reads `pattern` (3.11-3.13: a FutureWarning for a
    possible nested set `[[`, set operation `--` `&&` `~~` `||` or range to `-` inside a
    character set; a DeprecationWarning for a conditional group's name `(?(...)` or a bytes
    pattern's non-ASCII group name): such a pattern is compiled each time, so that it warns as
    before. Reads the sets as the parser does (a backslash escapes the next character, a `]`
    first in a set is one of its characters, a verbose pattern holding a `#` is taken to
    warn: where its comments are depends on the scopes of its x flags); errs towards True."""
    text = pattern if isinstance(pattern, str) else pattern.decode("latin-1")
    if "(?(" in text or (type(pattern) is bytes and not pattern.isascii()):
        return True
    if "#" in text and (flags & re.VERBOSE or _INLINE_VERBOSE.search(text) is not None):
        return True  # (where a `#` starts a comment depends on the scopes of x: not read here)
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c != "[":
            i += 1
            continue
        i += 1  # (a set: to its closing bracket)
        if text.startswith("[", i):
            return True
        i += text.startswith("^", i)
        first = True
        while i < n and (text[i] != "]" or first):
            if text[i] == "\\":
                i += 2
            else:
                if text[i] in "-&~|" and text.startswith(text[i], i + 1):
                    return True
                i += 1
            first = False
        i += 1
    return False


_Compiled = tuple[int, list[int], int, dict[Any, int], tuple[Any, ...]]


class PatternCache(_Store):
    """(a regular expression, its flags) -> what re's compiler hands to _sre.compile for it: the
    flags the pattern sets, its code, its group count and names. re.compile, re.search ... make
    their patterns through `compile` (re._compiler.compile), the same objects either way."""

    def __init__(self, path: Path | None, keep: Callable[[str | bytes, Any], bool] | None = None) -> None:
        super().__init__(path)
        # (which patterns it keeps, by their text and the frame that asked: written_in_code)
        self.keep = keep or written_in_code

    @staticmethod
    def sound(key: Any, value: Any) -> bool:
        return (
            type(key) is tuple
            and len(key) == 2
            and type(key[0]) in (str, bytes)
            and type(key[1]) is int
            and type(value) is tuple
            and len(value) == 5
            and type(value[0]) is int
            and type(value[1]) is list
            and all(type(op) is int for op in value[1])
            and type(value[2]) is int
            and type(value[3]) is dict
            and type(value[4]) is tuple
        )

    def compile(self, p: Any, flags: int = 0) -> Any:
        """re._compiler.compile(p, flags), its parse and code generation taken from the cache."""
        if type(p) not in (str, bytes) or type(flags) is not int or flags & _compiler.SRE_FLAG_DEBUG:
            return _re_compile(p, flags)
        key = (p, flags)
        got: _Compiled | None = self.known.get(key)
        if got is None:
            if may_warn(p, flags) or not self.keep(p, sys._getframe(1)):
                return _re_compile(p, flags)
            parsed = _parser.parse(p, flags)
            groupindex = dict(parsed.state.groupdict)
            indexgroup: list[Any] = [None] * parsed.state.groups
            for k, i in groupindex.items():
                indexgroup[i] = k
            got = (
                int(flags | parsed.state.flags),
                # (re's opcodes are int subclasses, which marshal does not write: their values)
                [int(op) for op in _compiler._code(parsed, flags)],
                int(parsed.state.groups - 1),
                {k: int(v) for k, v in groupindex.items()},
                tuple(indexgroup),
            )
            self._keep(key, got)
        self.used[key] = got
        final, code, groups, names, numbered = got
        try:
            return _sre.compile(p, final, list(code), groups, dict(names), numbered)
        except Exception:  # (an entry the engine refuses, "invalid SRE code": compiled anew)
            return _re_compile(p, flags)


# (the Pythons whose `re._compiler.compile` PatternCache.compile mirrors, tested; elsewhere re
# compiles each pattern itself, and only the dataclasses' code is cached)
_RE_MIRRORED = ((3, 11),)
_RE_DIR = os.path.dirname(re.__file__) + os.sep
_LAZY = "LazyPattern.compiled"


def written_in_code(pattern: str | bytes, frame: Any) -> bool:
    """Whether the code that asked re for `pattern` (the first caller outside re and this
    module, from `frame` up) wrote it: a module's body (its patterns, made as it is imported),
    a lazy pattern of one (gpuonboard.once.lazy_re), or a function whose constants hold that
    very text (`re.match(r"...", line)`). A pattern made of what a run reads (an inventory's
    `--limit ~regex`, a word of a host's output) is none of these: it is not kept, nor written."""
    while frame is not None and (
        frame.f_code.co_filename.startswith(_RE_DIR) or frame.f_code.co_filename == __file__
    ):
        frame = frame.f_back
    if frame is None:
        return False
    code = frame.f_code
    if code.co_name == "<module>" or code.co_qualname == _LAZY:
        return True
    return any(type(c) is type(pattern) and c == pattern for c in code.co_consts)


def _load(path: Path) -> dict[Any, Any]:
    """The file's entries; {} where it is missing, unreadable, not the user's own file,
    writable by group or others, or not a marshal of a dict."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return {}
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_mode & 0o022 or st.st_uid != os.getuid():
            return {}
        if st.st_size > MAX_BYTES:
            return {}
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = unframed(f.read(MAX_BYTES + 1))
    except OSError:
        return {}
    finally:
        os.close(fd)
    if data is None:
        return {}
    try:
        entries = marshal.loads(data)
    except Exception:  # (whatever marshal raises on a file it cannot read: no cache)
        return {}
    return entries if type(entries) is dict else {}


def framed(data: bytes) -> bytes:
    """`data` as a cache file holds it: a head, its sha256, then the data."""
    return _HEAD + hashlib.sha256(data).digest() + data


def unframed(raw: bytes) -> bytes | None:
    """The data of a cache file's bytes; None where the head or the digest does not match."""
    start = len(_HEAD) + 32
    if not raw.startswith(_HEAD) or len(raw) > MAX_BYTES:
        return None
    data = raw[start:]
    return data if hashlib.sha256(data).digest() == raw[len(_HEAD) : start] else None


def _write(path: Path, data: bytes) -> None:
    """`data` to `path` whole (a temporary file beside it, renamed over it), in a folder made
    0700; a folder that is not the user's own or that others can write is not written into."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    st = path.parent.stat()
    if st.st_uid != os.getuid() or st.st_mode & 0o022:
        return
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    try:
        with os.fdopen(fd, "wb", closefd=False) as f:
            f.write(data)
    finally:
        os.close(fd)
    try:
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)
        raise


def cache_path(name: str = _FILE) -> Path | None:
    """The file `name` in the user's cache folder (`$XDG_CACHE_HOME/gpuonboard-code`, else
    `~/.cache/gpuonboard-code`: not the `gpuonboard` folder that teardown reads on a host), or in
    GPUONBOARD_CODE_CACHE where that is an absolute folder; None where no home is known or
    GPUONBOARD_CODE_CACHE=0."""
    setting = os.environ.get("GPUONBOARD_CODE_CACHE", "")
    if setting == "0":
        return None
    if os.path.isabs(setting):
        return Path(setting) / name
    base = os.environ.get("XDG_CACHE_HOME")
    if not base or not os.path.isabs(base):
        home = os.path.expanduser("~")
        if not home or home == "~" or not os.path.isabs(home):
            return None
        base = os.path.join(home, ".cache")
    return Path(base) / "gpuonboard-code" / name


_INSTALLED: CodeCache | None = None
_PATTERNS: PatternCache | None = None


def install() -> CodeCache | None:
    """Give dataclasses the cache's exec and re the cache's compiler (once a process, each where
    nothing else replaced it already) and save the caches at exit."""
    global _INSTALLED, _PATTERNS
    if _INSTALLED is not None:
        return _INSTALLED
    import dataclasses

    if "exec" in vars(dataclasses):  # (another's exec there already: left as it is)
        return None
    cache = _INSTALLED = CodeCache(cache_path())
    dataclasses.exec = cache.exec  # type: ignore[attr-defined]
    atexit.register(cache.save)
    if (
        sys.version_info[:2] in _RE_MIRRORED
        and _re_compile is not None
        and _compiler.compile is _re_compile
        and hasattr(_compiler, "_code")
    ):
        patterns = _PATTERNS = PatternCache(cache_path(_PATTERN_FILE))
        _compiler.compile = patterns.compile
        atexit.register(patterns.save)
    return cache
