"""The ram and data_disk rules tell apart an output not given, a tool that did not run, and an
output given from which nothing could be read: only the tool that did not run fails ("never
conclude from absence"); an output not understood is `unverified`, with a sentence saying so."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.connection.gather import parse_facts
from gpuonboard.facts.probe import ProbeOutput
from gpuonboard.inventory import DataDiskSpec, OrderSpec
from gpuonboard.steps.checks.host_rules import rule_data_disk, rule_ram

REAL = Path(__file__).parents[3] / "fixtures" / "real"
ORDER = OrderSpec(ram_bytes=2**30, data_disk=DataDiskSpec("/mydata/data", 9 * 10**9))
# a `free` whose Mem row has no size (cut in the middle of its total), and a df cut after its
# header: both ran (exit 0) and printed, yet nothing can be read from them
FREE_UNREAD = "              total        used        free\nMem:        ???\n"
DF_UNREAD = "Filesystem     1K-blocks    Used Available Use% Mounted on\n"


def test_a_free_given_but_unreadable_is_unverified_one_that_did_not_run_fails() -> None:
    check = rule_ram(ORDER, parse_facts({"free": ProbeOutput(FREE_UNREAD, "", 0)}), 0.03)
    assert (check.verdict, check.actual) == (
        "unverified",
        "unknown: no Mem total could be read from the free output",
    )
    assert "free -k" in check.detail
    # the live probe's `free -k` where free is not installed (exit 127): as before
    missing = rule_ram(ORDER, parse_facts({"free": ProbeOutput("", "sh: 1: free: not found", 127)}), 0.03)
    assert (missing.verdict, missing.actual) == ("fail", "unknown: free not available")
    not_given = rule_ram(ORDER, parse_facts({}), 0.03)
    assert (not_given.verdict, not_given.actual) == ("unverified", "not judged: no free output was given")


@pytest.mark.parametrize(
    "not_run",
    [
        ProbeOutput("", "sh: 1: df: not found", 127),
        ProbeOutput("", "df: cannot read table of mounted file systems", 1),
    ],
)
def test_a_df_given_but_unreadable_is_unverified_one_that_did_not_run_fails(not_run: ProbeOutput) -> None:
    check = rule_data_disk(ORDER, parse_facts({"df": ProbeOutput(DF_UNREAD, "", 0)}), 0.03)
    assert (check.verdict, check.actual) == (
        "unverified",
        "unknown: no filesystem could be read from the df output",
    )
    assert "df -P -k" in check.detail
    failed = rule_data_disk(ORDER, parse_facts({"df": not_run}), 0.03)
    assert (failed.verdict, failed.actual) == ("fail", "unknown: df not available")


def test_df_i_read_as_the_probe_would_is_unverified() -> None:
    """`df -i` in a run's raw folder (read as the df probe, not refused): no size column, so no
    mount is read; that is not a box without a data disk."""
    text = (REAL / "df-i__sda2-xfs-root_sdb1-ext4-mydata.txt").read_text()
    assert rule_data_disk(ORDER, parse_facts({"df": ProbeOutput(text, "", 0)}), 0.03).verdict == "unverified"
