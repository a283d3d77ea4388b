"""A pstore crash record: the kernel log of an earlier boot that the kernel wrote, as it crashed,
to persistent storage (the firmware's ERST or EFI variables, ramoops' reserved memory), read back
after the reboot from `/sys/fs/pstore/dmesg-erst-<id>` (`dmesg-efi-<id>`, `dmesg-ramoops-<n>`).
Each record starts with its reason and part (`Panic#1 Part1`, `Oops#1 Part2`: kmsg_dump's reason,
the count of such dumps, the part, Part1 being the log's end); a `head` or `grep` of several files
puts each one's name before it (`dmesg-erst-7530486857247752194:`, leptonai/gpud's testdata). Its
lines are a boot the box has since left: never evidence of the boot it runs now. Pure: no I/O.
"""

from __future__ import annotations

from gpuonboard.once import lazy_re

# a record's first line (fs/pstore/platform.c: `"%s#%d Part%u\n"`, the reason kmsg_dump_reason_str
# names; older kernels: Halt, Poweroff, Restart), alone on its line
_RECORD_HEAD = lazy_re(r"^(?:Panic|Oops|Emergency|Shutdown|Restart|Halt|Poweroff|Unknown)#\d+ Part\d+$")
# a record file's name on its own line before the record (`dmesg-erst-7530486857247752194:`,
# `head`'s `==> /sys/fs/pstore/dmesg-efi-155741337 <==`)
_RECORD_NAME = lazy_re(
    r"^(?:==> )?(?:/sys/fs/pstore/)?(dmesg-(?:erst|efi|efi_pstore|ramoops|nvram)-[\w.-]+)(?: <==|:)$"
)


# a line that ends a record: another log's stamped line (dmesg's `[   13.8]`, `[Tue Apr 15 ...]`,
# syslog's `Apr 15 16:50:03`, `-T`'s without its `[`, an ISO stamp); a record's own lines start
# `<6>[   13.8]`, a wrap's pieces of them anything: they stay the record's
_OTHER_LOG = lazy_re(
    r"^(?:\[[^\]]+\]|(?:[A-Z][a-z]{2} )?[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d|\d{4}-\d\d-\d\dT\d)"
)


def pstore_record(text: str) -> str:
    """The head of the pstore crash record `text` starts with (`dmesg-erst-7530486857247752194:
    Panic#1 Part2`, or `Panic#1 Part1` alone: its first line, or its file's name line and then
    it), "" where the text does not start with one (a record further down is pstore_parts')."""
    first = [line.strip() for line in text.splitlines()[:3] if line.strip()]
    name = _RECORD_NAME.match(first[0]) if first else None
    heads = first[1:2] if name else first[:1]
    head = _RECORD_HEAD.match(heads[0]) if heads else None
    if head is None:
        return ""
    return f"{name.group(1)}: {head.group(0)}" if name else head.group(0)


def _opens_record(lines: list[str], at: int) -> bool:
    """Whether line `at` is a record's head, or its file's name line right before one."""
    line = lines[at].strip()
    if _RECORD_HEAD.match(line):
        return True
    return (
        bool(_RECORD_NAME.match(line))
        and at + 1 < len(lines)
        and bool(_RECORD_HEAD.match(lines[at + 1].strip()))
    )


def pstore_parts(text: str) -> tuple[str, tuple[str, ...]]:
    """(the lines of `text` outside any pstore crash record, the records) of a file that holds
    this boot's log and a record beside it (`dmesg -T` then `cat /sys/fs/pstore/dmesg-erst-*`,
    either order): a record runs from its head (or its file's name line) over the lines kmsg_dump
    wrote (`<6>[ 13.8] ...`, a wrap's pieces of them) to the first line of another log (_OTHER_LOG)."""
    lines = text.splitlines(keepends=True)
    rest: list[str] = []
    records: list[list[str]] = []
    inside = False
    for at, line in enumerate(lines):
        if _opens_record(lines, at):
            if not inside:
                records.append([])
            inside = True
        elif inside and _OTHER_LOG.match(line):
            inside = False
        (records[-1] if inside else rest).append(line)
    return "".join(rest), tuple("".join(r) for r in records)


def pstore_alone(text: str) -> bool:
    """Whether `text` holds a pstore record and no line of another log beside it (a prompt's or a
    page's line around it is no log of this boot)."""
    rest, records = pstore_parts(text)
    return bool(records) and not any(_OTHER_LOG.match(line) for line in rest.splitlines())


def pstore_said(record: str) -> str:
    """Why a pstore crash record (`record`: its head) says nothing of the boot the box runs now."""
    return (
        f"it is a pstore crash record (`{record}`): the kernel log of an earlier boot, kept as it"
        " crashed, not of the boot the box runs now"
    )


# what to ask where a crash record shows the box crashed
CRASH_RECORD_ADVICE = (
    "the box crashed in an earlier boot (this record is its kernel log, kept in /sys/fs/pstore as it"
    " crashed): ask the vendor why (the crash line and its Call Trace above it), and give this boot's"
    " whole log (`sudo dmesg -T`, or `journalctl -k -b`) to judge the boot the box runs now"
)


# a record's head anywhere in a line
_RECORD_WORDS = lazy_re(r"\b(?:Panic|Oops|Emergency|Shutdown|Restart|Halt|Poweroff|Unknown)#\d+ Part\d+\b")


def joined_record_head(line: str) -> bool:
    """Whether a pstore record's head (`Panic#1 Part2`) shares `line` with other words: a chat
    joined it to the log's lines around it, which then cannot be told apart from it."""
    found = _RECORD_WORDS.search(line)
    return found is not None and found.group(0) != line.strip()
