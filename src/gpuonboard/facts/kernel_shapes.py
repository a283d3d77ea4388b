"""A kernel log saved in one of its readers' other shapes, read as dmesg prints it (one record a
line, `[seconds] message`, continuation lines indented), so that facts/kernel_log.py and
facts/aer.py read every shape alike:

    {"_TRANSPORT":"kernel","_BOOT_ID":"...","_SOURCE_MONOTONIC_TIMESTAMP":"1843308145","MESSAGE":"NVRM: ..."}
                                               (journalctl -o json, json-seq, json-sse, json-pretty)
    __CURSOR=s=...                             (journalctl -o export: KEY=value lines, an entry's
    _TRANSPORT=kernel                          blank line after it)
    MESSAGE=NVRM: Xid (PCI:0000:3b:00): 79, ...
    Mon 2025-06-02 13:00:01.123456 UTC [s=...;i=...;b=...;m=...]    (journalctl -o verbose:
        MESSAGE=NVRM: Xid ...                                        indented KEY=value lines)
    <4>[ 1843.308145] NVRM: Xid (PCI:0000:3b:00): 79, ...             (dmesg -r: the raw priority)
    Jun  2 13:00:01 host kernel:[ 1843.308145] NVRM: ...             (a syslog writing no space
                                                                     after `kernel:`)
    6,4001,261573217,-;nvidia-nvswitch0: open (major=510)            (`cat /dev/kmsg`: priority,
     SUBSYSTEM=pci                                                   sequence, microseconds since
                                                                     boot, flags; its key=value
                                                                     lines after it)

Before, these were read as no kernel log (`not a recognised command output`), or with a JSON
entry's several lines in one and its boot lost. A journal entry of another program than the
kernel (`journalctl -o json` without `-k`) is left out: whatever it quotes is no kernel line. A
new `_BOOT_ID` is journalctl's boot separator (`-- Boot <id> --`). A text that ends inside an
entry (an output cut short) ends with what its MESSAGE says so far, without a newline: the
readers mark the event they read there `cut`. Any other text is returned unchanged."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

from gpuonboard.facts.mcelog import mcelog_as_kernel
from gpuonboard.once import lazy_re

__all__ = [
    "OTHERS_ONLY",
    "TALOS_LINE",
    "journal_shaped",
    "plain_kernel_text",
    "rfc5424_unframed",
    "talos_head_end",
]


# dmesg -r's raw priority (`<4>`, `<6>`; with the facility, `<14>`) before the stamp or message
_RAW_PRIORITY = re.compile(r"^<\d{1,3}>(?=\S)", re.MULTILINE)
# a syslog's `host kernel:[ 9438.84] ...` (rsyslog templates without the space)
_KERNEL_NO_SPACE = re.compile(r"(\bkernel:)(?=\[)")
# a console logger's own time before each line it captured (a serial console's, conserver's,
# ipmitool sol's or a BMC's log: `[2023-06-22 21:55:31.352446][5975153.878190] EDAC MC0: 1 UE
# ...`, LKML's outage ticket of 2023-06): the kernel's line is what follows it. Read where it
# stands before a kernel stamp on some line; then taken off every line it heads (the logger also
# stamps the pieces of a line another console output split: `[...]y read error on ...`)
_CONSOLE_TIME = r"\[?\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?\]?[ \t]?"
_CONSOLE_BEFORE_STAMP = re.compile(rf"^{_CONSOLE_TIME}(?=\[\s*\d+\.\d+\])", re.MULTILINE)
_CONSOLE_HEAD = re.compile(rf"^{_CONSOLE_TIME}", re.MULTILINE)
# a /dev/kmsg record (Documentation/ABI/testing/dev-kmsg): `PRIORITY,SEQUENCE,MICROSECONDS,FLAGS
# [,MORE];MESSAGE`, one a line (the kernel escapes a newline in it as `\x0a`); its dictionary's
# `KEY=value` lines (` SUBSYSTEM=pci`, ` DEVICE=+pci:0000:3b:00.0`) follow it, indented by one space
_KMSG_RECORD = lazy_re(r"^(\d{1,3}),(\d+),(\d+),[^;\s]*;(.*)")
_KMSG_DICT = lazy_re(r"^ [A-Z][A-Z0-9_]*=")
# journalctl -o export's field line, and -o verbose's (indented)
_EXPORT_FIELD = lazy_re(r"^([A-Z0-9_]+)=(.*)$")
_VERBOSE_HEAD = re.compile(r"^\S.*\[s=[0-9a-f]+;i=[0-9a-f]+;b=([0-9a-f]{32});m=([0-9a-f]+);")
_VERBOSE_FIELD = lazy_re(r"^\s+([A-Z0-9_]+)=(.*)$")
# an entry's opening, JSON shapes: `{`, json-seq's record separator, json-sse's `data: `
_JSON_START = re.compile(r"^(?:\x1e|data: )?\{")
# the MESSAGE field of an entry the text ends inside (its value so far)
_CUT_MESSAGE = lazy_re(r'"MESSAGE"\s*:\s*"((?:[^"\\]|\\.)*)')
_CUT_TRANSPORT = lazy_re(r'"_TRANSPORT"\s*:\s*"([^"]*)"')
_JSON_GAP = lazy_re(r"[\s\x1e]*(?:data: )?")
_CUT = "\0cut"  # an entry the text ends inside


# why a journal of other programs' entries only is no kernel log (facts/kernel_log.py KernelLog.no_log)
OTHERS_ONLY = (
    "the journal's entries are all of other programs than the kernel (a journalctl without -k,"
    " narrowed to them): no kernel line to read"
)


def journal_shaped(text: str) -> bool:
    """Pure: whether `text` is journalctl's JSON, export or verbose output (entries with fields)."""
    head = text.lstrip()
    if _JSON_START.match(head):
        return '"MESSAGE"' in head[:65536] or '"__CURSOR"' in head[:65536]
    return head.startswith("__CURSOR=") or _VERBOSE_HEAD.match(head) is not None


