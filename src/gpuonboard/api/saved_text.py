"""A saved output's text as the parsers read it: its bytes decoded, a mail's or a comment's quote
markers dropped, and the terminal prompt and command copied above it found (the command it is the
output of) and stripped. Offline judging (api/offline.py) reads each saved output through these.
"""

from __future__ import annotations

import codecs
import re
import textwrap
from collections.abc import Sequence
from pathlib import PurePosixPath

from gpuonboard.api import glued, paste, saved_forms, transcript
from gpuonboard.api.command_line import ENGINE_OWN_LINE
from gpuonboard.api.kernel_command import LINE_FILTERS
from gpuonboard.api.label_lines import label_command, wrapped_label
from gpuonboard.api.markdown_marks import markdown_unmarked
from gpuonboard.errors import UsageError
from gpuonboard.once import lazy_re

_COMMANDS = transcript.COMMANDS  # (the commands whose saved output is judged, cat, ssh, sudo)
# (the prompt's sign: a shell's `$ # % >`, starship's and powerlevel10k's `❯`, oh-my-zsh's `➜`,
# `λ`, `»`; the tool after a blank, a path, a quote or a `(`: `ssh gpu01 'journalctl -k -b -1'`,
# and before a blank, a quote, a pipe, a list's or a redirection's sign: `dmesg|grep NVRM`)
# (the prompt and the text between its sign and the tool each at most 400 characters: a paste whose
# lines a chat joined into one is no prompt line, and before, the unbounded search of its every
# sign took minutes on an 8-GPU `nvidia-smi -q` so joined)
_PROMPT_LINE = re.compile(
    rf"[^\n]{{0,400}}?[$#%>❯➜λ»]\s*"
    rf"(?P<command>(?:[^\n]{{0,400}}?[\s/\\'\"(])?{_COMMANDS}(?:[\s'\"|;&)][^\n]*)?)"
)
# (a tool's name right before `<` or `>` is no command: `<free>19948 MiB</free>` of a -q -x)
# an issue's numbered step before the command it types (`2. nvidia-smi -L`, `3.sudo docker run ...`;
# never a host's `10.0.0.1$`): the step's prompt (api/numbered_steps.py)
_STEP_NUMBER = r"\d{1,2}[.)](?:[ \t]+|(?=[A-Za-z/]))"
# the command alone, pasted above its output without the prompt (`nvidia-smi -L`, `sudo dmesg -T`,
# `/usr/bin/nvidia-smi`): no tool's output starts with one of these names followed by a space or
# the line's end (nvcc's own first line is `nvcc: NVIDIA (R) ...`)
# (a Windows path too: `C:\Windows\System32\nvidia-smi.exe`, `"C:\Program Files\...\nvidia-smi.exe"`)
_COMMAND_LINE = re.compile(
    rf"(?:In \[\d*\]:\s*!\s*|\++\s+|!\s*|{_STEP_NUMBER})?"
    rf"\(?(?:sudo\s+)?(?:\"[^\"\n]*[/\\]|\S*[/\\])?{_COMMANDS}\"?(?:[\s|;&)][^\n]*)?"
)
# (`+ nvidia-smi`: the command as a shell's `set -x` traces it above the output, in a CI job's log
# or a script's; `!nvidia-smi`: a Jupyter or IPython cell's shell command, `In [3]: !nvidia-smi`
# with IPython's prompt: before, that line was read as the output's, a kernel log's first line)
# a line a shell's `set -x` prints for each command it runs (PS4's `+`, one more for each nesting:
# `++ hostname`), the others of a pipeline too (`+ tee out.txt`), in any order
_XTRACE = re.compile(r"\++ \S.*")
_TRACE_MARK = re.compile(rf"^(?:In \[\d*\]:\s*!\s*|\++\s+|!\s*|{_STEP_NUMBER})")
# a last line that is the next prompt (`root@gpu-01:~# `, `$`, `[root@gpu01 ~]# exit`)
_TRAILING_PROMPT = re.compile(
    r"(?:[\w.-]+@[\w.-]+(?::[^\s<>]*)?|\[[\w.-]+@[^\]\n]*\]|PS [A-Za-z]:[^<>\n]*)?"
    r"\s*[$#%>]\s*(?:exit|logout)?"
)


