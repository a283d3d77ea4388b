"""Which part of the kernel log a saved log's copied command read (api/narrowed.py asks for a
`kernel_log`): the gpu_xid and nvswitch_sxid rules judge "no Xid since boot" of the boot the box
runs now, and a command may have read another boot's log, or only part of this one's.

The command's words are read by each tool's own option grammar (its getopt string and long
options: _JOURNALCTL, _DMESG), so a value is never taken for an option nor an option for a value:

- `journalctl -k -b -1` (`--boot -1`, `--boot=-2`, `-kb -1`): a boot before the one the box runs
  now (its faults are history: what the reboot since did is judged as such); `-b <boot id>` (32
  hex digits or a UUID), `-b 3` (the third boot in the journal): the boot it names, which may not
  be this one. `-b`, `-b 0`, `-k` alone (it implies `-b`) read this boot; `-b all`, or no `-b`
  nor `-k`, every boot the journal keeps (facts/kernel_log.py tells them apart by journalctl's
  `-- Boot <id> --` lines). journalctl, like getopt, takes the word after `-b` / `--boot` (and
  `-n` / `--lines`) as its value only where it parses as one.
- journalctl's `--since` / `--until` / `-n N` / `-e` / `-f` / `--grep` / `--priority` / a cursor
  / a match (`_PID=1`), dmesg's `--level` (but one naming every level) / `--facility` (but one
  with `kern`) / `--userspace` / `--since` / `--until`: only some of the boot's lines (the NVIDIA
  driver logs an Xid at the `warn` level: `dmesg -l err` leaves it out).
- `journalctl -D DIR` / `--file` / `--root` / `--image` / `-M` / `--namespace`: another journal.
- `dmesg -F FILE`, `cat /var/log/dmesg` or `/var/log/boot.log` (a snapshot written once at boot),
  a rotated log file alone (`cat /var/log/kern.log.1`, `zcat syslog.2.gz`,
  `/var/log/messages-20250105`; `cat kern.log.1 kern.log` has the current one too).
- a line filter as the command itself (`grep NVRM /var/log/kern.log`, `tail -100 ...`).

`journalctl -r` (`--reverse`) prints the newest line first: newest_first says so, and the saved
log is read in the journal's order (api/offline.py). util-linux dmesg has no such option (its
`-r` is `--raw`).
"""

from __future__ import annotations

import re

from gpuonboard.api.command_line import Grammar, Option, Run, every_run, options, or_taken, run, runs

__all__ = [
    "KERNEL_LOG_TOOLS",
    "earlier_boot",
    "kernel_log_mixed",
    "kernel_log_narrowed",
    "log_runs",
    "logged_order",
    "newest_first",
    "printed",
]

# a boot descriptor (journalctl's parse_boot_descriptor / parse_id_descriptor): `all`, an offset
# (`-1`, `0`, `3`), a boot id (32 hex digits, or a UUID's 36 characters), a boot id and an offset
_BOOT = re.compile(
    r"all|(?P<id>[0-9a-fA-F]{32}|[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12})?(?P<offset>[+-]?\d+)?"
)


def _a_boot(word: str) -> bool:
    return word != "" and _BOOT.fullmatch(word) is not None


def _lines_value(word: str) -> bool:
    return re.fullmatch(r"all|\+?\d+", word) is not None


