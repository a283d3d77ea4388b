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


def tool_words(named: str, tool: str) -> str:
    """The parts of `named` (a file name, the copied command, or both joined by a space) that
    start with the word `tool` (`free`, `df`) and run to the end of that name or command, one
    per line: `desk__free-h-si.txt free -h --si` -> "free-h-si\\nfree -h --si"; "" where the
    tool is not named."""
    at = re.compile(rf"(?:^|(?<=[\s_./$-])){re.escape(tool)}(?![A-Za-z0-9])", re.IGNORECASE)
    words = []
    for m in at.finditer(named):
        rest = named[m.start() :]
        end = _NAME_END.search(rest)
        words.append(rest[: end.start()] if end else rest)
    return "\n".join(words)
