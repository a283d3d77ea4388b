"""Round 19 (kernel logs): each Xid is judged on its own line, never by the first of its code on
that GPU (R19-K1). Real captures: tests/fixtures/real/dmesg* (SOURCES.md)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from gpuonboard.api import offline
from gpuonboard.facts.kernel_log import KernelEvent, parse_kernel_log
from gpuonboard.steps.checks.sxid_rules import rule_sxid
from gpuonboard.steps.checks.xid_rules import rule_xid

REAL = Path(__file__).parents[3] / "fixtures" / "real"
NVLINK5 = "dmesg-kmsg__xid-144-145-nonfatal-then-fatal-one-gpu__gpud.txt"


def read(name: str) -> str:
    return (REAL / name).read_text()


def test_r19_k1_fatal_nvlink5_xid_after_a_nonfatal_one_fails() -> None:
    # one GPU: 144 Nonfatal, 144 Fatal, 145 Nonfatal x2, 145 Fatal. The Fatal ones need a GPU
    # reset each; judged by the first line of their code they were "non-fatal x2 -> watch"
    row = rule_xid(parse_kernel_log(read(NVLINK5)).events, True)
    assert row.verdict == "fail"
    assert row.actual == (
        "GPU at PCI 0000:04:00: Xid 144 NVLINK: SAW Error -> reset_gpu;"
        " GPU at PCI 0000:04:00: Xid 145 NVLINK: RLW Error -> reset_gpu;"
        " GPU at PCI 0000:04:00: Xid 144 NVLINK: SAW Error (non-fatal) -> watch;"
        " GPU at PCI 0000:04:00: Xid 145 NVLINK: RLW Error (non-fatal) x2 -> watch"
    )
    assert row.detail.startswith("Ask the vendor to reset the GPU")


@pytest.mark.parametrize("order", [(0, 1), (1, 0)])
def test_r19_k1_the_order_of_the_lines_does_not_change_the_verdict(order: tuple[int, int]) -> None:
    # the 144 pair of the real capture, in either order: the Fatal one fails
    lines = read(NVLINK5).splitlines(keepends=True)[:2]
    row = rule_xid(parse_kernel_log("".join(lines[i] for i in order)).events, True)
    assert row.verdict == "fail"
    assert "Xid 144 NVLINK: SAW Error -> reset_gpu" in row.actual


def test_r19_k1_xid_154_changes_are_each_judged() -> None:
    # lines in the driver's Xid 154 format ("GPU recovery action changed from 0x%x (%s) to 0x%x
    # (%s)", as in leptonai/gpud's kmsg tests; the targets are NVML's action names), not a capture:
    # two changes on one GPU, to Drain P2P and then to Node Reboot Required, ask for the reboot
    first = (
        "NVRM: Xid (PCI:0008:01:00): 154, GPU recovery action changed from 0x0 (None) to 0x3 (Drain P2P)\n"
    )
    then = (
        "NVRM: Xid (PCI:0008:01:00): 154, GPU recovery action changed from 0x3 (Drain P2P)"
        " to 0x2 (Node Reboot Required)\n"
    )
    row = rule_xid(parse_kernel_log(first + then).events, True)
    assert row.verdict == "fail"
    assert row.detail.startswith("Ask the vendor to reboot the host")
    assert "Xid 154 GPU Recovery Action Changed (the driver: to Node Reboot Required) -> reboot" in row.actual
    assert "Xid 154 GPU Recovery Action Changed (the driver: to Drain P2P) -> reset_gpu" in row.actual


# --- R19-K2: a log of several boots: faults of a boot the box has since left ---------------------

DERIVED = REAL.parent / "derived"
TWO_BOOTS = "dmesg-journalctl__two-boots-reboot-separator__ubuntu-20.04-forum.txt"
H100_SYSLOG = "dmesg-syslog__h100-hgx__fallen-off-bus-multiline-no-xid__driver525.125.06.txt"
THEN_REBOOT = (
    "dmesg-syslog__h100-hgx__fallen-off-bus__then-reboot-separator__derived.txt",  # journalctl
    "dmesg-syslog__h100-hgx__fallen-off-bus__then-reboot-banner__derived.txt",  # kern.log
)


def test_r19_k2_journal_separator_and_banner_are_one_boot_boundary() -> None:
    # `journalctl` (no -k) of two boots: `-- Reboot --`, then the kernel's `Linux version` banner
    log = parse_kernel_log(read(TWO_BOOTS))
    assert (log.boots, log.events) == (2, ())
    # a log of one boot, its banner first or none: one boot
    assert parse_kernel_log(read(H100_SYSLOG)).boots == 1


@pytest.mark.parametrize("name", THEN_REBOOT)
def test_r19_k2_a_fault_before_the_last_reboot_is_said_so_and_warns(name: str) -> None:
    # the real H100 syslog (GPU 5d:00.0 fell off the bus, probe failed: "reboot"), then a reboot
    # (journalctl's separator and the banner, or the banner alone): the reboot they asked for
    # happened; judged as if of this boot, the box failed "ask the vendor to reboot"
    log = parse_kernel_log((DERIVED / name).read_text())
    assert log.boots == 2 and log.events and all(e.earlier_boot for e in log.events)
    row = rule_xid(log.events, True)
    assert row.verdict == "warn"
    assert row.actual == (
        "GPU at PCI 0000:5d:00.0: driver message (no Xid): GPU has fallen off the bus"
        " (logged before the log's last reboot) -> rebooted_since"
        # (its `probe routine failed for 1 device(s)`: that GPU's, listed once)
    )
    assert row.detail.startswith("these driver faults, no Xid among them, were logged in a boot before")


def test_r19_k2_a_fault_after_the_last_reboot_still_fails() -> None:
    name = "dmesg-journalctl__two-boots__then-h100-fallen-off-bus__derived.txt"
    log = parse_kernel_log((DERIVED / name).read_text())
    assert log.boots == 2 and not any(e.earlier_boot for e in log.events)
    row = rule_xid(log.events, True)
    assert row.verdict == "fail" and "GPU has fallen off the bus -> reboot" in row.actual


def test_r19_k2_a_replacement_stays_asked_for_across_a_reboot() -> None:
    # a GPU without its auxiliary power (Xid 54: CHECK_MECHANICALS, replace) of an earlier boot is
    # no less a hardware fault; a fatal SXid (reboot) of an earlier boot warns as the Xids do
    aux = KernelEvent(
        "xid", 54, "0000:19:00", "pid=1, name=x, Auxiliary power is not connected", earlier_boot=True
    )
    row = rule_xid([aux], True)
    assert row.verdict == "fail" and "(logged before the log's last reboot) -> replace" in row.actual
    # (a double-bit ECC error, Xid 48: "A GPU reset or node reboot is needed to clear this error",
    # NVIDIA's catalogue, round 36: the reboot since did it)
    dbe = KernelEvent(
        "xid", 48, "0000:19:00", "pid=1, name=x, An uncorrectable double bit error", earlier_boot=True
    )
    assert rule_xid([dbe], True).verdict == "warn"
    sxid = KernelEvent(
        "sxid", 20034, "0000:06:00.0", "Fatal, Link 48 LTSSM Fault Up", "nvidia-nvswitch1", severity="fatal"
    )
    assert rule_sxid([sxid], True).verdict == "fail"
    earlier = rule_sxid([replace(sxid, earlier_boot=True)], True)
    assert earlier.verdict == "warn" and earlier.detail.startswith(
        "these SXids were logged in a boot before the one the box runs now"
    )
    assert earlier.actual.endswith("fatal (logged before the log's last reboot) -> rebooted_since")


def test_r19_k2_offline_judge_reads_a_saved_journal_of_two_boots() -> None:
    raw = offline.load_outputs([str(DERIVED / THEN_REBOOT[0])])
    log = parse_kernel_log(raw["kernel_log"].stdout)
    assert rule_xid(log.events, True).verdict == "warn"


def test_r19_k2_a_fault_of_this_boot_is_not_hidden_by_the_same_one_of_an_earlier_boot() -> None:
    # Xid 149 of an earlier boot; this boot's Xid 45 (the R590 line of the real capture
    # dmesg-journalctl__xid-45-caused-by-previous-xid-149-145__driver590.48.01.txt) names a 149 whose
    # own line is not in the log: that 149 is this boot's, a GPU reset
    before = KernelEvent("xid", 149, "0000:dc:00", "NETIR_LINK_EVT Fatal XC0 i0 Link 00", earlier_boot=True)
    now = KernelEvent(
        "xid", 45, "0000:dc:00", "pid=1818990, name=python3, Ch 00000001 caused by previous Xid 149"
    )
    row = rule_xid([before, now], True)
    assert row.verdict == "fail"
    assert (
        "Xid 149 NVLINK: NETIR Error (its own line not in the log; named as the cause by Xid 45) -> reset_gpu"
        in (row.actual)
    )
    # the driver's fallen-off-the-bus sentence of this boot beside an Xid 79 of an earlier boot
    xid79 = KernelEvent("xid", 79, "0000:5d:00", "pid=0, GPU has fallen off the bus.", earlier_boot=True)
    fallen = parse_kernel_log(read(H100_SYSLOG)).nvrm_faults()[0]
    assert rule_xid([xid79, fallen], True).verdict == "fail"
