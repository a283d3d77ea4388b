"""Verdicts of truth sweep round 18, on views cut from real captures (tests/fixtures/real)
exactly as nvidia-smi prints them."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api import offline
from gpuonboard.connection.gather import parse_facts

from ...offline_judge import checks, verdicts

REAL = Path(__file__).parents[3] / "fixtures" / "real"
VIEWS = sorted(p.name for p in REAL.glob("nvidia-smi*__*.txt") if not p.name.startswith("nvidia-smi-L"))


def listing(name: str) -> tuple[str, str] | None:
    """The real capture's GPUs as `nvidia-smi -L` prints them, and an order naming the first GPU's
    model with the size of memory the capture shows (None: no named GPU with its memory)."""
    try:
        report = parse_facts(offline.load_outputs([str(REAL / name)])).gpu
    except Exception:  # (a capture the offline judge refuses as a whole)
        return None
    gpus = report.gpus if report is not None else []
    if not gpus or not gpus[0].name or not gpus[0].memory_total_mib or gpus[0].memory_unified:
        return None
    lines = [
        f"GPU {n}: {g.name} (UUID: {g.uuid or f'GPU-{n:08d}-0000-0000-0000-000000000000'})"
        for n, g in enumerate(gpus)
    ]
    order = f"gpu_model: {gpus[0].name} {round(gpus[0].memory_total_mib / 1024)}GB\n"
    return "\n".join(lines) + "\n", order


@pytest.mark.parametrize("name", VIEWS)
def test_a_listing_without_memory_never_fails_a_size_the_whole_capture_meets(
    tmp_path: Path, name: str
) -> None:
    """`nvidia-smi -L` prints no memory: an ordered size the name does not say is unverified by
    it, never failed. A Grace superchip's name says CPU + GPU memory ('NVIDIA GH200 480GB' of a
    96 GB GPU): `GH200 96GB` against its listing failed "VRAM unknown", a verdict from absence."""
    made = listing(name)
    if made is None:
        pytest.skip("no named GPU with its memory")
    text, order = made
    whole = verdicts(tmp_path, name, (REAL / name).read_text(errors="replace"), order)
    if whole.get("gpu_model", ("",))[0] != "pass":
        pytest.skip("the whole capture does not pass the order")
    (check,) = [c for c in checks(tmp_path, "nvidia-smi-L.txt", text, order) if c.name == "gpu_model"]
    assert check.verdict in ("pass", "unverified"), check
    if check.verdict == "unverified":
        assert "gives the GPU's memory" in check.detail or "gives no GPU memory" in check.detail
