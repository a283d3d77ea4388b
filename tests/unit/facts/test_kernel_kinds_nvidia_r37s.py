"""A kernel log of few kinds whose GPU-driver kind is the `nvidia` PCI driver's (`nvidia
0000:02:00.0: enabling device`) or a module's (`nvidia-modeset`, `nvidia-uvm`), not `NVRM` (revS F5):
a `grep nvidia` keeps no `NVRM: Xid` line, so such a selection says nothing of the Xids. It
passed gpu_xid (the GPU driver's lines taken as kept whole); only `NVRM` among its kinds exempts
a selection from gpu_xid's excerpt rule now."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.facts.kernel_kinds import picked_kinds

from ..offline_judge import verdicts

AER = [
    "[74785.660366] pcieport 0000:00:02.0: AER: Corrected error received: id=0010",
    "[74785.660380] pcieport 0000:00:02.0: PCIe Bus Error: severity=Corrected, type=Data Link Layer,"
    " id=0010(Transmitter ID)",
    "[74785.660559] pcieport 0000:00:02.0:    [12] Replay Timer Timeout",
]
DRIVER = {
    "nvidia": "[    6.104412] nvidia 0000:02:00.0: enabling device (0000 -> 0003)",
    "nvidia-modeset": "[    6.204412] nvidia-modeset: Loading NVIDIA Kernel Mode Setting Driver for UNIX",
    "nvidia-uvm": "[    6.304412] nvidia-uvm: Loaded the UVM driver, major device number 510.",
}


@pytest.mark.parametrize("kind", list(DRIVER))
def test_a_selection_of_nvidia_device_lines_leaves_gpu_xid_unverified(tmp_path: Path, kind: str) -> None:
    lines = [DRIVER[kind], *AER]
    got = picked_kinds(lines)
    assert got is not None and got.for_xid() and got.for_sxid(), got
    rules = verdicts(tmp_path, "dmesg.txt", "\n".join(lines) + "\n", "gpu_count: 1\n")
    assert rules["gpu_xid"][0] == "unverified", rules["gpu_xid"]
    assert "2 kinds only" in rules["gpu_xid"][1], rules["gpu_xid"]


def test_a_selection_with_nvrm_lines_still_judges_the_xids(tmp_path: Path) -> None:
    nvrm = (
        "[ 6.404412] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.90.07  Fri May 31 09:35:42 UTC 2024"
    )
    got = picked_kinds([nvrm, *AER])
    assert got is not None and got.for_xid() == "" and got.for_sxid()