# systemd's journalctl.c (getopt string of v256; `--file`'s `-i` and `-T`, `-I`, `-W` are newer)
_JOURNALCTL = Grammar(
    "hefo:aln::qmb::kD:p:g:c:S:U:t:T:u:INF:xrM:i:W",
    frozenset(
        [
            "output",
            "directory",
            "file",
            "root",
            "image",
            "image-policy",
            "identifier",
            "exclude-identifier",
            "priority",
            "facility",
            "grep",
            "interval",
            "verify-key",
            "cursor",
            "cursor-file",
            "after-cursor",
            "since",
            "until",
            "unit",
            "user-unit",
            "invocation",
            "field",
            "machine",
            "vacuum-size",
            "vacuum-files",
            "vacuum-time",
            "output-fields",
            "namespace",
            "synchronize-on-exit",
        ]
    ),
    frozenset({"lines", "boot", "case-sensitive"}),
    {
        "boot": "-b",
        "lines": "-n",
        "reverse": "-r",
        "dmesg": "-k",
        "since": "-S",
        "until": "-U",
        "grep": "-g",
        "priority": "-p",
        "unit": "-u",
        "identifier": "-t",
        "exclude-identifier": "-T",
        "cursor": "-c",
        "directory": "-D",
        "file": "-i",
        "machine": "-M",
        "pager-end": "-e",
        "follow": "-f",
        "output": "-o",
    },  # fmt: skip
    {"-b": _a_boot, "-n": _lines_value},
)
# util-linux's sys-utils/dmesg.c (`-K` / `--kmsg-file` is 2.40's); its `-r` is `--raw`
_DMESG = Grammar(
    "CcDdEeF:f:HhkK:L::l:n:iPprSs:TtuVWwx",
    frozenset(
        [
            "buffer-size",
            "console-level",
            "facility",
            "file",
            "kmsg-file",
            "level",
            "since",
            "until",
            "time-format",
        ]
    ),
    frozenset({"color"}),
    {"file": "-F", "kmsg-file": "-K", "facility": "-f", "level": "-l", "kernel": "-k", "userspace": "-u"},
)
_FILE_TOOL = Grammar("", frozenset())  # (cat, zcat, less, more: their options take no value)

# journalctl's options that keep only some lines of a boot (`-n`, `-e`, `-f`: all but `-n all`)
_JOURNAL_NARROWING = frozenset(
    {"-S", "-U", "-g", "-p", "--facility", "-u", "--user-unit", "-t", "-T", "--invocation", "-I", "-c"}
    | {"--after-cursor", "--cursor-file"}
)
_JOURNAL_TAIL = frozenset({"-n", "-e", "-f"})
# journalctl's options that read another journal than the box's own system journal
_JOURNAL_ELSEWHERE = frozenset({"-D", "-i", "--root", "--image", "-M", "--namespace"})
_DMESG_LEVELS = ("emerg", "alert", "crit", "err", "warn", "notice", "info", "debug")
# the line filters that may be the command itself, before a log file
# (the tools that keep part of the lines of the files they read: grep's kin for compressed
# rotated logs too, `zgrep NVRM /var/log/kern.log.2.gz`)
_FILTERS = frozenset(
    {"grep", "egrep", "fgrep", "zgrep", "zegrep", "zfgrep", "xzgrep", "bzgrep", "rg", "ack", "ag"}
    | {"head", "tail", "awk", "sed"}
)
_TOOLS = frozenset({"journalctl", "dmesg", "cat", "zcat", "less", "more", *_FILTERS})
LINE_FILTERS = _FILTERS  # (a traced pipeline's filters: api/saved_text.py _traced_command)
# a log file rotated away: `kern.log.1`, `syslog.2.gz`, `messages-20250105`, `kern.log-20250105.xz`
# the log files syslog daemons write the kernel's lines of the running boot to (Debian/Ubuntu's
# kern.log and syslog, RHEL's messages): a read of one is this boot's (and earlier ones')
_LIVE_LOG = re.compile(r"kern\.log|syslog|messages|kernel\.log")
_ROTATED = re.compile(r"(?:\.\d+|-\d{8})(?:\.(?:gz|xz|bz2|zst))?$")
# a snapshot written once at boot: Ubuntu's dmesg.service (`/var/log/dmesg`), Plymouth's and
# RHEL's /var/log/boot.log, and their rotated copies (`dmesg.0`, `boot.log-20250105`)
_SNAPSHOT = re.compile(r"(?:^|/)(?:dmesg|boot\.log)(?:\.\d+|-\d{8})?(?:\.(?:gz|xz|bz2|zst))?$")
KERNEL_LOG_TOOLS = _TOOLS  # (the commands whose output a saved kernel log may be)
# the options with which journalctl and dmesg print no log: a list of boots, the journal's size,
# its upkeep, a field's values, help (`journalctl --list-boots; journalctl -k -b -1`: the second)
_JOURNAL_NO_LOG = frozenset(
    {"--list-boots", "--disk-usage", "--vacuum-size", "--vacuum-files", "--vacuum-time", "--flush"}
    | {"--rotate", "--verify", "--header", "--field", "-F", "--fields", "-N", "--sync", "--new-id128"}
    | {"--relinquish-var", "--smart-relinquish-var", "--list-catalog", "--dump-catalog", "--setup-keys"}
    | {"--update-catalog", "--list-namespaces", "--list-invocations", "-h", "--help", "--version"}
)
_DMESG_NO_LOG = frozenset(
    {"-C", "--clear", "-D", "--console-off", "-E", "--console-on", "-n", "--console-level"}
    | {"-h", "--help", "-V", "--version"}
)