def decode_saved(data: bytes) -> str:
    """A saved output's bytes as the text the parsers read: UTF-8, or UTF-16 where a byte-order
    mark says so (Windows PowerShell's `>` writes UTF-16); a UTF-8 byte-order mark (Notepad)
    dropped; CRLF and classic Mac's lone CR line ends as LF. (With the mark kept, `lscpu`, `df`
    and nvidia-smi CSV were not recognised, an nvidia-smi XML was judged a failed driver, and a
    `free` read 100x off.)"""
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        text = data.decode("utf-16", errors="replace")
    else:
        text = data.decode("utf-8", errors="replace")
    return text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")


def unquote(text: str) -> str:
    """The text without a quote marker that every non-empty line carries (`> `, nested `> > `:
    a reply by mail, a markdown quote), or most do (paste.quoted): an nvidia-smi table quoted so read
    no GPU row, and the driver rule failed. A Markdown list item's marker on every line and an
    emphasis around a paragraph (api/markdown_marks) are dropped first."""
    lines = markdown_unmarked(text.split("\n"))  # (a list item's marker, an emphasis: api/markdown_marks)
    was_quoted = False
    while paste.quoted(lines):
        lines = [re.sub(r"^\s*> ?", "", line) for line in lines]
        was_quoted = True
    if was_quoted:
        # a Markdown quote's backslash escapes undone with it: a post's `> \# gpu   pwr` (dmon's
        # header), `\*`, `\_`, `\|`, as Markdown shows them (before, the dmon sample was refused
        # generically, its `\#` header not read as dmon's)
        lines = [_MARKDOWN_ESCAPE.sub(r"\1", line) for line in lines]
    return "\n".join(_without_comments(_uncommented(lines)))


# a poster's comment after a line of output, past two blanks or a tab (`2147483648      # 容器内存
# 上限 2 GiB`, `No devices were found   # 开发机无 GPU`), with no blank after its `#` too (lscpu's
# `Core(s) per socket:   64  #每个CPU插槽的核心数`, m36b 10): no tool prints `#` and a note there
# (a kernel's `#101-Ubuntu` build tag follows one blank; smpboot's `node  #0, CPUs:   #1   #2`
# puts a digit after its `#`, a shebang `!`, a Markdown heading another `#`: none is a note)
_TRAILING_COMMENT = re.compile(r"(?<=\S)(?:[ ]{2,}|[ ]*\t[ \t]*)#(?:[ \t]+\S|[^\s\d#!]).*$")


def _without_comments(lines: list[str]) -> list[str]:
    """The lines without a poster's comment at their end (_TRAILING_COMMENT); a line that is a
    comment from its start (`# vllm / verl / ray：未安装`, dmon's `# gpu pwr` header) kept, also
    under `cat -n`'s or `nl`'s number (`     1\t# nvidia-smi ...`: that line's own text)."""
    return [line if _COMMENT_LINE.match(line) else _TRAILING_COMMENT.sub("", line) for line in lines]


_COMMENT_LINE = re.compile(r"[ \t]*(?:\d+\t[ \t]*)?#")


# a Markdown backslash escape of a character Markdown would read as its own (`\#`, `\*`, `\_`, `\|`,
# `` \` ``, `\[`, `\]`): a post's editor wrote it before each such character of the pasted text
_MARKDOWN_ESCAPE = re.compile(r"\\([#*_|`\[\]])")


def uncommented(text: str) -> str:
    """The text of one command's output in a saved session without the comment mark each of its
    lines carries (_uncommented), as in a file of its own: a MATLAB script's `!nvidia-smi -q`
    with its output quoted below as `% ` comment lines (measure40b 10)."""
    return "\n".join(_uncommented(text.split("\n")))


