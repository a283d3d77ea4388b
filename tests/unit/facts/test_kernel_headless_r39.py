"""A saved kernel log that starts inside a multi-line record of the drivers' (measure39c 06): its
first SXid line is the tail of a record (`SXid (PCI:...): 22013, Data {0x0000002b, ...}`, whose
`Non-fatal, Link 43` and `Severity` lines are not in it), or its first NVRM line is a later line of
the driver's Xid 119 report. The paste begins inside the log, so the lines before it are not
known: nvswitch_sxid passed "informational SXids only" with no note. Now a headless first record
narrows the log (facts/kernel_headless.py): no pass.

Real captures: tests/fixtures/real/SOURCES.md (NVIDIA/nvtrust #124; the Dell XE9680's whole GSP
timeout report)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpuonboard.facts.kernel_headless import word_cut
from gpuonboard.facts.kernel_log import parse_kernel_log

from ..offline_judge import verdicts

REAL = Path(__file__).parents[2] / "fixtures" / "real"
NVTRUST = REAL / "dmesg__sxid-22013-first-sxid-line-a-data-line-headless-record__h100-tdx__nvtrust-124.txt"
WHOLE_SXID = REAL / "dmesg__sxid-22013-non-fatal-3-lines.txt"
GSP = REAL / "dmesg-T__xid-119-gsp-timeout__h100-dell-xe9680.txt"
ORDER = "gpu_model: H100 80GB HBM3\ngpu_count: 8\n"


def test_a_paste_begun_at_an_sxid_records_data_line_is_unverified(tmp_path: Path) -> None:
    verdict, actual = verdicts(tmp_path, "dmesg.txt", NVTRUST.read_text(), ORDER)["nvswitch_sxid"]
    assert verdict == "unverified", actual
    assert "starts inside an SXid record of nvidia-nvswitch3" in actual, actual
    assert "`SXid (PCI:0000:04:00.0): 22013, Data {0x0000002b," in actual, actual
    # (its events are still counted: the tail and the three whole records)
    assert "non-fatal x3" in actual, actual


def test_a_paste_begun_at_a_severity_line_is_unverified_too(tmp_path: Path) -> None:
    lines = NVTRUST.read_text().splitlines(keepends=True)
    text = "".join(lines[3:])  # (from `Severity 0 Engine instance 44`: link 44's record headless)
    verdict, actual = verdicts(tmp_path, "dmesg.txt", text, ORDER)["nvswitch_sxid"]
    assert verdict == "unverified", actual
    assert "is a record's `Severity` line" in actual, actual


def test_a_journal_form_of_the_same_paste_is_read_alike(tmp_path: Path) -> None:
    # (the same lines as `journalctl -k` prints them: the class is the record, not the stamp)
    text = re.sub(r"^\[\s*([\d.]+)\]", "Dec 01 10:00:38 hgx kernel:", NVTRUST.read_text(), flags=re.M)
    verdict, actual = verdicts(tmp_path, "journal.txt", text, ORDER)["nvswitch_sxid"]
    assert verdict == "unverified", actual
    assert "starts inside an SXid record" in actual, actual


def test_a_paste_begun_at_a_records_first_line_is_not_headless(tmp_path: Path) -> None:
    lines = NVTRUST.read_text().splitlines(keepends=True)
    text = "".join(lines[2:])  # (from `Non-fatal, Link 44`: every record whole)
    assert parse_kernel_log(text).headless == ""
    assert parse_kernel_log(WHOLE_SXID.read_text()).headless == ""
    verdict, actual = verdicts(tmp_path, "dmesg.txt", WHOLE_SXID.read_text(), ORDER)["nvswitch_sxid"]
    assert verdict == "pass", actual


@pytest.mark.parametrize("start", [4, 6, 10])
def test_a_paste_begun_inside_an_xid_119_report_narrows_the_sxid_rule_too(tmp_path: Path, start: int) -> None:
    lines = GSP.read_text().splitlines(keepends=True)
    text = "".join(lines[start:])
    assert "multi-line report of the GPU driver" in parse_kernel_log(text).headless
    verdict, actual = verdicts(tmp_path, "dmesg.txt", text, ORDER)["nvswitch_sxid"]
    assert verdict == "unverified", actual
    assert "starts inside a multi-line report of the GPU driver" in actual, actual


def test_the_whole_report_is_not_headless() -> None:
    assert parse_kernel_log(GSP.read_text()).headless == ""


def test_a_probes_log_is_judged_by_its_first_line_instead() -> None:
    # (the live probe's `# first:` says where its log starts: a wrapped ring buffer passes with its note)
    text = "# source: dmesg\n# first: [   38.100000] x\n" + NVTRUST.read_text()
    assert parse_kernel_log(text).headless == ""


def test_a_quote_is_cut_at_a_words_end() -> None:
    line = (
        "request to query NVSwitch device information failed with error:WARNING Nothing to do"
        " [NV_WARN_NOTHING_TO_DO]"
    )
    for most in range(20, len(line)):
        cut = word_cut(line, most)
        assert cut == line or (cut.endswith(" ...") and line.startswith(cut[:-4])), cut
        assert "[NV_" not in cut or "[NV_WARN_NOTHING_TO_DO]" in cut, cut


FALLEN = REAL / "dmesg__nvrm-fallen-off-bus-no-xid__driver570.158.01.txt"


def test_a_paste_begun_inside_the_drivers_message_about_a_gpu_is_headless(tmp_path: Path) -> None:
    lines = FALLEN.read_text().splitlines(keepends=True)
    assert parse_kernel_log(FALLEN.read_text()).headless == ""
    text = "".join(lines[1:])  # (its `The NVIDIA GPU 0000:b3:00.0` line not in the paste)
    assert "starts inside a message of the GPU driver" in parse_kernel_log(text).headless
    # (the fault it shows still fails)
    verdict, actual = verdicts(tmp_path, "dmesg.txt", text)["gpu_xid"]
    assert verdict == "fail" and "fallen off the bus" in actual, actual
