"""Rules every inventory format shares (ours in `inventory`, Ansible's YAML and INI in
`ansible_inventory`): how many hosts one inventory may hold and which names are refused.

Its own module so that both loaders import it and neither imports the other at load time
(`inventory` calls `ansible_inventory`; the rules used to live in `inventory`: an import cycle).
"""

from __future__ import annotations

from typing import Any

from gpuonboard.termtext import control_char

# hosts in one inventory: a rented fleet is tens of boxes; a range like `gpu-[0:99999999]` is
# refused before it is expanded (it held 7.1 GB), and everything per host stays bounded
MAX_HOSTS = 10_000

# line breaks as Python's splitlines() knows them (sh ends a line at "\n" alone; all are refused)
_LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"


def is_digits(text: str) -> bool:
    """Whether `text` is one or more ASCII digits 0-9. `str.isdigit()` also takes '²' (which
    int() then refuses: a crash) and Arabic-Indic digits (read as a number no one wrote)."""
    return text.isascii() and text.isdigit()


def name_problem(kind: str, name: Any) -> str | None:
    """Why a host, group or vendor name is refused, or None: a control character or a line or
    paragraph separator. Names reach scripts, comments of a script cron runs as root, file names
    and messages: `h1\\ntouch /tmp/x` would start a line of its own there."""
    if not isinstance(name, str):
        return None
    bad = control_char(name)
    if bad is None:
        return None
    what = "a line break" if bad in _LINE_BREAKS else "a control character"
    return (
        f"{kind} name {name!r} holds {what} ({bad!r}); a {kind} name must be one line of printable"
        " text: rename it."
    )
