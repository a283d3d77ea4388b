"""A kernel log cut just before an Xid / SXid line (cut sweep round 9, classes N3 and N4).

N3: the driver prints a once-per-GPU preamble (`NVRM: GPU at PCI:<addr>: GPU-<uuid>`, `NVRM: GPU
Board Serial Number: ...`) immediately before that GPU's first Xid line (open-gpu-kernel-modules,
kernel_rc.c: krcReportXid calls _krcLogUuidOnce, then prints the Xid). A log that ends on the
preamble lost that Xid line: unread and cut (`unverified`), never "no Xid".

N4: a last line without its newline that says nothing yet (only a stamp or part of one, a
partial `NVRM:` / `nvidia-nvswitchN:` tag) may be the start of an Xid or SXid line: kept as a cut
line (`unverified`), never dropped. A last line that plainly says something else stays as it was.

Every log here is a real capture (tests/fixtures/real/dmesg*), cut in the test."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpuonboard.facts.kernel_log import parse_kernel_log
from gpuonboard.steps.checks.sxid_rules import rule_sxid
from gpuonboard.steps.checks.xid_rules import rule_xid

from ..offline_judge import verdicts
from .test_kernel_log_cut_r9 import KERNEL_LOGS, read, sxid, upto, xid

TITAN = "dmesg-T__xid-79-unknown-pid__titan-v.txt"
NVSWITCH = "dmesg__xid-79-sxid-20034__nvswitch.txt"
H100 = "dmesg-T__xid-119-gsp-timeout__h100-dell-xe9680.txt"
ISO = "dmesg-time-format-iso__xid-48-63-94__peermem__gpud.txt"
DECODE = "dmesg-decode-iso__xid-13-43__plus-oom.txt"
SXID_12028 = "dmesg__sxid-12028-non-fatal__health-check-docstring.txt"
SYSLOG_OLD = "dmesg-syslog__old-xid-format-0001-00__xid-6-30.txt"
JOURNAL = "dmesg-journalctl__xid-45-caused-by-previous-xid-149-145__driver590.48.01.txt"
QUOTED = "dmesg-ctime__xid-13-109__peermem__quoted__gpud-readme.txt"
# the GPU driver's Xid line, the NVSwitch driver's SXid line
XID_LINE = re.compile(r"NVRM: Xid\b")
SXID_LINE = re.compile(r"nvidia-nvswitch\d+: SXid\b")
# the preamble's two lines (their text after `NVRM: `)
PREAMBLE = re.compile(r"NVRM: (?:GPU at PCI:\S+: GPU-|GPU Board Serial Number:)")


@pytest.mark.parametrize(
    ("name", "address"), [(TITAN, "0000:02:00"), (NVSWITCH, "0000:91:00"), (H100, "0000:9b:00")]
)
def test_a_log_ending_on_the_xid_preamble_is_unverified_never_no_xid(name: str, address: str) -> None:
    text = read(name)
    assert xid(text).verdict == "fail"  # whole: the Xid after the preamble fails
    first = f"NVRM: GPU at PCI:{address}: GPU-"
    # cut after the preamble's first line, and after its serial number line (sweep 9, N3a/N3b:
    # "no Xid in the kernel log"), each at its line's end, with its newline
    serial = text.index("\n", text.index("NVRM: GPU Board Serial Number:")) + 1
    for cut in (text[: text.index("\n", text.index(first)) + 1], text[:serial]):
        assert cut.endswith("\n") and "NVRM: Xid" not in cut
        events = parse_kernel_log(cut).events
        assert [(e.kind, e.pci) for e in events] == [("xid_unread", address)]
        assert events[0].message.startswith(first) and events[0].cut is not None
        c = xid(cut)
        assert c.verdict == "unverified", (cut[-80:], c.actual)
        assert "no Xid" not in c.actual
        assert c.actual.startswith(f"1 Xid line this tool cannot read (first: '{first}")
        assert c.actual.endswith("the log ends inside it, cut short")
        assert "cut short" in c.detail
    # the preamble followed by its Xid line reads as the whole: that Xid, no unread line
    upto_xid = text[: text.index("\n", text.index("NVRM: Xid")) + 1]
    assert [e.kind for e in parse_kernel_log(upto_xid).events] == ["xid"]


def test_a_preamble_whose_xid_line_is_missing_mid_log_is_unread_not_cut() -> None:
    text = read(NVSWITCH)
    # the real capture with its Xid 79 line taken out: the preamble announces an Xid the log
    # does not hold; the driver's lines go on after it, so the log does not end inside it
    line = text[text.index("[6781741.548779] NVRM: Xid") :].split("\n", 1)[0] + "\n"
    events = parse_kernel_log(text.replace(line, "")).events
    unread = [e for e in events if e.kind == "xid_unread"]
    assert [(e.pci, e.cut) for e in unread] == [("0000:91:00", None)]
    c = rule_xid(events, True)
    assert c.verdict == "fail"  # the "GPU has fallen off the bus" sentence still fails
    assert "also 1 Xid line this tool cannot read (first: 'NVRM: GPU at PCI:0000:91:00: GPU-" in c.actual


@pytest.mark.parametrize(
    ("name", "marker", "rule", "tail"),
    [
        # sweep 9, N4a: the Xid 79 line's -T stamp, cut (joined to the line before, before)
        (TITAN, "Serial Number: 0322518029277\n", "xid", "[Tue Apr 15 1"),
        # N4b: an ISO stamp, cut, before the first Xid line
        (ISO, "processing\n2024-11-15T12:0", "xid", None),
        (ISO, "processing\n2024-11-15T12:02:03,470068+00:00 N", "xid", None),
        # N4c: the SXid line cut inside the NVSwitch driver's tag
        (SXID_12028, "[186965.348898] nvidia-nvswitc", "sxid", None),
        (SXID_12028, "[186965.348898] nvidia-nvswitch2", "sxid", None),
        (NVSWITCH, "1653723052734.\n[6781753.40", "sxid", None),
        (DECODE, "kern  :wa", "xid", None),  # --decode's level, cut
        (SYSLOG_OLD, "trying to continue\nApr 29 01:07:28 Adventure kern", "xid", None),
        (SYSLOG_OLD, "trying to continue\nApr 29 01:07:28 Adventure kernel: [ 9438.840000] ", "xid", None),
        (JOURNAL, "kernel: NV", "xid", None),
        (QUOTED, "further processing\n> [Fri Aug 30 11:43:09 2024] NVR", "xid", None),
    ],
)
def test_a_last_line_cut_before_it_says_anything_is_unverified(
    name: str, marker: str, rule: str, tail: str | None
) -> None:
    text = read(name)
    judge = xid if rule == "xid" else sxid
    assert judge(text).verdict in ("fail", "warn")
    cut = upto(text, marker, 0 if tail is None else len(tail))
    last = cut.rsplit("\n", 1)[-1]
    assert tail is None or last == tail
    c = judge(cut)
    assert c.verdict == "unverified", (cut[-80:], c.actual)
    assert "no Xid" not in c.actual and "no SXid" not in c.actual
    assert "cut short" in c.actual and "cut short" in c.detail
    # the line is quoted as it stands, or (where a message before it is unfinished) that message
    events = parse_kernel_log(cut).events
    assert events[-1].cut is not None
    if events[-1].kind == "cut":
        assert events[-1].message == last.strip() and events[-1].code == 0
        # it may be an Xid or an SXid line: both rules count it (a fail stays a fail, naming it)
        for either in (xid(cut), sxid(cut)):
            assert either.verdict == "unverified" or (
                either.verdict == "fail" and "cut short" in either.actual
            )
    # a last line that says something else whole stays as it was: the same stamp followed by
    # another kernel message (the capture's own last line, whole, without its newline as saved)
    # is no cut driver line; cut inside its name (round 30) it is a line cut short
    other = "nvidia-peermem nv_get_p2p_free_callback"
    whole = read(ISO).rstrip("\n").rsplit("\n", 1)[-1]
    assert whole[33:].startswith(f"{other}:127 ") and whole.endswith("further processing")
    assert [e.kind for e in parse_kernel_log(whole).events] == []
    assert [e.kind for e in parse_kernel_log(f"{read(ISO)[:33]}{other}").events] == ["cut"]


@pytest.mark.parametrize(
    ("name", "marker", "rule"),
    [
        (TITAN, "NVRM: GPU Board Serial Number: 0322518029277\n", "gpu_xid"),  # N3a: pass "no Xid"
        (NVSWITCH, "NVRM: GPU Board Serial Number: 1653723052734\n", "gpu_xid"),  # N3b
        (TITAN, "0322518029277\n[Tue Apr 15 1", "gpu_xid"),  # N4a
        (SXID_12028, "[186965.348898] nvidia-nvswitc", "nvswitch_sxid"),  # N4c
    ],
)
def test_a_saved_log_cut_before_its_xid_line_is_unverified_offline(
    tmp_path: Path, name: str, marker: str, rule: str
) -> None:
    # as `invoke facts FILE` reads it: the saved file, cut, under the capture's own name
    verdict, actual = verdicts(tmp_path, name, upto(read(name), marker))[rule]
    assert verdict == "unverified", actual


def _cuts_before_events(text: str) -> Iterator[tuple[str, str]]:
    """(the text cut, 'xid' / 'sxid'): for every Xid and SXid line of the log, every cut inside
    the Xid preamble lines just before it (to their end, newline included) and inside its own
    stamp, up to its driver's tag."""
    lines = text.splitlines(keepends=True)
    starts = [sum(len(line) for line in lines[:i]) for i in range(len(lines))]
    for i, line in enumerate(lines):
        tag = XID_LINE.search(line) or SXID_LINE.search(line)
        if tag is None:
            continue
        rule = "xid" if tag.group(0).startswith("NVRM") else "sxid"
        first = i
        while first > 0 and PREAMBLE.search(lines[first - 1]):
            first -= 1
        for at in range(starts[first] + 1, starts[i] + 1):
            yield text[:at], rule
        for at in range(starts[i] + 1, starts[i] + tag.start() + 1):
            yield text[:at], rule


