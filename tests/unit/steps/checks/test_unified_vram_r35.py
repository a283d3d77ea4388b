"""An integrated GPU's `Not Supported` memory (measure35c 32, a Jetson Orin Nano): vram said "run
nvidia-smi --query-gpu=name,memory.total ... or ask the provider to allow it", though no setting
gives a total to a GPU that shares the system's memory. The sentence names the GPU's kind and
the system's memory. Real captures: tests/fixtures/real/SOURCES.md."""

from __future__ import annotations

from pathlib import Path

import pytest

from ...offline_judge import checks

REAL = Path(__file__).parents[3] / "fixtures" / "real"


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("nvidia-smi__jetson-agx-orin__1gpu__driver540.4.0.txt", "Jetson Orin"),
        ("nvidia-smi__thor__1gpu__driver580.00__spaces-collapsed.txt", "Jetson Thor"),
        ("nvidia-smi__gb10__1gpu__driver580.95.05__memory-not-supported.txt", "GB10"),
    ],
)
def test_the_shared_memory_is_said(tmp_path: Path, name: str, kind: str) -> None:
    text = (REAL / name).read_text(encoding="utf-8")
    got = {c.name: c for c in checks(tmp_path, name, text, "vram: 8GB\n")}["vram"]
    assert got.verdict == "unverified", got.actual
    assert kind in got.actual and "shares the system's memory" in got.actual, got.actual
    assert "ask the provider to allow it" not in got.detail, got.detail
