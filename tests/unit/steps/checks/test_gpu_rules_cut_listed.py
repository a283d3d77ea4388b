"""A whole `nvidia-smi -L` beside a table cut inside or above its GPU rows: the rules the
listing answers for every GPU are judged from it, as `-L` alone judges them. Its names and count
judged gpu_model and gpu_count already; mig_mode of a model without MIG ("no MIG on this model",
decided by the model alone) stayed unverified "incomplete probe" beside the cut table, though
`-L` alone passed it: adding an output made a rule the box had answered unjudged. A MIG-capable
model's mode is the table's to say: the cut keeps it unverified.

Real captures: akash-network/provider-configs #12 (tests/fixtures/real/SOURCES.md), the table
cut further up as a paste cuts it."""

from __future__ import annotations

from pathlib import Path

import pytest

from ...offline_judge import judged_box

REAL = Path(__file__).parents[3] / "fixtures" / "real"
LISTING = (REAL / "nvidia-smi-L__quadro-rtx-4000__2gpu__akash-provider-configs-12.txt").read_text()
TABLE = (
    REAL / "nvidia-smi__quadro-rtx-4000__2gpu-cut-in-gpu1__driver535.129.03__akash-provider-configs-12.txt"
).read_text()
ORDER = "gpu_model: Quadro RTX 4000\ngpu_count: 2\n"
_LINES = TABLE.splitlines(keepends=True)
CUTS = {
    "in GPU 1's second row (the capture)": TABLE,
    "after GPU 0's first row": "".join(_LINES[:9]),
    "inside GPU 0's bus cell": "".join(_LINES[:8]) + _LINES[8][:50],
    "inside the column header": "".join(_LINES[:5]),
}


@pytest.mark.parametrize("cut", list(CUTS))
def test_a_whole_listing_judges_mig_mode_of_a_model_without_mig(tmp_path: Path, cut: str) -> None:
    _facts, checks = judged_box(tmp_path, {"nvidia-smi-L.txt": LISTING, "nvidia-smi.txt": CUTS[cut]}, ORDER)
    assert (checks["mig_mode"].verdict, checks["mig_mode"].actual) == (
        "pass",
        "Disabled; all 2 GPUs: no MIG on this model",
    )
    assert checks["gpu_model"].verdict == "pass" and checks["gpu_count"].verdict == "pass"
    # (what the cut took stays unverified: the temperature of GPU 1 among them)
    assert checks["temperature"].verdict == "unverified"


def test_a_mig_capable_model_stays_unverified_beside_the_cut(tmp_path: Path) -> None:
    """Control: the same listing and cut table with the model an A30 (MIG-capable; the names
    replaced, a test input): its MIG mode is in the rows the cut took."""
    files = {
        "nvidia-smi-L.txt": LISTING.replace("Quadro RTX 4000", "NVIDIA A30"),
        "nvidia-smi.txt": TABLE.replace("Quadro RTX 4000", "NVIDIA A30     "),
    }
    _facts, checks = judged_box(tmp_path, files, "gpu_model: A30\ngpu_count: 2\n")
    # (the Quadro's 8 GB under an A30's name: gpu_model warns that name and memory disagree)
    assert checks["gpu_model"].verdict in ("pass", "warn")
    assert checks["mig_mode"].verdict == "unverified", checks["mig_mode"]
