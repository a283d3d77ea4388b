"""Whether the last line of a kernel log cut short says anything yet (facts/kernel_log.py): a
line that holds only a stamp, or the start of one, or the start of a driver's tag after it may
be the start of an Xid or SXid line. The stamps are those facts/kernel_log.KERNEL_STAMP knows,
whole or cut anywhere, and stamps whose month or weekday the box's locale prints (`kwi 15
07:56:59 host kernel:`: April under pl_PL), learnt from the log's own lines."""

from __future__ import annotations

import re

from gpuonboard.facts.kernel_nvrm import DRIVER_LOAD
from gpuonboard.once import lazy_re, loaded_once

__all__ = [
    "cut_by_shape",
    "ends_unfinished",
    "host_cut",
    "line_heads",
    "locale_words",
    "says_nothing",
    "whole_when_cut",
]


def _started(*parts: str) -> str:
    """A regex for any start of `parts` read in turn: the first part, then each next one or none
    (each part's regex reads its own cut forms: `\\d{1,4}` reads `20` of `2024`)."""
    out = ""
    for part in reversed(parts[1:]):
        out = f"(?:{part}{out})?"
    return f"(?:{parts[0]}{out})"


def _cut_of(*words: str) -> str:
    """A regex for any non-empty start of one of `words` (`J`, `Ja`, `Jan`)."""
    starts = sorted({w[:n] for w in words for n in range(1, len(w) + 1)}, key=len, reverse=True)
    return "(?:" + "|".join(re.escape(start) for start in starts) + ")"


