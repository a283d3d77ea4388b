"""What a saved output's file name and copied command say of the flags its tool ran with.

A saved file is named for its command (`free-m.txt`, `free -h --si.txt`, `df-H.txt`), maybe
after a host's or cluster's name (`desk__free-h-si.txt`, `mega-node_free-m.txt`) and before a
description (`free-h__si-cluster.txt`); the copied command above it (`$ free -h --si`) says the
same. Only the words from the tool's name on are read, and in a file name only up to its
description (`__`) or its extension: a host named `mega-node` or a description holding `si` is
no flag.
"""

from __future__ import annotations

import re
import shlex

from gpuonboard.once import lazy_re

# a file name's end: its description after `__`, or its extension (`.txt`, `.log`, `.out`)
_NAME_END = lazy_re(r"__|\.[A-Za-z0-9]{1,5}(?=\s|$)")
# what ends one command of a pipe or a list
_SEPARATORS = frozenset({"|", "||", "&&", ";", "&", "|&", ";;", "(", ")"})


def _one_command(text: str) -> str:
    """The words of the shell command `text` starts with (`df -h && free --si` -> `df -h`), as
    the shell splits them (a quoted `|` is an argument's), redirections and their targets left
    out (`df 2>/dev/null -H` -> `df 2 -H`); a text the shell could not split (an unclosed
    quote) up to its first separator character."""
    try:
        lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        tokens = list(lexer)
    except ValueError:
        return re.split(r"[|;&<>()]", text, maxsplit=1)[0]
    words: list[str] = []
    redirected = False
    for token in tokens:
        if token in _SEPARATORS:
            break
        if redirected or not token.strip("<>&"):  # (`>`, `>>`, `<`, `>&`: the target follows)
            redirected = not redirected and not token.strip("<>&")
            continue
        words.append(token)
    return " ".join(words)


def tool_words(name: str, tool: str, command: str = "") -> str:
    """The words of a saved output's file `name` and copied `command` that start with the word
    `tool` (`free`, `df`), one run per line: in the name up to its description (`__`) or its
    extension, in the command to the end of that command (`free -s 0.5 --si` keeps its `--si`;
    `| tee giga.txt` and `&& free --si` after `df -h` are other commands):
    `desk__free-h-si.txt` and `free -h --si` -> "free-h-si\nfree -h --si"; "" where the tool is
    named in neither."""
    at = re.compile(rf"(?:^|(?<=[\s_./$;|&(-])){re.escape(tool)}(?![A-Za-z0-9])", re.IGNORECASE)
    words = []
    for m in at.finditer(name):
        rest = name[m.start() :]
        end = _NAME_END.search(rest)
        words.append(rest[: end.start()] if end else rest)
    # (in a command, to the end of that one command: not the next of `df -h && free --si`)
    words += [_one_command(command[m.start() :]) for m in at.finditer(command)]
    return "\n".join(words)