def _uncommented(lines: list[str]) -> list[str]:
    """The lines without the comment mark that every line of the output carries (below a copied
    prompt line, if any, or on it too): a paste commented out as a shell script's or a config's
    comment lines, `# ` (before, such a `df` read no header and was refused as "df run in a
    language other than English?") or a bare `#` (`#|   0  NVIDIA GeForce ...  Off  |`: a doc's
    commented nvidia-smi table read its banner and no GPU row), also indented (a doc's code block,
    `    #|   0  GRID K520 ...`: measure37c 26 read no GPU row) and of other languages (`//`, `;`,
    `--`; never journalctl's own `-- No entries --` lines). The mark is markup around the whole
    block, dropped once from each line, as a quote's
    `> ` is (a first line that reads as a prompt, `#               total        used        free`
    of a commented `free`, with it)."""
    filled = [line for line in lines if line.strip()]
    if len(filled) >= 2 and _one_mark(filled):
        start = 0  # (every line marked, the prompt's too: `# root@pc:~# docker run ... nvidia-smi`)
    else:
        top = _prompt_line(lines)
        start = 0 if top is None else continued(lines, top)[1] + 1
    body = [line for line in lines[start:] if line.strip()]
    mark = _one_mark(body) if len(body) >= 2 else None
    if mark is None or (mark == "--" and any(_JOURNAL_MARK.fullmatch(line) for line in body)):
        return lines  # (journalctl's own `-- No entries --`, `-- Logs begin at ... --`: revT F4)
    # (the mark with the indentation before it, each line's own: a doc's code block indents its
    # commented lines, `    #|   0  GRID K520 ...`; and one blank after it where every line has one)
    cut = [_COMMENT_MARK.match(line) for line in lines[start:]]
    spaced = all(
        m is None or line[m.end() :][:1] in (" ", "") for line, m in zip(lines[start:], cut, strict=True)
    )
    return [
        *lines[:start],
        *(
            line if m is None else line[m.end() + (1 if spaced and line[m.end() :] else 0) :]
            for line, m in zip(lines[start:], cut, strict=True)
        ),
    ]


# a comment mark at a line's start, after any indentation: a shell's or a config's `#`, C's and
# JavaScript's `//`, an ini file's `;`, SQL's and Lua's `--`, MATLAB's and TeX's `%` with a blank
# after it (a bare `%` starts top's `%Cpu(s):`) (a paste's stray Markdown backticks
# before it, "```    #+-----+" of a fence that lost its newline, dropped with it)
_COMMENT_MARK = lazy_re(r"[ \t]*(?:`{1,3}[ \t]*)?(#|//|;|--|%(?=[ \t]|$))")


# journalctl's own lines, no comment mark: `-- Logs begin at ... --`, `-- Journal begins at ... --`,
# `-- No entries --`, `-- Boot <id> --`, `-- Reboot --`
_JOURNAL_MARK = lazy_re(r"[ \t]*-- \S.* --[ \t]*")


def _one_mark(lines: Sequence[str]) -> str | None:
    """The comment mark every one of `lines` starts with (after its indentation), one mark for all;
    None where a line has none, or the lines differ."""
    marks = {m.group(1) if (m := _COMMENT_MARK.match(line)) else None for line in lines}
    return next(iter(marks)) if len(marks) == 1 and None not in marks else None


def unglued(text: str, where: str = "") -> str:
    """The text with the output a paste glued onto its copied prompt line (a page that lost the
    line ends of `[root@host ~]# df -h` and its output, all on one line) on a line of its own,
    below the command: the whole line was dropped as the prompt, and the file was refused as "an
    empty file". Only where the line is a prompt and command (or the command alone) and df's or
    free's whole header follows the command (glued.split); a line holding several commands'
    outputs is refused (errors name `where`)."""
    lines = text.split("\n")
    first = _prompt_line(lines)
    if first is None:
        return text
    line = lines[first]
    found = glued.split(line, transcript.tool_command(line.strip()))
    if isinstance(found, str):
        raise UsageError(f"{where}: {found}.")
    if found is None:
        return text
    return "\n".join([*lines[:first], *found, *lines[first + 1 :]])


def strip_prompt(text: str) -> str:
    """The output without a copied terminal prompt: a first line that is a prompt and the
    command (`root@gpu-01:~# nvidia-smi -q -x`) or the command alone (`nvidia-smi -L`), a last
    line that is the next prompt."""
    lines = text.split("\n")
    first = _prompt_line(lines)
    if first is not None:
        lines = lines[(first if lines[first].lstrip().startswith("+") else continued(lines, first)[1]) + 1 :]
        while lines and _XTRACE.fullmatch(lines[0].strip()):
            lines = lines[1:]  # (the rest of a traced pipeline: `+ tee out.txt`)
        # (an output a page indented under its prompt line at the margin: read from the margin,
        # as the same output saved without the prompt line is; m36b 04)
        lines = _first_line_unshifted(textwrap.dedent("\n".join(lines)).split("\n"))
    top = next(
        (i for i, line in enumerate(lines) if line.strip() and not ENGINE_OWN_LINE.fullmatch(line.strip())), 0
    )
    if any(line.strip() for line in lines[:top]):
        lines = lines[top:]  # (`docker run IMAGE df`: the image's pull, kubectl's notices, above the output)
    last = next((i for i in range(len(lines) - 1, -1, -1) if lines[i].strip()), None)
    if last is not None and _TRAILING_PROMPT.fullmatch(lines[last].strip()):
        lines = [*lines[:last], ""]
    return "\n".join(lines)


