"""The host verdict and the exit code are computed once (results.conclude): terminal, summary.json
and junit.xml render the RunResult's verdicts, and `invoke report` reads the verdict summary.json
stored, never judging the host again."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

from rich.console import Console

from gpuonboard import results
from gpuonboard.errors import ExitCode
from gpuonboard.inventory import Host
from gpuonboard.report import jsonfile, junit, render, terminal
from gpuonboard.results import HostResult, HostVerdict, Reason, RunResult, conclude
from gpuonboard.steps.base import Check, StepResult

from .report.summaries import _host, _run

REPO = Path(__file__).resolve().parents[2]


def _passing(name: str) -> HostResult:
    checks = [Check("gpu_count", "8", "8", "pass"), Check("ram", ">= 1 TB", "1 TB", "pass")]
    return HostResult(
        Host(name=name, address="10.0.0.1"), "ok", "1 ok", [StepResult("acceptance", "ok", "ok", checks)]
    )


def _failing(name: str) -> HostResult:
    step = StepResult("acceptance", "failed", "gpu_count", [Check("gpu_count", "8", "4", "fail")])
    return HostResult(Host(name=name, address="10.0.0.2"), "failed", "step acceptance: gpu_count", [step])


def _terminal(run: RunResult) -> str:
    con = Console(width=160, record=True, force_terminal=False)
    terminal.print_results(run, con)
    return con.export_text()


def _junit_words(run: RunResult) -> dict[str, str]:
    root = ET.fromstring(junit.render(run, "x").encode())
    return {
        str(s.get("name")): str(s.find("properties/property[@name='verdict']").get("value"))  # type: ignore[union-attr]
        for s in root.iter("testsuite")
    }


def test_conclude_judges_each_host_once_and_every_report_says_the_same() -> None:
    run = conclude([_passing("good"), _failing("bad")])
    assert [v.word for v in run.verdicts] == ["GO", "NO-GO"]
    assert run.exit_code == ExitCode.ACCEPTANCE_FAILED and run.word == "NO-GO"
    doc = jsonfile.summary(run, {"strict": False})
    assert [h["verdict"]["word"] for h in doc["hosts"]] == ["GO", "NO-GO"]
    assert _junit_words(run) == {"good": "GO", "bad": "NO-GO"}
    text = _terminal(run)
    assert "verdict for good: GO" in text and "verdict for bad: NO-GO" in text


def test_the_reports_render_the_run_result_s_verdict_never_their_own() -> None:
    """A RunResult whose verdict of a passing host is NO-GO (as --strict or a rule the records
    do not show could make it): terminal, JSON and JUnit all say NO-GO, as the exit code does."""
    host = _passing("gpu-1")
    verdict = HostVerdict("NO-GO", ("nvlink",), (), (), (Reason("r_rule", {"name": "nvlink"}),))
    run = RunResult((host,), (verdict,), ExitCode.ACCEPTANCE_FAILED)
    assert results.judge(results.host_record(host)).word == "GO"  # (what judging again would say)
    doc = jsonfile.summary(run, {})
    assert doc["hosts"][0]["verdict"]["word"] == "NO-GO"
    assert doc["hosts"][0]["verdict"]["failed"] == ["nvlink"]
    assert _junit_words(run) == {"gpu-1": "NO-GO"}
    assert "verdict for gpu-1: NO-GO, failed: nvlink" in _terminal(run)


def test_summary_json_stores_the_reasons_and_reads_them_back() -> None:
    run = conclude([_failing("bad")])
    stored = json.loads(json.dumps(jsonfile.summary(run, {})))["hosts"][0]
    assert results.recorded(stored) == run.verdicts[0]


def test_invoke_report_shows_the_stored_verdict_not_a_recomputed_one(tmp_path: Path) -> None:
    """Every rule of the record passed (judging it again says GO) but the run stored NO-GO:
    the HTML and Markdown reports, their `go` and `invoke report --compare` say NO-GO."""
    host = _host("gpu-1", "pass", "8")
    host["verdict"] = {
        "word": "NO-GO",
        "failed": ["gpu_count"],
        "warned": [],
        "unverified": [],
        "reasons": [{"key": "r_rule", "values": {"name": "gpu_count", "expected": "8", "actual": "7"}}],
    }
    assert results.judge(host).word == "GO"
    _run(tmp_path, [host])
    out, _, go = render.report(tmp_path / "reports", "20261129-000000-aaaa", "html", REPO)
    html = out.read_text(encoding="utf-8")
    assert not go and 'id="verdict">NO-GO<' in html
    assert "gpu_count" in html and "7" in html
    md, _, _ = render.report(tmp_path / "reports", "20261129-000000-aaaa", "md", REPO)
    assert md.read_text(encoding="utf-8").startswith("# ") and "NO-GO" in md.read_text(encoding="utf-8")
    _, _, rows = render.compare(tmp_path / "reports", ["20261129-000000-aaaa"] * 2, "md", REPO)
    assert rows[0]["verdict"] == "NO-GO" and rows[0]["verdict_detail"] == "failed: gpu_count"


def test_a_record_without_a_stored_verdict_is_judged_from_its_rules() -> None:
    """A summary.json written before verdicts were stored (or by hand) still gets one."""
    assert results.recorded(_host("gpu-1", "fail", "4")).word == "NO-GO"
    assert results.recorded(_host("gpu-1", "pass", "8")).word == "GO"
