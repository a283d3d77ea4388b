"""A sweep's share of the real captures: a test that runs each capture under one of several
transforms (or cuts) reads each under a share of them, so the suite's time does not grow with
transforms x captures. The share is fixed by a crc32 of the capture's name and the transform's
place in its sorted group: stable as captures are added, every capture read by some transform,
and a spread of every shape under each (round 39: whole sweeps were a third of the suite's time)."""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Sequence


def share(names: Iterable[str], transform: str, group: Sequence[str], of: int | None = None) -> list[str]:
    """The names `transform` (one of `group`) reads: each name is read under every `of`-th
    transform of the sorted group (`of` defaults to, and is at most, the group's size)."""
    order = sorted(group)
    at = order.index(transform)
    of = min(of or len(order), len(order))
    return [name for name in names if (zlib.crc32(name.encode()) + at) % of == 0]
