"""junit.xml: a host that failed is a failure or an error in CI, whatever failed."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from gpuonboard.inventory import Host
from gpuonboard.report import junit
from gpuonboard.results import HostResult, conclude
from gpuonboard.steps.base import Check, StepResult


def _counts(text: str) -> tuple[int, int, int]:
    suite = ET.fromstring(text.encode()).find("testsuite")
    assert suite is not None
    tests, failures, errors = (int(suite.get(k) or 0) for k in ("tests", "failures", "errors"))
    # the counts agree with the elements (CI tools read either)
    assert failures == len(suite.findall("testcase/failure"))
    assert errors == len(suite.findall("testcase/error"))
    assert tests == len(suite.findall("testcase"))
    return tests, failures, errors


def test_a_host_that_failed_before_any_step_is_an_error() -> None:
    """Facts could not be gathered (or an internal error): the host's suite had no testcase at
    all, `tests="0" failures="0"`, which CI dashboards show as passing."""
    msg = "cannot read the facts: lscpu timed out"
    r = HostResult(Host(name="gpu-1", address="10.0.0.1"), "failed", msg)
    text = junit.render(conclude([r]), "gpuonboard check")
    assert _counts(text) == (1, 0, 1)
    error = ET.fromstring(text.encode()).find(".//error")
    assert error is not None and error.get("message") == msg


def test_a_failed_step_whose_checks_passed_is_a_failure() -> None:
    """A prove step that failed after its first checks passed (its script could not run) gave
    one passing testcase per check and nothing for the failure."""
    step = StepResult(
        "prove",
        "failed",
        "allreduce.py could not start: python3 not found",
        [Check("gpu_count", "8", "8", "pass")],
    )
    ok = StepResult("acceptance", "ok", "ok", [Check("gpu_model", "H100", "H100", "pass")])
    r = HostResult(Host(name="gpu-1", address="10.0.0.1"), "failed", "step prove: ...", [ok, step])
    text = junit.render(conclude([r]), "gpuonboard prove")
    assert _counts(text) == (3, 1, 0)
    failure = ET.fromstring(text.encode()).find(".//failure")
    assert failure is not None and failure.get("message") == "allreduce.py could not start: python3 not found"


def test_a_failed_rule_is_counted_once() -> None:
    """A step that failed because a check failed stays one failure (the check's), not two."""
    step = StepResult("acceptance", "failed", "gpu_count", [Check("gpu_count", "8", "4", "fail")])
    r = HostResult(Host(name="gpu-1", address="10.0.0.1"), "failed", "step acceptance: gpu_count", [step])
    assert _counts(junit.render(conclude([r]), "x")) == (1, 1, 0)