def _first_line_unshifted(lines: list[str]) -> list[str]:
    """The output's first line without the one blank a paste put before it, where the line below
    it starts at the margin (` available: 2 nodes (0-1)` right under `$ numactl -H`): no tool
    prints one blank before its first line and none before its second (free's header has many,
    topo's a tab)."""
    filled = [i for i, line in enumerate(lines) if line.strip()][:2]
    if len(filled) == 2 and re.match(r" \S", lines[filled[0]]) and not lines[filled[1]][0].isspace():
        lines = [*lines[: filled[0]], lines[filled[0]][1:], *lines[filled[0] + 1 :]]
    return lines


def _prompt_line(lines: Sequence[str]) -> int | None:
    """The index of a first line that is a copied prompt and command, or the command alone (a
    tool's version line, `free from procps-ng 3.3.16`, is its output, not its command); of
    prompt lines one right under the other, the last's (the output under it is its command's:
    `root@host:~# dmesg` then `# cat /var/log/messages | grep fail` and the lines grep kept).
    Before, the first was read as the command and the other as the output's first line: a grep
    of the log was read as the whole log (nvswitch_sxid passed, round 37)."""
    first = _first_prompt_line(lines)
    while first is not None and (under := _prompt_under(lines, first)) is not None:
        first = under
    return first


# a shell's prompt before a command: its sign alone (`# `, `$ `) or after a user, host and path,
# also a user@host and a path a blank apart (`cuser1@cgpu-1 ~$`) after a bracketed counter or
# time (`[0741] `)
_SHELL_PROMPT = lazy_re(
    r"(?:`{3}[ \t]*)?(?:\[[^\]\s]{1,20}\][ \t]*)?"
    r"(?:[\w.@:~/()\[\]-]*[$#]|[\w.-]+@[\w.-]+:?[ \t]+[~/][\w./-]*[$#]|[$#%])\s+\S"
)


def _prompt_under(lines: Sequence[str], first: int) -> int | None:
    """The index of a shell's prompt line with its command right under the command line `first`
    (blank lines between), where an output follows it; None otherwise (a traced pipeline's next
    line, `+ grep NVRM`, is no prompt: the pipeline is read whole, _traced_command)."""
    filled = [i for i in range(continued(lines, first)[1] + 1, len(lines)) if lines[i].strip()]
    if len(filled) < 2:
        return None
    text = lines[filled[0]].strip()
    typed = _SHELL_PROMPT.match(text) and _PROMPT_LINE.fullmatch(text)
    return filled[0] if typed and not _TRAILING_PROMPT.fullmatch(text) else None


def _first_prompt_line(lines: Sequence[str]) -> int | None:
    """_prompt_line's first line that is a prompt and command, the command alone, or one under a
    poster's comment lines."""
    filled = [i for i, line in enumerate(lines) if line.strip()]
    first = filled[0] if filled else None
    traced = [i for i in filled[:4] if _XTRACE.fullmatch(lines[i].strip())]
    if traced and traced == filled[: len(traced)]:  # (a traced pipeline: its tool's line of them)
        first = next((i for i in traced if _COMMAND_LINE.fullmatch(lines[i].strip())), first)
    if first is not None and (_typed_line(lines[first]) or wrapped_label(lines, first)):
        return first
    # (a poster's comment lines above the command: `# To check for GPU error messages` over `sudo
    # dmesg | grep -iE "nouveau|nvidia|pci" | grep -i "error"`, `# Errror` over `nvidia-smi`; before,
    # the comment was read as the first line, so the command was not found: the kernel log under it
    # was refused as no recognised output (an Xid 79 hidden, m36e 12), or read as the whole log)
    for n, i in enumerate(filled[: _COMMENTS_ABOVE + 1]):
        if n and i != filled[-1] and (_typed_line(lines[i]) or wrapped_label(lines, i)):
            return i  # (a command with output under it, below the comments)
        if not lines[i].lstrip().startswith("#"):
            return None
    return None


# the most comment lines read above a command (a notes file's paragraph heading and a line or two;
# no tool's output starts with `#` lines above a command line: dmon's `# gpu pwr` header has its
# rows under it)
_COMMENTS_ABOVE = 4


