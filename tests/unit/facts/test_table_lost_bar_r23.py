"""A table line whose closing `|` a paste lost (the real GTX 1060 capture with its spaces
collapsed shows a page doing it) was glued to the box line after it since round 23 read wrapped
tables back: the GPU or process row after it was lost from a table still read whole (the DGX
A100 table with GPU 7's first row open: gpu_count failed "7" and mig_mode passed, GPU 7's MIG
change lost; a K20m's second GPU; process rows of an RTX 4080 SUPER). A box line of its own, too
wide to be the rest of the line before, is no wrap piece. Class test over every real table: with
any one line's closing `|` lost, each verdict is the whole table's or unverified."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api import offline
from gpuonboard.errors import UsageError

REAL = Path(__file__).parents[2] / "fixtures" / "real"
TABLES = sorted(p.name for p in REAL.glob("nvidia-smi__*.txt"))
ORDER = "gpu_count: 1\n"


def _verdicts(folder: Path, text: str, order: object) -> dict[str, str]:
    path = folder / "nvidia-smi.txt"
    path.write_text(text, encoding="utf-8")
    facts = offline.parse_facts(offline.load_outputs([str(path)]))
    return {c.name: c.verdict for c in offline.judge(facts, order)}


@pytest.mark.parametrize("name", TABLES)
def test_a_line_that_lost_its_closing_bar_moves_no_verdict(tmp_path: Path, name: str) -> None:
    (tmp_path / "order.yml").write_text(ORDER)
    order = offline.load_order(str(tmp_path / "order.yml"))
    text = (REAL / name).read_text(encoding="utf-8")
    try:
        whole = _verdicts(tmp_path, text, order)
    except UsageError:
        pytest.skip("refused whole by offline judging")
    lines = text.split("\n")
    moved = []
    for i, line in enumerate(lines):
        if not line.rstrip().endswith("|"):
            continue
        edited = "\n".join([*lines[:i], line.rstrip()[:-1].rstrip(), *lines[i + 1 :]])
        try:
            got = _verdicts(tmp_path, edited, order)
        except UsageError:
            continue  # (refused with a sentence naming the file: no verdict)
        moved += [
            f"line {i + 1}: {r} {whole.get(r)} -> {v}"
            for r, v in got.items()
            if v not in (whole.get(r), "unverified")
        ]
    assert not moved, "\n".join(moved[:10])
