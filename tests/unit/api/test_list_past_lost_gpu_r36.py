"""`nvidia-smi -L` that prints a GPU it cannot open ("Unable to determine the device handle for gpu
0000:3B:00.0: Unknown Error") and lists the others after it (measure36d 13, an incident note's 2 x
RTX 4090 host, GPU 0 fallen off the bus): a listing, read as one (api/saved_kinds
`_listing_past_lost`), its lost GPU a fault as the table's and -q's are (facts/gpu_unopened).
Before, it was read as a failed nvidia-smi that listed no GPU: every GPU rule unverified with
"nvidia-smi gave no GPU"."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpuonboard.api.offline import detect_kind

from ..offline_judge import verdicts

REAL = Path(__file__).parents[2] / "fixtures" / "real"
LOST = "nvidia-smi-L__geforce-rtx-4090__2gpu-gpu0-no-device-handle__env-line__incident-notes.txt"
NO_HANDLE = "Unable to determine the device handle for gpu 0000:3B:00.0: Unknown Error"


def test_the_real_listing_reads_gpu_1_and_fails_the_lost_gpu(tmp_path: Path) -> None:
    text = (REAL / LOST).read_text()
    assert detect_kind(text) == "nvidia_smi_list"
    got = verdicts(tmp_path, "nvidia-smi-L.txt", text, "gpu_model: RTX 4090\ngpu_count: 2\n")
    assert got["gpu_count"] == ("fail", "2 (1 unreadable)")
    # (under the prompt it was typed at, as posted: the same)
    typed = verdicts(tmp_path, "nvidia-smi-L.txt", f"$ nvidia-smi -L\n{text}", "gpu_count: 2\n")
    assert typed["gpu_count"] == ("fail", "2 (1 unreadable)")
    assert got["gpu_health"][0] == "fail"
    assert "0000:3B:00.0" in got["gpu_health"][1]
    assert "1 x NVIDIA GeForce RTX 4090" in got["gpu_model"][1]


LISTS = sorted(
    p.name
    for p in REAL.glob("nvidia-smi-L__*.txt")
    if p.name != LOST and all(line.startswith("GPU ") for line in p.read_text().splitlines() if line.strip())
)


def test_the_class_is_many_listings() -> None:
    assert len(LISTS) >= 5


@pytest.mark.parametrize("name", LISTS)
def test_every_real_listing_after_a_lost_gpus_line_counts_it_unreadable(tmp_path: Path, name: str) -> None:
    """Each real whole `-L` with nvidia-smi's line of a GPU it cannot open above it: its GPUs and
    the lost one counted, the lost one unreadable (a fault), never 'no GPU'."""
    text = (REAL / name).read_text()
    listed = len(re.findall(r"\bGPU \d+: ", text))
    both = f"{NO_HANDLE}\n{text}"
    assert detect_kind(both) == "nvidia_smi_list"
    got = verdicts(tmp_path, "nvidia-smi-L.txt", both, f"gpu_count: {listed + 1}\n")
    assert got["gpu_count"] == ("fail", f"{listed + 1} (1 unreadable)"), got["gpu_count"]
