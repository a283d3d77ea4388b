"""gpu_model on a name nvidia-smi's table cut (`NVIDIA GeForce RTX 4070 ...`) against an order
whose model number is another (`RTX 4060 Ti`): a fail for the number shown, and the ordered
words the cut may hide (`Ti`, `SUPER`) said "not in the part shown", as the true order's warn
says them; never "'Ti' not in the name" (the card is a 4070 Ti SUPER by its 16376 MiB and 285 W:
the word may well be in the part cut away).

Real captures: tests/fixtures/sessions/SOURCES.md (the zh notes' RTX 4070 ... table) and every
real table whose cut name shows its model number (tests/fixtures/real)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpuonboard.facts.nvidia_smi import parse_any
from gpuonboard.steps.checks.model_match import match_model

from ...offline_judge import checks

FIXTURES = Path(__file__).parents[3] / "fixtures"
ZH = (
    FIXTURES
    / "sessions"
    / "page__HASH-COMMENT-prompts-lsb_release+nvidia-smi__geforce-rtx-4070-name-cut-16376MiB-580.95.05__"
    "zh-notes.txt"
)
_NUMBER = re.compile(r"\b(RTX|GTX) (\d{4})\b")


def _cut_numbered() -> list[tuple[str, str, int | None]]:
    """(file, name, memory) of each real table GPU whose cut name shows an RTX/GTX number."""
    out = []
    for path in sorted((FIXTURES / "real").glob("nvidia-smi__*.txt")):
        try:
            gpus = parse_any(path.read_text(errors="replace")).gpus
        except Exception:  # (a refusal is no table of this test's)
            continue
        for g in gpus[:1]:
            if g.name.endswith("...") and _NUMBER.search(g.name.removesuffix("...")):
                out.append((path.name, g.name, g.memory_total_mib))
    return out


CUT = _cut_numbered()


def test_the_zh_table_against_a_4060_ti(tmp_path: Path) -> None:
    """The real capture, ordered RTX 4060 Ti: fails on the number, says 'Ti' not in the part
    shown (was "'Ti' not in the name (it says RTX 4070)")."""
    row = next(
        c
        for c in checks(tmp_path, "session.txt", ZH.read_text(), "gpu_model: RTX 4060 Ti\n")
        if c.name == "gpu_model"
    )
    assert row.verdict == "fail"
    assert row.detail.endswith(
        "'RTX 4060' not in the name (it says RTX 4070); the ordered 'Ti' not in the part shown"
    )


def test_there_are_such_names() -> None:
    assert len(CUT) >= 3


@pytest.mark.parametrize(("name", "gpu", "mib"), CUT)
def test_every_real_cut_name_against_another_number_with_ti_super(
    name: str, gpu: str, mib: int | None
) -> None:
    """Each real cut name, ordered another number of its series with `Ti SUPER`: a fail naming
    the number shown, the words the cut may hide "not in the part shown"."""
    series, number = _NUMBER.findall(gpu)[0]
    other = str(int(number) - 10 if number.endswith(("70", "80", "90")) else int(number) + 10)
    why = match_model(f"{series} {other} Ti SUPER", gpu, mib)
    assert why.verdict == "fail"
    assert f"'{series} {other}' not in the name (it says {series} {number}" in why.why
    assert "'Ti' not in the name" not in why.why
    assert "the ordered 'Ti' and 'SUPER' not in the part shown" in why.why
