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

# a file name's end: its description after `__`, or its extension (`.txt`, `.log`, `.out`)
_NAME_END = re.compile(r"__|\.[A-Za-z0-9]{1,5}(?=\s|$)")
# a command's end: the next command of a pipe or a list, or a redirection
_COMMAND_END = re.compile(r"\||;|&&|>|<")


def tool_words(name: str, tool: str, command: str = "") -> str:
    """The words of a saved output's file `name` and copied `command` that start with the word
    `tool` (`free`, `df`), one run per line: in the name up to its description (`__`) or its
    extension, in the command to the end of that command (`free -s 0.5 --si` keeps its `--si`;
    `| tee giga.txt` and `&& free --si` after `df -h` are other commands):
    `desk__free-h-si.txt` and `free -h --si` -> "free-h-si\nfree -h --si"; "" where the tool is
    named in neither."""
    at = re.compile(rf"(?:^|(?<=[\s_./$-])){re.escape(tool)}(?![A-Za-z0-9])", re.IGNORECASE)
    words = []
    for m in at.finditer(name):
        rest = name[m.start() :]
        end = _NAME_END.search(rest)
        words.append(rest[: end.start()] if end else rest)
    # (in a command, to the end of that one command: not the next of `df -h && free --si`)
    words += [_COMMAND_END.split(command[m.start() :], 1)[0] for m in at.finditer(command)]
    return "\n".join(words)
