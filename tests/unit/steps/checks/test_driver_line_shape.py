"""min_driver judges a driver line read whole above a cut only inside nvidia-smi's own output
shape (the table's border above its banner, nothing but its date line above that; -q's `NVSMI
LOG` header above its `Driver Version`): a document quoting a banner as a requirement ("the host
needs at least this driver:") is no output of the box (review revB F7: it passed min_driver)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ...offline_judge import verdicts

REAL = Path(__file__).parents[3] / "fixtures" / "real"
TABLE = REAL / "nvidia-smi__h100-80gb-hbm3__8gpu__driver550.90.07.txt"
ORDER = 'gpu_count: 8\nmin_driver: "535"\n'


def _head(lines: int) -> str:
    return "".join(TABLE.read_text().splitlines(True)[:lines])


@pytest.mark.parametrize("lines", [3, 4])
def test_the_real_tables_head_cut_below_its_banner_is_judged(tmp_path: Path, lines: int) -> None:
    """The real 8x H100 table's date, border and banner (and its rule line): min_driver judged."""
    got = verdicts(tmp_path, "nvidia-smi.txt", _head(lines), ORDER)
    assert got["min_driver"] == ("pass", "550.90.07")


@pytest.mark.parametrize(
    "above",
    [
        "## Environment\n\nRequirements for this image: the host needs at least this driver:\n\n",
        "The driver we support:\n",
    ],
)
def test_a_banner_quoted_under_a_documents_words_is_not_judged(tmp_path: Path, above: str) -> None:
    """The same border, banner and rule line under a document's words (written in-test, as
    an issue's requirements section quotes one): min_driver unverified, never a pass."""
    text = above + "".join(_head(4).splitlines(True)[1:])
    got = verdicts(tmp_path, "nvidia-smi.txt", text, ORDER)
    assert got["min_driver"][0] == "unverified", got["min_driver"]
