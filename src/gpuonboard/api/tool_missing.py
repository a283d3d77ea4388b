"""A saved shell's (or sudo's) word that a command this tool reads is not installed (`-bash:
nvidia-smi: command not found`): the box's answer, its tool absent, where the copied command ran
the tool in the login's own shell; refused naming what to save where it was another program's
search path (sudo's, a container's, another machine's)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpuonboard.api.command_line import pipeline
from gpuonboard.errors import UsageError
from gpuonboard.facts.probe import ProbeOutput

# the probe that reads each command's output (a missing command: that probe's tool absent)
_PROBE_OF_COMMAND = {
    "nvidia-smi": "nvidia_smi",
    "lscpu": "lscpu",
    "free": "free",
    "df": "df",
    "lsblk": "lsblk",
    "nvcc": "nvcc",
    "nproc": "nproc",
    "dmesg": "kernel_log",
    "journalctl": "kernel_log",
    "ibstat": "rdma_ports",
    "ibstatus": "rdma_ports",
    "ibv_devinfo": "rdma_ports",
}
_NAME = r"(?:\S*/)?(?P<tool>[\w.-]+)"
# a shell's (or sudo's) word that a command is not installed: bash `-bash: nvidia-smi: command not
# found` (`bash: line 1: ...` over ssh), dash `sh: 1: nvidia-smi: not found`, busybox `-sh: ...:
# not found`, sudo `sudo: nvidia-smi: command not found`, tcsh `nvidia-smi: Command not found.`,
# zsh `zsh: command not found: nvidia-smi`, fish `fish: Unknown command: nvidia-smi`
_NOT_FOUND = (
    re.compile(rf"^(?:(?P<by>\S+):\s+)?(?:line \d+:\s+|\d+:\s+)?{_NAME}:\s+(?:[Cc]ommand )?not found\.?\s*$"),
    re.compile(rf"^zsh:\s+command not found:\s+{_NAME}\s*$"),
    re.compile(rf"^fish:\s+Unknown command:?\s+{_NAME}\s*$"),
)
# Ubuntu's command-not-found handler, whose suggestions (`sudo apt install nvidia-utils-535 ...`)
# follow on the lines after it
_NOT_FOUND_HANDLER = re.compile(rf"^Command '{_NAME}' not found\b")
_NOT_FOUND_MAX_LINES = 30
# the programs that look a command up on a search path of their own (sudo's `secure_path`), not
# the login's: their "not found" says nothing of whether the login's shell finds the tool
_OWN_PATH = ("sudo", "doas")


@dataclass(frozen=True)
class NotFound:
    """A saved `-bash: nvidia-smi: command not found`: the probe whose tool it names, the tool,
    the line, and the program that said it where that is sudo or doas ("" for a shell)."""

    probe: str
    tool: str
    line: str
    by: str


def tool_missing(text: str) -> NotFound | None:
    """Where `text` is only a shell's (or sudo's) word that a command whose output this tool reads
    is not installed (`-bash: nvidia-smi: command not found`), that word; None otherwise. Whether
    it says the box lacks the tool is `not_this_box`'s to say."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines or len(lines) > _NOT_FOUND_MAX_LINES:
        return None
    shells = (p.match(lines[0]) for p in _NOT_FOUND) if len(lines) == 1 else iter(())
    m = _NOT_FOUND_HANDLER.match(lines[0]) or next((m for m in shells if m), None)
    probe = _PROBE_OF_COMMAND.get(m.group("tool")) if m else None
    if m is None or probe is None:
        return None
    by = (m.groupdict().get("by") or "").lstrip("-").rsplit("/", 1)[-1]
    return NotFound(probe, m.group("tool"), lines[0], by if by in _OWN_PATH else "")


_ASSIGNMENT = re.compile(r"[A-Za-z_]\w*=\S*")


def not_this_box(missing: NotFound, command: str) -> str | None:
    """Why a saved not-found says nothing of whether the box's login has the tool, as a sentence
    (the box's answer is read only where its copied `command` runs the tool itself in the login's
    shell: the tool as its first word, with or without a path, after any `VAR=value`); None where
    it is the box's answer, the tool absent (as the live probe reads exit 127)."""
    tool, line = missing.tool, missing.line
    if missing.by:
        return (
            f"`{line}` is {missing.by}'s answer: {missing.by} looks {tool} up on its own search path"
            f" (sudo's secure_path), not the login's, so it does not say whether the box has {tool}: save"
            f" `{tool}` run without {missing.by} (or `{missing.by} $(command -v {tool})`)."
        )
    words = pipeline(command)[0].split()
    while words and _ASSIGNMENT.fullmatch(words[0]):
        words.pop(0)
    if not words or words[0].rsplit("/", 1)[-1] == tool:
        return None
    return (
        f"`{line}` answers `{command.strip()}`, which runs {tool} through `{words[0]}` (in a container,"
        f" on another machine or under another shell's search path), not in the box's own login shell,"
        f" so it does not say whether the box has {tool}: save `{tool}` run in the box's shell."
    )


def missing_output(where: str, text: str, copied: str) -> tuple[str, ProbeOutput] | None:
    """The shell's `nvidia-smi: command not found` alone: the box's answer, its tool absent (exit
    127, as live), where its copied command ran the tool itself; sudo's, or one of `docker exec
    ... nvidia-smi`, says nothing of the box (refused in one sentence naming `where`). None for
    other text."""
    if (missing := tool_missing(text)) is None:
        return None
    if (why := not_this_box(missing, copied)) is not None:
        raise UsageError(f"{where}: {why}")
    return missing.probe, ProbeOutput("", missing.line, 127)
