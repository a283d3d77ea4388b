"""facts/kernel_quoted.py: a tool's report that quotes the drivers' kernel lines (gpud's scan)
is not the kernel log: its quoted faults count, its silence proves nothing (the rules that would
pass from it are unverified, naming it). Real captures (tests/fixtures/real)."""

from __future__ import annotations

from pathlib import Path

from gpuonboard.facts.kernel_log import parse_kernel_log
from gpuonboard.facts.kernel_quoted import quoting_report
from gpuonboard.steps.checks.xid_rules import rule_sxid, rule_xid

REAL = Path(__file__).parents[2] / "fixtures" / "real"
GPUD_500 = "gpud-scan__xid-119-quoted-x5__not-a-kernel-log__gpud-500.txt"


def test_gpuds_scan_quoting_xid_lines_fails_gpu_xid_and_leaves_sxid_unverified() -> None:
    """leptonai/gpud#500's scan output as stored (`[XID found] (54 minutes ago) "NVRM: Xid
    (PCI:0000:9b:00): 119, ..."` x5): gpu_xid fails on the quoted Xid 119s; nvswitch_sxid is
    unverified naming the report. (Before: nvswitch_sxid passed "no SXid in the kernel log".)"""
    log = parse_kernel_log((REAL / GPUD_500).read_text())
    assert log.quoted is not None and log.quoted.startswith('[XID found] (54 minutes ago) "NVRM: Xid')
    xid = rule_xid(log.events, True, narrowed=log.left_out)
    assert xid.verdict == "fail" and "Xid 119 GSP RPC Timeout x5" in xid.actual, xid
    sxid = rule_sxid(log.events, True, narrowed=log.left_out)
    assert sxid.verdict == "unverified", sxid
    assert "it is a tool's report quoting kernel lines" in sxid.actual


def test_no_real_kernel_log_is_read_as_a_tools_report() -> None:
    """Every real kernel log capture (dmesg, journalctl, syslog, kern.log forms): none is."""
    names = [p for pattern in ("dmesg*", "journalctl*", "syslog*", "kern*") for p in REAL.glob(pattern)]
    assert len(names) > 50
    for path in names:
        assert quoting_report(path.read_text(errors="replace").splitlines()) is None, path.name
