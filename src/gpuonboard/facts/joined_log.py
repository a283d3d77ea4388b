"""A saved kernel log whose lines a chat or a page joined (each line break a space: the whole log
one line, or every two lines one): told by the signs its format prints once per line, and cut
apart again where that is certain (offline reads it then as the log; api/offline.py).

The log's format is known first. A journal's entries (`journalctl -o json`, `-o export`,
facts/kernel_shapes.py) hold one message each, however many driver lines it has: none is
joined. Any other log's line head is the first one its text starts a line with (or, where its
first line was cut inside its head, the first after words): dmesg's `[ 1234.567890] ` (also
`-H`'s and `-d`'s, a raw `<4>`, `-x`'s `kern  :warn  : `), `-T`'s `[Tue Jun  3 10:00:00 2025] `,
an ISO time's (`--time-format iso`, a journal's short-iso, rsyslog's RFC 3339 file and an RFC 5424
header's `<4>1 `), a syslog or journal line's `Jun  3 10:00:00 host kernel: `.

A line holds more than one of the log's lines (joined_messages) where a stamp (LOG_STAMP) follows
another message's words; where no two stamps meet on one line (a journal whose message goes on
in stamp-less `NVRM: ` lines, every two lines joined: the zh-CN journal of
open-gpu-kernel-modules#626), a second `NVRM: `, a kernel driver's own head (`NVRM: `,
`nvidia-nvswitch1: `, `pcieport 0000:00:01.0: `) after another message's words (a log without
stamps, `dmesg -t`, joined), a paste's elision
mark (`[...snip...]`, facts/elision.py) or journalctl's `-- Reboot --` after words; a journal's
head-less `kernel: ` after words.

unjoined cuts such a log before each head of its format that follows words. That is certain
where every piece is then one line of the log: none of the signs above left in it (a message's
stamp-less continued line, `NVRM: ...`, joined on), its stamp not before the piece's before it
(a stamp inside a message), no bare `...` after its words (an elision line of dots joined on, as
a message's own dots). Else the log is not read: which message a continued line, a PCI address
or a count belongs to is lost (before round 31 an Xid 145 was put on another GPU so).

A log without stamps (no format: `dmesg -t`, `journalctl -o cat`, a grep of the driver's lines)
is cut before each driver's head after words, where every piece is then one whole driver line
(_driver_lines); what it held besides them (the kernel's own lines, joined onto their words) is
not known, so the pieces are read as part of a log (UNSTAMPED_PART: no Xid never passes).
`talosctl dmesg`'s head is a format's (`10.20.30.29: kern:    info: [2023-...Z]: `); its last
line cut inside its head, joined on, is cut off so that api/saved_kinds.talos_cut sees it.
"""

from __future__ import annotations

import itertools
import re
from datetime import datetime
from typing import NamedTuple

from gpuonboard.facts.elision import ELISION
from gpuonboard.facts.kernel_pstore import joined_record_head
from gpuonboard.facts.kernel_shapes import journal_shaped, rfc5424_unframed
from gpuonboard.facts.kernel_wrap import program_of

__all__ = ["LOG_STAMP", "UNSTAMPED_PART", "Unjoined", "glued_to_log", "joined_messages", "unjoined"]

