"""host_hw_errors on PCIe errors the kernel did not correct (measure34d 14): a root port's
uncorrectable non-fatal error and devices the kernel could not recover (`thunderbolt
0000:84:00.0: AER: can't recover`, `AER: device recovery failed`) warned "the kernel logged
corrected hardware errors of the host: the box works", naming none of those devices. Real
capture: tests/fixtures/real/SOURCES.md."""

from __future__ import annotations

from pathlib import Path

from gpuonboard.facts.host_errors import host_errors
from gpuonboard.steps.checks.host_errors import rule_host_hw_errors

REAL = Path(__file__).parents[3] / "fixtures" / "real"
PVE = REAL / "journalctl__pve-aer-acsviol-nonfatal-thunderbolt-xhci-cant-recover-no-gpu__ms-02-ultra-10.txt"


def test_devices_the_kernel_could_not_recover_are_named_not_called_corrected() -> None:
    check = rule_host_hw_errors(host_errors(PVE.read_text().splitlines()), "")
    assert check is not None and check.verdict == "warn", check
    for device in ("thunderbolt 0000:84:00.0", "xhci_hcd 0000:97:00.0", "pcieport 0000:80:1b.4"):
        assert f"PCI {device}: " in check.actual, check.actual
    assert "could not recover it from a PCIe error (AER: can't recover)" in check.actual, check.actual
    assert "corrected" not in check.detail.replace("did not correct", ""), check.detail
    assert "the box works" not in check.detail and "thunderbolt 0000:84:00.0" in check.detail, check.detail


def test_a_gpus_own_unrecovered_line_stays_gpu_xids() -> None:
    """The same line of the `nvidia` driver's GPU is gpu_xid's fault (facts/aer.py), no host error."""
    line = "Sep 22 09:59:09 pve kernel: nvidia 0000:84:00.0: AER: can't recover (no error_detected callback)"
    assert host_errors([line]) == ()
