"""Real captures cut short at a line or mid-row (a dropped session, a scroll-back limit), judged
offline beside the whole capture with the same order: what the cut left out is never read as
a pass (free's Mem row cut before its total; an nvidia-smi -q cut before a GPU's later sections
or before the other GPUs), and a fault the cut kept is still seen."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..offline_judge import verdicts as judged

REAL = Path(__file__).parents[2] / "fixtures" / "real"


def cut_at(name: str, marker: str) -> tuple[str, str]:
    """The whole capture, and the capture cut just after the first `marker`."""
    text = (REAL / name).read_text()
    return text, text[: text.index(marker) + len(marker)]


@pytest.mark.parametrize(
    ("name", "marker", "order"),
    [
        ("free-b__h200-vm.txt", "Mem:     13", "ram: 125GB\n"),  # total cut mid-number
        ("free-h__zh-cn__3.8gi.txt", "内存：       3", "ram: 3GB\n"),
        ("free-b__h200-vm.txt", "Mem:     135148564480", "ram: 125GB\n"),  # total kept, the rest cut
    ],
)
def test_free_mem_row_cut_short_is_unverified(tmp_path: Path, name: str, marker: str, order: str) -> None:
    whole, cut = cut_at(name, marker)
    assert judged(tmp_path, name, whole, order)["ram"][0] == "pass"
    verdict, actual = judged(tmp_path, name, cut, order)["ram"]
    assert verdict == "unverified", actual


# -q cut before the GPU's processes, before GPU 2's throttle reasons, before GPU 4's link state
H100_BRAKE = "nvidia-smi-q__h100-80gb-hbm3__8gpu__driver535.183.01__power-brake-active.txt"
Q_CUTS = [
    ("nvidia-smi-q__titan-v__1gpu__driver560.35.03.txt", 6090, "foreign_processes", "warn"),
    (H100_BRAKE, 7365, "throttling", "fail"),
    (H100_BRAKE, 7365, "foreign_processes", "fail"),
    ("nvidia-smi-q__geforce-rtx-4090__8gpu__driver535.154.05__3-idle-gen1.txt", 7116, "pcie_link", "pass"),
]


@pytest.mark.parametrize(("name", "keep", "rule", "whole"), Q_CUTS)
def test_q_cut_short_passes_no_gpu_rule(tmp_path: Path, name: str, keep: int, rule: str, whole: str) -> None:
    text = (REAL / name).read_text()
    assert judged(tmp_path, name, text, None)[rule][0] == whole
    verdict, actual = judged(tmp_path, name, text[:keep], None)[rule]
    assert verdict == "unverified", actual
    # (foreign_processes names the process list the cut may have taken: round 26)
    said = "(of what was read; incomplete probe:"
    if rule == "foreign_processes":
        said = "the output was cut short"
    assert said in actual


def test_q_cut_short_keeps_a_fault_it_read(tmp_path: Path) -> None:
    # GPU 2's throttle reasons kept, GPUs 3-7 cut: the fault read still fails
    name = H100_BRAKE
    whole = (REAL / name).read_text()
    cut = whole[: whole.index("GPU 00000000:86:00.0")]
    verdict, actual = judged(tmp_path, name, cut, None)["throttling"]
    assert verdict == "fail", actual
