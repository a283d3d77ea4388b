"""`loaded_once`: functools.cache (or lru_cache) for what every host's thread computes once per
run: a reference table (data/*.yml), a compiled pattern, the probes' list, a parsed key file.
With functools' caches, the threads that arrive before the first value is made each make it
again: a check's hosts start together, so at 50 hosts the client key was parsed 50 times and
core_probes, the lscpu labels or the PCI id table 4-20 times (a first call that imports a
module, paramiko or the facts' parsers, holds the others on the import and they then all
compute). Here the first caller computes it and the others wait for that value."""

from __future__ import annotations

import functools
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
