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


# texts and attribute values with every character ElementTree escapes (and some it does not)
_AWKWARD = [
    "a & b <c> \"d\" 'e'",
    "line one\nline two\r\n\ttab",
    "",
    " ",
    "\u4e2d\u6587 \u00e9 \U0001f600",
    "&amp; ]]>",
    "\x1b[31mred\x1b[0m \x00",
]


def test_a_suite_is_written_as_elementtree_writes_it() -> None:
    """junit.tostring (the suites' writer) gives ET.tostring's text: for suites of every kind of
    testcase (a pass, a warn, an unverified, a failure, a skipped step, a failed step, an
    unreachable host), strict or not, with awkward names, messages and details; and for a tree
    it does not write itself (a namespace, a comment), by ElementTree."""
    checks = [
        Check(f"rule {i} {text}", text, text, verdict, detail=text)
        for i, text in enumerate(_AWKWARD)
        for verdict in ("pass", "warn", "unverified", "fail")
    ]
    steps = [
        StepResult("acceptance", "failed", _AWKWARD[0], checks, duration=1.25),
        StepResult("setup", "skipped", _AWKWARD[1]),
        StepResult("prove", "failed", _AWKWARD[4], [Check("gpu_count", "8", "8", "pass")]),
    ]
    host = Host(name="gpu-1 <&>", address="10.0.0.1")
    results = [
        HostResult(host, "failed", "step acceptance", steps, duration=3.5),
        HostResult(host, "unreachable", _AWKWARD[1]),
    ]
    for r in results:
        for strict in (False, True):
            for _r, verdict in conclude([r], strict=strict):
                # the suite's tree as junit.suite builds it, written by ElementTree
                el = ET.Element("testsuite", name=r.host.name, time=f"{r.duration:.3f}", timestamp="T")
                ET.SubElement(ET.SubElement(el, "properties"), "property", name="verdict", value=verdict.word)
                counts = junit._host_cases(el, r, strict)
                for key in ("tests", "skipped", "failures", "errors"):
                    el.set(key, str(counts[key]))
                junit._legal_xml(el)
                ET.indent(el, level=1)
                assert junit.tostring(el) == ET.tostring(el, encoding="unicode")
                assert junit.suite(r, verdict, strict, "T").xml == ET.tostring(el, encoding="unicode")
    for text in _AWKWARD:
        el = ET.Element("a", b=text, c=text)
        el.text, ET.SubElement(el, "d", e=text).tail = text, text
        ET.SubElement(el, "empty")
        assert junit.tostring(el) == ET.tostring(el, encoding="unicode")
    foreign = ET.Element("{urn:x}a")
    foreign.append(ET.Comment("note"))
    assert junit.tostring(foreign) == ET.tostring(foreign, encoding="unicode")
