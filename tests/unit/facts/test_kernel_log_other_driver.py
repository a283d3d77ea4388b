"""A GPU the NVIDIA driver never probed because another driver (nouveau, rivafb, nvidiafb,
rivatv) holds it: "NVRM: The NVIDIA probe routine was not called for 3 device(s)." and "NVRM: No
NVIDIA graphics adapter probed!" (kernel-open/nvidia/nv.c). gpu_xid said "no Xid in the kernel
log" (pass) over a box whose driver reaches none of its GPUs; now it fails, asking for the other
driver to be stopped (no fault of the GPU). Real capture: tests/fixtures/real/SOURCES.md."""

from __future__ import annotations

from pathlib import Path

from gpuonboard.facts.kernel_log import parse_kernel_log
from gpuonboard.steps.checks.xid_rules import rule_xid

REAL = Path(__file__).parents[2] / "fixtures" / "real"
NOUVEAU = REAL / "dmesg__probe-routine-not-called-3-devices-nouveau__mattshma-bigdata-133.txt"
OGKM862 = "dmesg-syslog__rminitadapter-failed__driver-message-cut__rtx-pro-6000-2b85__ogkm-862.txt"


def _xid(text: str) -> tuple[str, str, str]:
    log = parse_kernel_log(text)
    check = rule_xid(log.events, True, "", [], log.covers_boot)
    return check.verdict, check.actual, check.detail


def test_a_gpu_another_driver_holds_fails_asking_to_stop_that_driver() -> None:
    """mattshma/bigdata#133, verbatim: 'probe routine was not called for 3 device(s)' under
    nouveau, and 'No NVIDIA graphics adapter probed!' (its consequence, not listed apart)."""
    verdict, actual, detail = _xid(NOUVEAU.read_text())
    assert verdict == "fail", actual
    assert "another driver (nouveau" in actual and "probed no GPU" not in actual, actual
    assert "nouveau" in detail and "no fault of the GPU" in detail and "replace" not in detail, detail


def test_no_adapter_probed_alone_is_a_fault_not_a_clean_log() -> None:
    """The capture's first line alone (cut to it): the driver probed no GPU, which no clean log
    says."""
    verdict, actual, _ = _xid(NOUVEAU.read_text().splitlines()[0] + "\n")
    assert verdict == "fail" and "probed no GPU" in actual, actual


def test_a_failure_beside_a_driver_message_cut_short_asks_to_read_the_log_not_to_replace() -> None:
    """open-gpu-kernel-modules#862, verbatim: RmInitAdapter failed, then the driver's
    `The NVIDIA GPU 0000:01:00.0 (PCI ID: 10de:2b85)` where the excerpt ends: that sentence may be
    the driver's reason (a GPU it does not support, Resizable BAR off), no Xid line; it said
    "also 1 Xid line this tool cannot read" and asked to replace the GPU."""
    verdict, actual, detail = _xid((REAL / OGKM862).read_text())
    assert verdict == "fail", actual
    assert "Xid line" not in actual, actual
    assert actual.endswith(
        "a driver message the log ends inside, cut short:"
        " 'NVRM: The NVIDIA GPU 0000:01:00.0 (PCI ID: 10de:2b85)'"
    )
    assert not detail.startswith("Ask the vendor to inspect and replace"), detail
    assert "read the whole log" in detail and "Above 4G decoding" in detail, detail
