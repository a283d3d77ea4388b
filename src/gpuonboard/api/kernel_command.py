"""Which part of the kernel log a saved log's copied command read (api/narrowed.py asks for a
`kernel_log`): the gpu_xid and nvswitch_sxid rules judge "no Xid since boot" of the boot the box
runs now, and a command may have read another boot's log, or only part of this one's.

- `journalctl -k -b -1` (`--boot=-2`, `-kb -1`): a boot before the one the box runs now (its
  faults are history: what the reboot since did is judged as such); `-b <boot id>`, `-b 3` (the
  third boot in the journal): the boot it names, which may not be this one. `-b`, `-b 0`, `-k`
  alone (it implies `-b`) read this boot; no `-b` nor `-k` reads every boot the journal keeps
  (facts/kernel_log.py tells them apart by journalctl's `-- Boot <id> --` lines).
- journalctl's `--since` / `--until` / `-n` / `-e` / `-f` / `--grep` / `--priority`, dmesg's
  `--level` / `--facility` / `--since` / `--until`: only some of the boot's lines (the NVIDIA
  driver logs an Xid at the `warn` level: `dmesg -l err` leaves it out).
- `dmesg -F FILE`, or a rotated log file (`cat /var/log/kern.log.1`, `zcat syslog.2.gz`,
  `/var/log/messages-20250105`): an older saved log, not the kernel's log of this boot.
- a line filter as the command itself (`grep NVRM /var/log/kern.log`, `tail -100 ...`).
"""

from __future__ import annotations

import re
import shlex

__all__ = ["earlier_boot", "kernel_log_narrowed"]

# journalctl's options that keep only some lines of a boot, and whether they take a value
_JOURNAL_NARROWING = {
    "-S": True,
    "--since": True,
    "-U": True,
    "--until": True,
    "-n": False,  # (`-n` alone: the last 10 lines)
    "--lines": False,
    "-e": False,  # (`--pager-end` implies `-n1000`)
    "--pager-end": False,
    "-f": False,  # (`--follow` shows the last 10 lines, then follows)
    "--follow": False,
    "-g": True,
    "--grep": True,
    "-p": True,
    "--priority": True,
    "--facility": True,
    "-u": True,
    "--unit": True,
    "-t": True,
    "--identifier": True,
}
_DMESG_NARROWING = {
    "-l": True,
    "--level": True,
    "-f": True,
    "--facility": True,
    "--since": True,
    "--until": True,
}
_DMESG_FILE = ("-F", "--file")
# the journalctl options that take a value (so that value is not read as an option)
_JOURNAL_VALUED = frozenset({*(k for k, v in _JOURNAL_NARROWING.items() if v), "-o", "--output", "-D"})
# a boot descriptor after `-b` (journalctl's parse_boot_descriptor): an offset (`-1`, `0`, `3`),
# a boot id, or a boot id with an offset
_BOOT = re.compile(r"(?P<id>[0-9a-fA-F]{32})?(?P<offset>[+-]?\d+)?")
# the line filters that may be the command itself, before a log file
_FILTERS = frozenset({"grep", "egrep", "fgrep", "rg", "head", "tail", "awk", "sed"})
# a log file rotated away: `kern.log.1`, `syslog.2.gz`, `messages-20250105`, `kern.log-20250105.xz`
_ROTATED = re.compile(r"(?:\.\d+|-\d{8})(?:\.(?:gz|xz|bz2|zst))?$")


def _words(head: str) -> list[str]:
    """The words of a command (as the shell splits them; by blanks where its quotes do not close)."""
    try:
        return shlex.split(head)
    except ValueError:
        return head.split()


def _tool(words: list[str]) -> tuple[str, list[str]] | None:
    """(the command's tool, the words after it), past `sudo` or `ssh box` or a path in front."""
    for at, word in enumerate(words):
        name = word.rsplit("/", 1)[-1]
        if name in ("journalctl", "dmesg", "cat", "zcat", "less", "more", *_FILTERS):
            return name, words[at + 1 :]
    return None


