"""Commands typed with no prompt before them, as a page shows them (`nvidia-smi`, a blank line,
its table, then `lscpu`), or named by a poster's label line (`Command: lscpu`): the text given
a `$ ` prompt before each, so that it reads as a saved session (api/transcript.py)."""

from __future__ import annotations

import re
from collections.abc import Callable

from gpuonboard.api.label_lines import label_command
from gpuonboard.api.transcript import COMMANDS, LONGEST_PROMPT, is_prompt, names_tool

# a command typed with no prompt before it, as a page shows one (`nvidia-smi`, `sudo docker exec
# -it app nvidia-smi`): ASCII words from a tool whose output is read, not ending in a colon (a
# label, `nvidia-smi output:`)
_TYPED = re.compile(rf"(?:sudo\s+(?:-\S+\s+)*)?(?:\S*/)?{COMMANDS}(?:\s[ -~]*?)?(?<!:)\s*")


def prompted(text: str) -> str | None:
    """`text` with a `$ ` prompt before each command typed without one that starts a paragraph
    (the first line, or one after a blank line), and each poster's label line naming one at any
    line (`Command: lscpu`, `Output of free -m:`), with its output right below it or below one
    blank line (`nvidia-smi`, a blank, `Tue Jun 10 ...`), where there are two or more (a page of
    `nvidia-smi` and `sudo docker exec -it app nvidia-smi`, each above its output); None where
    there are fewer. Only for a text that read as one output would be refused or leave outputs
    unread (api/offline.py): a line of an output may read as such a command."""
    lines = text.split("\n")
    typed = {at: command for at, command in enumerate(_typed_commands(lines)) if command}
    if len(typed) < 2:
        return None
    for at, command in typed.items():
        lines[at] = f"$ {command}"
    return "\n".join(lines)


# a command typed with no prompt of a tool whose output is not read but that a page of the
# box's tools shows among those read (`rdma link` below `ibdev2netdev`, `uname -a`, `lspci -nn`):
# a paragraph's first line, taken as a command only beside a typed one whose output is read
_OTHER_TYPED = re.compile(
    r"(?:sudo\s+(?:-\S+\s+)*)?(?:\S*/)?"
    r"(?:rdma|lspci|uname|ibswitches|ibhosts|iblinkinfo|ibnodes|ibv_devices|ibdev2netdev|ofed_info"
    r"|show_gids|ethtool|ip|ifconfig|lsmod|modinfo|hostname|hostnamectl|lsb_release|mst|mlxlink"
    r"|nvidia-container-cli|ls|which|whoami|uptime|date)"
    r"(?:\s[ -~]*?)?(?<!:)\s*"
)


def other_typed(command: str) -> bool:
    """Whether `command` is a typed command of a tool whose output is not read (_OTHER_TYPED)."""
    return _OTHER_TYPED.fullmatch(command.strip()) is not None and not names_tool(command)


# a kernel log's line of the driver or of an NVSwitch (`NVRM: Xid ...`, `nvidia-nvswitch0: SXid
# ...`, `NVRM: GPU 0000:19:00.0: ...`): never another tool's output
_KERNEL_LINE = re.compile(r"\bNVRM:|\bS?Xid\b|nvidia-nvswitch\d*:")


def other_section(command: str, text: str, detect: Callable[[str], str | None]) -> bool:
    """Whether `text`, the section below `command`, is that other tool's output only (`ip -br a`
    and its lines): a typed command of a tool not read (other_typed) whose text holds no kernel
    line of the driver's (an Xid) and no paragraph (split at blank lines) of a kind that is read
    (`detect`: its kind, or None). Its paragraph of an untyped `dmesg` below it is not that
    tool's: the section is not said as not read (revR F4: two `NVRM: Xid ... 79` lines pasted
    below `ip -br a` were dropped, and the run passed)."""
    if not other_typed(command):
        return False
    if any(_KERNEL_LINE.search(line) for line in text.split("\n")):
        return False
    paragraphs = re.split(r"\n[ \t]*\n", text)
    return not any(detect(p) is not None for p in paragraphs[1:] if p.strip())


def _typed_commands(lines: list[str]) -> list[str]:
    """For each line, the command it types without a prompt ("" for none): prompted's rule; a
    paragraph's first line typing another tool (_OTHER_TYPED) where one of them is read."""
    out = _read_typed_commands(lines)
    if not any(out):
        return out
    return [
        line.strip()
        if not command
        and (at == 0 or not lines[at - 1].strip())
        and len(line) < LONGEST_PROMPT
        and not is_prompt(line)
        and any(below.strip() for below in lines[at + 1 : at + 2])
        and other_typed(line)
        else command
        for at, (line, command) in enumerate(zip(lines, out, strict=True))
    ]


def _read_typed_commands(lines: list[str]) -> list[str]:
    """For each line, the command whose output is read it types without a prompt ("" for none)."""
    out = []
    for at, line in enumerate(lines):
        below = lines[at + 1 : at + 3]
        output = bool(below) and (below[0].strip() or (len(below) > 1 and below[1].strip() != ""))
        stripped = line.strip()
        if not output or len(line) >= LONGEST_PROMPT or is_prompt(line):
            out.append("")
        elif label := label_command(stripped):
            out.append(label)
        elif (at == 0 or not lines[at - 1].strip()) and _TYPED.fullmatch(stripped):
            out.append(stripped)
        else:
            out.append("")
    return out
