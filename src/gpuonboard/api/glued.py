"""A tool's output a paste glued onto its copied command line: a page that lost its line ends
puts `[root@host ~]# df -h Filesystem Size ... /data` (prompt, command and output) on one line.

Only df's and free's headers start such an output here (the readers' own tables of their
labels, C-locale and translated: disks.df_labels(), memory.free_labels()), and only where the
header runs on to what df's or free's own header ends with (df's `Mounted on`, free's first row
label): `$ df -h Filesystem Size Used` is a command whose argument looks like a header. A line
that holds another prompt, or a command of another tool before the header, holds several
commands' outputs, which cannot be told apart: it is refused, never read as one of them.
"""

from __future__ import annotations

import functools
import re

from gpuonboard.facts.disks import df_header, df_labels
from gpuonboard.facts.memory import free_labels, opens_with_free_header

# why a line is refused: several commands and their outputs on one line
SEVERAL = (
    "several commands' outputs share one line (a page that lost its line ends), which cannot be"
    " told apart: put each command and its output on lines of their own, as the terminal printed them"
)
# the tools whose output is another kind than the glued header's (a command of one of them
# before df's header is no df: `$ nvidia-smi bash: nvidia-smi: command not found $ free -g ...`)
_TOOLS = frozenset(
    {"df", "free", "lsblk", "lscpu", "nvidia-smi", "nproc", "nvcc", "dmesg", "journalctl", "ibstat"}
)
# another prompt on the line: a lone sign and a word (`$ curl`, `# df`), a `user@host` prompt,
# `[root@h ~]#` (not a capacity's `1%` nor a path's `$`)
_OTHER_PROMPT = re.compile(r"(?<!\S)(?:[$#%>❯➜λ»]\s+\S|(?:\[[^\]\s]*@[^\]]*\]|[\w.-]+@[\w.-]+\S*?)\s*[$#%>])")


@functools.cache
def _header_start() -> re.Pattern[str]:
    """The first word of df's header (`Filesystem`, `文件系统`, `Sys. de fichiers`) or of free's
    (`total`, `总计`), standing alone."""
    words = {"Filesystem", "total"}
    words |= {t for _, t, e in df_labels() if e == "Filesystem"}
    words |= {t for _, t, e in free_labels() if e == "total"}
    ordered = sorted(words, key=len, reverse=True)
    return re.compile(
        r"(?<!\S)(?:" + "|".join(re.escape(w).replace(r"\ ", r"\s+") for w in ordered) + r")(?!\S)"
    )


def _glued_kind(rest: str) -> str | None:
    """ "df" or "free" where `rest` opens with that tool's whole header (df's through `Mounted
    on`, free's up to its first row), else None."""
    header = df_header(rest)
    if header is not None and "Mounted on" in " ".join(header):
        return "df"
    return "free" if opens_with_free_header(rest) else None


def _tool(command: str) -> str:
    """The tool's name of a command (`df` of `/usr/bin/df -h`, `nvidia-smi` of `nvidia-smi.exe`)."""
    word = command.split(" ", 1)[0]
    return word.rsplit("/", 1)[-1].removesuffix(".exe")


def split(line: str, command: str) -> tuple[str, str] | str | None:
    """(the prompt and command, the output glued after it) of a copied command line, or why the
    line is refused (SEVERAL); None where no df or free header is glued onto it. `command`: the
    line's command from its tool on (`df -h` of `$ sudo df -h ...`)."""
    word = command.split(" ", 1)[0]
    # (the tool's own word, not a host name holding it: `root@freebox:~# free -h`)
    named = re.search(rf"(?<![\w.@-]){re.escape(word)}(?![\w.-])", line) if word else None
    if named is None:
        return None
    start = named.start()
    for found in _header_start().finditer(line, start + len(word)):
        kind = _glued_kind(line[found.start() :])
        if kind is None:
            continue
        before, rest = line[start : found.start()], line[found.start() :]
        tool = _tool(command)
        if (
            _OTHER_PROMPT.search(before)
            or _OTHER_PROMPT.search(rest)
            or (tool in _TOOLS and tool != kind)
            or _another_command(rest)
        ):
            return SEVERAL
        return line[: found.start()].rstrip(), rest
    return None


# a command of a tool with its options right before a header, without a prompt (`... Swap: 1952764
# 0 1952764 free -h total used ...`: a second command's output after the first's)
_COMMAND_BEFORE = re.compile(
    rf"(?<!\S)(?:sudo\s+)?(?:\S*/)?(?:{'|'.join(map(re.escape, sorted(_TOOLS)))})(?:\s+-{{1,2}}[\w=-]+)*\s+$"
)


def _another_command(rest: str) -> bool:
    """Whether the output glued onto a line holds another tool's command and its output after
    the first header (two commands' outputs on one line, with no prompt between them)."""
    return any(
        _glued_kind(rest[found.start() :]) is not None and _COMMAND_BEFORE.search(rest[: found.start()])
        for found in _header_start().finditer(rest, 1)
    )


def header_starts(line: str) -> list[int]:
    """Where df's or free's header may start in a line (its first word's place, each one)."""
    return [found.start() for found in _header_start().finditer(line)]
