"""junit.xml is valid for the CI tools that read it: against Jenkins xUnit's JUnit schema
(`junit-10.xsd`, the whole `<testsuites>` file) and Maven Surefire's
(`surefire-test-report.xsd`, which describes one `<testsuite>`: each host's suite), with a
`time` on every testcase, `<skipped>` for unverified rules and skipped steps, counts that agree
with the elements, and the run's start as each suite's RFC 3339 `timestamp`. The schemas are
tests/fixtures/schemas/ (SOURCES.md there)."""

from __future__ import annotations

import copy
import functools
from pathlib import Path

import pytest
from lxml import etree

from gpuonboard.inventory import Host
from gpuonboard.report import junit
from gpuonboard.results import HostResult, RunResult, conclude
from gpuonboard.steps.base import Check, StepResult

SCHEMAS = Path(__file__).resolve().parents[2] / "fixtures" / "schemas"
STARTED = "2026-12-02T07:11:57Z"


@functools.cache
def _schema(name: str) -> etree.XMLSchema:
    return etree.XMLSchema(etree.parse(str(SCHEMAS / name)))


def problems(text: str) -> dict[str, list[str]]:
    """What each schema finds wrong: Jenkins' on the file, Surefire's on each suite alone."""
    root = etree.fromstring(text.encode())
    found: dict[str, list[str]] = {"jenkins": [], "surefire": []}
    jenkins = _schema("jenkins-xunit-junit-10.xsd")
    if not jenkins.validate(root):
        found["jenkins"] = [e.message for e in jenkins.error_log]
    surefire = _schema("surefire-test-report.xsd")
    for suite in root.iter("testsuite"):
        alone = copy.deepcopy(suite)
        if not surefire.validate(etree.ElementTree(alone)):
            found["surefire"] += [f"{suite.get('name')}: {e.message}" for e in surefire.error_log]
    return found


def _host(name: str) -> Host:
    return Host(name=name, address="10.0.0.1")


def _runs() -> dict[str, RunResult]:
    """Every shape a suite takes: rules of each verdict, a failed and a skipped step, a step
    whose checks passed but that failed, an unreachable host, a host failed before any step,
    and text with control characters from a host."""
    checks = [
        Check("gpu_count", "8", "8", "pass"),
        Check("persistence_mode", "Enabled", "Disabled", "warn", "nvidia-smi -pm 1"),
        Check("fabric_manager", "running", "unknown", "unverified"),
        Check("vram", "80 GB", "40 GB", "fail"),
    ]
    mixed = HostResult(
        _host("gpu-1"),
        "failed",
        "step acceptance: vram",
        [
            StepResult("acceptance", "failed", "vram", checks, duration=0.7),
            StepResult("container", "skipped", "an earlier step failed"),
            StepResult("files", "changed", "wrote /etc/x", duration=0.2),
            StepResult("prove", "failed", "python3 not found", [Check("smoke", "runs", "runs", "pass")]),
        ],
        duration=3.5,
    )
    gone = HostResult(_host("gpu-2"), "unreachable", "connection refused", duration=10.0)
    early = HostResult(_host("gpu-3"), "failed", "cannot read the facts: \x1b[31mtimeout\x1b[0m")
    good = HostResult(
        _host("gpu-4"), "ok", "ok", [StepResult("acceptance", "ok", "ok", checks[:3])], duration=1.0
    )
    return {
        "mixed": conclude([mixed, gone, early, good]),
        "strict": conclude([mixed, good], strict=True),
        "go": conclude([good]),
        "empty": conclude([]),
    }


@pytest.mark.parametrize("kind", ["mixed", "strict", "go", "empty"])
def test_junit_is_valid_for_jenkins_and_surefire(kind: str) -> None:
    text = junit.render(_runs()[kind], "gpuonboard check", timestamp=STARTED)
    assert problems(text) == {"jenkins": [], "surefire": []}
    # and without a timestamp (a caller of render that has none)
    assert problems(junit.render(_runs()[kind], "gpuonboard check")) == {"jenkins": [], "surefire": []}


def test_the_schemas_catch_what_they_are_here_for() -> None:
    """A testcase without `time` fails Surefire's schema, a `skipped` count on the root fails
    Jenkins': the validation is real."""
    text = junit.render(_runs()["go"], "x", timestamp=STARTED)
    no_time = text.replace(f'time="{junit.RULE_TIME}"', "", 1)
    assert problems(no_time)["surefire"] and not problems(no_time)["jenkins"]
    root_skipped = text.replace("<testsuites ", '<testsuites skipped="0" ', 1)
    assert problems(root_skipped)["jenkins"]
    bad_stamp = text.replace(STARTED, "2026-12-02 07:11:57")
    assert problems(bad_stamp)["surefire"]


def test_counts_time_skipped_and_timestamp() -> None:
    text = junit.render(_runs()["mixed"], "gpuonboard check", timestamp=STARTED)
    root = etree.fromstring(text.encode())
    totals = {"tests": 0, "failures": 0, "errors": 0}
    for suite in root.iter("testsuite"):
        cases = suite.findall("testcase")
        assert int(suite.get("tests")) == len(cases)
        assert int(suite.get("failures")) == len(suite.findall("testcase/failure"))
        assert int(suite.get("errors")) == len(suite.findall("testcase/error"))
        assert int(suite.get("skipped")) == len(suite.findall("testcase/skipped"))
        assert suite.get("timestamp") == STARTED
        assert all(case.get("time") is not None for case in cases)
        for key in totals:
            totals[key] += int(suite.get(key))
    assert {k: int(root.get(k)) for k in totals} == totals == {"tests": 13, "failures": 2, "errors": 2}
    by_name = {(c.get("classname"), c.get("name")): c for c in root.iter("testcase")}
    # an unverified rule and a skipped step are <skipped>, never a pass or a failure
    assert by_name[("gpu-1.acceptance", "fabric_manager")].find("skipped") is not None
    assert by_name[("gpu-1", "container")].find("skipped") is not None
    assert by_name[("gpu-1.acceptance", "gpu_count")].get("time") == junit.RULE_TIME
    assert by_name[("gpu-1", "files")].get("time") == "0.200"
    assert by_name[("gpu-2", "connect")].get("time") == "10.000"
    # under --strict the unverified rule is a failure
    strict = etree.fromstring(junit.render(_runs()["strict"], "x").encode())
    case = next(c for c in strict.iter("testcase") if c.get("name") == "fabric_manager")
    assert case.find("failure") is not None and case.find("skipped") is None
