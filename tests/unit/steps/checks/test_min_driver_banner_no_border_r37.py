"""Round 37 (measure37e 12): `nvidia-smi | head -8` posted with its borders left out (the date
line, the banner, the first header row): the banner is the output's own first line, its driver
version whole, so min_driver judges it (590.48.01 >= 590: a pass) as it does a banner under its
top border; nvidia_driver still says no GPU row was read. Words above a quoted banner still keep
it unjudged (test_min_driver_banner_whole_rows_unread.py)."""

from __future__ import annotations

from pathlib import Path

from ...offline_judge import verdicts

REAL = Path(__file__).parents[3] / "fixtures" / "real"
HEAD8 = (
    REAL
    / "nvidia-smi__head-8-banner-only-no-borders__driver590.48.01-cuda13.1__blackwell-scout-worker-report.txt"
)


def test_a_banner_without_its_border_is_judged(tmp_path: Path) -> None:
    got = verdicts(tmp_path, HEAD8.name, HEAD8.read_text(), 'min_driver: "590"\n')
    assert got["min_driver"] == ("pass", "590.48.01"), got["min_driver"]
    assert got["nvidia_driver"][0] == "unverified"


def test_an_older_driver_in_such_a_banner_fails(tmp_path: Path) -> None:
    got = verdicts(tmp_path, HEAD8.name, HEAD8.read_text(), 'min_driver: "595"\n')
    assert got["min_driver"][0] == "fail", got["min_driver"]


def test_words_above_the_borderless_banner_keep_it_unjudged(tmp_path: Path) -> None:
    text = "the host needs at least this driver:\n" + HEAD8.read_text().split("\n", 1)[1]
    got = verdicts(tmp_path, "nvidia-smi.txt", text, 'min_driver: "590"\n')
    assert got["min_driver"][0] == "unverified", got["min_driver"]