# `talosctl dmesg`'s line head (facts/kernel_shapes.py TALOS_LINE), its time in group `t`
_FACILITY = r"(?:kern|user|mail|daemon|auth|syslog|lpr|news|uucp|cron|authpriv|ftp|local\d)"
_TALOS_T = (
    rf"[^\s:\[\]]+: {_FACILITY}: *(?:emerg|alert|crit|err|warning|notice|info|debug): "
    r"\[(?P<t>\d{4}-\d\d-\d\dT[\d:.]+Z?)\]:(?= |$)"
)
_TALOS = _TALOS_T.replace("(?P<t>", "(?:")
_TALOS_AT = re.compile(_TALOS)
# any kernel log's line head a paste may hold (dmesg's, -T's, -H's, an ISO time's, a syslog or
# journal line head), after dmesg -x's facility and level
LOG_STAMP = (
    r"(?:[a-z]+ *:[a-z]+ *: )?(?:\[ *(?:\+?\d+\.\d+|\.{3,}) *\]|\[[A-Z][a-z]{2} +\d+ \d\d:\d\d\]"
    r"|\[[A-Z][a-z]{2} [A-Z][a-z]{2} +\d+ \d\d:\d\d:\d\d \d{4}\]"
    r"|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[,.]\d+[+-]\d\d:?\d\d(?= )"
    r"|\S{1,5} +\d+ \d\d:\d\d:\d\d(?:\.\d+)? +(?:[^\s\[\]]+ )?[^\s:\[\]]+(?:\[\d+\])?: "
    rf"|{_TALOS})"
)
_STAMP_AT = re.compile(rf"(?:^|(?<=\s)){LOG_STAMP}")
_JOINED_AT = re.compile(rf"(?<=[^\s:])[ \t]+(?={LOG_STAMP})")
# (a journal's lines with no time or host, `kernel: NVRM: ...`, joined)
_KERNEL_AFTER_WORDS = re.compile(r"(?<=[^\s:])[ \t]+kernel: ")
# a driver line's `NVRM: ` (the first of a line, and any a joined line goes on with)
_NVRM_AT = re.compile(r"(?:^|(?<=\s))NVRM: ")
# a kernel driver's own message head (the NVIDIA driver's `NVRM: `, the NVSwitch driver's
# `nvidia-nvswitch0: `, a PCI device's `pcieport 0000:00:01.0: `, `nvidia 0000:3b:00.0: `, the
# other nvidia modules' `nvidia-modeset: `) after a space; and how what stands before one in a
# line of its own ends (a line head's `:` or `]` left of a stamp, a raw priority `<4>`)
_DRIVER_HEAD = (
    r"(?:NVRM: (?= *[\w(-])|nvidia-nvswitch\d*: "
    r"|(?:pcieport|nvidia) [0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.\d: "
    r"|nvidia-(?:modeset|uvm|drm|peermem|nvlink): )"
)
_DRIVER_HEAD_AT = re.compile(rf"(?<=\S)[ \t]+(?P<h>{_DRIVER_HEAD})")
_DRIVER_LINE = re.compile(_DRIVER_HEAD)
# (a driver's head glued to the words before it: a line end lost with no space for it)
_DRIVER_GLUED = re.compile(r"(?<=[^\s:])(?:NVRM: |nvidia-nvswitch\d*: )")
_HEAD_END = re.compile(r"(?:[:\]]|^<\d{1,3}>)$")
# journalctl's line between boots (`-- Reboot --`, `-- Boot <id> --`) or above its entries
_JOURNAL_NOTE_AFTER_WORDS = re.compile(
    r"\S[ \t]+-- (?:Reboot|Boot [0-9a-f]{32}|Logs begin at .*?|Journal begins at .*?|No entries) --", re.I
)
# a paste's elision mark after words: `[...snip...]`, `[...]`, `(...)`, `<snip>`, `--snip--`
# (bare dots are none: a message's own `...`)
_ELISION_AFTER_WORDS = re.compile(
    r"(?<=\S)[ \t]+([\[(<{][^\])>}\n]{1,60}[\])>}]|-{2,}[ \t]*snip\w*[ \t]*-{2,})(?=\s|$)"
)
# bare dots after a piece's words: an elision line of dots joined on, or a message's own
_DOTS_AFTER_WORDS = re.compile(r"\S[ \t\r]+(?:\.{3,}|…)[ \t\r]*$")

