"""facts/may_hold: a search by a line-anchored case-insensitive pattern skipped where the text
lacks the words every match holds (issue 31: gpu_failed's whole-failure sentences and the `-q`
reader's elision lines were tried at every character of an 8-GPU output, ~2.5 ms a host each),
finding the very matches the pattern finds, on every text of the fixtures and on the letters
IGNORECASE matches beyond ASCII."""

from __future__ import annotations

import re
import string
import sys
from pathlib import Path

import pytest

from gpuonboard.facts.elision import ELISION, elided, may_be_elided, without_elisions
from gpuonboard.facts.gpu_failed import _WHOLE_FAILURE, whole_failure
from gpuonboard.facts.may_hold import folded

FIXTURES = Path(__file__).parents[2] / "fixtures"


def _texts() -> list[str]:
    texts = []
    for path in sorted(p for p in FIXTURES.rglob("*") if p.is_file()):
        try:
            texts.append(path.read_text())
        except UnicodeDecodeError:
            continue
    return texts


def test_folded_is_what_ignorecase_matches_to_each_ascii_letter() -> None:
    """Every character re.IGNORECASE matches to an ASCII letter folds to that letter (so a
    pattern's lower-case ASCII words are in the folded text wherever it matches)."""
    letter = re.compile("[a-z]", re.IGNORECASE)
    for point in range(sys.maxunicode + 1):
        char = chr(point)
        if letter.fullmatch(char):
            said = [c for c in string.ascii_lowercase if re.fullmatch(c, char, re.IGNORECASE)]
            assert [folded(char)] == said, hex(point)


def _same(text: str) -> None:
    want, got = _WHOLE_FAILURE.search(text), whole_failure(text)
    assert (want and (want.span(), want.group(0))) == (got and (got.span(), got.group(0)))


def test_every_fixtures_text_finds_the_same_failure() -> None:
    """Every file under tests/fixtures (real captures, sessions, derived outputs): the same
    match or none, and some of them do hold one."""
    found = 0
    for text in _texts():
        _same(text)
        found += _WHOLE_FAILURE.search(text) is not None
    assert found >= 5


@pytest.mark.parametrize(
    "line",
    [
        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.",
        "nvidia-smi HAS FAILED",
        "| Failed to initialize NVML: Driver/library version mismatch",
        "  No devices were found",
        "Unable to determine the device handle for GPU0000:41:00.0: Unknown Error",
        # (IGNORECASE also matches ı, İ, K and ſ to i, k and s: no word checked holds one)
        "NVıDıA-ſMı has faıled",
        "No devİceſ were found",
        "Faıled to ınıtıalıze NVML: Unknown Error",
        "Unable to determıne the devıce handle",
    ],
)
def test_a_failure_is_found_however_it_is_cased(line: str) -> None:
    """A failure sentence in any case, after other lines, at the text's start and mid-text."""
    for text in (line, f"<xml>\n  <a>1</a>\n{line}\n", f"x\n\n {line}"):
        assert _WHOLE_FAILURE.search(text) is not None
        _same(text)


def test_a_sentence_not_at_a_lines_start_is_none() -> None:
    """The sentence quoted mid-line is no failure, searched or not."""
    assert whole_failure("journal: NVIDIA-SMI has failed") is None
    assert whole_failure("<gpu>\n<fan>N/A</fan>\n</gpu>\n") is None


def test_every_fixtures_text_loses_the_same_elision_lines() -> None:
    """Every file under tests/fixtures: the text less its elision lines, their count and the
    first one said, as ELISION itself gives them; some files do hold one."""
    found = 0
    for text in _texts():
        assert without_elisions(text) == ELISION.subn("", text)
        first = next((line for line in text.splitlines() if ELISION.match(line)), None)
        assert (elided(text) is None) == (first is None)
        found += first is not None
        assert may_be_elided(text) or first is None
    assert found >= 5


@pytest.mark.parametrize(
    "line",
    ["...", "[\u2026]", "[snip]", "-- ſNIP --", "(12 lines omıtted)", "... 40 MORE lines ...", "<truncated>"],
)
def test_an_elision_line_is_found_however_it_is_cased(line: str) -> None:
    text = f"GPU 00000000:01:00.0\n    Product Name : NVIDIA H100\n{line}\n    Serial : 1\n"
    assert ELISION.search(text) is not None
    assert without_elisions(text) == ELISION.subn("", text)


@pytest.mark.parametrize(
    "line",
    ["...", "[\u2026]", "[snip]", "-- ſNIP --", "(12 lines omıtted)", "... 40 MORE lines ...", "<truncated>"],
)
def test_an_elision_line_holds_no_colon(line: str) -> None:
    """may_be_elided looks only at the lines without a colon: no ELISION line holds one."""
    assert ELISION.fullmatch(line) is not None
    for at in range(len(line) + 1):
        assert ELISION.search(line[:at] + ":" + line[at:]) is None


@pytest.mark.parametrize(
    "text",
    [
        "Attached GPUs : 8\n\n   ...   \n\nGPU 00000000:01:00.0\n",  # (blank lines about it)
        "Product Name : NVIDIA H100\n[... 200 lines omitted ...]",  # (last, no newline)
        "...\nProduct Name : NVIDIA H100\n",  # (first)
        "CA type: ...\nsnip: 1\n",  # (dots and a word after a colon: no elision line)
        "Note: kept\r[snip]\nSerial : 1\n",  # (a line of splitlines' after a CR, as elided reads it)
        "Note: kept\x1c  ...  \n",
    ],
)
def test_an_elision_line_among_colon_lines_is_found_as_elision_finds_it(text: str) -> None:
    assert may_be_elided(text) or ELISION.search(text) is None
    assert without_elisions(text) == ELISION.subn("", text)
    first = next((line for line in text.splitlines() if ELISION.match(line)), None)
    assert (elided(text) is None) == (first is None)