def _tool(words: list[str]) -> tuple[str, list[str]] | None:
    """(the command's tool, the words after it): the first of the words (wrappers already
    unwrapped by api/command_line.py) that names one, past a path or a wrapper not known."""
    for at, word in enumerate(words):
        if (name := word.rsplit("/", 1)[-1]) in _TOOLS:
            return name, words[at + 1 :]
    return None


def _read(ran: Run) -> tuple[str, list[Option]] | None:
    """(the tool, its options as its getopt reads them) of the command `ran` runs; None for no
    tool of a kernel log's."""
    found = _tool(ran.head)
    if found is None:
        return None
    grammar = {"journalctl": _JOURNALCTL, "dmesg": _DMESG}.get(found[0], _FILE_TOOL)
    return found[0], options(found[1], grammar)


def _prints_log(ran: Run) -> bool:
    read = _read(ran)
    quiet = (
        {"journalctl": _JOURNAL_NO_LOG, "dmesg": _DMESG_NO_LOG}.get(read[0], frozenset()) if read else None
    )
    return read is not None and quiet is not None and not any(name in quiet for name, _ in read[1])


def log_runs(command: str) -> list[Run]:
    """The commands of the copied `command` (api/command_line.py's runs) whose output the saved
    log is or was read from: each that runs a kernel log's tool, but with an option that prints
    no log (`journalctl --list-boots`, `dmesg -C`)."""
    return [ran for ran in runs(command, _TOOLS) if _prints_log(ran)]


# what journalctl and dmesg print when they read no log: of the boot asked for (journalctl's
# "Data from the specified boot (-1) is not available: No such boot ID in journal", "Specifying
# boot ID or boot offset has no effect, no persistent journal was found."), or at all
_FAILED = {
    "journalctl": ("No such boot ID", "no persistent journal was found", "has no effect, no persistent"),
    "dmesg": ("read kernel buffer failed",),
}


def printed(command: str, text: str, kind: str = "kernel_log") -> str:
    """The copied `command` as what printed the saved `text`: of `a || b`, b where the text
    carries a's failure (`journalctl -k -b -1 || journalctl -k` on a box that keeps no earlier
    boot: `No such boot ID`), else a (b never ran: `dmesg || journalctl -k -b -1`)."""

    def failed(left: str) -> bool:
        tools = {found[0] for ran in runs(left, _TOOLS) if (found := _tool(ran.head))}
        return any(said in text for tool in tools for said in _FAILED.get(tool, ()))

    return or_taken(command, failed) if kind == "kernel_log" and command else command


def _boot(options: list[Option]) -> str | None:
    """The boot descriptor of journalctl's `-b` ("" for this boot), None without one."""
    said = [value or "" for name, value in options if name == "-b"]
    return said[-1] if said else None


def _earlier(options: list[Option]) -> bool:
    """journalctl's `-b` with a negative offset (`-b -1`, `--boot -2`)."""
    m = _BOOT.fullmatch(_boot(options) or "")
    return bool(m and m.group("id") is None and m.group("offset") and int(m.group("offset")) < 0)


