"""Terminal text cleaning: text from a rented box (a probe's output, a file name, an error
line) is not trusted; these find and neutralise the control characters in it before it reaches a
terminal, a script line or a listing."""

from __future__ import annotations

import unicodedata


def control_char(text: str) -> str | None:
    """The first control character, line or paragraph separator in text (every line break
    str.splitlines() knows is one of them), else None: a value holding one would start a line
    of its own in a script, a listing read line by line, or a terminal."""
    return next((c for c in text if unicodedata.category(c) in ("Cc", "Zl", "Zp")), None)


def for_terminal(text: str, keep: str = "\n\t") -> str:
    """Text as it may reach a terminal: every control character but a line break and a tab
    (an ESC starting a sequence that sets the window title, writes the clipboard (OSC 52) or
    moves the cursor over earlier output; a carriage return, a bell; C1 controls) written as its
    Python escape (`\\x1b`). Text from a rented box (a probe's output, a file name, an error
    line) is not trusted. `keep`: the controls left as they are (none: one line, always)."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() or c in keep else repr(c)[1:-1] for c in text)
