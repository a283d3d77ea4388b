"""facts/joined_log.py on every real kernel log (tests/fixtures/real) whose lines a chat joined:
the whole log on one line, every two lines on one, every two from the second. Where unjoined
cuts such a log apart, the pieces are exactly the log's own lines; where it cannot be sure (a
message continued on stamp-less `NVRM: ` lines, a journal without stamps, `-- Reboot --`, an
elision mark, a mail's quote markers) it says so (None). Before (round 31), no joined log was
read at all: an Xid 79 stamped and addressed in it went unjudged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpuonboard.api import paste
from gpuonboard.facts.joined_log import joined_messages, unjoined

REAL = Path(__file__).parents[2] / "fixtures" / "real"
LOGS = sorted(
    p.name
    for p in REAL.iterdir()
    if p.name.split("__")[0].startswith(("dmesg", "journalctl", "kern-log", "syslog"))
)


# known limits (round 35), each (capture, how; "" every way) with its reason: a line whose stamp
# lost its `[` (a paste's excerpt begun mid-line) has no head to cut a joined log apart at, so it
# stays glued to the line above; a message ending in a digit glued with no space to the next
# syslog line's head (`status 1Nov  9 ...`) loses the digit to that head's day; a copied command
# line's last word glued to the first line's head (`| grep failApr 16 ...`, round 37) is a head glued
# to the words before it, never cut at (the test's own premise below)
_LIMITS = {
    (
        "dmesg-syslog__grep-fail-bar1-failed-to-assign-rminitadapter-0x24__esxi-debian11-vm__zh-notes.txt",
        "glued",
    ),
    ("dmesg__sxid-22013-blank-lines-then-bond-mlx5-4428s-first-bracket-lost__ru-chat-hgx.txt", ""),
    ("dmesg-syslog__mce-events-logged-no-record__haswell-yoda-ubuntuforums.txt", "glued"),
    # (round 37: a page's wrap piece, `id=0018(Receiver ID)` on a line of its own, has no head to
    # cut at, so the joined log has it back on the line it was wrapped from, as the kernel printed it)
    ("dmesg-syslog__aer-1-kind-pcieport-4h-apart-wrapped-line__deltaops-medium.txt", ""),
    # (round 39: the poster's `--- content end ---` marker under the last line has no head to cut
    # at either: joined, it stays on the last line, as the wrap piece above)
    (
        "journalctl-u-nvidia-fabricmanager__start-sh-pre-nvl5-nothing-to-do__content-begin-end-markers"
        "__rtx4090x2__cube-studio-29.txt",
        "",
    ),
    # (round 40: a GSP-CrashCat report's `GSP task watchdog timeout @ pc:...` line, which the
    # firmware prints without the driver's tag, has no head to cut at: joined, it stays on the
    # NVRM line above it, as the wrap pieces above)
    ("dmesg-unprefixed__gsp-crashcat-report-task-watchdog-timeout__rtx5070__ogkm-1307.txt", ""),
}


def _joined(text: str, how: str) -> str:
    lines = text.split("\n")
    if how in _ONE_LINE:
        return text.replace("\n", _ONE_LINE[how])
    start = 0 if how == "pairs" else 1
    return "\n".join([*lines[:start], *(" ".join(lines[i : i + 2]) for i in range(start, len(lines), 2))])


# a chat's space for each line end, a CRLF file's with its CR kept, a classic Mac's CR, a lost
# newline with no space for it
_ONE_LINE = {"all": " ", "crlf-space": "\r ", "cr": "\r", "glued": ""}


def _lines(text: str) -> list[str]:
    return [line.rstrip() for line in text.split("\n") if line.strip()]


@pytest.mark.parametrize("how", ["all", "pairs", "pairs-from-second", "crlf-space", "cr", "glued"])
def test_every_real_log_a_chat_joined_is_cut_into_its_own_lines_or_left_unread(how: str) -> None:
    wrong, cut = [], 0
    for name in LOGS:
        if (name, "") in _LIMITS or (name, how) in _LIMITS:
            continue
        text = paste.normalise((REAL / name).read_text(encoding="utf-8"))
        got = unjoined(_joined(text, how))
        if not got.joined or got.text is None:
            continue
        cut += 1
        if _lines(got.text) != _lines(text):
            first = next(
                i for i, (a, b) in enumerate(zip(_lines(text), _lines(got.text), strict=False)) if a != b
            )
            wrong.append(f"{name}: line {first + 1}: {_lines(got.text)[first][:120]!r}")
    assert not wrong, "\n".join(wrong)
    # (the most of them: dmesg's, -T's, -H's, ISO, syslog and journal heads; a head glued to the
    # words before it is never cut at, as a message may hold such words)
    assert cut >= {"glued": 0, "cr": 20, "crlf-space": 20}.get(how, 40)


@pytest.mark.parametrize(
    "name",
    [
        "dmesg__nvrm-fallen-off-bus-no-xid__driver570.158.01.txt",  # (its message goes on in `NVRM:` lines)
        "dmesg__probe-routine-not-called-3-devices-nouveau__mattshma-bigdata-133.txt",
        "dmesg-journalctl__xid-45-caused-by-previous-xid-149-145__driver590.48.01.txt",  # (no stamps)
        "dmesg-journalctl__two-boots-reboot-separator__ubuntu-20.04-forum.txt",  # (`-- Reboot --`)
        "journalctl__zh-cn-locale-snip-elision__nvrm-api-mismatch-550.76-550.67__ogkm-626.txt",
        "dmesg-ctime__xid-13-109__peermem__quoted__gpud-readme.txt",  # (a mail's `> ` on each line)
    ],
)
def test_a_joined_log_whose_pieces_are_not_all_lines_is_not_cut(name: str) -> None:
    text = paste.normalise((REAL / name).read_text(encoding="utf-8"))
    got = unjoined(_joined(text, "all"))
    assert got.joined and got.text is None


def test_a_stamp_that_goes_back_is_a_stamp_inside_a_message() -> None:
    """The real mcelog log's lines joined with their order changed, as a message quoting an
    earlier stamp reads: not cut (which stamp starts a line is not sure); in order, cut."""
    lines = _lines((REAL / "dmesg-grep-machine__mce-events-logged-alone__mcelog-116.txt").read_text())[1:]
    assert unjoined(" ".join(lines)).text == "\n".join(lines)
    assert unjoined(" ".join([lines[0], lines[2], lines[1]])).text is None


def test_a_syslog_time_that_goes_back_is_a_head_inside_a_message() -> None:
    """The real journal of the Polish RTX 5080 (every line `kwi 15 07:56:59 testowy kernel: `)
    with its last line's time before the others': not cut."""
    lines = _lines(
        (REAL / "dmesg-journalctl-pl-locale__xid-38-109-ctx-switch-timeout__rtx5080.txt").read_text()
    )
    assert unjoined(" ".join(lines)).text == "\n".join(lines)
    early = lines[-1].replace("07:56:59", "07:50:00", 1)
    assert early != lines[-1] and unjoined(" ".join([*lines[:-1], early])).text is None


def test_a_journal_entry_of_several_driver_lines_is_no_joined_line() -> None:
    """`journalctl -o json` / `-o export` entries whose MESSAGE holds the HGX's three driver lines
    in one (its format known: one entry, one message), never lines a chat joined."""
    message = (
        "NVRM: The NVIDIA GPU 0000:5d:00.0 NVRM: (PCI ID: 10de:2330) installed in this system has"
        " NVRM: fallen off the bus and is not responding to commands."
    )
    entry = {"_TRANSPORT": "kernel", "MESSAGE": message, "_SOURCE_MONOTONIC_TIMESTAMP": "17257355375"}
    assert joined_messages(json.dumps(entry) + "\n") == 0
    assert joined_messages(json.dumps(entry, indent=8) + "\n") == 0
    assert joined_messages("__CURSOR=s=0;i=0\n_TRANSPORT=kernel\nMESSAGE=" + message + "\n\n") == 0
    assert joined_messages("[17257.355375] " + message + "\n") == 1


def test_a_build_date_in_a_joined_dmesg_T_line_is_no_stamp() -> None:
    """The first two lines of a real `dmesg -T` (Paul Menzel's report to linux-nfs, 2024-07-17),
    its banner holding the kernel's build date (`#1 SMP Wed Jun 5 12:24:15 CEST 2024`), and a
    driver load line made for the test with its own (`Sat Aug 19 01:15:15 UTC 2023`, as `NVRM:
    loading` prints it), joined: cut only at the bracketed stamps that open a line, each line
    whole (a guard: this held before round 33 too)."""
    lines = [
        "[Wed Jul  3 16:39:34 2024] Linux version 5.15.160.mx64.476(root@theinternet.molgen.mpg.de)"
        " (gcc (GCC) 12.3.0, GNU ld (GNU Binutils) 2.41) #1 SMP Wed Jun 5 12:24:15 CEST 2024",
        "[Wed Jul  3 16:39:34 2024] Command line: root=LABEL=root ro crashkernel=64G-:256M"
        " console=ttyS0,115200n8 console=tty0 init=/bin/systemd audit=0 random.trust_cpu=on"
        " systemd.unified_cgroup_hierarchy",
        "[Wed Jul  3 16:39:40 2024] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  535.104.05"
        "  Sat Aug 19 01:15:15 UTC 2023",
    ]
    assert unjoined(" ".join(lines)).text == "\n".join(lines)
    assert unjoined(_joined("\n".join(lines), "pairs")).text == "\n".join(lines)