def _boots(command: str) -> set[str]:
    """Which boots the log sources of `command` read: "earlier" (`journalctl -k -b -1`), "now"
    (`dmesg`, `journalctl -k`, `journalctl` of every boot, the current log file `kern.log`,
    `syslog`, `messages`), "file" (another file, or a file a filter reads: its boot not known)."""
    out = set()
    found = log_runs(command)
    written = {ran.to_file.rsplit("/", 1)[-1] for ran in found if ran.to_file}
    for ran in found:
        tool, options = _read(ran) or ("", [])
        names = {name for name, _ in options}
        if tool == "journalctl" and not names & _JOURNAL_ELSEWHERE:
            now = (_boot(options) or "0").lstrip("+") in ("0", "all")
            out.add("earlier" if _earlier(options) else "now" if now else "")
        elif tool == "dmesg" and not names & {"-F", "-K"}:
            out.add("now")
        elif tool not in ("journalctl", "dmesg"):
            files = [(v or "").rsplit("/", 1)[-1] for name, v in options if name == ""]
            if any(f in written for f in files):
                continue  # (`journalctl -k -b -1 > k.txt; grep NVRM k.txt`: k.txt's boots are its writer's)
            out.add("now" if files and all(_LIVE_LOG.fullmatch(f) for f in files) else "file")
    return out - {""}


def earlier_boot(command: str, kind: str = "kernel_log") -> bool:
    """Whether the copied `command` (of a saved output of `kind`) read the kernel log of a boot
    before the one the box runs now (journalctl's `-b -1`, `--boot -2`), and not this boot's
    too (`journalctl -k -b -1 ; journalctl -k` is kernel_log_mixed)."""
    return kind == "kernel_log" and _boots(command) == {"earlier"}


def newest_first(command: str, kind: str = "kernel_log") -> bool:
    """Whether the copied `command` printed the kernel log newest line first (`journalctl -r`):
    each journalctl or dmesg it runs that prints a log, `-r`."""
    read = [_read(ran) for ran in log_runs(command)] if kind == "kernel_log" else []
    logs = [r for r in read if r and r[0] in ("journalctl", "dmesg")]
    return bool(logs) and all(r[0] == "journalctl" and any(n == "-r" for n, _ in r[1]) for r in logs)


def logged_order(text: str, command: str, kind: str = "kernel_log") -> str:
    """A saved log's `text` in the order it was logged: its lines reversed where its copied
    `command` printed the newest first (`journalctl -k -b -r`, whose boot banner is last)."""
    if not newest_first(command, kind):
        return text
    return "\n".join(reversed(text.splitlines())) + "\n"


def _journal_narrowed(ran: Run, options: list[Option]) -> str:
    """kernel_log_narrowed for journalctl's `options`."""
    said, names = f"`{ran.said}`", {name for name, _ in options}
    if elsewhere := sorted(names & _JOURNAL_ELSEWHERE):
        return f"{said} reads another journal ({elsewhere[0]}), not the box's log of the boot it runs now"
    if _earlier(options):
        return f"{said} is the log of an earlier boot, not of the boot the box runs now"
    boot = _boot(options)
    m = _BOOT.fullmatch(boot) if boot and boot != "all" else None
    if m is not None and (m.group("id") or int(m.group("offset") or 0) != 0):
        return f"{said} is the log of the boot it names, which may not be the boot the box runs now"
    tail = names & _JOURNAL_TAIL  # (`-f --no-tail`: every line, then those to come)
    whole = ("-n", "all") in options or (tail == {"-f"} and "--no-tail" in names)
    matches = [v for name, v in options if name == "" and v not in ("_TRANSPORT=kernel", "+")]
    if names & _JOURNAL_NARROWING or matches or (tail and not whole):
        return f"{said} shows only some of the boot's lines"
    return ""


def _levels(value: str) -> set[str]:
    """The levels dmesg's `--level` list keeps (`err,warn`; `err+`: err and those above it;
    `+info`: info and those below)."""
    kept: set[str] = set()
    for word in value.split(","):
        name = word.strip("+")
        if name in _DMESG_LEVELS:
            at = _DMESG_LEVELS.index(name)
            sign = "+" if word.endswith("+") else "-" if word.startswith("+") else ""
            kept.update(_DMESG_LEVELS[: at + 1] if sign == "+" else _DMESG_LEVELS[at:] if sign else [name])
    return kept