# the formats' line heads (the time's part in group `t`), before them a raw priority (`<4>`,
# an RFC 5424 header's `<4>1 `) or dmesg -x's facility and level
_BEFORE = r"(?:<\d{1,3}>(?:1 )?)?(?:[a-z]+ *:[a-z]+ *: )?"
_HEADS = {
    "dmesg": r"\[ *(?P<t>\+?\d+\.\d+|\.{3,}|[A-Z][a-z]{2} *\d+ \d\d:\d\d) *\]",
    "dmesg-T": r"\[(?P<t>[A-Z][a-z]{2} [A-Z][a-z]{2} +\d+ \d\d:\d\d:\d\d \d{4})\]",
    "iso": r"(?P<t>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[,.]\d+)?(?:[+-]\d\d:?\d\d|Z)) ",
    "syslog": r"(?P<t>\S{1,5} +\d{1,2} \d\d:\d\d:\d\d(?:\.\d+)?) +(?:[^\s\[\]]+ )?[^\s:\[\]]+(?:\[\d+\])?: ",
    "talos": _TALOS_T,
}
_HEAD_AT = {name: re.compile(_BEFORE + head) for name, head in _HEADS.items()}
# which of _BEFORE's parts a head has: every line of one log has the same (a piece without the
# `kern  :warn  : ` its log's lines have was cut inside a head: lines glued without a space)
_FRAMED = re.compile(r"(<\d{1,3}>(?:1 )?)?([a-z]+ *:[a-z]+ *: )?")
# a head of each format the text ends inside (a log cut inside its last line's head), after words
_CUT_HEAD_AT_END = {
    "dmesg": re.compile(r"(?<=\S)[ \t\r]+(?=(?:<\d{0,3}>?)?\[[^\]\s]*(?: [^\]\s]*)?\s*\Z)"),
    "iso": re.compile(r"(?<=\S)[ \t\r]+(?=\d{4}-[\d:T,.+-]*\s*\Z)"),
    "syslog": re.compile(r"(?<=\S)[ \t\r]+(?=\S{1,5} +\d{1,2}(?: \d\d:[\d:.]*(?: \S*(?: \S*)?)?)?\s*\Z)"),
}
_CUT_HEAD_AT_END["dmesg-T"] = _CUT_HEAD_AT_END["dmesg"]
# (`talosctl dmesg`'s: its node and facility, then any of its level and time: `10.20.30.29: kern:    info`)
_CUT_HEAD_AT_END["talos"] = re.compile(
    rf"(?<=\S)[ \t\r]+(?=[^\s:\[\]]+: {_FACILITY}:(?: *[a-z]*(?:: \[[^\]\s]*\]?:?)?)?\s*\Z)"
)
# a head of each format at a line's start or after words and the space a chat put there (each
# match takes its head whole: no head is found again inside one, as the ISO time after `-x`'s
# `kern  :warn  : `)
# a head of each format glued to the words before it (a newline lost with no space for it): not
# cut, as a message may hold such words; a log with one is not read
_GLUED = {
    name: re.compile(rf"(?<=\S){_BEFORE}{head.replace('(?P<t>', '(?:')}") for name, head in _HEADS.items()
}
_CUT_AT = {
    name: re.compile(rf"(?:^|(?<=\S)[ \t\r]+)(?P<h>{_BEFORE}{head.replace('(?P<t>', '(?:')})")
    for name, head in _HEADS.items()
}


class Unjoined(NamedTuple):
    """What unjoined made of a kernel log: how many of its lines held more than one (0: none),
    and its text with each line on a line of its own again; None where that is not certain; why
    the lines cut apart are not all the log held ("" where they are: UNSTAMPED_PART)."""

    joined: int
    text: str | None
    part: str = ""


# why a log without stamps cut apart at its driver's heads is not known whole
UNSTAMPED_PART = (
    "its lines, saved without their time stamps, were joined by a chat and only its kernel drivers'"
    " lines (`NVRM: `, `nvidia-nvswitch0: `, `pcieport 0000:00:01.0: `) could be cut apart again,"
    " so any other line it held, joined onto their words, is not read"
)