_MONTH = _cut_of("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_CLOCK = r"\d{1,2}(?::(?:\d{1,2}(?::\d{0,2})?)?)?"
_CTIME = _started(
    _cut_of("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"),
    " ",
    _MONTH,
    " {1,2}",
    r"\d{1,2}",
    " ",
    _CLOCK,
    " ",
    r"\d{1,4}",
    r"\]",
)
_HOST = _started(r" [^\s\[\]:]+", " ", _cut_of("kernel:"))  # syslog / journalctl: "host kernel:"
# every stamp KERNEL_STAMP knows (and a syslog or journalctl prefix), whole or cut anywhere
_STAMP_START = "|".join(
    (
        _started(r"\[", r" *\+?\d*", r"\.\d*", r"\]"),  # dmesg `[ 1843.308145]`, `[  +0.000040]`
        r"\[" + _CTIME,  # dmesg -T `[Tue Apr 15 16:50:03 2025]`
        _CTIME,  # the same, its `[` lost (a paste's first line)
        _started(r"\[", _MONTH, " ?", r"\d{1,2}", " ", _CLOCK, r"\]"),  # dmesg -H `[Nov18 10:51]`
        _started(  # dmesg --decode `kern  :warn  :`
            _cut_of("kern"),
            " *",
            ":",
            _cut_of("emerg", "alert", "crit", "err", "warn", "notice", "info", "debug"),
            " *",
            ":",
        ),
        _started(  # ISO `2024-11-15T05:39:15,491363+00:00` (then a journalctl host)
            r"\d{1,4}",
            r"-\d{0,2}",
            r"-\d{0,2}",
            "T",
            _CLOCK,
            r"(?:[.,]\d*)?",
            r"(?:Z|[+-]\d{0,2})",
            r":?\d{0,2}",
            _HOST,
        ),
        # syslog / journalctl `Jan  3 07:39:44 host kernel:`
        _started(_MONTH, " {1,2}", r"\d{1,2}", " ", _CLOCK, r"(?:[.,]\d*)?", _HOST),
        _cut_of("kernel:"),
    )
)
# a line that says nothing yet: stamps (the last one maybe cut), then nothing or the start of the
# GPU driver's or the NVSwitch driver's tag (`NVR`, `nvidia-nvswitc`, `nvidia-nvswitch2`)
_TAG_START = _cut_of("NVRM:") + "|" + _started(_cut_of("nvidia-nvswitch"), r"\d+", ":")


# the start of a line of the host's own hardware errors (facts/host_errors.py), cut anywhere: the
# heads that tell an error line from the drivers' other lines, each read up to where it does
# (an EDAC count line `EDAC MC0: 1 CE` / `EDAC skx MC3: 1 UE`, an EDAC decode of a machine check
# `EDAC sbridge MC1: CPU 1: ...`, a machine check's `mce: [Hardware Error]: CPU 0: ...` or
# `Machine check ...`, any line of a firmware's APEI record `{1}[Hardware Error]: ...`, a PCIe
# device's `nvme 0000:5e:00.0: PCIe Bus Error: severity=Uncorrected (Fatal)`); a line that has
# left every head (`EDAC amd64: Node 0: DRAM ECC enabled.`, `mce: CPU supports 22 MCE banks`,
# `pcieport 0000:00:01.1: AER: Corrected error received`) is whole whatever followed it
_ANY_REST = r"(?: .*)?"
_HW_TAIL = f"(?:{_cut_of('CPU')}|{_cut_of('Machine check')}){_ANY_REST}"
_HW_ERROR = _started(_cut_of("[Hardware Error]:"), " ", _HW_TAIL)
_BDF = r"[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]"
_HOST_HEADS = "|".join(
    (
        _started(
            _cut_of("EDAC"),
            " ",
            r"(?:\w+ ?)?",
            _cut_of("MC"),
            r"\d+",
            ":",
            " ",
            rf"(?:(?:\d+ ?)?(?:[UC]E?)?|{_cut_of('CPU')}{_ANY_REST})",
        ),
        _started(_cut_of("mce:"), " ", _HW_ERROR),
        _HW_ERROR,
        r"\{\d*(?:\}.*)?",
        _started(
            r"[\w-]+",
            " ",
            r"[0-9a-fA-F:.]*",
            rf"(?<={_BDF}):",
            " ",
            _cut_of("PCIe Bus Error:"),
            " ",
            _cut_of("severity="),
            _cut_of("Uncorrected", "Uncorrectable"),
            " ",
            r"\(",
            _cut_of("Fatal", "Non-Fatal"),
        ),
    )
)
# a host error's tag (`EDAC`, `mce:`, `[Hardware`, `{1}[`, `PCIe Bus Error`): a cut line that
# shows one is a host error line's start, not only a stamp or a word
_HOST_TAG = lazy_re(r"\bEDAC\b|\bmce: |\[Hardware|\{\d+\}\[|PCIe Bus Error")


@loaded_once
def _says_nothing_pattern(heads: str = _TAG_START) -> re.Pattern[str]:
    """Compiled on first use (a log whose last line has no newline), not at import: a few ms."""
    return re.compile(rf"\s*(?:>\s*)?(?:(?:{_STAMP_START})(?:\s+|$))*(?:{heads})?\s*")


def says_nothing(line: str, words: dict[str, str] | None = None, heads: str = _TAG_START) -> bool:
    """True when a line (the log's last, without its newline) holds no text that reads: only a
    stamp or a start of one, or the start of a driver's tag after it. Such a line may be the
    start of an Xid or SXid line; a line that says anything else (`usb 1-1: new ...`) is not.
    `words`: the log's own month and weekday names that are not English (locale_words);
    `heads`: the line starts that are read as saying nothing yet (the GPU and NVSwitch drivers'
    tags; host_cut's: the host error lines' heads)."""
    if len(line) > 200:
        return False
    said = (line, _anglicised(line, words)) if words else (line,)
    # (a Chinese or Japanese locale's month, `6月 28 02:52:53`, is one wherever it stands: a log
    # cut inside its first line has no other line to learn it from)
    said += tuple(
        _CJK_MONTH.sub(lambda m: _MONTHS[int(m.group(1)) - 1], text) for text in said if "月" in text
    )
    return any(_says_nothing_pattern(heads).fullmatch(text) is not None for text in said)


def host_cut(line: str, words: dict[str, str] | None = None) -> str:
    """Whether the log's last line, without its newline, may be the start of a host hardware
    error's line (facts/host_errors.py), by the same reading as says_nothing: "tag" where it
    shows a host error's tag and has not left every error line's head (`EDAC MC1: 1`, `mce:
    [Hardware Err`, an APEI record's line), "stamp" where it says nothing yet (a stamp, the start
    of a word), "" where it is whole whatever followed it (`EDAC amd64: Node 0: DRAM ECC
    enabled.`, another driver's line)."""
    if not says_nothing(line, words, _HOST_HEADS):
        return ""
    return "tag" if _HOST_TAG.search(line) else "stamp"


# a line cut by its own shape, whatever came after it (its newline too: a paste's excerpt cut
# mid-line and saved with one): its text ends inside a PCI device address (`kernel: pcieport
# 0000:`, `0000:00:1c.`: no message the kernel prints ends there), or it is a stamp or a head cut
# before its end (`Feb 09 15:47:06 debian k`, `[ 1843.30`, `NVR`: says_nothing) rather than a
# whole head with an empty message after it (`[ 1843.308145]`, `host kernel:`, `kern  :warn  :`)
_CUT_ADDRESS = re.compile(
    r"(?<![\w:])(?=[a-fA-F]{0,3}\d)[0-9a-fA-F]{4}:(?:[0-9a-fA-F]?|[0-9a-fA-F]{2}:(?:[0-9a-fA-F]{0,2}\.?)?)\s*$"
)
_WHOLE_HEAD_END = lazy_re(r"(?:\]|\bkernel:|\b(?:emerg|alert|crit|err|warn|notice|info|debug) *:)\s*$")


# the kernel's driver-core line of a failed probe (drivers/base/dd.c: `nvidia: probe of
# 0000:0a:00.0 failed with error -1`): a message that is a strict start of it (`nvidia: probe`,
# `nvidia: probe of 0000:0a:00.0 failed wi`) is that line cut short, however whole its last word
# reads (measure34d 16: a Thunderbolt eGPU's log ends on `nvidia: probe`)
_PROBE_LINE_START = lazy_re(
    r"[\w.-]+: "
    + _started(
        "probe",
        " ",
        _cut_of("of"),
        " ",
        r"\S*",
        " ",
        _cut_of("failed"),
        " ",
        _cut_of("with"),
        " ",
        _cut_of("error"),
        " ",
        r"-?",
    )
)
_PROBE_LINE_WHOLE = lazy_re(r"[\w.-]+: probe of \S+ failed with error -?\d+")


def _probe_line_cut(message: str) -> bool:
    """The message is a strict start of the driver core's failed-probe line (_PROBE_LINE_START)."""
    return _PROBE_LINE_START.fullmatch(message) is not None and _PROBE_LINE_WHOLE.fullmatch(message) is None


def cut_by_shape(line: str, words: dict[str, str] | None = None, heads: frozenset[str] = frozenset()) -> bool:
    """True when a kernel log's last line is cut by its own shape (_CUT_ADDRESS), with or without
    a newline after it: it ends inside a device address, inside a call trace's frame (_CUT_FRAME:
    `[597411.196475]  do_`, a name without its `+0x7c/0xd8`), inside the driver core's failed-probe
    line (_probe_line_cut: `nvidia: probe`), inside a message head the log's
    other lines print (`heads`, line_heads: `FS-Cach` of `FS-Cache:`), inside a stack dump's word
    where the log's other lines are such words (_stack_word_cut), or inside its stamp, its
    head or a driver's tag (says_nothing, `words` the log's locale names, locale_words)."""
    message = _message(line)
    if _CUT_ADDRESS.search(line) or _CUT_FRAME.fullmatch(message) or _head_cut(message, heads):
        return True
    if _stack_word_cut(message, heads) or _probe_line_cut(message):
        return True
    return says_nothing(line, words) and _WHOLE_HEAD_END.search(line) is None


# a kernel log line's prefix: its stamps (dmesg's `[...]`, --decode's `kern  :warn  :`, ISO
# times), a syslog's or journal's `... host kernel:`, a quoting `> `
_PREFIX = re.compile(
    r"^\s*(?:>\s*)?(?:\[[^\]]*\]\s*|kern\s*:\s*\w+\s*:\s*|\d{4}-\d\d-\d\dT\S+\s+|[^\n]{0,60}?\bkernel:\s*)*"
)
# how a whole kernel message ends: a closing mark (`.`, `)`, `]`, `>`, a quote, `!`, `%`, a `-`
# run after `]`: `---[ end trace 0000000000000000 ]---`), a number (`pid=4242`, `0x1f`), a colon
# after a word (`Call Trace:`), or a whole token of letters, digits and `_-/.#` after a space, a
# `:`, `=`, `/` or `(` (`renamed from veth1ab23c4`, `errors=remount-ro`, `RX/TX`, `shmem-rss:0kB`,
# `#78-Ubuntu`, `/docker-8b1e.scope`); only the shapes that show a cut are cut: a line ending on
# `,`, `=`, `_`, a frame's `+0x` (_CUT_TAIL), or a last word that is a kernel function's name
# (_CUT_FRAME: a frame's, `do_transl`, `nv_get_p2p_free_callback` of its `...:127 ERROR ...`)
_WHOLE_END = lazy_re(
    r"""(?:[.)\]}>'"!%*$]|\]-+|(?<=[A-Za-z]):|(?<![\w+])[+-]?(?:0x)?[0-9a-fA-F]*\d[0-9a-fA-F]*"""
    r"""|(?:^|(?<=[\s:=/(]))[\w./#-]*[A-Za-z0-9])\s*$"""
)
# a frame's offset cut before its length's digits (`handle_mm_fault+0x`, `+0x104/0x`), anywhere
_CUT_TAIL = lazy_re(r"\+0x[0-9a-fA-F]*(?:/(?:0x)?)?\s*$")


# a call trace's frame cut before its end: a kernel function's name (one with `_`, or its `+`
# already printed) without its offset and length, or with them cut before the length's digits
# (`do_`, `do_transl`, `handle_mm_fault+0x`, `do_page_fault+0x104/0x`); a frame always prints
# `+0x<off>/0x<len>` (a length cut inside its digits, `/0xd` of `/0xd8`, cannot be told)
_CUT_FRAME = re.compile(r"(?:\? )?(?=[\w.]*_|[\w.]+\+)[A-Za-z_][\w.]*(?:\+(?:0x[0-9a-fA-F]*(?:/(?:0x)?)?)?)?")


# tokens of a known form whose every start but the whole reads as a whole token (_WHOLE_END): a
# kernel release's flavour (`5.15.0-112-generic`, `6.8.0-1015-aws`, `-nvidia-64k`) and an
# Ubuntu build's tag (`#122-Ubuntu`); one ending inside its flavour or tag (`6.8.0-78-gen`,
# `#122-Ubu`) is a token cut short, however whole it looks
_FLAVOURS = (
    "generic",
    "generic-64k",
    "generic-hwe",
    "lowlatency",
    "aws",
    "azure",
    "gcp",
    "gke",
    "oracle",
    "nvidia",
    "nvidia-64k",
    "nvidia-lowlatency",
    "kvm",
    "ibm",
    "intel",
    "intel-iotg",
)
_CUT_KNOWN = lazy_re(
    r"(?:^|(?<=\s))(?:\d+\.\d+\.\d+-\d+-(?P<flavour>[a-z0-9-]+)|#\d+(?:~[\w.]+)?-(?P<tag>[A-Za-z]+))\s*$"
)


def _known_form_cut(message: str) -> bool:
    """The message's last token is a strict start of a known form (_CUT_KNOWN): `6.8.0-78-gen`
    of `6.8.0-78-generic`, `#122-Ubu` of `#122-Ubuntu`."""
    m = _CUT_KNOWN.search(message)
    if m is None:
        return False
    if (flavour := m.group("flavour")) is not None:
        return flavour not in _FLAVOURS and any(f.startswith(flavour) for f in _FLAVOURS)
    tag = m.group("tag")
    return tag != "Ubuntu" and "Ubuntu".startswith(tag)


def _message(line: str) -> str:
    """The line's message: its text after its stamps and its syslog or journal head (_PREFIX)."""
    return line[_PREFIX.match(line).end() :].rstrip()  # type: ignore[union-attr]


def line_heads(lines: list[str]) -> frozenset[str]:
    """The message heads a log's lines print (a subsystem's tag ending in `:` as a message's first
    word: `FS-Cache:`, `pcieport`'s none), for _head_cut."""
    out = set()
    for line in lines[-200:]:
        first = _message(line).split(None, 1)
        if first and len(first[0]) > 2 and first[0].endswith(":"):
            out.add(first[0])
    return frozenset(out)


def _head_cut(message: str, heads: frozenset[str]) -> bool:
    """The message is one word, a strict start of a head the log's other lines print (`FS-Cach`
    of `FS-Cache:`): no message the kernel prints is a part of its own head alone (the known-form
    rule, _known_form_cut, with the log's own heads as the forms)."""
    if len(message) < 2 or " " in message or message.endswith(":"):
        return False
    return any(head.startswith(message) and head != message for head in heads)


# a raw stack word's line, one per word of a stack dump (the nvidia driver's, pop-os/pop#3363:
# `0000000052c5b5d4: ffff99da0162b160 (0xffff99da0162b160)`): the word's address, then its value
# printed at 16 hex digits; cut short, the line ends inside the address or the value
_STACK_WORD_CUT = lazy_re(r"(?P<address>[0-9a-fA-F]+)(?:: (?P<value>[0-9a-fA-F]{1,15}))?")
_ADDRESS_HEAD = lazy_re(r"[0-9a-fA-F]{8,}:")


def _stack_word_cut(message: str, heads: frozenset[str]) -> bool:
    """The message is a stack dump's line cut short where the log's other lines are such lines
    (their heads are dump addresses, `heads`): hex digits alone, fewer than those addresses
    (`00000000b8f1` under `00000000bec6ce9e: ...`), or an address of that width and a value of
    fewer than the 16 digits every stack word prints (`00000000b55d5f01: ffff8d6`)."""
    cut = _STACK_WORD_CUT.fullmatch(message)
    if cut is None:
        return False
    widths = {len(head) - 1 for head in heads if _ADDRESS_HEAD.fullmatch(head)}
    if cut.group("value") is None:
        return any(width > len(message) for width in widths)
    return len(cut.group("address")) in widths


def ends_unfinished(
    line: str, words: dict[str, str] | None = None, heads: frozenset[str] = frozenset()
) -> bool:
    """True when a kernel log's last line, with no newline after it, may have been cut inside
    it: it says nothing yet or is cut by its own shape (says_nothing, cut_by_shape), or its
    message does not end like a whole one (_WHOLE_END), ends on a frame's cut offset (_CUT_TAIL),
    on a kernel function's name (_CUT_FRAME) or inside a token of a known form (_CUT_KNOWN:
    `6.8.0-78-gen`; `heads`: the log's own message heads, line_heads). A whole log saved
    without its last newline (an editor's paste) whose last line ends like one is not."""
    if says_nothing(line, words) or cut_by_shape(line, words, heads):
        return True
    message = _message(line)
    last = message.rsplit(None, 1)[-1] if message else ""
    # (a function's name, `nv_get_p2p_free_call`; not a constant's, `..._PRI_CLIENT_ERR`)
    cut_name = _CUT_FRAME.fullmatch(last) is not None and last != last.upper()
    return (
        cut_name
        or _CUT_TAIL.search(message) is not None
        or _WHOLE_END.search(message) is None
        or _known_form_cut(message)
    )


def whole_when_cut(text: str) -> bool:
    """True when a driver message's text (after its `NVRM:` tag) is a line of a known shape that
    a cut cannot have made other than whole: a driver line that names no fault however it went
    on, and that no line continues (the driver's load banner, `NVRM: loading NVIDIA UNIX x86_64
    Kernel Module  535.183.01  Sun May 12 19:39:15 UTC 2024`, one message of its own:
    kernel_nvrm.DRIVER_LOAD)."""
    return DRIVER_LOAD.match(text.strip()) is not None


# a stamp whose month (and dmesg -T's weekday) is printed in the box's locale: journalctl and
# syslog `kwi 15 07:56:59 host kernel:` (pl_PL: April), dmesg -T `[Mi Apr 15 07:56:59 2026]`
_LOCALE_STAMP = re.compile(
    r"^\s*(?:\[(?P<day>[^\W\d_]{1,12}\.?) +)?(?P<month>\d{1,2}月|[^\W\d_]{1,12}\.?)"
    r" {1,2}\d{1,2} \d\d:\d\d:\d\d\b"
)
_WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_WORD = lazy_re(r"\d{1,2}月|[^\W\d_]+\.?")
_CJK_MONTH = lazy_re(r"\b(1[0-2]|0?[1-9])月")


def locale_words(lines: list[str]) -> dict[str, str]:
    """The month and weekday names the log's own stamps print that are not English, each with an
    English one of its kind (read by says_nothing as that). A log of one line, cut before its
    stamp showed its locale (`kw`, `kwi 1`), cannot show it: its first word is taken as a month
    that may be one (what it went on to say is not known)."""
    out: dict[str, str] = {}
    for line in lines:
        if m := _LOCALE_STAMP.match(line):
            for key, known in (("day", _WEEKDAYS), ("month", _MONTHS)):
                if (word := m.group(key)) and word not in known:
                    out[word] = known[0]
    filled = [line for line in lines if line.strip()]
    lone = _LONE_WORD.match(filled[0]) if not out and len(filled) == 1 else None
    if lone is not None and lone.group(1) not in _WEEKDAYS + _MONTHS:
        out[lone.group(1)] = "Jan"
    return out


# the one line of a log cut inside its first stamp: a word, then at most the start of the rest
# of a syslog stamp (`kwi`, `kwi 15 07:5`)
_LONE_WORD = lazy_re(r"\s*([^\W\d_]{1,12}\.?)(?= |$)")


def _anglicised(line: str, words: dict[str, str]) -> str:
    """`line` with the log's locale names as English ones, the line's last word too where it is
    the start of one (`kw` of `kwi`, a stamp cut there)."""

    def swap(m: re.Match[str]) -> str:
        word = m.group(0)
        if word in words:
            return words[word]
        start = next((english for w, english in words.items() if w.startswith(word)), None)
        return start[: len(word)] if start is not None and m.end() == len(line.rstrip()) else word

    return _WORD.sub(swap, line)


# a driver's line whose cut a repeat shows (an Xid or SXid line, or another NVRM one)
_DRIVER_TAG = re.compile(r"NVRM: |nvidia-nvswitch\d+: ")


def cut_as_repeated(tail: list[str]) -> bool:
    """True when the log's last line is a driver's line whose message is a proper beginning of
    an earlier line's message in `tail` (the same Xid logged again and again, the excerpt cut
    inside its last: `NVRM: Xid (0000:00:05): 9, Channel` under twelve whole `... 9, Channel
    00000020 Instance 00000000 Intr 00100000`, pastebin xkjT7KVW), with or without a newline
    after it: the line is cut, what it went on to say not known."""
    if not tail:
        return False
    last = _PREFIX.sub("", tail[-1], count=1).rstrip()
    if not _DRIVER_TAG.search(last):
        return False
    return any(
        (said := _PREFIX.sub("", line, count=1).rstrip()).startswith(last) and len(said) > len(last)
        for line in tail[:-1]
    )