def plain_kernel_text(text: str) -> str:
    """Pure: `text` as dmesg prints it where it is a journal's JSON / export / verbose output, a
    `dmesg -r` or a syslog without the space after `kernel:`; else `text` itself."""
    head = text.lstrip()
    if _JSON_START.match(head):
        entries = _json_entries(head)
    elif head.startswith("__CURSOR=") or _VERBOSE_HEAD.match(head):
        entries = _field_entries(head)
    elif _KMSG_RECORD.match(head):
        return _kmsg_printed(text)
    else:
        text = mcelog_as_kernel(text) or text  # (mcelog's records: the kernel's lines of them)
        return _KERNEL_NO_SPACE.sub(r"\1 ", _RAW_PRIORITY.sub("", _without_console_times(text)))
    return _printed(entries)


def _without_console_times(text: str) -> str:
    """`text` without a console logger's times before its lines (_CONSOLE_TIME), where at least
    one stands before a kernel stamp; else `text` itself."""
    if _CONSOLE_BEFORE_STAMP.search(text) is None:
        return text
    return _CONSOLE_HEAD.sub("", text)


def _kmsg_printed(text: str) -> str:
    """`cat /dev/kmsg`'s records as dmesg prints them (`[  261.573217] message`), their dictionary
    lines left out; a text whose lines are not mostly records is returned unchanged, as a text
    that ends inside its last line still ends so."""
    lines = text.lstrip().split("\n")
    kept = [line for line in lines if line.strip() and not _KMSG_DICT.match(line)]
    records = [m for line in kept if (m := _KMSG_RECORD.match(line))]
    if len(records) * 2 <= len(kept):
        return text
    out = []
    for line in kept:
        m = _KMSG_RECORD.match(line)
        if m is None:
            out.append(line)
            continue
        micros = int(m.group(3))
        out.append(f"[{micros // 1_000_000:5d}.{micros % 1_000_000:06d}] {m.group(4)}")
    return "\n".join(out) + ("\n" if not lines[-1] else "")


