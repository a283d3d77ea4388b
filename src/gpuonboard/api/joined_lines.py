"""A saved output whose lines a chat or a page joined (each line break a space: the whole output
one line, or every two lines one), told by the signs its format prints once per line; offline
refuses such a file with a sentence (api/offline.py), as what each joined piece belongs to is
lost.

A kernel log: a stamp after another message's words; and, where no two stamps meet on one line
(a journal whose message goes on in stamp-less `NVRM: ` lines, every two lines joined: the
zh-CN journal of open-gpu-kernel-modules#626), a second `NVRM: ` after words, or a paste's
elision mark (`[...snip...]`, facts/elision.py) after words: each the start of a line of its own.

`nvidia-smi -L`'s GPU line with more text after its `(UUID: ...)` than a joined listing's next
`GPU N:` / `MIG ... Device N:`: another command's lines joined onto it (`nvidia-smi nvlink -s`'s
`GPU 0: ... (UUID: GPU-...) Link 0: 25 GB/s ...`), which lists no GPU count (before, such a
line was read as a listing of 1 GPU: gpu_count passed an order of 1 on an 8-GPU box).
"""

from __future__ import annotations

import re

from gpuonboard.api.paste import PASTED_STAMP
from gpuonboard.facts.elision import ELISION

__all__ = ["joined_gpu_lines", "joined_messages"]

_STAMP_AT = re.compile(rf"(?:^|(?<=\s)){PASTED_STAMP}")
_JOINED_AT = re.compile(rf"(?<=[^\s:])[ \t]+(?={PASTED_STAMP})")
# (a journal's lines with no time or host, `kernel: NVRM: ...`, joined)
_KERNEL_AFTER_WORDS = re.compile(r"(?<=[^\s:])[ \t]+kernel: ")
# a driver line's `NVRM: ` (the first of a line, and any a joined line goes on with)
_NVRM_AT = re.compile(r"(?:^|(?<=\s))NVRM: ")
# a journal's structured entry (`journalctl -o export`'s `MESSAGE=`, `-o json`'s object): one
# message of several driver lines is one field, its `NVRM: ` lines the driver's own, not joined
_STRUCTURED = re.compile(r'\s*(?:MESSAGE=|\{"|"MESSAGE"\s*:)')
# a paste's elision mark after words: `[...snip...]`, `[...]`, `(...)`, `<snip>`, `--snip--`
# (bare dots are none: a message's own `...`)
_ELISION_AFTER_WORDS = re.compile(
    r"(?<=\S)[ \t]+([\[(<{][^\])>}\n]{1,60}[\])>}]|-{2,}[ \t]*snip\w*[ \t]*-{2,})(?=\s|$)"
)


def _elision_after_words(line: str) -> bool:
    """An elision mark after words that says lines were left out: one with a note (`[...snip...]`,
    `<snip>`) or `[...]`; a bare `(...)` is a message's value redacted (`Xid (PCI:...): 145, ...
    Link 11 (...)`)."""
    return any(
        ELISION.match(mark) and (mark.startswith("[") or re.search("[A-Za-z]", mark))
        for mark in (m.group(1) for m in _ELISION_AFTER_WORDS.finditer(line))
    )


def joined_messages(text: str) -> int:
    """How many lines of a kernel log hold more than one of its lines (see the module's
    docstring): a stamp (PASTED_STAMP) after another's words, a second `NVRM: `, or an elision
    mark after words. A syslog line's own dmesg stamp after its `kernel: ` is none. Such a log's
    messages can be cut apart at their stamps, but not the lines a message continues on (`NVRM:
    ...` without a stamp), so which message a PCI address or a count belongs to is lost, and a
    joined elision mark no longer says lines were left out (offline refuses it)."""
    return sum(
        1
        for line in text.split("\n")
        if (len(_STAMP_AT.findall(line)) > 1 and _JOINED_AT.search(line))
        or (line.startswith("kernel: ") and _KERNEL_AFTER_WORDS.search(line))
        or (len(_NVRM_AT.findall(line)) > 1 and not _STRUCTURED.match(line))
        or _elision_after_words(line)
    )


# a `-L` GPU line's entry, and what a joined listing's next entry starts with
_GPU_ENTRY = re.compile(r"^\s*GPU\s+\d+:[^\n]*?\((?:UUID|S/N):[^)\n]*\)")
_NEXT_ENTRY = re.compile(r"\s*,?\s*(?:GPU\s+\d+:|MIG\s+\S+\s+Device\s+\d+:)")
# the next entry begun where the text ends (a joined listing cut short: `... (UUID: GPU-...) GP`)
_NEXT_BEGUN = re.compile(r"\s*,?\s*(?:G(?:P(?:U(?:\s+\d*:?)?)?)?|M(?:I(?:G\b.*)?)?)\s*")


def joined_gpu_lines(text: str) -> int:
    """How many of `-L`'s GPU lines go on after their `(UUID: ...)` / `(S/N: ...)` with other
    text than a joined listing's next entry (see the module's docstring)."""
    out = 0
    lines = text.split("\n")
    filled = [at for at, line in enumerate(lines) if line.strip()]
    for at, line in enumerate(lines):
        rest = line
        while m := _GPU_ENTRY.match(rest):
            rest = rest[m.end() :]
            last = at == filled[-1]
            if _NEXT_ENTRY.match(rest):
                rest = rest.lstrip(" \t,")
            elif rest.strip() and not (last and _NEXT_BEGUN.fullmatch(rest)):
                out += 1
                break
    return out
