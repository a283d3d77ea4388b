"""A paste's Markdown code fences (```` ```console ```` above an output, ```` ``` ```` below) taken out
(paste.normalise): a fence at one end only, around each command of a session, or a page of blocks
with its words between them; on such a page a bare command title line above a block is that
block's command, and each fence line counts as a line, so a session's line numbers are the page's."""

from __future__ import annotations

from collections.abc import Sequence

from gpuonboard.once import lazy_re

# a command line is short: a longer line in a block is output
_LONGEST_COMMAND = 400
# the most lines of a page's words between its blocks (`or`, `My thought was that ...`)
_PAGE_WORDS = 3
# a Markdown code fence line: ``` or ~~~, with the block's language after an opening one
# (a language starts with a letter or digit: "```..." is a fence that lost its newline above an
# elision, whose `...` is the output's)
FENCE = lazy_re(r"^[ \t]*(?:`{3,}|~{3,})[ \t]*(?:\w[\w+.-]*)?[ \t]*$")


def unfenced(text: str) -> str:
    """A paste from a Markdown page or chat (```` ```console ```` above the output, ```` ``` ````
    below) as the output without those lines; a fence at one end only (the other left out of
    the copy), or below a prompt line copied above the block (`root@box:~# nvidia-smi -q -x`,
    whose XML was then not read), or around each command of a session, is dropped too. No tool
    read here prints such a line. On a page of blocks, the words between them are kept apart
    from the output above (_blocks_apart)."""
    lines = text.split("\n")
    fences = [at for at, line in enumerate(lines) if FENCE.match(line)]
    if not fences:
        return text
    if _closed_first(lines, fences):
        # (a block whose opening fence was not copied, a page's words, then the next block: the
        # words are no more of the output above, measure39a 19's prose after `command not found`)
        lines[fences[0] + 1 : fences[1]] = [""] * (fences[1] - fences[0] - 1)
        if len(fences) > 3 and _paired(lines, fences[1:]):
            lines = _blocks_apart(lines, fences[1:])
    elif not _paired(lines, fences):
        return "\n".join(line for line in lines if not FENCE.match(line))
    else:
        lines = _blocks_apart(lines, fences)
    # (a page of blocks: each fence a blank line, so that a session's line numbers are the page's,
    # its last line dropped as before; measure39d 10 named `lscpu -p` of line 14 "line 12")
    last = len(lines) - 1 if lines and FENCE.match(lines[-1]) else -1
    return "\n".join("" if FENCE.match(line) else line for at, line in enumerate(lines) if at != last)


def _page_words(words: Sequence[str]) -> bool:
    """Whether lines between two blocks are a page's words (`My thought was ...`, `or`: a few
    lines), not an output pasted outside a block: no prompt line, no output of a kind read here."""
    from gpuonboard.api.saved_kinds import detect_kind
    from gpuonboard.api.transcript import _prompt

    said = [line for line in words if line.strip()]
    return (
        0 < len(said) <= _PAGE_WORDS
        and not any(_prompt(line) for line in said)
        and detect_kind("\n".join(said)) is None
    )


def _closed_first(lines: Sequence[str], fences: Sequence[int]) -> bool:
    """Whether the first fence closes a block whose opening was not copied (a prompt line above
    it, the text's first line) and the second opens the next, a page's words between them."""
    from gpuonboard.api.transcript import _prompt

    above = [line for line in lines[: fences[0]] if line.strip()]
    return (
        len(fences) >= 2
        and bool(above)
        and _prompt(above[0]) is not None
        and lines[fences[0]].strip().strip("`~") == ""
        and _page_words(lines[fences[0] + 1 : fences[1]])
    )


def _paired(lines: Sequence[str], fences: Sequence[int]) -> bool:
    """Whether the fences open and close blocks in pairs (an even number, no closing one naming a
    language) and something follows the first block (a page's words, or another block)."""
    return (
        len(fences) % 2 == 0
        and all(lines[at].strip().strip("`~") == "" for at in fences[1::2])
        and any(line.strip() for line in lines[fences[1] + 1 :])
    )


def _blocks_apart(lines: list[str], fences: Sequence[int]) -> list[str]:
    """The lines of a page of fenced blocks with each block's output kept apart from what follows
    it: the page's words after a block (`My thought was ...`, `or`: a few lines) that are no output
    and hold no prompt line are left out, not read as more of the output above them. A block after them is no
    more of that output either: its first line, a bare command of a tool read here
    (`nvidia-smi --query-gpu=name --format=csv`, its output below), gets a prompt, so that it is a
    command of its own; a block of no output read here (a file the page shows) starts at a bare
    prompt. A block of an output read here without its command stays as it was read before."""
    from gpuonboard.api.saved_kinds import detect_kind
    from gpuonboard.api.transcript import _TOOL, _prompt

    out = list(lines)
    above = [at for at in range(fences[0]) if lines[at].strip()]
    if len(above) == 1 and _command_title(lines[above[0]]):
        out[above[0]] = f"$ {lines[above[0]].strip()}"  # (`lscpu -e` above the first block: its command)
    for n, close in enumerate(fences[1::2]):
        opening = fences[2 * n + 2] if 2 * n + 2 < len(fences) else len(lines)
        words = lines[close + 1 : opening]
        if not any(line.strip() for line in words):
            continue  # (a block right below another: one output the page fenced twice)
        said = [line for line in words if line.strip()]
        if not _page_words(said):
            continue  # (more lines than a page's sentence or two: an output pasted outside a block)
        out[close + 1 : opening] = [""] * len(words)
        if opening == len(lines):
            break  # (the page's words after its last block)
        if len(said) == 1 and _command_title(said[0]):
            # (a bare command above the block, `lscpu -p`: the block's command, as a prompt line's;
            # it was left out and the block read under a bare prompt, measure39d 10)
            out[close + 1 + next(at for at, line in enumerate(words) if line.strip())] = (
                f"$ {said[0].strip()}"
            )
            continue
        first = next((at for at in range(opening + 1, fences[2 * n + 3]) if lines[at].strip()), None)
        if first is None or _prompt(lines[first]) is not None:
            continue
        if _TOOL.match(lines[first].strip()) and len(lines[first]) < _LONGEST_COMMAND:
            out[first] = f"$ {lines[first].strip()}"
        elif detect_kind("\n".join(lines[opening + 1 : fences[2 * n + 3]])) is None:
            out[opening] = "$"  # (a block of no output read here: a part of its own, noted)
    return out


def _command_title(line: str) -> bool:
    """Whether a page's line above a fenced block is a bare command of a tool read here, typed as a
    title (`lscpu -p`, `cat /proc/meminfo`, `nvidia-smi | grep MiB`): the tool first, then only
    options, paths or a pipe and what it runs; never a sentence that starts with a tool's name
    (`free memory is low`)."""
    from gpuonboard.api.transcript import _TOOL

    words = line.split()
    if not words or len(line) >= _LONGEST_COMMAND or not _TOOL.match(line.strip()):
        return False
    piped = False
    for word in words[1:]:
        piped = piped or word.startswith("|")
        if not piped and not word.startswith(("-", "/", "~", ".", "|", ">", "2>")):
            return False
    return True
