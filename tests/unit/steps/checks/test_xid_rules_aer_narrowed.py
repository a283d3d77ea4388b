"""gpu_xid and nvswitch_sxid on what the kernel log leaves out or says outside NVRM (truth sweep
round 12): a GPU's uncorrectable PCIe error (AER) that the kernel could not recover from fails
(rwth-i6/returnn#1500: it passed, "no Xid in the kernel log"); a log whose copied command kept
only some lines (`dmesg -T | grep NVRM`, akash-network/support#209) proves no absence; a log cut
short inside any driver line leaves both rules unverified (the lines after the cut are lost for
both). Real captures: tests/fixtures/real/SOURCES.md, round 12."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.facts.aer import aer_events
from gpuonboard.facts.kernel_log import parse_kernel_log
from gpuonboard.steps.checks.sxid_rules import rule_sxid
from gpuonboard.steps.checks.xid_rules import rule_xid

from ...offline_judge import details, verdicts

REAL = Path(__file__).parents[3] / "fixtures" / "real"
AER = "dmesg-H__aer-fatal-cmplto-cant-recover__returnn-1500.txt"
FALLEN = "dmesg__nvrm-fallen-off-bus-no-xid__driver570.158.01.txt"
SXID_22013 = "dmesg__sxid-22013-non-fatal-3-lines.txt"
XID_79 = "dmesg__xid-79-sxid-20034__nvswitch.txt"
WHOLE = "dmesg-T__xid-119-gsp-timeout__h100-dell-xe9680.txt"


def read(name: str) -> str:
    return (REAL / name).read_text()


def test_a_gpu_the_kernel_could_not_recover_from_a_fatal_pcie_error_fails(tmp_path: Path) -> None:
    """The root port reports `Multiple Uncorrected (Fatal)` (a completion timeout), and the
    kernel says of the GPU's function `nvidia 0000:03:00.0: AER: can't recover`."""
    rules = verdicts(tmp_path, AER, read(AER))
    assert rules["gpu_xid"] == (
        "fail",
        "GPU at PCI 0000:03:00.0: the kernel could not recover the GPU from a PCIe error (AER) x2 -> reboot"
        # (an excerpt whose lines say AER or PCIe, no GPU driver word in most: a grep for them keeps
        # no Xid line, so it is read by its first line as a whole log is: round 32, m32d 3)
        " (the log read starts after boot, so it does not cover the whole boot)",
    )
    said = details(tmp_path, AER, read(AER))["gpu_xid"]
    assert said.startswith("Ask the vendor to reboot") and "catalogue" not in said  # the kernel's word
    assert rules["nvswitch_sxid"][0] == "pass"
    # the sound function beside it (snd_hda_intel 0000:03:00.1) and the root port are not GPUs
    assert {e.pci for e in aer_events(read(AER))} == {"0000:03:00.0"}


def test_aer_severity_and_the_newer_kernels_wording() -> None:
    """The same log's lines as the GPU's own: fatal fails, non-fatal warns (watch); Linux 6.x
    says `Uncorrectable ... error message received from`; corrected errors are not read."""
    gpu = "nvidia 0000:03:00.0: "
    fatal = (
        f"[ 1.0] {gpu}PCIe Bus Error: severity=Uncorrected (Fatal), type=Transaction Layer, (Requester ID)\n"
    )
    nonfatal = fatal.replace("(Fatal)", "(Non-Fatal)")
    newer = (
        "[ 1.0] pcieport 0000:00:03.0: AER: Uncorrectable (Non-Fatal) error message received from"
        " 0000:03:00.0\n"
    )
    corrected = f"[ 1.0] {gpu}PCIe Bus Error: severity=Corrected, type=Physical Layer, (Receiver ID)\n"
    faults = [e.fault for text in (fatal, nonfatal, newer + nonfatal, corrected) for e in aer_events(text)]
    assert faults == ["aer_fatal", "aer_nonfatal", "aer_nonfatal", "aer_nonfatal"]
    assert rule_xid(aer_events(fatal), True).verdict == "fail"
    check = rule_xid(aer_events(nonfatal), True)
    assert check.verdict == "warn" and check.actual.endswith("-> watch")
    # an address that no line names as the nvidia driver's is not taken for a GPU
    assert aer_events(newer) == ()


def test_a_grep_of_the_log_proves_no_absence(tmp_path: Path) -> None:
    """`dmesg -T | grep NVRM` keeps no SXid line (nvidia-nvswitchN:), no AER line: the Xid 79 it
    shows still fails; "no SXid" is not known."""
    text = "root@node1:~# dmesg -T | grep NVRM\n" + read(FALLEN)
    rules = verdicts(tmp_path, "dmesg.txt", text)
    assert rules["gpu_xid"][0] == "fail"
    assert rules["nvswitch_sxid"] == (
        "unverified",
        "no SXid in the kernel log; `dmesg -T | grep NVRM` keeps only the lines grep let through",
    )
    # saved without its command, its lines all NVRM's: a grep still (round 31: it passed "no SXid")
    assert verdicts(tmp_path, FALLEN, read(FALLEN))["nvswitch_sxid"][0] == "unverified"
    # a log with the kernel's other lines: "no SXid" is read
    assert verdicts(tmp_path, "dmesg.txt", read(WHOLE))["nvswitch_sxid"][0] == "pass"
    # a tail of a log with only SXids: the Xid side is not known either
    tail = "$ sudo dmesg | tail -20\n" + read(SXID_22013)
    assert verdicts(tmp_path, "dmesg.txt", tail)["gpu_xid"][0] == "unverified"
    said = details(tmp_path, "dmesg.txt", tail)["gpu_xid"]
    assert said.startswith(
        "the kernel log given is not the whole log of the boot the box runs now"
        " (`sudo dmesg | tail -20` keeps only"
    )


@pytest.mark.parametrize(
    ("name", "marker", "other"),
    [
        (XID_79, "NVRM: Xid (PCI:0000:", "nvswitch_sxid"),  # cut inside an Xid line
        (SXID_22013, "SXid (PCI:0000:", "gpu_xid"),  # cut inside an SXid line
    ],
)
def test_a_log_cut_inside_one_rules_line_leaves_the_other_unverified(
    tmp_path: Path, name: str, marker: str, other: str
) -> None:
    """Before: the rule whose line was cut said "cut short"; the other passed on the same log."""
    text = read(name)
    cut = text[: text.index(marker) + len(marker) + 2]
    assert not cut.endswith("\n")
    rules = verdicts(tmp_path, name, cut)
    assert rules[other][0] == "unverified", rules[other]
    assert "the log ends inside a line, cut short: " in rules[other][1]
    # (the whole log is read: a log of the NVSwitch driver's lines only leaves gpu_xid unverified
    # for that reason, never as cut short: facts/test_kernel_quoted.py)
    whole = verdicts(tmp_path, name, text)[other]
    assert whole[0] != "unverified" or "cut short" not in whole[1], whole


def test_the_rules_read_aer_only_where_gpu_xid_judges() -> None:
    events = parse_kernel_log(read(AER)).events + aer_events(read(AER))
    assert rule_sxid(events, True).verdict == "pass"
    assert rule_xid(events, True).verdict == "fail"


# NVIDIA/open-gpu-kernel-modules #120 (515.65.01, an RTX 3070 laptop GPU): the dmesg the poster
# gave as "the relevant entries", its `[    0.000000] Linux version ...` line, then their own
# `[    ....    ]` where they left lines out, then the driver's load
ELIDED = "dmesg__elided-by-hand-dots-line__rtx3070-laptop__open515.txt"


def test_a_log_with_lines_left_out_by_hand_proves_no_absence(tmp_path: Path) -> None:
    """The log starts at boot, but the poster's `[    ....    ]` left lines out between: "no
    Xid" / "no SXid" there is not known. It passed, "no Xid in the kernel log" (since boot)."""
    rules = verdicts(tmp_path, ELIDED, read(ELIDED))
    for rule, what in (("gpu_xid", "Xid"), ("nvswitch_sxid", "SXid")):
        assert rules[rule] == (
            "unverified",
            f"no {what} in the kernel log; lines were left out of it by hand, marked `[    ....    ]`",
        )
    said = details(tmp_path, ELIDED, read(ELIDED))["gpu_xid"]
    assert "not the whole log of the boot" in said


@pytest.mark.parametrize("marker", ["...", "[...]", "…"])
def test_an_elided_log_still_fails_on_a_fault_it_shows(tmp_path: Path, marker: str) -> None:
    """NVIDIA/NVSentinel #155's fallen-off-the-bus log with a marker line put in after its first
    line: the fault it shows fails; the SXid side, unseen, is not known."""
    lines = read(FALLEN).splitlines()
    text = "\n".join([lines[0], marker, *lines[1:]]) + "\n"
    rules = verdicts(tmp_path, "dmesg.txt", text)
    assert rules["gpu_xid"][0] == "fail"
    assert rules["nvswitch_sxid"][0] == "unverified"


GREPPED = "dmesg-T-grep-NVRM__xid-43-31-94-rst-no__3gpu-vm__driver535.183.01.txt"


def test_a_grep_saved_without_its_command_proves_no_absence_either(tmp_path: Path) -> None:
    """Round 31: a log saved without its command whose every line is a grep's says nothing of the
    lines that grep cannot keep. akash-network/support#209's `dmesg -T | grep NVRM` (11 lines,
    Xids 43, 31, 94) passed nvswitch_sxid, "no SXid" (an SXid line is `nvidia-nvswitchN:`'s,
    never NVRM's); the same log as `grep -i nvidia` keeps only the driver's load line and passed
    gpu_xid, "no Xid in the kernel log", its three Xids dropped (an Xid line holds no `nvidia`)."""
    rules = verdicts(tmp_path, "dmesg.txt", read(GREPPED))
    assert rules["gpu_xid"][0] == "warn"  # (the Xids it shows, application faults)
    assert rules["nvswitch_sxid"][0] == "unverified"
    assert "it holds only lines with NVRM (11 lines" in rules["nvswitch_sxid"][1]
    nvidia = "".join(line for line in read(GREPPED).splitlines(True) if "nvidia" in line.lower())
    rules = verdicts(tmp_path, "dmesg.txt", nvidia)
    assert rules["gpu_xid"][0] == "unverified"
    assert "it holds only lines with `nvidia` (1 line" in rules["gpu_xid"][1]
    # `grep -i xid` keeps Xid and SXid lines alike; of NVRM's Xid lines only, which grep it was is
    # not known (a `grep NVRM` keeps the same lines): no SXid is not read
    xid = "".join(line for line in read(GREPPED).splitlines(True) if "xid" in line.lower())
    assert verdicts(tmp_path, "dmesg.txt", xid)["nvswitch_sxid"][0] == "unverified"
