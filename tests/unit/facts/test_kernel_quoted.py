"""facts/kernel_quoted.py: a tool's report that quotes the drivers' kernel lines (gpud's scan)
is not the kernel log: its quoted faults count, its silence proves nothing (the rules that would
pass from it are unverified, naming it). Real captures (tests/fixtures/real)."""

from __future__ import annotations

from pathlib import Path

from gpuonboard.facts.kernel_log import parse_kernel_log
from gpuonboard.facts.kernel_quoted import quoting_report
from gpuonboard.steps.checks.sxid_rules import rule_sxid
from gpuonboard.steps.checks.xid_rules import rule_xid

from ..offline_judge import verdicts

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


GPUD_338 = "dmesg-decode-iso__sxid-12028-data-one-line__nvswitch1__gpud-338.txt"
SXID_12028 = "dmesg__sxid-12028-non-fatal__health-check-docstring.txt"


def test_a_saved_log_of_nvswitch_lines_only_leaves_gpu_xid_unverified(tmp_path: Path) -> None:
    """Round 30 (gpud338): leptonai/gpud#338's one `dmesg --decode --time-format iso` line, an
    SXid 12028 of nvidia-nvswitch1, saved alone: nvswitch_sxid fails on it; gpu_xid passed "no
    Xid in the kernel log" from lines picked from the log (a grep or a hand that kept only the
    NVSwitch driver's, no `NVRM: Xid` among them): now unverified, naming them. The same for the
    other real one-line SXid log (monotonic stamps) and, edited in-test, the gpud338 line under
    `dmesg -T`'s and a syslog's wall-clock stamps."""
    line = (REAL / GPUD_338).read_text().rstrip("\n")
    tail = line[line.index("nvidia-nvswitch1:") :]
    for text in (
        line,
        (REAL / SXID_12028).read_text(),
        f"[Sat Jan 25 10:34:54 2025] {tail}",
        f"Jan 25 10:34:54 host kernel: {tail}",
        # (quoted in a mail and wrapped at 80 columns, the pieces without a stamp)
        "\n".join(f"> {line[i : i + 78]}" for i in range(0, len(line), 78)),
    ):
        got = verdicts(tmp_path, "dmesg.txt", text + "\n", "gpu_count: 8\n")
        assert got["gpu_xid"][0] == "unverified", got["gpu_xid"]
        assert "it holds only the NVSwitch driver's lines (1 line, first `" in got["gpu_xid"][1]
        assert got["nvswitch_sxid"][0] in ("fail", "warn"), got["nvswitch_sxid"]
    # a log with one other line (the kernel's own) is no pick of the NVSwitch driver's lines (its
    # 2 kinds within a second are a pick of kinds, round 38: unverified for that)
    other = "kern  :info  : 2025-01-25T10:34:55,1+00:00 usb 1-1: new"
    whole = verdicts(tmp_path, "dmesg.txt", f"{line}\n{other}\n")
    assert "only the NVSwitch driver's lines" not in whole["gpu_xid"][1], whole["gpu_xid"]
    assert "2 kinds only (`nvidia-nvswitch`, `usb`) within 1 s" in whole["gpu_xid"][1], whole["gpu_xid"]
