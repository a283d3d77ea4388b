"""A kernel log that ends inside a line of a report the driver printed over several lines,
indented under its tag: the Xid 120 report's register dump (`NVRM:         s8:0x0000`, measure36d
03, open-gpu-kernel-modules#829 as the index stored it), the GSP RPC history's rows after an Xid
119 (`NVRM:     -1    103  GSP_RM_ALLOC ...`). Before, such a line was taken for a driver
sentence the log ends inside, "that may be the driver's reason for this failure (a driver that
does not support the GPU, or Resizable BAR / Above 4G decoding off in the BIOS)": a reason the log
does not give. Now it is said as a line of the report above it, and the failure keeps its own ask;
a driver sentence the log ends inside (`The NVIDIA GPU 0000:01:00.0 ...`) still gets the caveat."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.steps.base import Check

from ...offline_judge import checks

REAL = Path(__file__).parents[3] / "fixtures" / "real"
XID120 = REAL / "dmesg__xid-120-gsp-task-exception-riscv-register-dump__line-cut-as-stored__ogkm-829.txt"
XID119 = REAL / "dmesg-T__xid-119-gsp-timeout__h100-dell-xe9680.txt"
REPORT = "a line of the driver's report above it the log ends inside"
BIOS = "Resizable BAR / Above 4G decoding"


def _rules(tmp_path: Path, text: str) -> dict[str, Check]:
    return {c.name: c for c in checks(tmp_path, "dmesg.txt", text)}


def test_the_xid_120_report_cut_in_its_register_dump_names_no_bios_reason(tmp_path: Path) -> None:
    got = _rules(tmp_path, XID120.read_text())
    assert got["gpu_xid"].verdict == "fail"
    assert "Xid 120" in got["gpu_xid"].actual
    assert REPORT in got["gpu_xid"].actual and "s8:0x0000" in got["gpu_xid"].actual
    assert BIOS not in got["gpu_xid"].detail
    assert "driver message" not in got["gpu_xid"].actual
    # (what followed the cut is not known: no SXid pass)
    assert got["nvswitch_sxid"].verdict == "unverified"


@pytest.mark.parametrize("keep", [2, 5, 11])
def test_every_dump_line_of_the_report_cut_short_is_said_as_one(tmp_path: Path, keep: int) -> None:
    """The capture cut inside its other dump lines (`sepc:...`, `s4:...`), as a page or a paste
    may cut it (`Reported by libos ...` too): each is a line of the report, none a reason."""
    lines = XID120.read_text().split("\n")
    text = "\n".join(lines[:keep]) + "\n" + lines[keep][:40]
    got = _rules(tmp_path, text)["gpu_xid"]
    assert got.verdict == "fail" and REPORT in got.actual and BIOS not in got.detail


def test_the_gsp_rpc_history_cut_in_a_row_is_a_line_of_its_report(tmp_path: Path) -> None:
    """The Xid 119 capture cut inside a row of its RPC history (`NVRM:     -2    103  GSP_RM_ALLOC`)."""
    lines = XID119.read_text().split("\n")
    row = next(i for i, line in enumerate(lines) if "GSP_RM_ALLOC" in line and "-2 " in line)
    text = "\n".join(lines[:row]) + "\n" + lines[row][:70]
    got = _rules(tmp_path, text)["gpu_xid"]
    assert got.verdict == "fail" and "Xid 119" in got.actual
    assert REPORT in got.actual and "driver message the log ends inside" not in got.actual


def test_a_driver_sentence_cut_short_keeps_its_caveat(tmp_path: Path) -> None:
    """A failure beside the driver's own sentence the log ends inside (one blank after its tag):
    that sentence may be its reason; the caveat stays."""
    text = (
        "[    5.100000] NVRM: GPU 0000:01:00.0: RmInitAdapter failed! (0x22:0x56:667)\n"
        "[    5.100100] NVRM: GPU 0000:01:00.0: rm_init_adapter failed, device minor number 0\n"
        "[    5.200000] NVRM: The NVIDIA GPU 0000:01:00.0 (PCI ID: 10de:2204)\n"
        "[    5.200001] NVRM: installed in this system is not supp"
    )
    got = _rules(tmp_path, text)["gpu_xid"]
    assert got.verdict == "fail"
    assert REPORT not in got.actual


def test_the_dump_line_with_its_blanks_collapsed_is_still_a_line_of_the_report(tmp_path: Path) -> None:
    """A page or a chat that collapsed the runs of blanks (`NVRM: s8:0x0000`): the line is known by
    its words, a register and its value."""
    text = "\n".join(" ".join(line.split()) for line in XID120.read_text().split("\n"))
    got = _rules(tmp_path, text)["gpu_xid"]
    assert got.verdict == "fail" and REPORT in got.actual and BIOS not in got.detail


AER = REAL / "dmesg__pcieport-aer-fatal-surprise-down-xid-79__gpu-burn-1.txt"
RMINIT = REAL / "dmesg-T__rminitadapter-failed-no-xid__titan-v.txt"


def test_an_indented_driver_line_below_another_drivers_line_is_no_reports(tmp_path: Path) -> None:
    """A log's lines, then another driver's line (the PCIe port's, from a real log), then the
    driver's `RmInitAdapter failed` line indented under its tag (a paste's blanks) the log ends
    inside: no report heading is right above it, so it is not called "a line of the driver's
    report ... a dump of the GPU's registers" (revR L1 c22: the indentation alone decided), but a
    driver message the log ends inside."""
    lines = [line for line in RMINIT.read_text().split("\n") if line.strip()]
    rminit = next(line for line in lines if "RmInitAdapter failed" in line)
    cut = rminit.replace("NVRM: ", "NVRM:    ", 1)[: rminit.index("RmInitAdapter") + 16]
    text = "\n".join([lines[0], AER.read_text().split("\n")[0], cut])
    got = _rules(tmp_path, text)["gpu_xid"]
    assert got.verdict != "pass", got.actual
    assert REPORT not in got.actual, got.actual
    assert "a driver message the log ends inside" in got.actual, got.actual
