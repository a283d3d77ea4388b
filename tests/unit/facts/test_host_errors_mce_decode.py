"""A machine check of a memory controller and the EDAC driver's decode of it are one error: sb_edac
(and skx_edac) print the bank's record (`EDAC sbridge MC0: CPU 0: Machine Check Event: 0 Bank 5:
8c00004000010092`) and, in the same second, the memory controller's line that decodes it (`EDAC
MC0: 1 CE memory read error on CPU_SrcID#0_Ha#0_Chan#2_DIMM#0`). host_hw_errors listed them as
two errors (measure33d 22); the rules say a record and its EDAC decode count once.

Real captures: tests/fixtures/real/SOURCES.md (grondo/edac-utils#10, radiasoft/devops#134)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.facts.host_errors import host_errors, log_lines
from gpuonboard.steps.checks.host_errors import rule_host_hw_errors

REAL = Path(__file__).parents[2] / "fixtures" / "real"
SBRIDGE = [
    "dmesg-T__edac-sbridge-mce-then-its-ce-decode-one-dimm__edac-utils-10.txt",
    "syslog__edac-sbridge-one-ce-scrub__radiasoft-devops-134.txt",
]


@pytest.mark.parametrize("name", SBRIDGE)
def test_a_bank_record_and_its_edac_decode_count_once(name: str) -> None:
    events = [e for e in host_errors(*log_lines((REAL / name).read_text())) if e.severity != "logged"]
    assert [(e.source, e.severity, e.count) for e in events] == [("edac", "corrected", 1)], events
    check = rule_host_hw_errors(host_errors(*log_lines((REAL / name).read_text())))
    assert check is not None and check.verdict == "pass", check
    assert "machine check 8c" not in check.actual and "_DIMM#0" in check.actual, check.actual


def test_an_edac_line_seconds_later_is_another_error() -> None:
    """edac-utils#10's EDAC line printed 5 s after its bank's record (an edit): two errors."""
    text = (REAL / SBRIDGE[0]).read_text().replace("19:27:15 2020] EDAC MC0:", "19:27:20 2020] EDAC MC0:")
    events = [e for e in host_errors(*log_lines(text)) if e.severity != "logged"]
    assert [e.source for e in events] == ["mce", "edac"], events


def test_a_bank_of_another_unit_is_not_the_memory_controllers() -> None:
    """The record's status made a cache error's (MCACOD 0x0150, an edit): not EDAC's memory error."""
    text = (REAL / SBRIDGE[0]).read_text().replace("8c00004000010092", "8c00004000010150")
    events = [e for e in host_errors(*log_lines(text)) if e.severity != "logged"]
    assert [e.source for e in events] == ["mce", "edac"], events
