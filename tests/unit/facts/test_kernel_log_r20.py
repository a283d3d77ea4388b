"""Kernel log sweep, round 20 (tests/fixtures/real/SOURCES.md, "Kernel log sweep, round 20").

R20-K1: on a MIG GPU the driver attributes an Xid to a GPU instance inside the parentheses of its
address, `NVRM: Xid (PCI:0000:01:00 GPU-I:05): 94, ...` (kernel_rc.c prints "PCI:%04x:%02x:%02x
GPU-I:%02u GPU-CI:%02u"). The address was read as `0000:01:00 GPU-I:05`: the GPU was not named by
its index, and on a slice of a bigger machine (a container, the usual MIG rental) an Xid on a GPU
the rental does not show was judged as the rental's own (a GPU reset asked of a GPU not rented).

R20-K2: an error-containment Xid ends with the driver's own word whether the GPU now needs a
reset, `RST: %s, D-RST: %s` (kern_gpu_ga100.c; error_cont.h's policy asks a drain and reset for
several contained errors, Xid 94, under MIG memory partitioning). A contained Xid 94 the driver
says needs a drain and reset was warned as an application fault; it fails as a GPU reset.
Round 36 (measure36d 4): its `RST: No, D-RST: No` is watched as a contained GPU error, not a program's
fault."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.facts.kernel_log import parse_kernel_log
from gpuonboard.steps.checks.xid_rules import rule_xid, xid_action

from ..offline_judge import verdicts

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
MIG = "real/dmesg__xid-94-mig-gpu-i-05__xid-94-95__driver-source-examples.txt"
DRAIN = "derived/dmesg__xid-94-mig-gpu-i-05__d-rst-yes__derived.txt"
VM = "real/dmesg-T-grep-NVRM__xid-43-31-94-rst-no__3gpu-vm__driver535.183.01.txt"
GSP = "real/dmesg__gsp-heartbeat-timeout-gpu6-no-pci__driver595.71.05.txt"
POLISH = "real/dmesg-journalctl-pl-locale__xid-38-109-ctx-switch-timeout__rtx5080.txt"


def read(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def test_a_mig_attributed_xid_is_read_as_its_gpu_address_and_instance() -> None:
    first = parse_kernel_log(read(MIG)).xids()[0]
    assert (first.code, first.pci, first.instance) == (94, "0000:01:00", "GPU-I:05")
    assert first.message.startswith("pid=7194, Contained: CE User Channel (0x9).")
    # (the driver's format with a compute instance too, kernel_rc.c)
    line = read(MIG).split("\n", 1)[0].replace("GPU-I:05)", "GPU-I:05 GPU-CI:02)")
    assert parse_kernel_log(line + "\n").xids()[0].instance == "GPU-I:05 GPU-CI:02"
    # (no attribution: the whole GPU)
    assert [e.instance for e in parse_kernel_log(read(MIG)).xids()[1:]] == [None, None]


def test_a_mig_attributed_xid_names_its_gpu_by_index_and_instance() -> None:
    events = parse_kernel_log(read(MIG)).events
    check = rule_xid(events, True, gpus=[(0, "00000000:01:00.0"), (1, "00000000:02:00.0")])
    assert check.verdict == "fail"  # (the uncontained Xid 95: RST: Yes)
    assert (
        "GPU 0 (0000:01:00) MIG GPU-I:05: Xid 94 Contained memory error (contained to one program; the"
        " driver: RST: No, D-RST: No, no GPU reset needed now) -> watch"
    ) in check.actual
    assert "GPU 0 (0000:01:00): Xid 95 Uncontained memory error -> reset_gpu" in check.actual


def test_in_a_slice_a_mig_xid_on_a_gpu_not_shown_warns_not_fails() -> None:
    """A container shows GPU 0000:02:00 only; the host's log has faults on 0000:01:00: another
    tenant's GPU, warned of, never failed."""
    events = parse_kernel_log(read(MIG)).events
    check = rule_xid(events, True, gpus=[(0, "00000000:02:00.0")], slice_="a container")
    assert check.verdict == "warn"
    assert "(a GPU this rental does not show) MIG GPU-I:05: Xid 94" in check.actual


