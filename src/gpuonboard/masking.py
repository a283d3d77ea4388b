"""Secret masking: `Secret` wraps a value at construction so that it prints masked everywhere
(logs, reports, argv refuse it: see `shell.quote`), and `mask` / `mask_written` scrub every live
secret's value from text we log or write."""

from __future__ import annotations

import re
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


# A command the user gives us to run on a host (autostop's --before-shutdown, its shutdown
# command) may hold a token anywhere: `curl -H "Authorization: Bearer T"`, a webhook URL with
# its key, `--password P`. Such a command is shown (status, logs, messages) by `command_shown`:
# only the words that cannot be a secret stay (the program, option flags, local paths, plain
# lower-case words such as `stop`, numbers), every other word is the mask, and a short digest
# of the whole command tells two commands apart.
_PROGRAM = re.compile(r"[A-Za-z0-9_./+-]{1,64}")
_FLAG = re.compile(r"--?[A-Za-z][A-Za-z0-9-]{0,40}")
_PATH = re.compile(r"(~|\$HOME)?/[A-Za-z0-9_./-]{0,200}")
_PLAIN = re.compile(r"[a-z]{1,16}(-[a-z]{1,16}){0,3}|\+?[0-9]{1,6}|\$\{?[A-Za-z_][A-Za-z0-9_]{0,40}\}?")
# an option whose value is a secret whatever it looks like (`--password hunter`, curl's `-H`)
_SECRET_FLAG = re.compile(r"(?i:pass|pw|token|key|secret|auth|cred|cookie|header|bearer|sig)|^-[Hup]$")
_SHOWN_FIRST = ("sudo", "env", "timeout", "nice", "nohup", "exec")


def command_shown(command: str) -> str:
    """`command` with every word that may be a secret masked (see above), plus its digest where
    a word was masked; a command of safe words only (`shutdown -h now`) is shown as it is."""
    import hashlib

    words, shown, _ = _command_words(command)
    text = " ".join(shown)
    if shown != words or MASK in shown:
        digest = hashlib.sha256(command.encode("utf-8", "surrogateescape")).hexdigest()[:8]
        text += f" [sha256:{digest}]"
    return text


def command_secrets(command: str) -> list[str]:
    """The words of `command` that command_shown masks (4 characters or more), and their parts
    of 8 or more between blanks, `:`, `=`, `/`, `?`, `&` or `@` (the token of `Authorization:
    Bearer TOKEN`, a URL's key), longest first: what a text that may repeat them (the command's
    own output, an older log line that showed it) is scrubbed of."""
    _, _, masked = _command_words(command)
    found: set[str] = set()
    for word in masked:
        found.add(word)
        found.update(p for p in re.split(r"[\s:=/?&@]+", word) if len(p) >= 8)
    return sorted((w for w in found if len(w) >= 4 and w.strip("*")), key=lambda w: (-len(w), w))


def _command_words(command: str) -> tuple[list[str], list[str], list[str]]:
    """The command's words, as shown (each that may be a secret masked), and the masked ones."""
    import shlex

    try:
        words = shlex.split(command, comments=False, posix=True)
    except ValueError:  # an unclosed quote: the program, the rest masked
        split = command.split()
        words = split[:1] + [MASK] * bool(split[1:])
        return words, list(words), split[1:]
    shown: list[str] = []
    masked: list[str] = []
    program_next, value_next = True, False
    for word in words:
        if value_next:  # the value of a secret's option
            shown.append(MASK)
            value_next = False
        elif program_next and (assign := _ASSIGN.fullmatch(word)):  # `LANG=C cmd`, `KEY=T cmd`
            name, value = assign.group(1), assign.group(2)
            safe = not _SECRET_FLAG.search(name) and bool(_VALUE.fullmatch(value) or _PATH.fullmatch(value))
            shown.append(word if safe else f"{name}={MASK}")
            word = word if safe else value
        elif program_next and shown and _FLAG.fullmatch(word):  # `sudo -n CMD`: CMD is the program
            shown.append(word)
        elif program_next:
            shown.append(word if _PROGRAM.fullmatch(word) else MASK)
            program_next = word in _SHOWN_FIRST
        elif _FLAG.fullmatch(word):
            shown.append(word)
            value_next = bool(_SECRET_FLAG.search(word))
        else:
            shown.append(word if _safe_word(word) else MASK)
        if shown[-1] != word:
            masked.append(word)
    return words, shown, masked


_ASSIGN = re.compile(r"([A-Za-z_][A-Za-z0-9_]{0,40})=(.*)", re.S)
# a value that cannot be a secret: a locale (`LANG=C.UTF-8`), a number, a `$VAR`
_VALUE = re.compile(
    r"(C|POSIX|[a-z]{2,3}_[A-Z]{2})(\.[A-Za-z0-9-]{1,16})?|[0-9]{1,6}|\$\{?[A-Za-z_][A-Za-z0-9_]{0,40}\}?"
)


def _safe_word(word: str) -> bool:
    """A word that cannot be a secret: a local path, a plain lower-case word, a number, a `$VAR`."""
    return bool(_PATH.fullmatch(word) or _PLAIN.fullmatch(word))
