"""What a shell printed of a command line a terminal wrapped, among a saved command's output: the
command's rest, which the shell ran as a command of its own, and its word that that names no
command. Pure: no I/O."""

from __future__ import annotations

import re

# the shell's word that a line it ran names no command (`-bash: ion.gpu,power.draw: command not
# found`, `bash: line 2: x: command not found`, dash's `sh: 1: x: not found`, zsh's `zsh: command
# not found: x`)
_SHELL_NOT_FOUND = re.compile(
    r"-?(?:ba|da|k)?sh(?:: line \d+|: \d+)?: (?P<word>\S+): (?:command )?not found"
    r"|zsh: command not found: (?P<zword>\S+)"
)


def without_wrap_traces(lines: list[str]) -> tuple[list[str], str]:
    """`lines` without the traces of a command line the terminal wrapped (beszel#262: `nvidia-smi
    --query-gpu=...,utilizat` typed, `ion.gpu,power.draw --format=csv,...` on the next line): the
    rest of the command, which the shell ran as a command of its own, and the shell's word that it
    names none (`-bash: ion.gpu,power.draw: command not found`, naming that line's first word); and
    that rest ("" where there are none)."""
    for at, line in enumerate(lines):
        found = _SHELL_NOT_FOUND.fullmatch(line)
        word = found and (found.group("word") or found.group("zword"))
        if not word:  # (the lines above are looked at only under the shell's word: linear time)
            continue
        rest = next((i for i in range(at) if lines[i].split()[:1] == [word]), None)
        if rest is not None:
            return [other for i, other in enumerate(lines) if i not in (rest, at)], lines[rest]
    return lines, ""
