"""facts/host_errors.py against real kernel logs, edited in-test where a docstring says so: which
PCIe port's fatal error is a GPU's (gpu_xid's to fail) and which the host's, which machine check
notice a record explains, and where an APEI record and an EDAC line are one event."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from gpuonboard.facts.aer import aer_events
from gpuonboard.facts.host_errors import host_errors, log_lines
from gpuonboard.steps.checks.host_errors import rule_host_hw_errors

REAL = Path(__file__).parents[2] / "fixtures" / "real"
VGPU_114 = REAL / "dmesg__pcieport-aer-fatal-root-port__vgpu-unlock-114.txt"
RETURNN = REAL / "dmesg-H__aer-fatal-cmplto-cant-recover__returnn-1500.txt"
RASDAEMON_95 = REAL / "dmesg-grep-mce__mce-corrected-amd-bank17__rasdaemon-95.txt"
RASDAEMON_155 = REAL / "dmesg-tail__mce-bank9-status-zero__rasdaemon-155.txt"
RADIASOFT = REAL / "syslog__edac-sbridge-one-ce-scrub__radiasoft-devops-134.txt"
APEI_CE = REAL / "syslog__apei-corrected-memory-one-record__node-exporter-3511.txt"


def _returnn(number: int) -> str:
    """returnn#1500's line `number` (from 1), with its newline."""
    return RETURNN.read_text().splitlines(keepends=True)[number - 1]


def _gpu_nonfatal() -> str:
    """A GPU's non-fatal error block made of returnn#1500's lines 4 and 5 (its root port's report
    and its `PCIe Bus Error` line): `(Fatal)` made `(Non-Fatal)`, `Multiple ` dropped, the address
    received made the GPU's (`0000:03:00.0`, named by the nvidia driver in the capture), and the
    `PCIe Bus Error` line's prefix made the GPU's (`nvidia 0000:03:00.0:`)."""
    report = _returnn(4).replace("Multiple ", "").replace("received: 0000:00:03.0", "received: 0000:03:00.0")
    bus = _returnn(5).replace("pcieport 0000:00:03.0:", "nvidia 0000:03:00.0:")
    return (report + bus).replace("(Fatal)", "(Non-Fatal)")


def _nic_fatal() -> str:
    """vgpu_unlock#114's root port `0000:00:01.1` fatal error block, its `...` lines dropped."""
    return "".join(line for line in VGPU_114.read_text().splitlines(keepends=True) if line.strip() != "...")


def _port_fatal() -> str:
    """returnn#1500's lines 4 to 8: its root port's own fatal error (SDES, CmpltTO)."""
    return "".join(_returnn(n) for n in range(4, 9))


_FATAL_LINE = re.compile(
    r"(\S+) ([0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]): (?:PCIe Bus Error: severity=|AER: (?:Multiple )?)"
    r"Uncorrect(?:ed|able) \(Fatal\)",
    re.IGNORECASE,
)


def _fatal_lines_failed(text: str) -> list[str]:
    """The fatal AER lines of `text` that neither gpu_xid (facts/aer.py: a GPU's fatal error or
    failed recovery) nor host_hw_errors (a fail naming the device) fails."""
    gpu_fails = any(e.fault in ("aer_fatal", "aer_unrecovered") for e in aer_events(text))
    host_fails = [
        e.where for e in host_errors(*log_lines(text)) if e.source == "aer" and e.severity == "fail"
    ]
    return [
        line
        for line in text.splitlines()
        if (m := _FATAL_LINE.search(line))
        and not gpu_fails
        and not any(m.group(2) in w or _source(line) in w for w in host_fails)
    ]


def _source(line: str) -> str:
    """The device a root port's `AER: Uncorrectable (Fatal) error message received from ADDR`
    line names as the error's source (Red Hat KB 7128107, round 37), "-" where it names none."""
    m = re.search(r"received from ([0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7])", line, re.IGNORECASE)
    return m.group(1) if m else "-"


