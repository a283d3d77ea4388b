"""The code of the dataclasses' generated methods kept between runs.

`dataclasses` writes each generated method (`__init__`, `__repr__`, `__eq__`, `__hash__`, a
frozen class's `__setattr__` and `__delattr__`) as source text and runs it through `exec`, which
compiles it: ~560 texts for what a check imports (~113 classes), ~40 ms of CPU a run, the same
texts every run. `install` gives the dataclasses module an `exec` of its own (a name it looks up
in its module before the builtins) that runs the code compiled from that very text: taken from
a file of the texts already compiled (a marshal of text -> code, per Python bytecode version, in
the user's cache folder), else compiled as `exec` compiles it (`compile(text, "<string>",
"exec")`, no `__future__` flag inherited: dataclasses.py has none), then kept for the file.
The methods are the same functions either way (tests/unit/test_codecache.py compares their
code); only where their code comes from differs. A file that cannot be read, is not the
user's own or is writable by others is not used; one that cannot be written is not written.
"""

from __future__ import annotations

import atexit
import builtins
import contextlib
import importlib.util
import marshal
import os
import stat
import sys
import threading
from pathlib import Path
from types import CodeType
from typing import Any

# a file holding more texts than this (methods of older versions' classes) is written anew
# with only those this process used
MAX_ENTRIES = 4000
_FILE = f"dataclass-code-{sys.implementation.cache_tag}-{importlib.util.MAGIC_NUMBER.hex()}.marshal"

_builtin_exec = builtins.exec


class CodeCache:
    """text -> its code, loaded from `path` (None: kept in memory only), saved by `save`."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.known: dict[str, CodeType] = _load(path) if path is not None else {}
        self.used: dict[str, CodeType] = {}
        self.added = 0
        self._lock = threading.Lock()

    def code(self, text: str) -> CodeType:
        """The code `exec(text)` compiles and runs."""
        code = self.known.get(text)
        if code is None:
            code = compile(text, "<string>", "exec", dont_inherit=True)
            with self._lock:
                self.known[text] = code
                self.added += 1
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

    def save(self) -> None:
        """The texts compiled here written to the file with those it held (only those this
        process used where that makes more than MAX_ENTRIES); nothing where none was added."""
        if self.path is None or not self.added:
            return
        with self._lock:
            entries = dict(self.known) if len(self.known) <= MAX_ENTRIES else dict(self.used)
        with contextlib.suppress(OSError, ValueError):
            _write(self.path, marshal.dumps(entries))


def _load(path: Path) -> dict[str, CodeType]:
    """The file's entries; {} where it is missing, unreadable, not the user's own file,
    writable by group or others, or not a marshal of text -> code."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return {}
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_mode & 0o022 or st.st_uid != os.getuid():
            return {}
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read()
    except OSError:
        return {}
    finally:
        os.close(fd)
    try:
        entries = marshal.loads(data)
    except (EOFError, ValueError, TypeError):
        return {}
    if not isinstance(entries, dict):
        return {}
    return {k: v for k, v in entries.items() if type(k) is str and type(v) is CodeType}


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


def cache_path() -> Path | None:
    """The file in the user's cache folder (`$XDG_CACHE_HOME/gpuonboard`, else
    `~/.cache/gpuonboard`); None where no home is known or GPUONBOARD_CODE_CACHE=0."""
    if os.environ.get("GPUONBOARD_CODE_CACHE") == "0":
        return None
    base = os.environ.get("XDG_CACHE_HOME")
    if not base or not os.path.isabs(base):
        home = os.path.expanduser("~")
        if not home or home == "~" or not os.path.isabs(home):
            return None
        base = os.path.join(home, ".cache")
    return Path(base) / "gpuonboard" / _FILE


_INSTALLED: CodeCache | None = None


def install() -> CodeCache | None:
    """Give dataclasses the cache's exec (once a process) and save the cache at exit."""
    global _INSTALLED
    if _INSTALLED is not None:
        return _INSTALLED
    import dataclasses

    if "exec" in vars(dataclasses):  # (another's exec there already: left as it is)
        return None
    cache = _INSTALLED = CodeCache(cache_path())
    dataclasses.exec = cache.exec  # type: ignore[attr-defined]
    atexit.register(cache.save)
    return cache
