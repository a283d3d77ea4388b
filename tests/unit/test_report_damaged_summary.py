"""`invoke report` on a damaged or hand-edited summary.json: one sentence naming the file and
the field, exit 2 (before: `internal error (AttributeError ...)`, exit 70)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gpuonboard.api import advise
from gpuonboard.errors import UsageError
from gpuonboard.report import render

REPO = Path(__file__).resolve().parents[2]


def _doc(**host: Any) -> dict[str, Any]:
    record = {
        "name": "h1",
        "status": "ok",
        "msg": "m",
        "rules": [{"name": "gpu_count", "expected": "8", "actual": "8", "verdict": "pass"}],
        "steps": [{"step": "acceptance", "status": "ok", "msg": "ok", "checks": []}],
        "raw": {},
        **host,
    }
    return {"schema": "gpuonboard.summary/1", "run_id": "r", "hosts": [record]}


@pytest.mark.parametrize(
    ("host", "problem"),
    [
        ({"raw": ["nvidia_smi"]}, "host 'h1' has a `raw` that is not an object of objects"),
        ({"raw": {"nvidia_smi": "6a17"}}, "host 'h1' has a `raw` that is not an object of objects"),
        ({"rules": ["gpu_count"]}, "host 'h1' has a `rules` that is not a list of objects"),
        ({"facts": "8 x A100"}, "host 'h1' has a `facts` that is not an object"),
        ({"steps": {"acceptance": "ok"}}, "host 'h1' has a `steps` that is not a list of objects"),
        ({"vendor_billing": {"rate": "58"}}, "host 'h1' has a `vendor_billing.rate` that is not a number"),
    ],
)
def test_a_damaged_host_record_is_one_sentence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], host: dict[str, Any], problem: str
) -> None:
    run = tmp_path / "reports" / "20261201-000000-aaaa"
    run.mkdir(parents=True)
    (run / "summary.json").write_text(json.dumps(_doc(**host)), encoding="utf-8")
    with pytest.raises(UsageError) as exc:
        advise.report(tmp_path / "reports", REPO, run="20261201-000000-aaaa", fmt="html")
    assert str(exc.value) == (
        f"{run / 'summary.json'}: {problem}; the file is damaged (or not written by gpuonboard):"
        " rerun `invoke check` for that host to get a new one."
    )


def test_hosts_that_are_not_records_and_a_sound_file(tmp_path: Path) -> None:
    assert render.shape_problem({"hosts": "h1"}) == "`hosts` is not a list of host records"
    assert render.shape_problem({"hosts": [1]}) == "host record 1 is not an object"
    sound = _doc(facts=None, order=None, benchmarks=[], vendor_billing={"rate": 58.0})
    assert render.shape_problem(sound) is None
    run = tmp_path / "reports" / "20261201-000000-aaaa"
    run.mkdir(parents=True)
    (run / "summary.json").write_text(json.dumps(sound), encoding="utf-8")
    _, _, go = render.report(tmp_path / "reports", None, "md", REPO)
    assert go
