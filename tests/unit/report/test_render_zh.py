"""The Chinese report says everything of its own in Chinese: a run that shows every part of the
report (rich_run) rendered with `--lang zh`, the recorded data removed, leaves no English word
but the proper nouns and units of ALLOWED."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from gpuonboard import licences
from gpuonboard.i18n import CATALOGUE, t
from gpuonboard.report import render

from .rich_run import RUN_ID, data_strings, rich_run

REPO = Path(__file__).resolve().parents[3]

# Proper nouns, units, file names and commands the Chinese report keeps as they are (longest first
# where one contains another).
ALLOWED = (
    "https://tsm.miit.gov.cn",
    "https://beian.miit.gov.cn",
    "report.zh.html.sha256",
    "report.zh.md.sha256",
    "summary.json",
    "invoke check",
    "--strict",
    *licences.LICENCE_EXAMPLE.split(", "),  # (example numbers in the vendor-number warnings)
    *licences.ICP_EXAMPLE.split(", "),
    "gpuonboard",
    "sha256",
    "NO-GO",
    "GO",
    "GPU",
    "CUDA",
    "CPU",
    "ICP",
    "playbook",
    "GiB",
    "TiB",
    "GB",
    "TB",
    "<br>",  # (Markdown: several evidence files in one cell)
)
WORD = re.compile(r"[A-Za-z]+")


class _Text(HTMLParser):
    """The text a reader sees: text nodes (not style, nor the raw outputs in <pre>: the host's
    own), plus the title and aria-label attributes."""

    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []
        self.skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("style", "pre"):
            self.skip += 1
        self.parts += [v for k, v in attrs if k in ("title", "aria-label", "alt") and v]

    def handle_endtag(self, tag: str) -> None:
        if tag in ("style", "pre"):
            self.skip -= 1

    def handle_data(self, data: str) -> None:
        if not self.skip:
            self.parts.append(data)


def english_leftovers(text: str, data: list[str]) -> list[str]:
    """Each line of `text` that still has an ASCII word once the data values and ALLOWED are cut."""
    for value in (*data, *ALLOWED):
        text = re.sub(rf"(?<![A-Za-z0-9_]){re.escape(value)}(?![A-Za-z0-9_])", " ", text)
    return [line.strip() for line in text.splitlines() if WORD.search(line)]


@pytest.mark.parametrize("fmt", ["html", "md"])
def test_zh_report_has_no_english_leftover(tmp_path: Path, fmt: str) -> None:
    run = rich_run(tmp_path)
    out, _, _ = render.report(tmp_path / "reports", RUN_ID, fmt, REPO, "zh")
    body = out.read_text(encoding="utf-8")
    if fmt == "html":
        parser = _Text()
        parser.feed(body)
        body = "\n".join(parser.parts)
    assert english_leftovers(body, data_strings(run)) == []
    # every part of the report was there to be looked at
    for key in (
        "h_compat",
        "h_bench",
        "raw_mismatch",
        "raw_missing",
        "raw_verified",
        "v_unverified",
        "v_warn",
    ):
        assert t(key, "zh") in body, key


def test_the_check_finds_an_english_leftover(tmp_path: Path) -> None:
    """(the check itself: an untranslated text is found, data is not)"""
    run = rich_run(tmp_path)
    data = data_strings(run)
    assert english_leftovers("gpu-node-01.example.internal: 验收通过（GO）, 8 GPU", data) == []
    assert len(english_leftovers("状态: 成功, 0.1 s", data)) == 1  # (an English unit)
    assert english_leftovers("结论: PASS\n成功", data) == ["结论: PASS"]


def test_every_text_has_its_chinese() -> None:
    assert sorted(set(CATALOGUE["en"]) - set(CATALOGUE["zh"])) == []
