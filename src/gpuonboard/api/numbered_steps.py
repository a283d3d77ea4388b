"""An issue's numbered reproduction steps, each a command after its list number and that command's
output below it (`2. nvidia-smi -L` / `GPU 0: NVIDIA GeForce RTX 2060 (UUID: ...)`, `3. nvidia-ctk
--version` / its lines; HAMi's `3.sudo docker run ... nvidia-smi`, no blank after the number):
the list number is the step's prompt, so each step is a command of a saved session
(api/transcript.py), read as under a `$ ` prompt. Before, such a text was refused as "not a
recognised command output" (measure39e 12), where the same steps under `$ ` prompts were read.

Only where a step types a command whose output is read (the caller's `reads`): then every step of the
list starts a part, its words the command (`5. sudo nvidia-ctk cdi generate ...`, `6. Check user
group`: a part of a command not read, noted as such), so that no step's output runs on into the
next step's lines."""

from __future__ import annotations

from collections.abc import Callable

from gpuonboard.once import lazy_re

__all__ = ["step_heads"]

# a list item's number before a step's words: `2. `, `2) `, `3.sudo` (a letter right after it;
# never `2.5 GHz`)
_STEP = lazy_re(r"[ \t]{0,3}\d{1,2}[.)](?:[ \t]+|(?=[A-Za-z/]))(?P<words>\S.*?)[ \t]*")


def step_heads(
    lines: list[str], known: set[int], reads: Callable[[str], bool], longest: int
) -> list[tuple[int, tuple[str, str | None, str | None]]]:
    """(line index, (the step's words, no host, no output on the line)) of each numbered step of
    `lines` (of at most `longest` characters) that is not already a prompt line (`known`), where
    one step types a command whose output is read (`reads` of its words: module doc); none
    otherwise."""
    steps = {
        i: str(found.group("words"))
        for i, line in enumerate(lines)
        if i not in known and len(line) <= longest and (found := _STEP.fullmatch(line))
    }
    if not any(reads(words) for words in steps.values()):
        return []
    return [(i, (words, None, None)) for i, words in steps.items()]
