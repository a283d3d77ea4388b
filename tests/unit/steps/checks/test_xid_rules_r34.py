"""gpu_xid's sentences true to the log (round 34): Xid 154's recovery action read where an
author's `...` elided its `from ... to` (measure34c 15: `GPU recovery action ... Node Reboot
Required` said `-> replace`), and a driver fault printed in two forms in different numbers gives
each form's count (measure34e 05: "GPU lost from the bus (NV_ERR_GPU_IS_LOST) x7" of 2 such
assertions and 7 RPCs failed with its status 0x0000000f). Real captures: tests/fixtures/real/SOURCES.md."""

from __future__ import annotations

from pathlib import Path

from gpuonboard.facts.kernel_log import parse_kernel_log
from gpuonboard.steps.checks.xid_rules import rule_xid

REAL = Path(__file__).parents[3] / "fixtures" / "real"
GPU_LOST = REAL / "journalctl__gpu-lost-rpc-status-0xf-x7-assertion-x2__dgx-station-a100__ogkm-688.txt"
# (search index id 59679572498, an incident write-up's "Signature (for quick future matching)"
# block, its two Xid 154 lines as written, the author's `...` in them)
ELIDED_154 = (
    "NVRM: Xid (PCI:0000:01:00): 154, GPU recovery action ... Node Reboot Required\n"
    "NVRM: Xid (PCI:0000:02:00): 154, GPU recovery action ... Node Reboot Required\n"
)


def test_xid_154_with_its_change_elided_reads_the_action_it_names() -> None:
    check = rule_xid(parse_kernel_log(ELIDED_154).events, True)
    assert check.verdict == "fail"
    assert (
        check.actual.count(
            "Xid 154 GPU Recovery Action Changed (the driver: to Node Reboot Required) -> reboot"
        )
        == 2
    ), check.actual
    assert "replace" not in check.actual and check.detail.startswith("Ask the vendor to reboot"), check.detail


def test_xid_154_naming_no_action_stays_a_replace() -> None:
    """A 154 line that names no recovery action cannot be read: the vendor explains it."""
    text = "NVRM: Xid (PCI:0000:01:00): 154, GPU recovery action changed\n"
    assert "-> replace" in rule_xid(parse_kernel_log(text).events, True).actual


def test_a_fault_in_two_forms_gives_each_forms_count() -> None:
    check = rule_xid(parse_kernel_log(GPU_LOST.read_text()).events, True)
    assert check.verdict == "fail"
    assert "GPU lost from the bus (NV_ERR_GPU_IS_LOST) x7 (7 with `status 0x0000000f`, 2 with" in check.actual
    assert "`NV_ERR_GPU_IS_LOST`) -> reboot" in check.actual, check.actual