def _options(args: list[str], valued: frozenset[str]) -> list[tuple[str, str | None]]:
    """(option, its value or None) of each option among `args`: `--boot=-1`, `-b -1`, `-kb-1`
    (`-b`'s value is only the next word that reads as a boot: `-b -k` is `-b`, then `-k`)."""
    out: list[tuple[str, str | None]] = []
    at = 0
    while at < len(args):
        arg, at = args[at], at + 1
        if arg.startswith("--"):
            name, eq, value = arg.partition("=")
            if not eq and name in valued and at < len(args):
                value, at = args[at], at + 1
            out.append((name, value if eq or name in valued else None))
            continue
        if not arg.startswith("-") or arg == "-":
            out.append(("", arg))  # (an operand: a file)
            continue
        for i, flag in enumerate(arg[1:], 1):
            rest = arg[i + 1 :]
            if f"-{flag}" in valued or flag == "b":
                if not rest and at < len(args) and (flag != "b" or _BOOT.fullmatch(args[at])):
                    rest, at = args[at], at + 1
                out.append((f"-{flag}", rest or None))
                break
            out.append((f"-{flag}", None))
    return out


def _boot(options: list[tuple[str, str | None]]) -> str | None:
    """The boot descriptor of journalctl's `-b` / `--boot` ("" for this boot), None without one."""
    said = [value or "" for name, value in options if name in ("-b", "--boot")]
    return said[-1] if said else None


def earlier_boot(command: str, kind: str = "kernel_log") -> bool:
    """Whether the copied `command` (of a saved output of `kind`) read the kernel log of a boot
    before the one the box runs now: journalctl's `-b` with a negative offset (`-b -1`,
    `--boot=-2`)."""
    found = _tool(_words(command.split("|", 1)[0])) if kind == "kernel_log" else None
    if found is None or found[0] != "journalctl":
        return False
    boot = _boot(_options(found[1], _JOURNAL_VALUED))
    m = _BOOT.fullmatch(boot or "")
    return bool(m and m.group("id") is None and m.group("offset") and int(m.group("offset")) < 0)


def kernel_log_narrowed(head: str) -> str:
    """Why the kernel log the command `head` (a pipeline's first command) printed is not the
    whole log of the boot the box runs now, as one clause naming the command; "" when it is (or
    the command is not understood)."""
    found = _tool(_words(head))
    if found is None:
        return ""
    tool, args = found
    said = f"`{head.strip()}`"
    if tool in _FILTERS:
        return f"{said} keeps only the lines {tool} let through"
    if tool == "journalctl":
        options = _options(args, _JOURNAL_VALUED)
        boot = _boot(options)
        if earlier_boot(head):
            return f"{said} is the log of an earlier boot, not of the boot the box runs now"
        m = _BOOT.fullmatch(boot) if boot else None
        if m is not None and (m.group("id") or int(m.group("offset") or 0) != 0):
            return f"{said} is the log of the boot it names, which may not be the boot the box runs now"
        if any(name in _JOURNAL_NARROWING for name, _ in options):
            return f"{said} shows only some of the boot's lines"
        return ""
    if tool == "dmesg":
        options = _options(args, frozenset({*(k for k, v in _DMESG_NARROWING.items() if v), *_DMESG_FILE}))
        if any(name in _DMESG_FILE for name, _ in options):
            return f"{said} reads a saved file, not the kernel's log of the boot the box runs now"
        if any(name in _DMESG_NARROWING for name, _ in options):
            return f"{said} shows only some of the log's lines"
        return ""
    files = [arg for arg in args if not arg.startswith("-")]
    if any(_ROTATED.search(path) for path in files):
        return f"{said} reads an older, rotated log file, not the log of the boot the box runs now"
    return ""
