"""A GO with unverified checks says so under the verdict, in every report and language: the
sentence under a GO read "Every host reached, every acceptance rule passed, no health failure."
while the headline above it said "GO with 1 unverified: interconnect", and a GO with warnings
named its warnings only, never the checks that could not be verified. The checks are judged
from real captured nvidia-smi outputs by the same rules as a live run (tests/fixtures/real)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpuonboard import api
from gpuonboard.inventory import Host
from gpuonboard.report import render
from gpuonboard.results import HostResult, conclude
from gpuonboard.steps.base import StepResult

from ..offline_judge import checks

REPO = Path(__file__).resolve().parents[3]
REAL = REPO / "tests" / "fixtures" / "real"
RUN = "20261205-000000-aaaa"
# an H200 judged against an order that names its interconnect, with no `topo -m` given:
# every rule passes but `interconnect`, which is unverified
H200 = "nvidia-smi-q-x__h200__1gpu__driver580.159.04.xml"
# an A100 in MIG mode: persistence_mode and mig_mode warn, memory_repair is unverified
A100_MIG = "nvidia-smi-q-x__a100-sxm4-40gb-mig__1gpu__driver510.47.03.xml"
PASSED = {"en": "every acceptance rule passed", "zh": "所有验收规则均通过"}
NOT_VERIFIED = {"en": "could not be verified", "zh": "未能核实"}


def _host(tmp_path: Path, name: str, capture: str, order: str) -> HostResult:
    judged = checks(tmp_path, capture, (REAL / capture).read_text(encoding="utf-8"), order)
    steps = [StepResult("acceptance", "ok", "judged", judged, duration=0.1)]
    return HostResult(Host(name=name, address="10.0.0.1"), "ok", "ok", steps, duration=1.0)


def _reports(tmp_path: Path, hosts: list[HostResult], lang: str) -> dict[str, str]:
    outcome = conclude(hosts)
    assert outcome.word == "GO" and int(outcome.exit_code) == 0  # (no --strict: unverified is no fail)
    meta = {"run_id": RUN, "playbook": "acceptance", "check_mode": True, "strict": False}
    api.write_reports(outcome, meta, tmp_path / "reports", RUN)
    out = {}
    for fmt in ("json", "md", "html"):
        path, _, go = render.report(tmp_path / "reports", RUN, fmt, REPO, lang=lang)
        assert go
        out[fmt] = path.read_text(encoding="utf-8")
    return out


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_go_whose_only_doubt_is_unverified_never_says_every_rule_passed(tmp_path: Path, lang: str) -> None:
    host = _host(tmp_path, "h200", H200, "gpu_model: H200\ngpu_count: 1\ninterconnect: nvlink\n")
    assert [c.name for c in host.steps[0].checks if c.verdict != "pass"] == ["interconnect"]
    out = _reports(tmp_path, [host], lang)
    explain = json.loads(out["json"])["explain"]  # (the JSON report is always in English)
    assert PASSED["en"] not in explain.lower() and NOT_VERIFIED["en"] in explain, explain
    assert "interconnect (not judged: no nvidia-smi topo -m output was given)" in explain, explain
    for fmt in ("md", "html"):
        assert PASSED[lang] not in out[fmt].lower() and NOT_VERIFIED[lang] in out[fmt], fmt


def test_a_go_with_warnings_names_its_unverified_checks_too(tmp_path: Path) -> None:
    hosts = [
        _host(tmp_path, "a100", A100_MIG, "gpu_model: A100\ngpu_count: 1\n"),
        _host(tmp_path, "h200", H200, "gpu_model: H200\ngpu_count: 1\ninterconnect: nvlink\n"),
    ]
    doc = json.loads(_reports(tmp_path, hosts, "en")["json"])
    explain = doc["explain"]
    assert explain.startswith("Every host reached and no rule failed, but 2 check(s) warned"), explain
    # the two unverified checks, each with its host, as the headline names them
    assert "2 check(s) could not be verified" in explain, explain
    assert "a100: memory_repair (" in explain and "h200: interconnect (" in explain, explain
    headline = doc["headline"]
    assert headline.endswith("; 2 unverified: a100: memory_repair, h200: interconnect"), headline


def test_a_go_with_every_rule_passed_still_says_so(tmp_path: Path) -> None:
    host = _host(tmp_path, "h200", H200, "gpu_model: H200\ngpu_count: 1\n")
    assert {c.verdict for c in host.steps[0].checks} == {"pass"}
    explain = json.loads(_reports(tmp_path, [host], "en")["json"])["explain"]
    assert explain == "Every host reached, every acceptance rule passed, no health failure."


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_no_go_headline_names_the_unverified_checks_after_the_failed(tmp_path: Path, lang: str) -> None:
    """The same real H200 against an order of two GPUs: `gpu_count` fails and `interconnect` is
    unverified. The NO-GO headline named the failure alone, as if fixing it made the box a GO."""
    from gpuonboard.report import view

    host = _host(tmp_path, "h200", H200, "gpu_model: H200\ngpu_count: 2\ninterconnect: nvlink\n")
    verdict = conclude([host]).verdicts[0]
    assert "gpu_count" in verdict.failed and "interconnect" in verdict.unverified
    go, words = view.host_headline(verdict, lang)
    assert not go
    assert words == view.t("nogo_failed", lang, items=", ".join(verdict.failed)) + view.t(
        "and_unverified", lang, n=len(verdict.unverified), items=", ".join(verdict.unverified)
    )
    assert "interconnect" in words


def test_under_strict_an_unverified_check_is_named_once_among_the_failed() -> None:
    from gpuonboard import results
    from gpuonboard.report import view

    rules = [{"name": "vram", "verdict": "fail"}, {"name": "ecc_mode", "verdict": "unverified"}]
    strict = results.judge({"name": "a", "status": "ok", "rules": rules}, strict=True)
    assert view.host_headline(strict, "en") == (False, ", failed: vram, ecc_mode")
    lenient = results.judge({"name": "a", "status": "ok", "rules": rules}, strict=False)
    assert view.host_headline(lenient, "en") == (False, ", failed: vram; 1 unverified: ecc_mode")
