"""Secret masking: `Secret` wraps a value at construction so that it prints masked everywhere
(logs, reports, argv refuse it: see `shell.quote`), and `mask` / `mask_written` scrub every live
secret's value from text we log or write."""

from __future__ import annotations

import weakref
from collections.abc import Iterable

MASK = "********"


class Secret:
    """A value that prints masked everywhere; call `reveal()` only where it is sent (stdin)."""

    __slots__ = ("_value", "__weakref__")

    def __init__(self, value: str) -> None:
        self._value = value
        _LIVE_SECRETS.add(self)

    def reveal(self) -> str:
        """The real value, for writing to a channel's stdin; never for logs or argv."""
        return self._value

    def __repr__(self) -> str:
        return f"Secret({MASK})"

    def __str__(self) -> str:
        return MASK

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)


_LIVE_SECRETS: weakref.WeakSet[Secret] = weakref.WeakSet()


def mask(text: str, secrets: Iterable[Secret | str] | None = None) -> str:
    """Replace every secret's value in text with the mask (for logs and reports).

    Without an explicit list, every Secret alive in this process is masked.
    """
    for secret in list(_LIVE_SECRETS) if secrets is None else secrets:
        value = secret.reveal() if isinstance(secret, Secret) else secret
        if value:
            text = text.replace(value, MASK)
    return text


def mask_written(text: str) -> str:
    """mask() for a file's text (summary.json, junit.xml, a report): every live secret in the
    forms JSON, XML and HTML writers escape it to (quotes, backslashes, line breaks, <, &) as
    well as the plain one."""
    import html
    import json

    for secret in list(_LIVE_SECRETS):
        value = secret.reveal()
        if not value:
            continue
        forms = {
            value,
            json.dumps(value)[1:-1],
            json.dumps(value, ensure_ascii=False)[1:-1],
            html.escape(value),
        }
        for form in sorted(forms, key=len, reverse=True):
            text = text.replace(form, MASK)
    return text
