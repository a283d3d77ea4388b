"""A poster's label or caption line naming the command that printed the output below it: read as
the copied command, as a prompt line is (api/saved_text.py, api/typed_commands.py).

- A label's keyword before the command (`Command: numactl --hardware`, `Output of nvidia-smi -L:`,
  `**Output of `lscpu`:**`, `Running free -m:`), LABEL_LINE;
- or a line that names it in inline code (or in quotes, as prose names a command: `EG this
  "docker exec -it frigate nvidia-smi" shows:`) and ends in a colon, after that code or right before it (an
  issue template's `- [x] Output from running `nvidia-smi` from the driver container: `kubectl
  exec DRIVER_POD_NAME -n OPERATOR_NAMESPACE -c nvidia-driver-ctr -- nvidia-smi``, `Output of
  `docker info`:`, `` `nvidia-smi` shows: ``): its last code span that is a command of a tool
  whose output is read is the command, placeholders and all (the later span says where it ran:
  the driver container's). Before, such a line was dropped without a word, and a table it labels
  as a container's `kubectl exec ... -- nvidia-smi` was read as the box's own (gpu_count passed,
  measure39e 17), where the same table under a prompt line of that command is unverified.

A list item's marker, a task list's box, a heading's `#` marks and an emphasis may stand before
the label's words (`- [x] `, `3. `, `## `, `**`). A label a page or a terminal wrapped inside its
code span (the template's line is 150 columns) is read joined again (wrapped_label).
"""

from __future__ import annotations

from collections.abc import Sequence

from gpuonboard.api.command_line import CONTAINER_CLIS
from gpuonboard.api.transcript import COMMANDS, LONGEST_PROMPT, command_of
from gpuonboard.once import lazy_re

__all__ = ["LABEL_LINE", "label_command", "wrapped_label"]

# a poster's label or caption line naming the command above its output (`Command: numactl
# --hardware`, `Output of nvidia-smi -L:`, `**Output of `lscpu`:**`, `Running free -m:`): the
# copied command, as a prompt line is
LABEL_LINE = lazy_re(
    r"(?:#+\s*|\*\*)?(?i:command|cmd|output of|output from|result of|results of|running)\s*:?\s*"
    r"(?:\*\*\s*)?[`'\"]*"
    rf"(?P<command>(?:sudo\s+)?(?:\S*[/\\])?{COMMANDS}(?:[\s|;&][^\n`'\"]*?)?)"
    r"[`'\"]*\s*:?\s*(?:\*\*)?:?"
)
# the Markdown before a label's words: a list item's marker (`-`, `*`, `+`, `3.`, `3)`), a task
# list's box (`[x]`, `[ ]`), a heading's marks, an emphasis's opener
_DECORATION = lazy_re(
    r"[ \t]*(?:(?:[-*+]|\d{1,2}[.)])[ \t]+)?(?:\[[ xX]\][ \t]*)?(?:#{1,6}[ \t]+)?(?:\*\*|__|\*|_)?"
)
# an inline code span (one backtick each side), or a command named in quotes inside a poster's
# sentence, as prose names it (`EG this "docker exec -it frigate nvidia-smi" shows:`, `Here's
# what 'nvidia-smi -L' says:`; typographic quotes come here as ASCII ones): the same span; a
# single quote only off a word (an apostrophe, `Here's`, opens none)
_CODE = lazy_re(r"`(?P<b>[^`\n]+)`|\"(?P<d>[^\"\n]+)\"|(?<!\w)'(?P<s>[^'\n]+)'(?!\w)")
# a command of a tool whose output is read (`kubectl exec POD -- nvidia-smi`, `sudo lscpu`,
# `/usr/bin/nvidia-smi -L`), a prompt's sign before it dropped (command_of)
_COMMAND = lazy_re(rf"(?:sudo\s+(?:-\S+\s+)*)?(?:\S*[/\\])?{COMMANDS}(?:\s.*)?")
# a label's end: its colon (ASCII or full-width), an emphasis's closer around it
_COLON_END = lazy_re(r"[:：][*_ \t]*$")


def label_command(line: str) -> str | None:
    """The command a poster's label line names (module doc), None where `line` is no such label."""
    text = line.strip()
    if not text or len(text) > LONGEST_PROMPT:
        return None
    if found := LABEL_LINE.fullmatch(text):
        return str(found.group("command")).strip()
    rest = text[_DECORATION.match(text).end() :]
    spans = list(_CODE.finditer(rest))
    if not spans:
        return None
    last = spans[-1]
    after = rest[last.end() :]
    colon_after = bool(_COLON_END.search(after))  # (`Output of `docker info`:`, `` `X` shows: ``)
    # (`... from the driver container: `kubectl exec ...``: the command last, after the colon)
    colon_before = not after.strip(" \t*_") and bool(_COLON_END.search(rest[: last.start()]))
    if not (colon_after or colon_before):
        return None
    named = [command_of(next(part for part in span.groups() if part is not None)) for span in spans]
    # (a container CLI's name alone, `using `ctr`:`, names no command that printed an output)
    commands = [said for said in named if _COMMAND.fullmatch(said) and said not in CONTAINER_CLIS]
    return commands[-1] if commands else None


# the most lines a wrapped label is read over (its first and those its code span goes on on)
_WRAPPED_LINES = 4


def wrapped_label(lines: Sequence[str], at: int) -> tuple[str, int] | None:
    """(the label line `at` starts joined with the lines it was wrapped onto, the index of its
    last line) where line `at` holds a backtick and is no label alone, and it and the lines after
    it, each joined where a code span is open across its start or it holds one (a page's wrap
    before the code: `... from the driver` / `container: `kubectl exec ...``), make a label naming
    a command (label_command); joined with a blank (a mail's or a page's word wrap drops the
    blank it broke at; a terminal's cut at a column keeps it on the next line: the same words).
    None otherwise."""
    line = lines[at].strip()
    if "`" not in line or len(line) > LONGEST_PROMPT or label_command(line):
        return None
    joined, end = line, at
    while end + 1 < min(len(lines), at + _WRAPPED_LINES):
        end += 1
        below = lines[end].strip()
        if not below or (joined.count("`") % 2 == 0 and "`" not in below):
            return None
        joined += f" {below}"
        if joined.count("`") % 2 == 0 and label_command(joined):
            return joined, end
    return None
