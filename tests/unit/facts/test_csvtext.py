"""Text Python's csv reader refuses (a carriage return inside a line, a cell over its 128 KiB
limit) is "not this format" to every parser that reads CSV, never a crash: `gpuonboard facts`
stopped with "internal error (Error: new-line character seen in unquoted field ...)"."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api import saved_forms
from gpuonboard.facts.gpu_merge import parse_compute_apps
from gpuonboard.facts.nvidia_smi.query_csv import is_query_header, parse_query_csv
from gpuonboard.facts.nvidia_smi.sniff import parse_any
from gpuonboard.watch.samples import parse_processes

REAL = Path(__file__).parents[2] / "fixtures" / "real"
CSV = (REAL / "nvidia-smi-query-gpu__h200__1gpu__driver580.159.04.csv").read_text()
REFUSED = {
    "carriage return in a line": CSV.replace(", ", ",\r", 3),
    "cell over 128 KiB": CSV.replace(", ", ", " + "x" * 200_000 + ", ", 1),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_csv_the_reader_refuses_is_no_csv_output(case: str) -> None:
    text = REFUSED[case]
    assert is_query_header(text.split("\n")[0]) is False
    report = parse_query_csv(text, ())
    assert report.gpus == () and report.warnings
    assert parse_any(text).gpus == ()
    assert parse_compute_apps(text) is None
    assert saved_forms.csv_width(text) == 0
    assert saved_forms.compute_apps(text) is None
    assert parse_processes(text) == {}