def test_a_log_cut_just_before_an_xid_or_sxid_line_never_passes_where_the_whole_does_not() -> None:
    judged = {}
    for name in KERNEL_LOGS:
        text = read(name)
        whole = parse_kernel_log(text).events
        verdicts = {"xid": rule_xid(whole, True).verdict, "sxid": rule_sxid(whole, True).verdict}
        cuts = 0
        for cut, rule in _cuts_before_events(text):
            if verdicts[rule] not in ("fail", "warn"):
                continue
            events = parse_kernel_log(cut).events
            check = rule_xid(events, True) if rule == "xid" else rule_sxid(events, True)
            assert check.verdict != "pass", (name, cut[-100:], check.actual)
            cuts += 1
        judged[name] = cuts
        # the whole capture (with its last newline or without, as saved) is read whole
        assert all(e.cut is None and e.kind != "cut" for e in whole), name
    # every capture whose Xid / SXid lines carry a stamp and fail or warn was cut (the bare
    # `/dev/kmsg` lines have none; the others log no Xid, or pass)
    assert {name for name, cuts in judged.items() if cuts} == {
        QUOTED,
        TITAN,
        H100,
        DECODE,
        JOURNAL,
        SYSLOG_OLD,
        ISO,
        SXID_12028,
        "dmesg-decode-iso__sxid-12028-data-one-line__nvswitch1__gpud-338.txt",  # (round 30)
        "dmesg__xid-32-31__geforce-optimus__bumblebee.txt",
        "dmesg-journalctl__xid-145-rlw-nonfatal-137__nccl.txt",  # (a warning: non-fatal Xid 145)
        NVSWITCH,
        "dmesg-T-grep-NVRM__xid-43-31-94-rst-no__3gpu-vm__driver535.183.01.txt",
        # (a journal without its host name: Xid 120, then Xid 154; round 36)
        "journalctl-k-no-hostname__xid-120-gsp-exception-then-154-reset-required__rtx-pro-6000__nvforum-364958.txt",
        # (a bug report's grep, its journal's zh_CN month `6月 28 ...` first: a cut inside that
        # first line, `6月 2`, may be an Xid line's start; round 37)
        "dmesg-bug-report-grep__xid-79-fallen-off-bus-journal-zh-month-then-dmesg-same-event__4x-rtx4090-blog.txt",
        # (journalctl under a Polish locale: `kwi 15 ...`; round 20)
        "dmesg-journalctl-pl-locale__xid-38-109-ctx-switch-timeout__rtx5080.txt",
        # (a forum's syslog quote of 4 boots with `-bk-` break lines, an Xid 69; round 38)
        "syslog__bk-break-lines-4-boots-xid69-last-boot-banner-only__ubuntuforums-vaio.txt",
        # (a syslog mostly of gdm-x-session's lines; round 26)
        "dmesg-syslog__xid-79-fallen-off-bus__gdm-x-session-lines-outnumber-kernel__last-line-cut__pop-os-3363.txt",
        # (a GSP Timeout banner, then Xid 119; round 27)
        "dmesg__gsp-timeout-banner-then-xid119-from-gpu0__rtx3060__driver555.42.02.txt",
        # (a root port's Surprise Down answered by the GPU's AER line, then Xid 79; round 29)
        "dmesg__pcieport-aer-fatal-surprise-down-xid-79__gpu-burn-1.txt",
        # (an old driver's Xid 3 with no PCI prefix; Xid 63 page retirement, reboot to activate;
        # round 32)
        "dmesg-syslog__xid-3-old-format-no-pci-prefix__fallen-off-bus__pastebin-xJaypMZt.txt",
        "dmesg-T__xid-48-dbe-then-xid-63-dynamic-page-retirement-reboot-to-activate__v100-driver390.txt",
        # (application Xids 31, 13, 32 around a poster's `...`; round 33)
        "dmesg__xid-31-13-32-application-faults__hand-elided__dxvk-1027.txt",
        # (a journal's one NVRM Xid 31 line among a server's own lines; round 33)
        "dmesg-journalctl__xid31-one-nvrm-line-among-llama-swap-lines__ik-llama-425.txt",
        # (a forum's bare `> ` quote mark above a stamped Xid 62 and RmInitAdapter; round 35)
        "dmesg__quote-marker-line-above-xid62-rminitadapter__gtx780__ubuntuforums-2019.txt",
        # (Xid 13 and RmInitAdapter before the stamps fall back to a reboot; round 35)
        "dmesg-syslog__xid13-x10-rminitadapter-x11-then-stamps-fall-to-4s-reboot__cctvserver-forum.txt",
        # (a blog's `dmesg -T` of Xid 79 then 154 on GPU 3 of eight; an H800's Xid 13 and 43 with
        # the poster's elision; round 37)
        "dmesg-T__xid-79-154-gpu3__8x-rtx-a4000__ru-blog.txt",
        "dmesg__xid-13-43-elided__h800__vrwkv.txt",
    }
