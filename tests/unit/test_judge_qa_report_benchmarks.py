"""`invoke report` on a summary.json whose benchmark figures are not numbers (hand-edited, or
written by another tool): the report still renders, the chart draws only real numbers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from .test_report_render import _host, _run

RUN = "20261129-000000-aaaa"


def _report(cwd: Path) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-c", "from gpuonboard.cli import main; main()", "report", "--run", RUN]
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=60)


def test_a_reference_that_is_not_a_number_renders(tmp_path: Path) -> None:
    """It was `error: internal error (ValueError: could not convert string to float: 'n/a')`."""
    h = _host("gpu-1", "pass", "8")
    h["benchmarks"] = [
        {"name": "matmul", "value": 700, "unit": "TFLOPS", "reference": "n/a", "verdict": "pass"},
        {"name": "copy", "value": 3000, "unit": "GB/s", "reference": 3350, "verdict": "pass"},
    ]
    run = _run(tmp_path, [h])
    r = _report(tmp_path)
    assert r.returncode == 0, r.stderr
    html = (run / "report.html").read_text(encoding="utf-8")
    svg = html[html.index("<svg") : html.index("</svg>")]
    assert svg.count("<rect") == 3  # two values, one reference (3350); none for "n/a"
    assert "reference 3350" in svg


def test_nan_and_infinite_figures_are_left_out_of_the_chart(tmp_path: Path) -> None:
    """Python's json reads NaN and Infinity: the chart drew `width="nan"` bars, and an infinite
    value scaled every other bar to nothing."""
    h = _host("gpu-1", "pass", "8")
    h["benchmarks"] = [
        {"name": "loss", "value": float("nan"), "unit": "", "reference": 1.0, "verdict": "warn"},
        {"name": "bw", "value": float("inf"), "unit": "GB/s", "reference": None, "verdict": "pass"},
        {"name": "copy", "value": 3000, "unit": "GB/s", "reference": float("inf"), "verdict": "pass"},
    ]
    run = _run(tmp_path, [h])
    doc = json.loads((run / "summary.json").read_text())
    assert doc["hosts"][0]["benchmarks"][0]["value"] != doc["hosts"][0]["benchmarks"][0]["value"]  # NaN
    r = _report(tmp_path)
    assert r.returncode == 0, r.stderr
    html = (run / "report.html").read_text(encoding="utf-8")
    svg = html[html.index("<svg") : html.index("</svg>")]
    assert "nan" not in svg.lower() and "inf" not in svg.lower(), svg
    assert svg.count("<rect") == 1 and 'width="0.0"' not in svg