def _json_entries(text: str) -> Iterator[dict[str, object]]:
    """The entries of journalctl's JSON shapes, in order; an entry the text ends inside is what
    can be read of it, marked `_CUT`."""
    decoder = json.JSONDecoder()
    at = 0
    while (at := _gap_end(text, at)) < len(text) or _opened(text, at):
        if at >= len(text):  # (json-seq's separator or json-sse's `data: ` with no entry after it)
            yield {_CUT: True}
            return
        try:
            entry, at = decoder.raw_decode(text, at)
        except json.JSONDecodeError:
            rest = text[at:]
            cut = _CUT_MESSAGE.search(rest)
            transport = _CUT_TRANSPORT.search(rest)
            yield {
                _CUT: True,
                "MESSAGE": _json_string(cut.group(1)) if cut else "",
                **({"_TRANSPORT": transport.group(1)} if transport else {}),
            }
            return
        if isinstance(entry, dict):
            yield entry


def _opened(text: str, at: int) -> bool:
    """Whether the gap before `at`, the text's end, opened an entry: json-seq's record separator
    or json-sse's `data: ` after the last entry (each is printed before one, never after)."""
    tail = text[:at][-8:]
    return at >= len(text) and (tail.rstrip(" \n\r\t").endswith("\x1e") or tail.endswith("data: "))


def _gap_end(text: str, at: int) -> int:
    """Where the next JSON entry starts: after blanks, json-seq's separator, json-sse's `data: `."""
    gap = _JSON_GAP.match(text, at)
    return gap.end() if gap else at


def _json_string(said: str) -> str:
    """A JSON string's value cut short, as far as it reads (an escape cut in two left out)."""
    for end in range(len(said), max(len(said) - 6, -1), -1):
        try:
            value = json.loads(f'"{said[:end]}"')
        except json.JSONDecodeError:
            continue
        return value if isinstance(value, str) else ""
    return said


def _field_entries(text: str) -> Iterator[dict[str, object]]:
    """The entries of journalctl -o export (blank-line separated) or -o verbose (a head line, its
    fields indented); the text's last entry, where no newline ends the text, is marked `_CUT`."""
    entry: dict[str, object] = {}
    lines = text.split("\n")
    for line in lines:
        if m := _VERBOSE_HEAD.match(line):
            if entry:
                yield entry
            entry = {"_BOOT_ID": m.group(1), "__MONOTONIC_TIMESTAMP": str(int(m.group(2), 16))}
        elif (m := _VERBOSE_FIELD.match(line) or _EXPORT_FIELD.match(line)) is not None:
            entry[m.group(1)] = m.group(2)
        elif not line.strip() and "__CURSOR" in entry:
            yield entry
            entry = {}
    if lines[-1]:  # (the text ends inside a line: inside an entry, a key of a new one too)
        yield {**entry, _CUT: True}
    elif entry:
        yield entry


def _message(entry: dict[str, object]) -> str:
    """An entry's MESSAGE as text (journalctl prints a non-UTF-8 one as a list of bytes)."""
    said = entry.get("MESSAGE")
    if isinstance(said, list):
        return bytes(b for b in said if isinstance(b, int) and 0 <= b < 256).decode("utf-8", "replace")
    return said if isinstance(said, str) else ""


def _of_kernel(entry: dict[str, object]) -> bool:
    """The entry is the kernel's (`_TRANSPORT=kernel`, `SYSLOG_IDENTIFIER=kernel`), or says not
    whose it is (an output narrowed to its MESSAGE and stamps)."""
    transport, ident = entry.get("_TRANSPORT"), entry.get("SYSLOG_IDENTIFIER")
    if transport is None and ident is None:
        return True
    return transport == "kernel" or ident == "kernel"


def _stamp(entry: dict[str, object]) -> str:
    """dmesg's stamp of an entry, from the kernel's own time since boot (microseconds); "" where
    the entry has none."""
    for key in ("_SOURCE_MONOTONIC_TIMESTAMP", "__MONOTONIC_TIMESTAMP"):
        value = entry.get(key)
        if isinstance(value, str) and value.isdecimal():
            micros = int(value)
            return f"[{micros // 1_000_000:5d}.{micros % 1_000_000:06d}] "
    return ""


