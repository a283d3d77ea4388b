"""`invoke report` prints where the report is as one line, as it is: a long path was cut at the
console width when piped (`invoke report | cat`), and `[...]` in a path was taken for markup."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpuonboard.api import advise


def _summary(run: Path, host: str) -> None:
    run.mkdir(parents=True)
    doc = {
        "schema": "gpuonboard.summary/1",
        "run_id": run.name,
        "hosts": [{"name": host, "rules": [], "steps": [{"step": "acceptance", "status": "ok"}]}],
    }
    (run / "summary.json").write_text(json.dumps(doc), encoding="utf-8")


@pytest.mark.parametrize("compare", [False, True])
def test_the_report_path_is_one_line_as_it_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, compare: bool
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    reports = tmp_path / ("a-rather-long-project-directory-name-" * 3) / "[v2] reports"
    _summary(reports / "20261201-000000-aaaa", "gpu-1")
    _summary(reports / "20261201-000001-bbbb", "gpu-2")
    assert advise.report(reports, tmp_path, fmt="md", compare=compare) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if "sha256" in x)
    assert str(reports) in line, out  # whole, on its line, `[v2]` kept


def test_plan_with_an_inventory_that_is_not_there_is_an_input_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`plan --hours 10 -i invnetory` (a typo): the prices of no vendor, a note, and exit 0,
    as if the inventory had no vendor; now the inventory's own "not found" sentence (exit 2 at the
    CLI). Without --inventory, a project with no ./inventory still gets the note."""
    from gpuonboard.api.options import PlanArgs
    from gpuonboard.errors import InventoryError

    with pytest.raises(InventoryError) as err:
        advise.plan(PlanArgs(params="7B", hours="10", inventory="invnetory"), tmp_path)
    assert str(err.value) == (
        f"{tmp_path / 'invnetory'}: inventory not found; pass --inventory PATH (default ./inventory)."
    )
    assert advise.plan(PlanArgs(params="7B", hours="10", json=True), tmp_path) == 0
    assert "no inventory at" in capsys.readouterr().out
