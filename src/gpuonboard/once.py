"""`loaded_once`: functools.cache (or lru_cache) for what every host's thread computes once per
run: a reference table (data/*.yml), a compiled pattern, the probes' list, a parsed key file.
With functools' caches, the threads that arrive before the first value is made each make it
again: a check's hosts start together, so at 50 hosts the client key was parsed 50 times and
core_probes, the lscpu labels or the PCI id table 4-20 times (a first call that imports a
module, paramiko or the facts' parsers, holds the others on the import and they then all
compute). Here the first caller computes it and the others wait for that value."""

from __future__ import annotations

import functools
import re
import threading
from collections.abc import Callable, Hashable
from typing import Any, TypeVar, overload

T = TypeVar("T")


@overload
def loaded_once(load: Callable[..., T], *, maxsize: int | None = None) -> Callable[..., T]: ...


@overload
def loaded_once(
    load: None = None, *, maxsize: int | None = None
) -> Callable[[Callable[..., T]], Callable[..., T]]: ...


def loaded_once(load: Callable[..., T] | None = None, *, maxsize: int | None = None) -> Any:
    """`load` cached by its arguments (as functools.cache: an error is not cached, the next call
    tries again), computed by one thread at a time; with `maxsize`, the oldest value is dropped
    once that many are kept (as lru_cache drops its least recent). `.cache_clear()` empties it.
    Used bare (`@loaded_once`) or with the bound (`@loaded_once(maxsize=32)`)."""
    if load is None:
        return functools.partial(loaded_once, maxsize=maxsize)
    values: dict[Hashable, Any] = {}
    lock = threading.RLock()  # (a value whose making asks this cache for another key)

    @functools.wraps(load)
    def cached(*args: Any, **kwargs: Any) -> T:
        key = (args, tuple(sorted(kwargs.items()))) if kwargs else args
        try:
            value: T = values[key]
            return value
        except KeyError:
            pass
        with lock:
            if key not in values:
                value = load(*args, **kwargs)
                if maxsize is not None and len(values) >= maxsize:
                    del values[next(iter(values))]
                values[key] = value
            value = values[key]
            return value

    cached.cache_clear = values.clear  # type: ignore[attr-defined]
    return cached


class LazyPattern:
    """`re.compile(pattern, flags)` made at its first use: a large pattern that most runs never
    use (a failure's sentences, a paste's marks) costs no compile at import (~0.2-2.6 ms each,
    paid by every start of the CLI). Its first attribute read compiles it and keeps the
    compiled pattern's methods and attributes on the object, so each later call is the
    compiled pattern's own (no wrapper between). Two threads reading it first at once both
    compile it (re's cache makes the second cheap); each gets an equal pattern. It is no
    re.Pattern: use it only through its methods and attributes (`LAZY.sub(...)`, never
    `re.sub(LAZY, ...)`, `re.compile(LAZY)` or `isinstance(LAZY, re.Pattern)`; `.compiled` is
    the re.Pattern; tests/unit/test_once.py greps the package for such uses). Pickled and copied
    as its source."""

    _ATTRS: tuple[str, ...] = ("search", "match", "fullmatch", "finditer", "findall", "sub", "subn")
    _ATTRS += ("split", "pattern", "flags", "groups", "groupindex")

    def __init__(self, pattern: str, flags: int | re.RegexFlag = 0) -> None:
        self._source = (pattern, flags)

    def __getattr__(self, name: str) -> Any:
        # (called only for a name not yet on the object: the first use, or a name never kept;
        # never for `_source` of one made by __init__: of one pickle or copy is building, no
        # pattern yet)
        if name == "_source" or name.startswith("__"):
            raise AttributeError(name)
        compiled = self.compiled
        self.__dict__.update({attr: getattr(compiled, attr) for attr in self._ATTRS})
        return getattr(compiled, name)

    def __reduce__(self) -> tuple[type[LazyPattern], tuple[str, int | re.RegexFlag]]:
        """Pickled and copied as its source (a new LazyPattern, compiled at its first use)."""
        return LazyPattern, self._source

    @property
    def compiled(self) -> re.Pattern[str]:
        """The compiled pattern (re.compile's cache holds it after the first call)."""
        return re.compile(*self._source)


def lazy_re(pattern: str, flags: int | re.RegexFlag = 0) -> Any:
    """A pattern compiled at its first use (LazyPattern), for a module's large pattern that
    most runs never use; read as re.compile's (`.search`, `.sub`, ... `.pattern`), used only
    through those (no re.Pattern: never `re.sub(LAZY, ...)`)."""
    return LazyPattern(pattern, flags)
