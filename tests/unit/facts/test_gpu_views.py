"""facts/gpu_views.py: a container's view of the GPUs matched to the box's own GPUs."""

from __future__ import annotations

import re
from pathlib import Path

from gpuonboard.facts.gpu_views import view_match
from gpuonboard.facts.nvidia_smi import parse_any

REAL = Path(__file__).parents[2] / "fixtures" / "real"
H100_Q = (REAL / "nvidia-smi-q__h100-80gb-hbm3__8gpu__driver535.161.08.txt").read_text()


def test_one_bus_address_with_two_uuids_is_another_box() -> None:
    """The real 8 x H100 `-q` as the box's, and the same text with every UUID's last digit changed
    in-test as a pod's view: identical servers share bus addresses, so a GPU of the same address
    whose UUID differs is another box's (review HHH: its faults were folded into this box's);
    the same UUID, or one not read, matches by address."""
    box = parse_any(H100_Q).gpus
    other = parse_any(
        re.sub(r"(GPU-[0-9a-f-]{35})([0-9a-f])", lambda m: m[1] + ("0" if m[2] != "0" else "1"), H100_Q)
    ).gpus
    assert len(box) == len(other) == 8
    assert all(view_match(g, box) is None for g in other)
    assert all(view_match(g, box) is g for g in box)