def joined_messages(text: str) -> int:
    """How many lines of a kernel log hold more than one of its lines (the module's docstring): a
    stamp after another's words, a second `NVRM: `, an elision mark or a journal's note after
    words. A syslog line's own dmesg stamp after its `kernel: ` is none, and so is a journal's
    entry of several driver lines (its JSON or export format)."""
    if journal_shaped(text):
        return 0
    return sum(1 for line in text.split("\n") if _holds_two(line))


# dmesg's stamp, which another program's message may print as its own text (NetworkManager's
# `<error> [1448724794.852826] [dns-manager/...]`: its own clock, measure35d 21)
_DMESG_STAMP = re.compile(r"\[ *\+?\d+\.\d+ *\]")


def _holds_two(line: str) -> bool:
    """Whether one line holds more than one of a kernel log's lines (its signs). A syslog or
    journal line of another program than the kernel holds no dmesg line: a `[seconds.micro]` in
    its message is that program's own text, no stamp of the log's."""
    if (program := program_of(line)) is not None and program != "kernel":
        line = _DMESG_STAMP.sub("(t)", line)
    return bool(
        (len(_STAMP_AT.findall(line)) > 1 and _JOINED_AT.search(line))
        or (line.startswith("kernel: ") and _KERNEL_AFTER_WORDS.search(line))
        or len(_NVRM_AT.findall(line)) > 1
        or _driver_head_after_words(line)
        or _JOURNAL_NOTE_AFTER_WORDS.search(line)
        or _elision_after_words(line)
        or (_TALOS_AT.match(line) and _CUT_HEAD_AT_END["talos"].search(line))  # (its last line's cut
        # head joined on)
    )


# a message's own head in the words before a driver's head (`nvidia-nvswitch1: SXid ...`): what
# the line's own prefix is not (a stamp of another form, `2025-04-15 16:50:03 `, a host `gpu01 `, a
# list mark `- `, `1. `: review revJ, a whole log of such lines was refused, its Xid 79 unread)
_MESSAGE_HEAD = re.compile(r"[A-Za-z][\w.-]*: \S")


def _driver_head_after_words(line: str) -> bool:
    """Whether a kernel driver's own message head (_DRIVER_HEAD_AT) follows another message's
    words: a log without stamps (`dmesg -t`, `journalctl -o cat`) a chat joined, `nvidia-nvswitch1:
    SXid ... Fault Up NVRM: Xid (PCI:0000:91:00): 79, ...` (before, the line was read as its SXid
    alone and the Xid 79 was lost: "no Xid in the kernel log"). A head after the line's own stamp
    or head (`[ 12.3] `, an ISO time's, `host kernel: `, `-x`'s `kern  :warn  : `) is none, and so
    is one after words that hold no message's head (`word: ...`): a prefix of the line's own."""
    if (program := program_of(line)) is not None and program != "kernel":
        return False  # (another program's line: sudo's `COMMAND=/usr/bin/grep NVRM: ...`)
    for m in _DRIVER_HEAD_AT.finditer(line):
        own = max((s.end() for s in _STAMP_AT.finditer(line) if s.end() <= m.start()), default=0)
        said = line[own : m.start()].strip()
        if said and not _HEAD_END.search(said) and _MESSAGE_HEAD.search(said):
            return True
    return False


def _elision_after_words(line: str) -> bool:
    """An elision mark after words that says lines were left out: one with a note (`[...snip...]`,
    `<snip>`) or `[...]`; a bare `(...)` is a message's value redacted (`Xid (PCI:...): 145, ...
    Link 11 (...)`)."""
    return any(
        ELISION.match(mark) and (mark.startswith("[") or re.search("[A-Za-z]", mark))
        for mark in (m.group(1) for m in _ELISION_AFTER_WORDS.finditer(line))
    )


