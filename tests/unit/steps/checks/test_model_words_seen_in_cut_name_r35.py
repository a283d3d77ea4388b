"""A word of the order that a cut name shows whole is in the name (measure35a 21: an order for
`RTX A6000` against `NVIDIA RTX 6000 Ada Gene...` said "'RTX' not in the name (it says RTX 6000);
'A6000' not in the name", though the name says RTX): only the missing word is named. Real
capture: tests/fixtures/real/SOURCES.md."""

from __future__ import annotations

from pathlib import Path

import pytest

from ...offline_judge import details, verdicts

REAL = Path(__file__).parents[3] / "fixtures" / "real"
ADA = "nvidia-smi__rtx-6000-ada__4gpu__driver575.51.03.txt"


@pytest.mark.parametrize("model", ["RTX A6000", "RTX A5000", "Quadro RTX 8000"])
def test_only_the_missing_word_is_said(tmp_path: Path, model: str) -> None:
    text = (REAL / ADA).read_text(encoding="utf-8")
    order = f"gpu_model: {model}\n"
    assert verdicts(tmp_path, ADA, text, order)["gpu_model"][0] == "fail"
    detail = details(tmp_path, ADA, text, order)["gpu_model"]
    assert "'RTX' not in the name" not in detail, detail


def test_the_ordered_ada_card_still_passes(tmp_path: Path) -> None:
    text = (REAL / ADA).read_text(encoding="utf-8")
    assert verdicts(tmp_path, ADA, text, "gpu_model: RTX 6000 Ada\n")["gpu_model"][0] == "pass"
