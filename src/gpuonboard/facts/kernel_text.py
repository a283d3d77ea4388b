"""A kernel log's text as its readers read it (facts/kernel_log.py, facts/kernel_oops.py): made
plain (a journal's JSON or export, `dmesg -r`: facts/kernel_shapes), a paste's wrap undone
(facts/kernel_wrap), whether its last line is cut (no newline after it, or cut by its own shape:
facts/kernel_cut), and its locale's month and weekday names.

One host's log is read by several checks (gpu_xid and nvswitch_sxid, the Oops reader, the sandbox
question of gpu_health and nvidia_driver): `by_text` keeps what was made of one text object for
the next reader of that same object, so that each log is read once. It is keyed by the object
itself, never by an equal text of another host."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, NamedTuple, TypeVar

from gpuonboard.facts.kernel_cut import cut_as_repeated, cut_by_shape, line_heads, locale_words
from gpuonboard.facts.kernel_shapes import plain_kernel_text
from gpuonboard.facts.kernel_wrap import PROBE_HEADER as _HEADER
from gpuonboard.facts.kernel_wrap import unwrapped as _unwrapped

T = TypeVar("T")

# the texts whose reading is kept: more than the hosts a check reads at once (its forks), so that
# one host's readers find its log still kept between the first check that reads it and the last
BY_TEXT_KEPT = 256


class by_text(Generic[T]):  # noqa: N801 (used as a decorator, as functools.cache is)
    """`make(text)` kept for the text object given (its identity, not its value: another host's
    log of equal text is read apart, as it would be without the cache), for the last
    BY_TEXT_KEPT texts; the text is held with its value, so that its id is no other text's while
    kept. `make` must depend on the text alone and return a value no reader changes (frozen
    dataclasses, tuples). Thread-safe: two threads may each make the value of one text (the
    same value); one is kept."""

    def __init__(self, make: Callable[[str], T], kept: int = BY_TEXT_KEPT) -> None:
        self.make = make
        self.kept = kept
        self.values: dict[int, tuple[str, T]] = {}
        self.lock = threading.Lock()
        self.__doc__ = make.__doc__
        self.__name__ = getattr(make, "__name__", "by_text")
        self.__wrapped__ = make

    def __call__(self, text: str) -> T:
        held = self.values.get(id(text))
        if held is not None and held[0] is text:
            return held[1]
        value = self.make(text)
        with self.lock:
            if len(self.values) >= self.kept:
                del self.values[next(iter(self.values))]
            self.values[id(text)] = (text, value)
        return value

    def cache_clear(self) -> None:
        with self.lock:
            self.values.clear()


class LogText(NamedTuple):
    """A kernel log's text as read: `plain` (facts/kernel_shapes.plain_kernel_text), its lines
    with a wrap's pieces joined, whether its last line is cut, its locale's words."""

    plain: str
    lines: tuple[str, ...]
    open_end: bool
    words: dict[str, str]


@by_text
def log_text(text: str) -> LogText:
    """`text` (a kernel log as given) as its readers read it (LogText)."""
    plain = plain_kernel_text(text)
    open_end = _open_end(plain)
    words = locale_words(plain.splitlines()) if open_end else {}
    # (a last line cut by its own shape is cut though a newline follows it: kernel_cut.cut_by_shape)
    if not open_end and (shaped := _cut_with_newline(plain)) is not None:
        open_end, words = True, shaped
    return LogText(plain, tuple(_unwrapped(plain.splitlines(), open_end, words)), open_end, words)


def kernel_lines(text: str) -> list[str]:
    """A saved kernel log's lines as its reader reads them (made plain, a wrap's pieces joined):
    the Oops reader's too (before, a mail-quoted then wrapped Oops lost `Tainted: P`)."""
    return list(log_text(text).lines)


def _open_end(text: str) -> bool:
    """True when the text's last line has no newline after it: the kernel ends every line with
    one, so the log was cut inside that line (or saved without its last newline)."""
    body = text.rstrip(" \t")
    return bool(body.strip()) and not body.endswith(("\n", "\r"))


def _cut_with_newline(text: str) -> dict[str, str] | None:
    """Where the log's last line is cut by its own shape though a newline follows it (a paste's
    excerpt cut mid-line, saved with one), or is the beginning of a driver line the log printed
    whole before it (kernel_cut.cut_as_repeated): the log's locale month and weekday names (locale_words,
    read as the English ones), as for the same line without its newline; None where it is not."""
    tail = text.rstrip().splitlines()[-50:]
    if not tail or _HEADER.match(tail[-1]):
        return None
    words = locale_words(tail)
    return words if cut_by_shape(tail[-1], words, line_heads(tail[:-1])) or cut_as_repeated(tail) else None
