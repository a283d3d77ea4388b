"""Commands listed first, their outputs after: a report's block that shows the commands it ran
(`nvidia-smi -L`, `nvidia-smi --query-gpu=... --format=csv`) on the first lines, then what each
printed, in order, with no prompt between (m35e 15: read as one output, "nvidia-smi answered but
listed no GPU"). Read as a session: each output placed under its command, where the outputs split
into one output of a known kind per command, each kind other than the next one's."""

from __future__ import annotations

import re

from gpuonboard.api import transcript
from gpuonboard.api.saved_kinds import detect_kind

# a command line, with or without a `$ ` prompt (transcript's typed command)
_TYPED = re.compile(
    rf"(?:\$\s*)?(?:sudo\s+(?:-\S+\s+)*)?(?:\S*/)?{transcript.COMMANDS}(?:\s[ -~]*?)?(?<!:)\s*"
)
# the most lines of outputs tried (each split tried is read twice: a short report's block), the
# most commands
_MOST_LINES, _MOST_COMMANDS = 80, 4
# a line's shape: its indent and first word, digits as one (`GPU N:` of each -L line alike)
_SHAPE = re.compile(r"^\s*\S*")


def listed_first(text: str) -> str | None:
    """`text` as a session (each command under a `$ ` prompt, above its output) where its first
    lines are 2 to 4 commands whose output is read and the rest splits into their outputs; None
    otherwise."""
    lines = text.split("\n")
    filled = [i for i, line in enumerate(lines) if line.strip()]
    commands: list[str] = []
    for i in filled:
        if not _TYPED.fullmatch(lines[i].strip()) or (commands and i != filled[len(commands) - 1] + 1):
            break
        commands.append(lines[i].strip().removeprefix("$").strip())
    if not 2 <= len(commands) <= _MOST_COMMANDS or len(filled) <= len(commands):
        return None
    rest = lines[filled[len(commands) - 1] + 1 :]
    if len(rest) > _MOST_LINES:
        return None
    outputs = _split(rest, len(commands))
    if outputs is None:
        return None
    return "".join(f"$ {command}\n{output}\n" for command, output in zip(commands, outputs, strict=True))


def _split(lines: list[str], n: int) -> list[str] | None:
    """`lines` as `n` outputs in order: each a run from the top that reads as the kind its first
    lines read as, the rest reading as another kind (where several places split so, the last
    after a blank line, else the last); None where they do not split so."""
    text = "\n".join(lines).strip("\n")
    if n == 1:
        return [text] if detect_kind(text + "\n") is not None else None
    body = text.split("\n")
    first, ends = None, []
    shapes = [re.sub(r"\d+", "N", m.group()) if (m := _SHAPE.match(line)) else "" for line in body]
    for b in (b for b in range(1, len(body)) if shapes[b] != shapes[b - 1]):  # (where an output may start)
        kind = detect_kind("\n".join(body[:b]) + "\n")
        first = first or kind
        if kind is not None and kind == first:
            after = detect_kind("\n".join(body[b:]) + "\n")
            if after is not None and after != first:
                ends.append(b)
    # (of the places it may end, the last after a blank line; else the last: `-L`'s lines read as part
    # of a CSV below them, never a CSV's header as part of a listing)
    end = next((b for b in reversed(ends) if not body[b - 1].strip()), ends[-1] if ends else 0)
    if not end:
        return None
    tail = _split(body[end:], n - 1)
    return None if tail is None else ["\n".join(body[:end]), *tail]
