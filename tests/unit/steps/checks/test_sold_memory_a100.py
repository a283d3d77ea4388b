"""data/gpu_name_markers.yml `sold_memory`'s A100 row (40, 64, 80 GB) against every A100 memory
total a real output gives (round 32, truthleft5: checked, none is read as a board reworked after
sale, so the row stands): the SXM4 40GB's 40960 MiB (40536 / 40537 on drivers before R470), the
SXM4 80GB's 81920 MiB; the PCIe cards (`PCIe` in the name: no `sold_memory` row of its own, their
model words are others); MIG slices, whose names carry `MIG 1g.5gb` (HTCondor's
condor_gpu_discovery manual, its table of GPUs it simulates from real ones:
'NVIDIA A100-SXM4-40GB MIG 3g.20gb' 20096 MB, 'MIG 1g.5gb' 4864 MB; htcondor/htcondor
docs/man-pages/condor_gpu_discovery.rst @ 7e45becaf75b); vGPU profiles (`GRID A100-4C`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.facts.nvidia_smi import parse_any
from gpuonboard.steps.checks.model_match import match_model

REAL = Path(__file__).parents[3] / "fixtures" / "real"
REWORKED = "changed after sale"


def _real_a100s() -> list[tuple[str, str, int]]:
    """(fixture, name, memory total MiB) of every GPU named A100 in a real nvidia-smi output."""
    out = []
    for path in sorted(REAL.glob("nvidia-smi*")):
        if "a100" not in path.name.lower():
            continue
        report = parse_any(path.read_text(errors="replace"))
        for g in getattr(report, "gpus", ()):
            if "A100" in g.name and g.memory_total_mib is not None:
                out.append((path.name, g.name, g.memory_total_mib))
    return out


def test_the_real_a100s_are_many() -> None:
    totals = {mib for _, _, mib in _real_a100s()}
    assert {40537, 40960, 81920} <= totals, totals


@pytest.mark.parametrize(("fixture", "name", "mib"), _real_a100s())
def test_no_real_a100_reads_as_reworked(fixture: str, name: str, mib: int) -> None:
    for ordered in ("A100", "A100 SXM4", "8x A100"):
        assert REWORKED not in match_model(ordered, name, mib).why, (fixture, ordered)


@pytest.mark.parametrize(
    ("name", "mib"),
    [
        ("A100-SXM4-40GB", 40536),
        ("NVIDIA A100-SXM4-40GB MIG 3g.20gb", 20096),
        ("NVIDIA A100-SXM4-40GB MIG 1g.5gb", 4864),
    ],
)
def test_htcondors_a100_and_its_mig_slices_are_no_reworked_board(name: str, mib: int) -> None:
    assert REWORKED not in match_model("A100", name, mib).why


def test_an_a100_named_whole_with_memory_none_sells_still_warns() -> None:
    """Control: the rule still reads a board outside 40/64/80 GB (the 4090's 48 GB case)."""
    check = match_model("A100", "NVIDIA A100-SXM4-40GB", 49140)
    assert check.verdict == "warn" and REWORKED in check.why