def test_a_ports_fatal_error_beside_a_gpus_non_fatal_one_fails_host_hw_errors() -> None:
    """vgpu_unlock#114's root port 0000:00:01.1 fatal SDES block, then a GPU's non-fatal error
    (_gpu_nonfatal) in the same run of AER lines; and the GPU's non-fatal error then returnn's root
    port's own fatal error (lines 4-8). gpu_xid only warns of the non-fatal error, so the port's
    fatal error is host_hw_errors' to fail. (Before: one "GPU seen" flag took every port of the
    run as the GPU's: no row, and the box's fatal PCIe error failed no rule.)"""
    for text, port in (
        (_nic_fatal() + _gpu_nonfatal(), "0000:00:01.1"),
        (_gpu_nonfatal() + _port_fatal(), "0000:00:03.0"),
    ):
        check = rule_host_hw_errors(host_errors(*log_lines(text)))
        assert check is not None and check.verdict == "fail", check
        assert f"PCI pcieport {port}: PCIe uncorrectable fatal error (AER)" in check.actual, check
        assert _fatal_lines_failed(text) == []


def test_a_ports_fatal_error_the_gpus_failed_recovery_follows_is_gpu_xids() -> None:
    """returnn#1500 as captured: the root port's own fatal error, then `nvidia 0000:03:00.0: AER:
    can't recover`: gpu_xid fails the GPU, host_hw_errors does not name the port again; with
    vgpu_unlock#114's port 0000:00:01.1 block after it (no GPU line after that port's report, in
    the same run of AER lines), that port's error is the host's."""
    text = RETURNN.read_text()
    assert not [e for e in host_errors(*log_lines(text)) if e.source == "aer"]
    events = host_errors(*log_lines(text + _nic_fatal()))
    assert [(e.where, e.severity) for e in events if e.source == "aer"] == [
        ("PCI pcieport 0000:00:01.1", "fail")
    ]


# every real kernel log (dmesg's, a journal's, a syslog's)
KERNEL_LOGS = sorted(p for p in REAL.iterdir() if p.name.startswith(("dmesg", "kern", "syslog", "journal")))


@pytest.mark.parametrize("path", KERNEL_LOGS, ids=lambda p: p.name)
def test_every_fatal_aer_line_of_a_real_log_is_failed_by_a_rule(path: Path) -> None:
    """Every real capture: each fatal PCIe error line is failed by gpu_xid (a GPU's) or by
    host_hw_errors (naming the device); never by neither."""
    assert _fatal_lines_failed(path.read_text(errors="replace")) == []


def test_a_notice_beside_no_record_printed_with_it_is_unverified() -> None:
    """A machine check notice counts as explained only by a record printed with it (an event's
    line at its stamp): radiasoft#134's `grep -i mce` (the notice, then `EDAC sbridge MC1:
    HANDLING MCE MEMORY ERROR`, no event's line); rasdaemon#95's first five lines (the bank 17
    record, then a notice 310 s later beside its `PROCESSOR` detail line); rasdaemon#155's lines
    with a notice 8000 s after its record added (`[ 9366.830245]`, the capture's notice's text).
    (Before: no row, pass, no row: the later notice read as explained by a record's detail line.)"""
    radiasoft = "".join(
        line for line in RADIASOFT.read_text().splitlines(keepends=True) if "mce" in line.lower()
    )
    rasdaemon_95 = (
        "".join(RASDAEMON_95.read_text().splitlines(keepends=True)[:4])
        + RASDAEMON_95.read_text().splitlines(keepends=True)[5]
    )
    notice = next(line for line in RASDAEMON_155.read_text().splitlines(keepends=True) if "logged" in line)
    rasdaemon_155 = RASDAEMON_155.read_text() + notice.replace("[ 1366.830245]", "[ 9366.830245]")
    for text in (radiasoft, rasdaemon_95, rasdaemon_155):
        check = rule_host_hw_errors(host_errors(*log_lines(text)))
        assert check is not None and check.verdict == "unverified", (text, check)
        assert check.actual.endswith("a CPU: machine check events logged (their records not in the log)"), (
            check
        )
    # (the capture as it is: the notice printed with its bank's record, which holds no error)
    assert rule_host_hw_errors(host_errors(*log_lines(RASDAEMON_155.read_text()))) is None


def test_an_apei_record_and_a_later_edac_line_are_two_errors() -> None:
    """node_exporter#3511's record (`fru_text: D2`) and an EDAC CE line four hours later on
    another DIMM (added in-test: `Dec 29 09:00:00 proxmox kernel: EDAC MC0: 1 CE memory read error
    on DIMM_B1 (...)`): two corrected errors, each named. (Before: one, the record taken for the
    EDAC line's.)"""
    edac = (
        "Dec 29 09:00:00 proxmox kernel: EDAC MC0: 1 CE memory read error on DIMM_B1 (channel:1 slot:0"
        " page:0x1 offset:0x0 grain:32)\n"
    )
    events = host_errors(*log_lines(APEI_CE.read_text() + edac))
    assert [(e.source, e.where) for e in events] == [("edac", "MC0 DIMM_B1"), ("ghes", "D2")], events


