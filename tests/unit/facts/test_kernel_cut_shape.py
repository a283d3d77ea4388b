"""kernel_cut.cut_by_shape: a kernel log's last line that is cut by its own shape (its text ends
inside a device address, or inside its stamp or head) is a cut whether or not a newline follows
it: gpu_xid and nvswitch_sxid read it as the same bytes without the newline, never as a whole
log that says nothing. Every log is a real capture (tests/fixtures/real)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.facts.kernel_cut import cut_by_shape
from gpuonboard.facts.kernel_log import parse_kernel_log
from gpuonboard.steps.checks.sxid_rules import rule_sxid
from gpuonboard.steps.checks.xid_rules import rule_xid

REAL = Path(__file__).parents[2] / "fixtures" / "real"
CUDA_SAMPLES_104 = (
    "journalctl-k__rminitadapter-failed-oops__vmware-guest__line-cut-as-stored__cuda-samples-104.txt"
)
GSCONNECT_1052 = "journalctl-k__ru-locale-aer-rxerr-corrected__line-cut-as-stored__gsconnect-1052.txt"


@pytest.mark.parametrize("name", [CUDA_SAMPLES_104, GSCONNECT_1052])
@pytest.mark.parametrize("newline", ["\n", ""])
def test_a_last_line_cut_by_its_shape_leaves_the_sxid_rule_unverified_with_or_without_newline(
    name: str, newline: str
) -> None:
    """cuda-samples#104's journal as stored, its last line `Feb 09 15:47:06 debian k` (a head cut
    inside `kernel:`), and GSConnect#1052's, Russian `фев` dates, its last line `фев 12 00:48:03
    kernel: pcieport 0000:` (cut inside the device address), each as stored with its newline and
    with the newline dropped in-test: nvswitch_sxid is unverified naming the cut line. (Before,
    with the newline: pass "no SXid in the kernel log".)"""
    text = (REAL / name).read_text().rstrip("\n") + newline
    check = rule_sxid(parse_kernel_log(text).events, True)
    assert check.verdict == "unverified", check
    assert "cut short" in check.actual


def test_gsconnect_1052s_cut_address_leaves_gpu_xid_unverified() -> None:
    """GSConnect#1052's journal as stored (no GPU driver line; its last line cut inside
    `pcieport 0000:`, which may be a root port's error on the GPU): gpu_xid is unverified, never
    pass. (Before: pass "no Xid in the kernel log".)"""
    text = (REAL / GSCONNECT_1052).read_text()
    assert text.endswith("pcieport 0000:\n")
    check = rule_xid(parse_kernel_log(text).events, True)
    assert check.verdict == "unverified", check


@pytest.mark.parametrize(
    ("line", "cut"),
    [
        ("Feb 09 15:47:06 debian k", True),  # (cuda-samples#104's last line)
        ("фев 12 00:48:03 kernel: pcieport 0000:", True),  # (GSConnect#1052's last line)
        ("фев 12 00:48:03 kernel: pcieport 0000:00:1c.", True),
        ("фев 12 00:48:0", True),
        ("4月 19 22:36:4", True),  # (open-gpu-kernel-modules#626's zh_CN stamp, cut)
        ("Feb 09 15:47:06 debian kernel: NVR", True),
        ("фев 12 00:48:03 kernel: pcieport 0000:00:1c.5: AER: Corrected error received: 0000:00:1c.5", False),
        ("Feb 09 15:47:06 debian kernel: PGD 0 P4D 0", False),
        ("Feb 09 15:47:06 debian kernel:", False),  # (a whole head, its message empty)
        ("[ 1843.308145]", False),
        ("pci_bus 0000:00", False),  # (a bus's whole address)
        ("the link is dead:", False),  # (a word of hex letters is no address)
    ],
)
def test_cut_by_shape_reads_real_lines_cut_and_whole(line: str, cut: bool) -> None:
    """Real lines of the captures above and their stamps, whole or cut in-test (a localised month
    reads as the English one)."""
    words = {"фев": "Jan"} if line.startswith("фев") else {"4月": "Jan"} if "月" in line else None
    assert cut_by_shape(line, words) is cut