def test_a_contained_xid_the_driver_says_needs_a_drain_and_reset_fails() -> None:
    (event,) = parse_kernel_log(read(DRAIN)).xids()
    assert xid_action(event) == ("reset_gpu", "Contained memory error (the driver: D-RST: Yes)")
    # (the driver's `RST: No, D-RST: No`: contained, no reset needed now: watched)
    assert xid_action(parse_kernel_log(read(MIG)).xids()[0])[0] == "watch"
    # only the driver's tail says it: a process named `RST: Yes` or `D-RST:yes` is the user's word
    for line in (
        "NVRM: Xid (PCI:0000:01:00): 31, pid=1, name=python D-RST:yes, Ch 00000008\n",
        "NVRM: Xid (PCI:0000:01:00): 13, pid=1, name=RST: Yes, Graphics SM Warp Exception\n",
    ):
        (own,) = parse_kernel_log(line).xids()
        assert xid_action(own)[0] == "check_app", line
    # rsyslog folds repeats into one line ending in `]`: the driver's words are still read
    repeated = (
        "Apr 15 07:56:59 host kernel: message repeated 3 times: [ NVRM: Xid (PCI:0000:01:00): 94,"
        " pid=7194, Contained: CE User Channel (0x9). RST: No, D-RST: Yes]\n"
    )
    assert [xid_action(e)[0] for e in parse_kernel_log(repeated).xids()] == ["reset_gpu"]


def test_drain_and_reset_fails_offline(tmp_path: Path) -> None:
    got = verdicts(tmp_path, "dmesg.txt", read(DRAIN))["gpu_xid"]
    assert got == (
        "fail",
        "GPU at PCI 0000:01:00 MIG GPU-I:05: Xid 94 Contained memory error (the driver: D-RST: Yes)"
        " -> reset_gpu",
    )


@pytest.mark.parametrize(
    ("name", "verdict", "said"),
    [
        # the driver's `RST: No, D-RST: No`: contained, no reset needed now (watched)
        (VM, "warn", "GPU at PCI 0000:00:08: Xid 94 Contained memory error (contained to one program; the"),
        (GSP, "fail", "a GPU (no PCI address in the message): driver message (no Xid): GSP firmware timeout"),
        (POLISH, "fail", "GPU at PCI 0000:07:00: Xid 109 Context Switch Timeout Error x5 -> reset_gpu"),
    ],
)
def test_new_shapes_are_judged_right(tmp_path: Path, name: str, verdict: str, said: str) -> None:
    got = verdicts(tmp_path, name.split("/")[-1], read(name))["gpu_xid"]
    assert got[0] == verdict
    assert said in got[1]


def test_the_vm_log_with_its_grep_command_is_only_part_of_the_log(tmp_path: Path) -> None:
    """Its prompt line put back: `dmesg -T |grep NVRM` kept the NVRM lines only (an AER line is
    not one): the application faults are not known to be all."""
    text = "root@node4:~# dmesg -T |grep NVRM\n" + read(VM)
    got = verdicts(tmp_path, "dmesg.txt", text)["gpu_xid"]
    assert got[0] == "unverified"
    assert "keeps only the lines grep let through" in got[1]


@pytest.mark.parametrize(
    "cut", ["kw", "kwi 15 07:5", "kwi 15 07:56:59 testowy kern", "kwi 15 07:56:59 testowy kernel: NV"]
)
def test_a_log_cut_inside_a_locale_stamp_never_passes(cut: str) -> None:
    """R20-K3: the Polish journal's preamble and Xid 38 (ignore), then a last line cut inside its
    stamp (`kwi`: April under pl_PL): it may be the start of an Xid line, never "informational
    only". (A stamp's month is learnt from the log's own lines; `kw` alone is its first word.)"""
    lines = read(POLISH).splitlines(keepends=True)
    for text in ("".join(lines[:2]) + cut, cut):
        check = rule_xid(parse_kernel_log(text).events, True)
        assert check.verdict == "unverified", (text, check.actual)
    # a last line that says something else stays as it was
    said = "".join(lines[:2]) + "kwi 15 07:56:59 testowy kernel: usb 1-1: new"
    assert rule_xid(parse_kernel_log(said).events, True).verdict == "pass"
