"""A fragment of a kernel log must not read as a whole log because of a line no kernel prints
(measure34e 26, measure34c 14): an author's excerpt of only NVRM lines is a pick of the log
that keeps none of the NVSwitch driver's, so nvswitch_sxid is unverified, not "no SXid in the
kernel log". A monitor's CSV sample row pasted above the Xid line, or the kernel's indented
continuation line of a wrapped Xid line, made the excerpt read as a whole log. Real captures:
tests/fixtures/real/SOURCES.md."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.facts.kernel_log import parse_kernel_log
from gpuonboard.steps.checks.sxid_rules import rule_sxid
from gpuonboard.steps.checks.xid_rules import rule_xid

REAL = Path(__file__).parents[2] / "fixtures" / "real"
CSV_THEN_XID = REAL / "log-excerpt__csv-sample-row-then-hhmmss-xid79-one-line__gpu-watch-troubleshooting.txt"
WRAPPED = (
    REAL / "log-excerpt__dmesg-grep-nvrm-xid79-wrapped-continuation-indented__gtx970m-homelab-postmortem.txt"
)


@pytest.mark.parametrize("path", [CSV_THEN_XID, WRAPPED])
def test_an_excerpt_of_nvrm_lines_is_read_as_one(path: Path) -> None:
    text = path.read_text()
    log = parse_kernel_log(text)
    assert log.nvrm_only is not None and "NVRM: Xid (PCI:0000:01:00): 79" in log.nvrm_only
    assert rule_xid(log.events, True).verdict == "fail"  # (the Xid 79 is read, as before)


def test_the_csv_row_and_the_nvrm_line_alone_read_alike() -> None:
    """The capture, and its NVRM line alone: the same reading (the row is no kernel line)."""
    lines = CSV_THEN_XID.read_text().splitlines()
    assert lines[0].startswith("14:23:05.954, 41, 44.35 W")
    alone = parse_kernel_log(lines[1] + "\n")
    assert parse_kernel_log(CSV_THEN_XID.read_text()).nvrm_only == alone.nvrm_only is not None


def test_the_wrapped_excerpt_reads_as_the_unwrapped_one() -> None:
    """The homelab excerpt, and the same without its indented continuation line (measure34c 13's
    shape): both an excerpt of NVRM lines."""
    lines = WRAPPED.read_text().splitlines()
    assert lines[1].startswith("      GPU has fallen off the bus.")
    joined = parse_kernel_log("\n".join([lines[0], *lines[2:]]) + "\n")
    assert parse_kernel_log(WRAPPED.read_text()).nvrm_only == joined.nvrm_only is not None


def test_a_kernel_line_beside_the_nvrm_lines_still_reads_as_a_log() -> None:
    """An unindented line of another driver among them is a log's line: no pick of NVRM lines."""
    lines = WRAPPED.read_text().splitlines()
    text = "\n".join([lines[0], lines[1], "pcieport 0000:00:01.0: AER: Corrected error received", *lines[2:]])
    assert parse_kernel_log(text + "\n").nvrm_only is None
    assert rule_sxid(parse_kernel_log(text + "\n").events, True).verdict == "pass"