def test_a_log_cut_inside_an_apei_records_first_words_is_unverified() -> None:
    """node_exporter#3511's first two lines, then its third cut to `{35}[Hardware Error]: event sev`
    (no newline): the record's severity is not read. (Before: no row, the cut text read whole.)"""
    lines = APEI_CE.read_text().splitlines(keepends=True)
    text = lines[0] + lines[1] + lines[2][: lines[2].index("event sev") + len("event sev")]
    check = rule_host_hw_errors(host_errors(*log_lines(text)))
    assert check is not None and check.verdict == "unverified", check
    assert check.actual == "the log ends inside a line, cut short: '{35}[Hardware Error]: event sev'"


def test_a_gpus_own_cut_aer_line_is_left_to_gpu_xid() -> None:
    """returnn#1500's line 5 made the GPU's (`nvidia 0000:03:00.0:` for `pcieport 0000:00:03.0:`)
    and cut after `severity=Uncorrected (F`, no newline: gpu_xid reads the cut GPU line;
    host_hw_errors makes no row of it. (Before: unverified, "a line of a host hardware error".)"""
    line = _returnn(5).replace("pcieport 0000:00:03.0:", "nvidia 0000:03:00.0:")
    text = _returnn(1) + line[: line.index("(Fatal)") + len("(F")]
    assert host_errors(*log_lines(text)) == ()
    assert [e.cut for e in aer_events(text)][-1], aer_events(text)


def test_a_notice_beside_a_cut_line_says_both() -> None:
    """osm#300's kern.log cut inside its first EDAC line, after `EDAC MC0: 4` (no newline): the cut
    line is no record read, so the notice before it is unexplained, and the cut line is said too
    (it may have been the notice's record). (Before: the cut line read as the notice's record.)"""
    text = (REAL / "kern-log__edac-ce-repeated-one-dimm__osm-operations-300.txt").read_text()
    cut = text[: text.index("EDAC MC0: 4") + len("EDAC MC0: 4")]
    check = rule_host_hw_errors(host_errors(*log_lines(cut)))
    assert check is not None and check.verdict == "unverified", check
    assert check.actual == (
        "a CPU: machine check events logged (their records not in the log); the log ends inside a line,"
        " cut short: 'EDAC MC0: 4'"
    ), check


def _relative(text: str) -> str:
    """`text`'s dmesg stamps made `dmesg -H`'s: each the seconds since the line before (`[
    +0.000006]`), the first line's kept."""
    out, last = [], None
    for line in text.splitlines(keepends=True):
        m = re.match(r"\[\s*(\d+\.\d+)\]", line)
        if m and last is not None:
            line = f"[  +{float(m.group(1)) - last:.6f}]" + line[m.end() :]
        last = float(m.group(1)) if m else last
        out.append(line)
    return "".join(out)


def test_a_notice_and_its_record_in_dmesg_h_are_printed_together() -> None:
    """rasdaemon#155's `dmesg | tail` with its stamps made `dmesg -H`'s (each the time since the
    line before, edited in-test): the notice and its bank's record (6 us apart) are one printing,
    so the notice is explained as in the capture (no row); with the later notice of
    test_a_notice_beside_no_record_printed_with_it_is_unverified added (8000 s after), unverified."""
    text = RASDAEMON_155.read_text()
    assert "[  +0.000006] mce: [Hardware Error]: CPU 0: Machine Check" in _relative(text)
    assert rule_host_hw_errors(host_errors(*log_lines(_relative(text)))) is None
    notice = next(line for line in text.splitlines(keepends=True) if "logged" in line)
    later = _relative(text + notice.replace("[ 1366.830245]", "[ 9366.830245]"))
    check = rule_host_hw_errors(host_errors(*log_lines(later)))
    assert check is not None and check.verdict == "unverified", check


# a syslog line's prefix as radiasoft#134 prints it (`Feb 23 03:28:16 kernel: `, one with two spaces)
_RADIASOFT_PREFIX = re.compile(r"^Feb 23 03:28:16 +kernel: ")


