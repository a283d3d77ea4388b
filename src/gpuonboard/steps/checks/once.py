"""`loaded_once`: functools.cache for the rules' reference-table loaders (data/*.yml), which every
host's thread calls: with functools.cache, the threads that arrive before the first load is done
each parse the table again (10 parses of nvlink_links.yml, 2-4 of the NGC and PCIe tables, each
10-40 ms of CPU, at the start of a 20- or 50-host check); here the first caller loads it and the
others wait for that value."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

T = TypeVar("T")


def loaded_once(load: Callable[..., T]) -> Callable[..., T]:
    """`load` cached by its arguments (as functools.cache: an error is not cached, the next
    call tries again), computed by one thread at a time; `.cache_clear()` empties it."""
    values: dict[Hashable, Any] = {}
    lock = threading.Lock()

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
                values[key] = load(*args, **kwargs)
            value = values[key]
            return value

    cached.cache_clear = values.clear  # type: ignore[attr-defined]
    return cached