def unjoined(text: str) -> Unjoined:
    """`text` (a kernel log) with the lines a chat joined cut apart again at its format's heads
    (the module's docstring), where every piece is then one line of the log; the text unchanged
    where no line holds two."""
    joined = joined_messages(text)
    if not joined:
        return Unjoined(0, text)
    name = _format(text)
    if name is None:  # (a log without stamps: cut at its drivers' heads, UNSTAMPED_PART)
        driver = _driver_lines(text)
        return Unjoined(joined, driver, UNSTAMPED_PART if driver is not None else "")
    head, cut = _HEAD_AT[name], _CUT_AT[name]
    lines = text.split("\n")
    last = max((at for at, line in enumerate(lines) if line.strip()), default=0)
    lines[last : last + 1] = _CUT_HEAD_AT_END[name].split(lines[last], maxsplit=1)  # (the text ends
    # inside a head)
    pieces: list[str] = []
    for line in lines:
        bounds = [0, *(m.start("h") for m in cut.finditer(line) if m.start("h") > 0), len(line)]
        if not _line_start(line[: bounds[1]]):
            return Unjoined(joined, None)
        cut_off = [line[a:b] for a, b in itertools.pairwise(bounds)]
        # (an RFC 5424 header a classic syslog line's head: the normaliser made the first one so)
        pieces += [rfc5424_unframed(piece.rstrip(" \t\r")) for piece in cut_off[:-1]]
        pieces += [rfc5424_unframed(cut_off[-1])]
    if any(_unsure(p, head, _GLUED[name]) for p in pieces):
        return Unjoined(joined, None)
    heads = [m for piece in pieces if (m := head.match(piece))]
    if len({_framing(m.group(0)) for m in heads}) > 1 or not _in_order([m.group("t") for m in heads]):
        return Unjoined(joined, None)
    return Unjoined(joined, "\n".join(pieces))


def _driver_lines(text: str) -> str | None:
    """A log without stamps (`dmesg -t`, `journalctl -o cat`) a chat joined, cut before each
    kernel driver's head after words (_DRIVER_HEAD_AT), where every piece is then one whole line
    of a driver's: it starts with a driver's head and holds no sign of another line (_unsure);
    None where one does not (the kernel's own lines, `e820: ...`, cannot be told apart)."""
    pieces: list[str] = []
    for line in text.split("\n"):
        bounds = [0, *(m.start("h") for m in _DRIVER_HEAD_AT.finditer(line)), len(line)]
        pieces += [line[a:b].rstrip(" \t\r") for a, b in itertools.pairwise(bounds)]
    if any(
        p.strip() and (not _DRIVER_LINE.match(p) or _unsure(p, _DRIVER_LINE, _DRIVER_GLUED)) for p in pieces
    ):
        return None
    return "\n".join(pieces)


# a shell prompt after words (`6.6.105+ $ sudo dmesg | head`: a chat joined the next command's
# prompt line onto an output's last line): a sign (`$`, `#`, after `user@host:~`, `[u@h ~]`) and a
# command after it (`#1 SMP` is a kernel's build number, no prompt)
_PROMPT_AFTER_WORDS = re.compile(r"\S[ \t]+(?:[^\s$#]*[~:@\]])?[$#][ \t]+[\w./~-]")


def glued_to_log(command: str, text: str) -> str | None:
    """Why a saved kernel log (`text`, below the copied prompt line that ran `command`) cannot be
    read as whole: the log's first line joined onto the prompt line after its command (`$ sudo
    dmesg -T [Sun Jul 28 ...] NVRM: Xid ...`: its first message lost into the command), or a
    prompt joined after words above the log (`6.6.105+ $ sudo dmesg | head`: the log printed by
    another command than the one it is read under, its filter lost); None where neither."""
    if (stamp := _STAMP_AT.search(command)) and command[: stamp.start()].strip():
        return (
            f"the prompt line `{command[: stamp.start()].strip()[:60]}` holds the log's first line"
            " after its command (a chat or a page joined the two), so that message is not read"
        )
    for line in text.split("\n"):
        if _STAMP_AT.match(line.lstrip()):
            break
        if found := _PROMPT_AFTER_WORDS.search(line):
            return (
                f"a shell prompt after words above the log (`{line.strip()[:60]}`: a chat or a page"
                " joined a prompt line onto an output), so which command printed the log, and"
                f" whether it kept all of it, cannot be told from `{found.group(0)[1:].strip()}...`"
            )
    return None


