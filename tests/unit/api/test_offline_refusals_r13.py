"""The refusals added in rounds 13-14, each as the command line says it: exit 2 and one whole
sentence naming the file and what to save (real captures, tests/fixtures/real/SOURCES.md)."""

from __future__ import annotations

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
            # `-q` GPU blocks without the header above them
            lambda: (REAL / ELIDED_Q).read_text().split("Attached GPUs", 1)[1].split("\n", 1)[1],
            "`nvidia-smi -q` GPU blocks without the header above them (Driver Version, Attached GPUs), so the"
            " driver and the number of GPUs are not known: save the whole `nvidia-smi -q` output.",
        ),
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
    ids=["q-blocks", "df-other-language", "csv-noheader"],
)
def test_each_refusal_is_one_sentence_and_exit_2(tmp_path: Path, make: object, sentence: str) -> None:
    path = tmp_path / "saved.txt"
    path.write_text(make())  # type: ignore[operator]
    assert refused(path) == f"error: {path}: {sentence}"
