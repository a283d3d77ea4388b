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


PUBLIC = Path(__file__).parents[3] / "fixtures" / "public"


@pytest.mark.parametrize(
    ("name", "model", "kinds", "other"),
    [
        ("nvidia-smi-L__rtx-3060-ti__vast-ai__1gpu.txt", "RTX 3060 Ti", ("GDDR6", "GDDR6X"), "HBM3"),
        ("nvidia-smi-L__gtx-1650__1gpu.txt", "GTX 1650", ("GDDR5", "GDDR6"), "GDDR6X"),
    ],
)
def test_a_memory_type_the_model_is_sold_with_under_one_name_cannot_be_told(
    tmp_path: Path, name: str, model: str, kinds: tuple[str, ...], other: str
) -> None:
    """The RTX 3060 Ti comes with GDDR6 or GDDR6X, the GTX 1650 with GDDR5 or GDDR6, each under one
    name nvidia-smi prints the same (a rented Vast.ai 3060 Ti's `-L`): either ordered type passed.
    It is unverified; a type the model is not sold with fails."""
    text = (PUBLIC / name).read_text()
    for kind in kinds:
        found = [
            c for c in checks(tmp_path, name, text, f"gpu_model: {model} {kind}") if c.name == "gpu_model"
        ]
        assert found[0].verdict == "unverified", found[0]
        assert f"the {model} is sold with {' and '.join(kinds)} under one name" in found[0].detail
    verdict, _ = verdicts(tmp_path, name, text, f"gpu_model: {model} {other}")["gpu_model"]
    assert verdict == "fail"
    assert verdicts(tmp_path, name, text, f"gpu_model: {model}")["gpu_model"][0] == "pass"


def test_every_memory_kinds_row_names_a_model_and_its_types() -> None:
    """data/gpu_name_markers.yml `memory_kinds`: each row a model with two or more types."""
    from gpuonboard.steps.checks.model_match import memory_kinds

    rows = memory_kinds()
    assert rows
    assert all(len(kinds) >= 2 and words for words, kinds in rows)