def _unsure(piece: str, head: re.Pattern[str], glued: re.Pattern[str]) -> bool:
    """Whether a piece unjoined is not certainly one line of the log: two lines still in it, dots
    after its words, a head or a shell prompt glued after its words (another command's output)."""
    return (
        _holds_two(piece)
        or bool(_DOTS_AFTER_WORDS.search(piece) or _PROMPT_AFTER_WORDS.search(piece))
        or _glued(piece, head, glued)
        or joined_record_head(piece)  # (a pstore record's head joined to a line: facts/kernel_pstore)
    )


def _glued(piece: str, head: re.Pattern[str], glued: re.Pattern[str]) -> bool:
    """Whether a head of the log's format is glued to words in `piece` after its own head."""
    own = head.match(piece)
    return glued.search(piece, own.end() if own else 1) is not None


def _framing(head: str) -> tuple[bool, bool]:
    """Which of _BEFORE's parts a head has: a raw priority, dmesg -x's facility and level."""
    framed = _FRAMED.match(head)
    return (bool(framed and framed.group(1)), bool(framed and framed.group(2)))


def _line_start(piece: str) -> bool:
    """Whether what a line holds before its first head cut off is a line of the log's: nothing,
    a line cut inside its head (`Tue Apr 15 16:50:03 2025] NVRM: ...`), an elision line; not a
    mail's quote marker alone (`> [Fri Aug 30 ...] ...`: each line's marker then joined onto the
    line before)."""
    return not piece.strip() or bool(re.search(r"\w", piece)) or bool(ELISION.match(piece))


def _format(text: str) -> str | None:
    """The head of the log's format: the first that starts one of its lines, else the first
    after words near the text's start (a log whose first line was cut inside its head); None
    for none."""
    lines = text.split("\n")
    for line in lines:
        for name, head in _HEAD_AT.items():
            if head.match(line.lstrip()):
                return name
    found = [
        (m.start(), name)
        for name, head in _HEAD_AT.items()
        if (m := re.search(rf"\s{head.pattern}", text[:4096]))
    ]
    return min(found)[1] if found else None


def _in_order(stamps: list[str]) -> bool:
    """Whether the pieces' stamps (their time's part) never go back: seconds since boot, ISO or
    -T times, a syslog head's time within one month; a delta (`+0.000123`), a hand elision
    (`....`) or -H's minute is not compared."""
    last: tuple[str, float] | None = None
    for stamp in stamps:
        when = _when(stamp)
        if when is None:
            continue
        if last is not None and when[0] == last[0] and when[1] < last[1]:
            return False
        last = when
    return True


def _when(stamp: str) -> tuple[str, float] | None:
    """A stamp's time in seconds (since boot, the epoch, or a syslog month's start: that month's
    word first), None where it is not compared."""
    if re.fullmatch(r"\d+\.\d+", stamp):
        return "", float(stamp)
    if m := re.fullmatch(r"(\S{1,5}) +(\d{1,2}) (\d\d):(\d\d):(\d\d(?:\.\d+)?)", stamp):
        month, day, hours, minutes, seconds = m.groups()
        return month, ((int(day) * 24 + int(hours)) * 60 + int(minutes)) * 60 + float(seconds)
    fraction = re.search(r"[,.](\d+)(?=[-+Z])", stamp)
    whole = re.sub(r"[,.]\d+(?=[-+Z])", "", stamp).replace("Z", "+0000")
    for shape in ("%a %b %d %H:%M:%S %Y", "%Y-%m-%dT%H:%M:%S%z"):
        try:
            when = datetime.strptime(whole, shape).timestamp()
        except ValueError:
            continue
        return "", when + (float("0." + fraction.group(1)) if fraction else 0.0)
    return None
