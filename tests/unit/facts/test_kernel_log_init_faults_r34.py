"""The driver refusing a GPU without an Xid line (measure34d 15, 16, 22): the family of the NVIDIA
driver's init-failure messages read as faults (data/nvrm_faults.yml): a GPU given no valid BAR
(`This PCI I/O region assigned to your NVIDIA device is invalid:` / `BAR1 is 0M @ 0x0`), `None
of the NVIDIA devices were initialized`, and the GSP timeout's own report (`_kgspLogXid119:
****...`, `_issueRpcAndWait: rpcRecvPoll timedout for fn 76!`) without its Xid 119 line; and a
log whose last line is the driver core's failed-probe line cut short (`nvidia: probe`) is cut,
never a pass. Real captures: tests/fixtures/real/SOURCES.md."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.facts.kernel_log import parse_kernel_log
from gpuonboard.steps.checks.xid_rules import rule_xid

REAL = Path(__file__).parents[2] / "fixtures" / "real"
EGPU = REAL / (
    "dmesg__bar1-invalid-bios-misconfigured-cut-at-probe__line-cut-as-stored__tb3-egpu__mbp-2016-linux-60.txt"
)
VM = REAL / "dmesg__bar1-invalid-probe-failed-2-gpus-vm__driver510.108.03__gpu-operator-492.txt"
ROCKCHIP = REAL / "dmesg-H__rtx3090-aarch64-rockchip__bar-invalid-fallen-off-bus-no-xid.txt"
GSP795 = REAL / "journalctl-kernel-prefix__kgsplogxid119-banner-rpcrecvpoll-timedout__ogkm-795.txt"
REFUSED = REAL / "dmesg-H__not-supported-by-driver-release__rtx3050ti-laptop__driver520.56.06.txt"


def _xid(text: str) -> tuple[str, str, str]:
    log = parse_kernel_log(text)
    check = rule_xid(log.events, True, "", [], log.covers_boot)
    return check.verdict, check.actual, check.detail


def test_a_gpu_given_no_bar_fails_asking_for_the_bios_or_vm_setting() -> None:
    """mbp-2016-linux #60, verbatim (a Thunderbolt eGPU, its log cut inside `nvidia: probe`):
    gpu_xid passed "no Xid in the kernel log"."""
    verdict, actual, detail = _xid(EGPU.read_text())
    assert verdict == "fail", actual
    assert actual.startswith("GPU at PCI 0000:0a:00.0: driver message (no Xid): the GPU was given no valid")
    assert "-> fix_bar_mapping" in actual, actual
    assert "Above 4G decoding" in detail and "MMIO" in detail and "no fault of the GPU" in detail, detail
    assert "replace" not in detail and "Xid catalogue" not in detail, detail


def test_a_vms_gpus_given_no_bar_are_named_each_not_a_reboot() -> None:
    """gpu-operator #492, verbatim: two GPUs `BAR1 is 0M`, their probes failed: it said `the
    driver failed to probe a GPU -> reboot` twice; the cause is the VM's MMIO (or BIOS)."""
    verdict, actual, _ = _xid(VM.read_text())
    assert verdict == "fail", actual
    assert "0000:14:00.0" in actual and "0000:1c:00.0" in actual, actual
    assert actual.count("-> fix_bar_mapping") == 2 and "-> reboot" not in actual, actual


def test_a_bar_failure_beside_a_fall_names_both() -> None:
    """The Rockchip RTX 3090 (BARs 1-4 invalid, then fallen off the bus): the BAR setting first,
    the fall still listed."""
    verdict, actual, detail = _xid(ROCKCHIP.read_text())
    assert verdict == "fail" and "fix_bar_mapping" in actual and "fallen off the bus -> reboot" in actual
    assert detail.startswith("Ask the vendor to give the GPU its PCI memory regions"), detail


@pytest.mark.parametrize(
    "line",
    [
        "[  +0.000005] NVRM: None of the NVIDIA devices were initialized.",
        "Apr 02 10:00:00 host kernel: NVRM: None of the NVIDIA devices were initialized.",
    ],
)
def test_no_device_initialised_alone_is_a_fault_not_a_clean_log(line: str) -> None:
    """The Rockchip log's `None of the NVIDIA devices were initialized.` alone (and in a journal's
    form): the driver initialised no GPU, which no clean log says."""
    verdict, actual, _ = _xid(line + "\n")
    assert verdict == "fail" and "initialised none of the GPUs" in actual, actual


def test_no_device_initialised_is_explained_by_its_cause() -> None:
    """The RTX 3050 Ti laptop's log: the probe failure, `None of the NVIDIA devices were
    initialized`, and the driver's sentence that it does not support the GPU: one fault."""
    verdict, actual, _ = _xid(REFUSED.read_text())
    assert verdict == "fail" and "initialised none" not in actual and "install_driver" in actual, actual


def test_the_gsp_timeout_report_without_its_xid_line_fails_reset_gpu() -> None:
    """open-gpu-kernel-modules #795, verbatim: the `_kgspLogXid119` banner and `rpcRecvPoll
    timedout for fn 76!`, no Xid line: gpu_xid passed "no Xid in the kernel log"."""
    verdict, actual, detail = _xid(GSP795.read_text())
    assert verdict == "fail", actual
    assert "GSP firmware timeout -> reset_gpu" in actual, actual
    assert detail.startswith("Ask the vendor to reset the GPU"), detail


@pytest.mark.parametrize(
    "text",
    [
        "NVRM: _kgspLogXid119: " + "*" * 80,
        "NVRM: _issueRpcAndWait: rpcRecvPoll timedout for fn 76!",
        "NVRM: GPU0 GSP RPC timeout",
    ],
)
@pytest.mark.parametrize("head", ["Dec 01 10:00:00 host kernel: ", "[ 1234.567890] ", "kern  :err   : "])
def test_each_gsp_timeout_line_reads_in_any_log_form(head: str, text: str) -> None:
    """Each of #795's two lines (and the driver's `GSP RPC timeout`) alone, in a journal's, a
    dmesg's and a `dmesg --decode`'s form."""
    verdict, actual, _ = _xid(f"{head}{text}\n")
    assert verdict == "fail" and "GSP firmware timeout -> reset_gpu" in actual, actual


def test_the_driver_cores_probe_line_cut_short_is_a_cut_log() -> None:
    """#60's log without its NVRM lines: it ends on `nvidia: probe` (no newline), the start of the
    driver core's `nvidia: probe of ADDR failed with error -1`: a cut log, never a pass; and so
    with a newline after it (a paste's excerpt cut mid-line), and cut after `probe of`."""
    kept = [line for line in EGPU.read_text().splitlines() if "NVRM" not in line]
    for text in ("\n".join(kept), "\n".join(kept) + "\n", "\n".join(kept) + " of 0000:0a:00.0 failed wi"):
        verdict, actual, _ = _xid(text)
        assert verdict == "unverified" and "ends inside a line" in actual, (text[-40:], actual)


@pytest.mark.parametrize("end", ["", "\n"])
def test_the_driver_cores_probe_line_alone_is_a_failed_probe(end: str) -> None:
    """gpu-operator #492's `nvidia: probe of ... failed with error -1` line alone (with its last
    newline, and without: whole, no cut): no probe summary counts it (a `grep nvidia` of a log,
    measure34e 23), so it is the GPU's failed probe, not a clean log."""
    line = VM.read_text().splitlines()[2]
    assert line.endswith("nvidia: probe of 0000:14:00.0 failed with error -1")
    verdict, actual, _ = _xid(f"[83260.063000] usb 1-1: new device\n{line}{end}")
    assert verdict == "fail", actual
    assert actual.startswith("GPU at PCI 0000:14:00.0: driver message (no Xid): the driver failed"), actual
