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


def pstore_record(text: str) -> str:
    """The head of the first pstore crash record in `text` (`dmesg-erst-7530486857247752194:
    Panic#1 Part2`, or `Panic#1 Part1` alone), "" where the text holds none."""
    name = ""
    for line in text.splitlines()[:4000]:
        if (named := _RECORD_NAME.match(line.strip())) is not None:
            name = named.group(1)
            continue
        if (head := _RECORD_HEAD.match(line.strip())) is not None:
            return f"{name}: {head.group(0)}" if name else head.group(0)
        if line.strip():
            name = ""
    return ""


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
