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


ONE_LINE = REAL / "nvidia-smi__a100-sxm4-40gb__1gpu__driver535.129.03__table-on-one-line__nshx-csdn.txt"


def _one_line_banner() -> str:
    """The real one-line table's top border and banner, up to the banner's closing `|`."""
    text = ONE_LINE.read_text()
    return text[: text.index("|", text.index("CUDA Version")) + 1]


@pytest.mark.parametrize(
    "text",
    [
        "The vendor docs say the image ships with: {banner} but I have not run it on this box yet.\n",
        "{banner} is what the image ships with, I have not run it yet.\n",
        "Expected output:\n{banner}\n",
        "We need at least this driver: {banner} | |------------------+----------+\n",
    ],
)
def test_a_one_line_banner_quoted_in_prose_is_not_judged(tmp_path: Path, text: str) -> None:
    """Review revE F1: the real one-line table's border and banner quoted in a sentence (written
    in-test), the table not going on after it or the border after a sentence's words: min_driver
    unverified. Before: it passed on 535.129.03 (a banner after a border counted wherever it stood)."""
    got = verdicts(tmp_path, "nvidia-smi.txt", text.format(banner=_one_line_banner()), 'min_driver: "470"\n')
    assert got["min_driver"][0] == "unverified", got["min_driver"]


@pytest.mark.parametrize("before", ["", "Mon Jan 20 10:18:26 2025 "])
def test_the_real_one_line_table_after_a_prompt_or_its_date_is_judged(tmp_path: Path, before: str) -> None:
    """The real one-line table (its rule and `GPU Name` header after the banner) after nothing or
    nvidia-smi's date line on the same line: judged (a prompt's `$ nvidia-smi` before it is refused
    as a command line with no output below it; a page's `# nvidia-smi输出示例` comment: the real
    mynw capture, test_gpu_rules_cut.py)."""
    got = verdicts(tmp_path, "nvidia-smi.txt", before + ONE_LINE.read_text(), 'min_driver: "470"\n')
    assert got["min_driver"] == ("pass", "535.129.03")


GST = REAL / (
    "nvidia-smi__b200__driver570.133.20__gpu-stress-test-lines-above__cut-below-banner__gpustresstest-13.txt"
)


def test_a_real_table_cut_below_its_banner_under_another_programs_lines_is_judged(tmp_path: Path) -> None:
    """measure34a 11: the real B200 session, gpu-stress-test's six lines (`./gst capturing GPU
    information...` ... `Can not running on B200 platform.`) above nvidia-smi's border and banner,
    cut below them: min_driver judged as the same banner under nothing is. Before: unverified
    ("cut short or mangled"), another program's lines above taken for a document's words."""
    got = verdicts(tmp_path, "session.txt", GST.read_text(), 'gpu_count: 8\nmin_driver: "570"\n')
    assert got["min_driver"] == ("pass", "570.133.20")


@pytest.mark.parametrize(
    "intro", ["Expected output:\n", "## Driver\n\n", "./gst capturing GPU information...\nneeds:\n"]
)
def test_the_real_b200_banner_under_an_introducing_line_is_not_judged(tmp_path: Path, intro: str) -> None:
    """The same real border and banner under a line introducing it (`...:`) or a heading
    (written in-test): a document quoting a banner, unverified."""
    table = GST.read_text().split("\n\n", 1)[1]
    got = verdicts(tmp_path, "nvidia-smi.txt", intro + table, 'min_driver: "570"\n')
    assert got["min_driver"][0] == "unverified", got["min_driver"]
