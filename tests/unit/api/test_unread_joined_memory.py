"""Several saved `free` answers of one box (`free -h` beside `free -k`) are read together: where
their Mem totals agree within what each printed (`125Gi` is 125-126 GiB), the most exact one is
judged and the folder noted; where they disagree, the refusal says so, naming both totals. Both
used to be refused as "a second free output" (exit 2). The H200 VM's captures
(tests/fixtures/real/SOURCES.md): `free -h` (125Gi), `free -k` (131961976 KiB) and `free -b`
(131981020 KiB, a total 19 MiB apart: not one time's)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.errors import UsageError

from ..offline_judge import judged_box

REAL = Path(__file__).parents[2] / "fixtures" / "real"
FREE_H = "free-h__h200-vm__procps-4.0.2.txt"
FREE_K = "free-k__h200-vm__procps-4.0.2.txt"
FREE_B = "free-b__h200-vm.txt"


@pytest.mark.parametrize("names", [(FREE_H, FREE_K), (FREE_K, FREE_H)])
def test_a_rounded_free_beside_an_exact_one_is_judged_on_the_exact_one(
    tmp_path: Path, names: tuple[str, ...]
) -> None:
    """129.5 GB ordered needs 125.37 GiB: `free -h`'s 125-126 GiB alone is unverified, `free -k`'s
    125.85 GiB passes; the two in one folder pass, whichever file is read first."""
    files = {name: (REAL / name).read_text() for name in names}
    facts, by_rule = judged_box(tmp_path, files, "ram: 129.5GB\n")
    assert facts.memory is not None and facts.memory.total_bytes == 131961976 * 1024
    assert by_rule["ram"].verdict == "pass", by_rule["ram"]


def test_free_outputs_whose_totals_disagree_are_refused_naming_both(tmp_path: Path) -> None:
    """`free -b` and `free -k` of the H200 VM, 125.867 and 125.849 GiB: exact totals that differ
    are two boxes' or two times', refused naming both totals."""
    files = {name: (REAL / name).read_text() for name in (FREE_B, FREE_K)}
    with pytest.raises(UsageError) as err:
        judged_box(tmp_path, files, "ram: 128GB\n")
    assert "is not the first's 125.867 GiB (two boxes, or a box whose memory changed" in str(err.value)