def _typed_line(line: str) -> bool:
    """The line is a copied prompt and command, a poster's `Command:` label, or the command alone
    (a tool's version line, `free from procps-ng 3.3.16`, is its output, not its command)."""
    text = line.strip()
    return bool(
        _PROMPT_LINE.fullmatch(text)
        or label_command(text)
        or (_COMMAND_LINE.fullmatch(text) and not saved_forms.VERSION_LINE.fullmatch(text))
    )


def _traced_command(lines: Sequence[str], first: int) -> str:
    """The command of line `first` without its trace mark; of a `set -x` trace, its pipeline's
    whole (`+ dmesg -T` / `+ grep NVRM` as `dmesg -T | grep NVRM`: each command of a pipeline is
    traced on a line of its own, at one depth, in any order: the filters put after the others),
    its `tee` left out. Before, only the tool's line was read: a `dmesg -T | grep NVRM` was taken
    for the whole log (nvswitch_sxid passed on SXid lines the grep cannot let through)."""
    line = lines[first].strip()
    if label := label_command(continued(lines, first)[0]):
        return label  # (a poster's label: its command alone)
    if not line.startswith("+"):
        return _uncommented_prompt(_TRACE_MARK.sub("", continued(lines, first)[0]))
    depth = len(line) - len(line.lstrip("+"))
    start = first
    while start > 0 and _XTRACE.fullmatch(lines[start - 1].strip()):
        start -= 1
    end = first
    while end + 1 < len(lines) and _XTRACE.fullmatch(lines[end + 1].strip()):
        end += 1
    block = [other.strip() for other in lines[start : end + 1]]
    said = [
        other[depth:].strip()
        for other in block
        if len(other) - len(other.lstrip("+")) == depth and other[depth:].split()[0] != "tee"
    ]
    return " | ".join(
        sorted(said, key=lambda command: PurePosixPath(command.split()[0]).name in LINE_FILTERS)
    )


def _uncommented_prompt(line: str) -> str:
    """A prompt line commented out with the output below it (`# root@pc-linux:~# docker run ...
    nvidia-smi`, a notes file's shell comment: m35e 06) without its comment mark, where the rest
    is a prompt line the session reader knows; the line as given otherwise. Before, the command
    read was the prompt's host and path with it, so the container it ran in went unsaid."""
    rest = line.lstrip("#").strip()
    return rest if line.startswith("#") and transcript.prompt_host(rest) is not None else line


def continued(lines: Sequence[str], first: int) -> tuple[str, int]:
    """(the command line `first` starts, joined with the lines it continues on, the index of its
    last line): a command whose line ends in `\\` goes on on the next (`sudo journalctl -k \\` /
    `  --since ... \\` / `  --no-pager | grep -iE 'nvrm|xid'`, bash's PS2 `> ` before each).
    Before, the command was read up to the backslash, and its rest as the output's first lines."""
    if (label := wrapped_label(lines, first)) is not None:
        return label  # (a poster's label wrapped inside its code span: its lines joined again)
    line, end = lines[first].strip(), first
    while line.endswith("\\") and end + 1 < len(lines) and lines[end + 1].strip():
        end += 1
        line = f"{line[:-1].rstrip()} {lines[end].strip().removeprefix('> ').strip()}"
    return line, end


def copied_command(text: str) -> str:
    """The whole command of a copied prompt line above the output (`docker exec gpu nvidia-smi`
    of `root@box:~# docker exec gpu nvidia-smi`), "" when there is none."""
    lines = text.split("\n")
    first = _prompt_line(lines)
    if first is None:
        return ""
    line = _traced_command(lines, first)
    said = transcript.command_of(line)
    if said == line and (m := _PROMPT_LINE.fullmatch(line)) and not _COMMAND_LINE.fullmatch(line):
        return m.group("command").strip()  # (a prompt the session reader does not know: after its sign)
    return said


def prompt_command(text: str) -> str:
    """The command of a copied prompt line above the output (`df -h /data` of `$ df -h /data`),
    "" when there is none."""
    lines = text.split("\n")
    first = _prompt_line(lines)
    if first is None:
        return ""
    return transcript.tool_command(_traced_command(lines, first))


def copied_host(text: str) -> str | None:
    """The host the copied prompt line above the output names (`3f4e5a6b7c8d` of
    `root@3f4e5a6b7c8d:/# df -h`), None where there is none."""
    lines = text.split("\n")
    first = _prompt_line(lines)
    return transcript.prompt_host(_uncommented_prompt(lines[first].strip())) if first is not None else None
