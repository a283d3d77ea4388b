"""The refusals added in rounds 13-14, each as the command line says it: exit 2 and one whole
sentence naming the file and what to save (real captures, tests/fixtures/real/SOURCES.md)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REAL = Path(__file__).parents[2] / "fixtures" / "real"
ELIDED_Q = "nvidia-smi-q-elided__a100-sxm4-80gb__1of8gpu__driver510.73.08__remap-pending__no-banner.txt"


def refused(path: Path) -> str:
    cmd = [sys.executable, "-c", "from gpuonboard.cli import main; main()", "facts", str(path)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and not r.stdout, (r.returncode, r.stdout)
    return " ".join(r.stderr.split())


@pytest.mark.parametrize(
    ("make", "sentence"),
    [
        (
            lambda: (REAL / "df-h__it-it__raspberry-pi-sd-card__markdown-line-breaks.txt").read_text(),
            "rows like df's (a mount point, a use %) under a header this tool cannot read (df run in a"
            " language other than English, Chinese, German, Spanish, French, Portuguese or Russian?):"
            " save it with `LC_ALL=C df -P -k`.",
        ),
        (
            lambda: (
                (REAL / "nvidia-smi-query-gpu__h200__1gpu__driver580.159.04.csv")
                .read_text()
                .split("\n", 1)[1]
            ),
            "a CSV without its header row, and no copied `nvidia-smi --query-gpu=...` line above it names its"
            " fields: save it with its header (`--format=csv`, without `noheader`), or with the command line"
            " above it.",
        ),
    ],
    ids=["df-other-language", "csv-noheader"],
)
def test_each_refusal_is_one_sentence_and_exit_2(tmp_path: Path, make: object, sentence: str) -> None:
    path = tmp_path / "saved.txt"
    path.write_text(make())  # type: ignore[operator]
    assert refused(path) == f"error: {path}: {sentence}"


def test_q_gpu_blocks_without_their_header_are_read_as_a_fragment_not_refused(tmp_path: Path) -> None:
    """`-q` GPU blocks without the header above them were refused here (exit 2) until round 36;
    they are now read as a `-q` fragment (its GPU named, the count unverified:
    steps/checks/test_truth_round12.py): exit 1 for the remap pending they show, the excerpt said."""
    path = tmp_path / "saved.txt"
    path.write_text((REAL / ELIDED_Q).read_text().split("Attached GPUs", 1)[1].split("\n", 1)[1])
    cmd = [sys.executable, "-c", "from gpuonboard.cli import main; main()", "facts", str(path)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env={**os.environ, "COLUMNS": "400"})
    assert (r.returncode, r.stderr) == (1, "")
    out = " ".join(r.stdout.split())
    assert "an excerpt of `nvidia-smi -q` from a GPU's record on, without its header" in out
    assert "GPU 0: row remap pending" in out