def _printed(entries: Iterator[dict[str, object]]) -> str:
    """The kernel's entries as dmesg prints them: a boot separator where `_BOOT_ID` changes, each
    entry's message after its stamp, its further lines indented; an entry the text ends inside,
    last, without the newline after it."""
    out: list[str] = []
    boot: object = None
    for entry in entries:
        if not _of_kernel(entry):
            if entry.get(_CUT):  # (cut inside another program's entry: a cut all the same)
                return "\n".join([*out, "["])
            continue
        if boot is not None and entry.get("_BOOT_ID") not in (None, boot):
            out.append(f"-- Boot {entry['_BOOT_ID']} --")
        boot = entry.get("_BOOT_ID", boot)
        stamp = _stamp(entry)
        first, *rest = _message(entry).split("\n")
        # (an entry cut before its MESSAGE says nothing yet: where it has no stamp either, a
        # stamp's first character stands for it, as a dmesg line cut there reads)
        out.append(stamp + first if stamp or first or not entry.get(_CUT) else "[")
        out += [" " * len(stamp) + line for line in rest if line.strip()]
        if entry.get(_CUT):
            return "\n".join(out)
    return "\n".join(out) + "\n" if out else ""


# an RFC 5424 syslog line's header (`<4>1 2025-01-03T07:39:44.123456+00:00 gpu01 kernel - - - `:
# PRI and version, TIMESTAMP, HOSTNAME, APP-NAME, PROCID, MSGID, STRUCTURED-DATA `-` or its
# `[id k="v"]` elements), as rsyslog writes, syslog-ng's syslog-protocol and forwarders
_RFC5424 = re.compile(
    r"^<\d{1,3}>1 (\S+) (\S+) (\S+) (\S+) \S+ (?:-|(?:\[(?:[^\]\\]|\\.)*\])+)(?: |$)", re.MULTILINE
)


def rfc5424_unframed(text: str) -> str:
    """A log saved in RFC 5424's format with each header as a classic syslog file's
    (`2025-01-03T07:39:44.123456+00:00 gpu01 kernel: `, rsyslog's RFC 3339 file format; the
    PROCID as `[pid]`, MSGID and structured data dropped), read as that file is (the paste
    normaliser's: api/paste_frames.py). Before, a kernel
    log so saved was refused as lines a chat joined (its `- ` before the dmesg stamp read as the
    end of another message)."""
    if "<" not in text or not _RFC5424.search(text):
        return text

    def head(m: re.Match[str]) -> str:
        pid = "" if m.group(4) == "-" else f"[{m.group(4)}]"
        return f"{m.group(1)} {m.group(2)} {m.group(3)}{pid}: "

    return _RFC5424.sub(head, text)


# `talosctl dmesg`, Talos Linux's kernel log (a Talos node has no shell nor dmesg): each line
# `<node>: <facility>: <level>: [<ISO-8601 time>]: <message>`, `kern` the kernel's own lines,
# `user` ([talos] ...) and the others another program's (siderolabs/talos#7043). A line cut
# inside its head (`10.20.30.29: kern:    info`) is one of the log's, cut: its `stamp` group
# unmatched. The one pattern of the shape: api/saved_kinds.py (whose lines a saved file's are),
# facts/kernel_oops.py (a line's message after its head).
TALOS_LINE = re.compile(
    r"^\S+: (?P<facility>kern|user|mail|daemon|auth|syslog|lpr|news|uucp|cron|authpriv|ftp|local\d):"
    r" *(?:emerg|alert|crit|err|warning|notice|info|debug)(?:(?P<stamp>: \[\d{4}-\d\d-\d\dT[\d:.]+Z?\]:) ?|$)"
)


def talos_head_end(line: str) -> int | None:
    """Where the message of a `talosctl dmesg` line of the kernel's (`kern`) starts, after its
    whole head (`192.168.11.119: kern: warning: [2026-04-22T21:27:51.29Z]: `); None for any
    other line, one cut inside its head too."""
    m = TALOS_LINE.match(line)
    return m.end() if m is not None and m["facility"] == "kern" and m["stamp"] else None