def _restamped(text: str, stamp: Callable[[int], str]) -> str:
    """radiasoft#134's kern.log with each line's prefix made `stamp(i)` (its i-th line's)."""
    return "".join(_RADIASOFT_PREFIX.sub(stamp(i), line) for i, line in enumerate(text.splitlines(True)))


@pytest.mark.parametrize(
    "stamp",
    [
        lambda i: f"Feb 23 03:28:16.{100000 + 7 * i:06d} gpu01 kernel: ",
        lambda i: f"2018-02-23T03:28:16,{100000 + 7 * i:06d}+00:00 ",
        lambda i: f"Feb 23 03:28:1{6 if i == 0 else 7} kernel: ",
        lambda i: f"[Fri Feb 23 03:28:1{6 if i == 0 else 7} 2018] ",
    ],
    ids=["journalctl-short-precise", "dmesg-time-format-iso", "syslog-next-second", "dmesg-T-next-second"],
)
def test_a_notice_and_its_record_are_printed_together_in_every_stamp_shape(
    stamp: Callable[[int], str],
) -> None:
    """radiasoft#134's kern.log (the notice, its bank's corrected memory error, EDAC's CE) with
    its prefixes made, in-test: `journalctl -o short-precise`'s (microseconds 7 apart, a host
    added), `dmesg --time-format iso`'s, or its syslog's / `dmesg -T`'s with every line after the
    notice in the next second (`03:28:17`). Before, the stamps' TEXT was compared: the notice read
    as unexplained, "their records not in the log" (unverified). Now each shape's time is read
    and compared within a second: the notice is its record's, the CE passes as in the capture."""
    check = rule_host_hw_errors(host_errors(*log_lines(_restamped(RADIASOFT.read_text(), stamp))))
    assert check is not None and check.verdict == "pass", check
    assert "records not in the log" not in check.actual


def test_an_apei_record_and_its_edac_line_in_short_precise_count_once() -> None:
    """node_exporter#3511's APEI record of a corrected memory error with its prefixes made
    `journalctl -o short-precise`'s in-test (`Dec 29 05:24:23.2000NN proxmox kernel:`, 9 us
    apart), and ghes_edac's EDAC line for the same event added after it, 9 us later (`EDAC MC0: 1
    CE single-bit ECC on unknown memory (node:6 card:1 module:0 rank:1 ...)`). Before, the
    stamps' text differed, the record was not claimed: one event counted twice. Now once."""
    lines = APEI_CE.read_text().splitlines(True)
    edac = (
        "EDAC MC0: 1 CE single-bit ECC on unknown memory (node:6 card:1 module:0 rank:1 bank:2 device:11"
        " row:40948 column:560 page:0x6a47d1 offset:0xf540 grain:1 syndrome:0x0)\n"
    )
    text = "".join(
        line.replace("Dec 29 05:24:23 proxmox", f"Dec 29 05:24:23.{200000 + 9 * i:06d} proxmox")
        for i, line in enumerate([*lines, f"Dec 29 05:24:23 proxmox kernel: {edac}"])
    )
    events = host_errors(*log_lines(text))
    assert [(e.source, e.severity) for e in events] == [("edac", "corrected")], events


def test_a_log_cut_inside_a_host_error_line_is_read_as_its_readers_read_it() -> None:
    """The real syslogd wall messages of ucr-cs100-404, cut inside the last one's `kernel:[Hardware
    E`: its cut end is read on the log made plain (`kernel: [Hardware E`, as gpu_xid's readers
    read it), a host error line cut (round 33: the lines given to host_errors, not a text; before,
    the line as saved read as no error's start, and nothing was said of the cut)."""
    text = (REAL / "syslogd-wall__amd-mc4-dram-ecc-corrected-over__cut-at-end__ucr-cs100-404.txt").read_text()
    cut = text[: text.rindex("kernel:[Hardware Error]") + len("kernel:[Hardware E")]
    lines, open_end = log_lines(cut)
    assert open_end and lines[-1].endswith("kernel: [Hardware E")
    assert [(e.source, e.severity) for e in host_errors(lines, open_end)][-1] == ("cut", "cut")
    assert host_errors(lines) == host_errors(lines, open_end)[:-1]  # (a whole last line: not cut)