def _dmesg_narrowed(said: str, options: list[Option]) -> str:
    """kernel_log_narrowed for dmesg's `options` (`said`: the command, quoted)."""
    if any(name in ("-F", "-K") for name, _ in options):
        return f"{said} reads a saved file, not the kernel's log of the boot the box runs now"
    for name, value in options:
        level = name == "-l" and _levels(value or "") != set(_DMESG_LEVELS)
        facility = name == "-f" and "kern" not in (value or "").split(",")
        if level or facility or name in ("-u", "--since", "--until"):
            return f"{said} shows only some of the log's lines"
    return ""


def _files_narrowed(said: str, files: list[str]) -> str:
    """kernel_log_narrowed for a log file read whole (`cat`): none of them the current log."""
    names = [path.rsplit("/", 1)[-1] for path in files]
    if not names or not all(_SNAPSHOT.search(name) or _ROTATED.search(name) for name in names):
        return ""
    if any(_SNAPSHOT.search(name) for name in names):
        return f"{said} reads a snapshot saved at boot, not the kernel's log of the boot the box runs now"
    return f"{said} reads an older, rotated log file, not the log of the boot the box runs now"


def _clears(ran: Run) -> bool:
    """Whether `ran` empties the kernel log that a later command reads: `dmesg -C` (`--clear`),
    `dmesg -c` (`--read-clear`) whose output is not the text (`> /dev/null`, `> d.txt`),
    `journalctl --vacuum-*` (the journal files it deletes; after `--rotate`, the active ones)."""
    tool, options = _read(ran) or ("", [])
    names = {name for name, _ in options}
    if tool == "dmesg":
        return bool(names & {"-C", "--clear"}) or (bool(names & {"-c", "--read-clear"}) and ran.to_file != "")
    return tool == "journalctl" and any(name.startswith("--vacuum-") for name in names)


def _cleared(command: str) -> str:
    """The command of the copied `command` that clears the kernel log before a later one of it
    prints the log (`sudo dmesg -C; sleep 60; dmesg`); "" for none."""
    every = every_run(command, _TOOLS)
    for at, ran in enumerate(every):
        if _clears(ran) and any(_prints_log(r) and r.to_file != "/dev/null" for r in every[at + 1 :]):
            return ran.said
    return ""


def kernel_log_mixed(command: str) -> str:
    """Why the copied `command`'s log as a whole is not the log of the boot the box runs now, as
    one clause naming it: it prints no log (`journalctl --list-boots`), or an earlier boot's log
    and this boot's (`journalctl -k -b -1 ; journalctl -k`: the log's own boot banners and
    `-- Reboot --` lines tell them apart, facts/kernel_log.py); "" otherwise."""
    said = f"`{command.strip()}`"
    if not log_runs(command):
        return f"{said} prints no kernel log" if _tool(run(command, _TOOLS).head) else ""
    if cleared := _cleared(command):
        return f"`{cleared}` clears the kernel log before it is read"
    boots = _boots(command)
    if boots == {"earlier", "now"}:
        return (
            f"{said} prints the log of an earlier boot and of the boot the box runs now, one after the other"
        )
    if "earlier" in boots and len(boots) > 1:  # (`journalctl -k -b -1; grep NVRM kern.log.1`)
        return f"{said} prints the log of an earlier boot and a log file's, one after the other"
    return ""


def kernel_log_narrowed(ran: Run) -> str:
    """Why the kernel log that `ran` (one command of a copied line: log_runs) printed is not the
    whole log of the boot the box runs now, as one clause naming the command; "" when it is (or
    the command is not understood). (A filter after the tool, `| grep NVRM`, is api/narrowed.py's.)"""
    read = _read(ran)
    if read is None:
        return ""
    tool, options = read
    said = f"`{ran.said}`"
    if tool in _FILTERS:
        return f"{said} keeps only the lines {tool} let through"
    if tool == "journalctl":
        return _journal_narrowed(ran, options)
    if tool == "dmesg":
        return _dmesg_narrowed(said, options)
    return _files_narrowed(said, [v or "" for name, v in options if name == ""])
