"""Round 19 (kernel logs): each Xid is judged on its own line, never by the first of its code on
that GPU (R19-K1). Real captures: tests/fixtures/real/dmesg* (SOURCES.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.facts.kernel_log import parse_kernel_log
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
    assert "Xid 154 GPU Recovery Action Changed -> reboot" in row.actual
    assert "Xid 154 GPU Recovery Action Changed -> reset_gpu" in row.actual
