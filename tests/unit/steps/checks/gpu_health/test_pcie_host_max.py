"""The host's maximum PCIe generation unreadable (`Host Max : Unknown Error`, as nvidia-smi -q
prints it in many VMs) on a real 8 x V100 SXM2 box (thamada/gls): pcie_link needs it only to tell
a slot below the card's generation (_slot_capped); a link running at the card's own maximum
generation at its full width already says the slot runs at least that generation."""

from __future__ import annotations

import re
from pathlib import Path

from ....offline_judge import judged_box

REAL = Path(__file__).parents[4] / "fixtures" / "real"
V100_Q = REAL / "nvidia-smi-q__tesla-v100-sxm2-16gb__8gpu__driver550.127.05__host-max-unknown-error.txt"
V100_TABLE = REAL / "nvidia-smi__tesla-v100-sxm2-16gb__8gpu__driver550.127.05.txt"
ORDER = "gpu_model: V100 SXM2 16GB\ngpu_count: 8\nvram: 16GB\n"


def test_host_max_unreadable_at_the_cards_max_passes(tmp_path: Path) -> None:
    """The real capture as published (table and -q of one box): every GPU at Gen3 of its
    Device Max Gen3, x16 of x16, Host Max `Unknown Error`: pcie_link passes (it was unverified:
    the Host Max fault was taken for a link field the pass had not read)."""
    files = {"nvidia-smi.txt": V100_TABLE.read_text(), "nvidia-smi-q.txt": V100_Q.read_text()}
    _, checks = judged_box(tmp_path, files, ORDER)
    assert (checks["pcie_link"].verdict, checks["pcie_link"].actual) == ("pass", "at max")
    # the unreadable field itself is still reported as a sensor fault
    assert "Host Max reads Unknown Error" in checks["sensor_faults"].actual


def test_host_max_unreadable_below_the_cards_max_stays_unverified(tmp_path: Path) -> None:
    """The -q edited: GPU 0's `Device Max` set to 4 (a Gen4 card whose link and link max read
    Gen3): the slot may be a Gen3 one (a slot-capped warning) or not, which only the unreadable
    Host Max tells, so pcie_link stays unverified, naming that GPU's cell."""
    text = re.sub(r"(Device Max\s+: )3", r"\g<1>4", V100_Q.read_text(), count=1)
    _, checks = judged_box(tmp_path, {"nvidia-smi-q.txt": text}, ORDER)
    check = checks["pcie_link"]
    assert check.verdict == "unverified"
    assert "GPU 0: PCI/GPU Link Info/PCIe Generation/Host Max reads Unknown Error" in check.actual
    assert "GPU 1:" not in check.actual
