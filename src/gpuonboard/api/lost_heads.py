"""A copied `nvidia-smi --query-gpu=...` command line whose start a copy lost (`gpu=memory.total,
... --format=csv,noheader,nounits`, `-query-gpu=...`), in a page's before/after pair of the same
query: read as that command's line, so that a saved session holds both outputs and is refused
naming both, as it is where both command lines are whole (measure40a 13). Before, the headless
line was taken for a line of the first command's output, and the file read as no nvidia-smi form
at all."""

from __future__ import annotations

from gpuonboard.once import lazy_re

__all__ = ["lost_head_queries"]

# what is left of the line: a tail of `nvidia-smi --query-`, then `gpu=` and its fields (names of
# letters, digits, `.` and `_`, comma-separated), then nvidia-smi's options (`--format=csv,...`,
# `-i 0`, `-l 5`)
_LOST_HEAD = lazy_re(
    r"[ \t]*(?P<lost>[a-z-]{0,18})gpu=(?P<fields>[\w.]+(?:,[\w.]+)*)"
    r"(?P<options>(?:[ \t]+-{1,2}[a-z-]+(?:[= ][\w.,=-]+)?)*)[ \t]*"
)
_WHOLE = "nvidia-smi --query-"


def lost_head_queries(
    lines: list[str], known: set[int], most: int
) -> list[tuple[int, tuple[str, str | None, str | None]]]:
    """The lines (not among `known` prompt lines, under `most` characters) that are a `--query-gpu`
    command line without its start, each as a prompt line's (index, (command, host, glued)), its
    command restored (`nvidia-smi --query-gpu=...`); only with a `--format=csv` option, and only
    in a text where another line already is a prompt line."""
    if not known:
        return []
    found: list[tuple[int, tuple[str, str | None, str | None]]] = []
    for i, line in enumerate(lines):
        if i in known or len(line) > most or (lost := _LOST_HEAD.fullmatch(line)) is None:
            continue
        if not _WHOLE.endswith(lost.group("lost")) or "--format=csv" not in lost.group("options"):
            continue
        command = f"nvidia-smi --query-gpu={lost.group('fields')}{lost.group('options').rstrip()}"
        found.append((i, (command, None, None)))
    return found
