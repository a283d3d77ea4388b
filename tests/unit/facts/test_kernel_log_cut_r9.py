"""A kernel log cut short or pasted without its end (cut sweep, class F): a record at the end of
the text that lacks what its format always prints after it (the `, ` after an Xid / SXid code,
the newline after a line, the rest of a driver message printed over several lines) is an
incomplete record: unread (`unverified`), never another event, never dropped. Every log here is
a real capture (tests/fixtures/real/dmesg*), cut in the test."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpuonboard.facts.kernel_cut import whole_when_cut
from gpuonboard.facts.kernel_log import KernelEvent, parse_kernel_log
from gpuonboard.steps.base import Check
from gpuonboard.steps.checks.sxid_rules import rule_sxid
from gpuonboard.steps.checks.xid_rules import implied_xids, rule_xid

from ..offline_judge import verdicts

REAL = Path(__file__).parents[2] / "fixtures" / "real"
FALLEN = "dmesg__nvrm-fallen-off-bus-no-xid__driver570.158.01.txt"
SYSLOG = "dmesg-syslog__h100-hgx__fallen-off-bus-multiline-no-xid__driver525.125.06.txt"
DMESG_H = "dmesg-H__rtx3090-aarch64-rockchip__bar-invalid-fallen-off-bus-no-xid.txt"
SXID_22013 = "dmesg__sxid-22013-non-fatal-3-lines.txt"
SXID_12028 = "dmesg__sxid-12028-non-fatal__health-check-docstring.txt"
XID_79 = "dmesg__xid-79-sxid-20034__nvswitch.txt"
XID_45 = "dmesg-journalctl__xid-45-caused-by-previous-xid-149-145__driver590.48.01.txt"
# every real kernel log capture
# (the whole captures: one its poster cut inside a driver message, `__driver-message-cut__`, is
# not, nor one whose last line its poster cut by its shape, saved with a newline, `__line-cut-as-stored__`)
KERNEL_LOGS = sorted(
    p.name
    for pattern in ("dmesg*", "journalctl*", "syslog*", "kern*")
    for p in REAL.glob(pattern)
    if "__driver-message-cut__" not in p.name and "__line-cut-as-stored__" not in p.name
)


# the GPU driver's tag, the NVSwitch driver's
TAG = re.compile(r"NVRM:|nvidia-nvswitch\d+:")


def read(name: str) -> str:
    return (REAL / name).read_text()


def upto(text: str, marker: str, after: int = 0) -> str:
    """The text up to the end of `marker` (its first occurrence), and `after` characters more."""
    return text[: text.index(marker) + len(marker) + after]


def xid(text: str) -> Check:
    return rule_xid(parse_kernel_log(text).events, True)


def sxid(text: str) -> Check:
    return rule_sxid(parse_kernel_log(text).events, True)


@pytest.mark.parametrize(
    ("name", "head"),
    [
        (FALLEN, "NVRM: The NVIDIA GPU 0000:b3:00.0"),  # dmesg: continuation lines indented
        (SYSLOG, "NVRM: The NVIDIA GPU 0000:5d:00.0"),  # syslog: each line one printk's time
        (DMESG_H, "NVRM: The NVIDIA GPU 0002:21:00.0"),  # dmesg -H
    ],
)
def test_a_log_ending_inside_the_fallen_off_the_bus_message_is_unverified(name: str, head: str) -> None:
    text = read(name)
    assert xid(text).verdict == "fail"  # whole: "GPU ... has fallen off the bus -> reboot"
    # cut after the message's first line, and after its second ("... installed in this system
    # has"), at the line's end with its newline (R8 sweep F1 / F2: "no Xid in the kernel log")
    for cut in (upto(text, head, 1), upto(text, "installed in this system has", 1)):
        assert cut.endswith("\n")
        c = xid(cut)
        assert "no Xid in" not in c.actual
        if name == DMESG_H:
            # (its BAR lines before the cut are a fault of their own since measure34d 16: it fails,
            # the message the log ends inside said after it)
            said = "-> fix_bar_mapping; also a driver message the log ends inside"
            assert c.verdict == "fail" and said in c.actual, c.actual
            continue
        assert c.verdict == "unverified", (cut[-80:], c.actual)
        # (a driver message, no Xid line: said so since round 27)
        assert c.actual.startswith("a driver message the log ends inside, cut short: 'NVRM: The NVIDIA GPU")
        assert "cut short" in c.detail


@pytest.mark.parametrize(
    ("name", "marker", "rule"),
    [
        (FALLEN, "installed in this system has\n", "gpu_xid"),  # sweep F1: pass "no Xid"
        (
            SXID_22013,
            "[  117.986807] nvidia-nvswitch3: SXid (PCI:0000:08:00.0): 22",  # sweep F3: fail "SXid 22"
            "nvswitch_sxid",
        ),
        (XID_45, "Ch 00000001 cau", "gpu_xid"),  # sweep F4: pass "Xid 45 ... -> ignore"
    ],
)
def test_a_saved_log_cut_short_is_unverified_offline(
    tmp_path: Path, name: str, marker: str, rule: str
) -> None:
    # as `invoke facts FILE` reads it: the saved file, cut, under the capture's own name
    verdict, actual = verdicts(tmp_path, name, upto(read(name), marker))[rule]
    assert verdict == "unverified", actual


def test_a_syslog_cut_inside_the_stamp_of_the_messages_last_line_is_unverified() -> None:
    # the last line, cut in its prefix, could have been the message's "fallen off the bus" line
    text = read(SYSLOG)
    cut = upto(text, "installed in this system has\nJan  3 07:39:45 ubuntu kernel: [17257.35")
    c = xid(cut)
    assert c.verdict == "unverified" and "installed in this system has" in c.actual


def test_an_sxid_code_cut_at_the_end_of_the_text_is_unread_never_another_code() -> None:
    text = read(SXID_22013)
    assert sxid(text).verdict == "pass"
    cut = upto(text, "[  117.986807] nvidia-nvswitch3: SXid (PCI:0000:08:00.0): 22")
    c = sxid(cut)  # R8 sweep F3: "SXid 22 not in NVIDIA's catalogue -> replace" (fail)
    assert c.verdict == "unverified", c.actual
    assert "SXid 22 " not in c.actual and "not in NVIDIA's catalogue" not in c.actual
    assert (
        "1 SXid line this tool cannot read (first: 'nvidia-nvswitch3: SXid (PCI:0000:08:00.0): 22')"
        in c.actual
    )
    # the same line with its newline (a code without the ", " that always follows it): unread
    events = parse_kernel_log(cut + "\n").events
    assert [e.kind for e in events] == ["sxid", "sxid_unread"] and events[0].code == 22013


def test_an_xid_code_cut_short_is_unread_never_another_code() -> None:
    text = read(XID_79)
    cut = upto(text, "NVRM: Xid (PCI:0000:91:00): 7")  # Xid 79 cut to 7
    c = xid(cut)
    assert c.verdict == "unverified", c.actual
    assert "Xid 7 " not in c.actual and "cannot read (first: 'NVRM: Xid (PCI:0000:91:00): 7')" in c.actual


def test_an_sxid_first_line_cut_before_the_drivers_word_is_unread_not_judged_by_the_catalogue() -> None:
    text = read(SXID_12028)
    assert sxid(text).verdict == "warn"  # "Non-fatal" -> watch
    cut = upto(text, "12028, Non-fat")  # the catalogue alone says reboot: that would fail
    c = sxid(cut)
    assert c.verdict == "unverified", c.actual


def test_a_last_line_cut_inside_an_xid_event_leaves_its_cause_unverified() -> None:
    text = read(XID_45)
    assert xid(text).verdict == "fail"  # Xid 149 / 145, named as the causes
    cut = upto(text, "Ch 00000001 cau")  # R8 sweep F4: passed as "Xid 45 ... -> ignore"
    c = xid(cut)
    assert c.verdict == "unverified", c.actual
    assert "Xid 45" in c.actual
    assert c.actual.endswith(
        "the log ends inside a line, cut short: 'NVRM: Xid (PCI:0000:dc:00): 45, pid=1818990,"
        " name=python3, Ch 00000001 cau'"
    )
    # the cause's number cut short (149 cut to 14) is not read as Xid 14
    (event,) = parse_kernel_log(upto(text, "caused by previous Xid 14")).events
    assert event.cut is not None and implied_xids([event]) == ()
    assert "Xid 14 " not in xid(upto(text, "caused by previous Xid 14")).actual


def test_no_whole_capture_is_read_as_cut() -> None:
    for name in KERNEL_LOGS:
        events = parse_kernel_log(read(name)).events
        assert all(e.cut is None for e in events), name


def _line_cuts(text: str) -> Iterator[tuple[str, str]]:
    """(the text cut inside a driver line, 'xid' / 'sxid'): every cut after the line's `NVRM:` /
    `nvidia-nvswitchN:` tag up to its last character (without its newline), for every NVRM and
    NVSwitch line of the log; but a cut the line already reads as a line of a known shape at
    (the driver's load banner from `loading NVIDIA UNIX` on: kernel_cut.whole_when_cut), which is
    whole however it went on (round 29: it read as a driver message cut short). Past a line's
    first words a third of the cuts (_cut_here)."""
    at = lines = 0
    for line in text.splitlines(keepends=True):
        body = line.rstrip("\r\n")
        tag = TAG.search(body)
        if tag is not None:
            rule = "xid" if tag.group(0) == "NVRM:" else "sxid"
            for end in range(tag.end(), len(body) + 1):
                said = body[tag.end() : end]
                if _cut_here(len(said), len(body) - end, lines) and not whole_when_cut(said):
                    yield text[: at + end], rule
            lines += 1
        at += len(line)


def _cut_here(into: int, left: int, line: int) -> bool:
    """Whether to cut a driver line `into` characters after its tag, `left` before its end: in
    its first 24 characters (the words that name its kind, its code) and its last 4 every time,
    elsewhere every third character, the third shifted from line to line (every place of a line's
    shape cut in some line: round 40, the suite's time)."""
    return into < 24 or left < 4 or (into + line) % 3 == 0


def _codes(events: tuple[KernelEvent, ...], kind: str) -> set[int]:
    read = [e for e in events if e.kind == kind]
    return {e.code for e in read} | ({e.code for e in implied_xids(read)} if kind == "xid" else set())


@pytest.mark.parametrize("name", KERNEL_LOGS)
def test_a_log_cut_inside_any_driver_line_never_passes_nor_names_another_code(name: str) -> None:
    text = read(name)
    whole = parse_kernel_log(text).events
    cuts = 0
    for cut, _rule in _line_cuts(text):
        events = parse_kernel_log(cut).events
        # neither rule: the lines after the cut are lost for both (an Xid line cut is no proof
        # of "no SXid", round 12)
        for judged in (rule_xid(events, True), rule_sxid(events, True)):
            assert judged.verdict != "pass", (name, cut[-100:], judged.name, judged.actual)
        for kind in ("xid", "sxid"):
            assert _codes(events, kind) <= _codes(whole, kind), (name, cut[-100:], kind)
        cuts += 1
    assert cuts > 0 or not TAG.search(text)  # (a log with AER lines only has no driver line)
