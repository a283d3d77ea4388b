"""`junit.xml`: one testcase per host x rule (and per non-acceptance step), for CI dashboards;
each host's suite carries the run's verdict of it as a property.

Valid against both schemas CI tools hold JUnit files to: Maven Surefire's
(`surefire-test-report.xsd`, which describes one `<testsuite>`: each host's suite is one such
report) and Jenkins xUnit's `junit-10.xsd` (the `<testsuites>` file). So every testcase has a
`time` (a rule's own is 0: the facts it reads were gathered once for the host, whose suite's
`time` is the host's run), a suite's `tests`, `failures`, `errors` and `skipped` count its
testcases, the root's `tests`, `failures` and `errors` add its suites up (no `time`: hosts run
side by side), and a suite's `timestamp` is the run's start in RFC 3339 (UTC, `Z`: an
xs:dateTime).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gpuonboard.report.escape import escape_text
from gpuonboard.results import HostResult, HostVerdict, RunResult

# XML 1.0 allows tab, newline and carriage return but no other C0 control character (nor lone
# surrogates, U+FFFE, U+FFFF), and ElementTree writes them as they are: a command's stderr with
# colour codes (ESC) made junit.xml unreadable for every CI parser. They become `\x1b` escapes.
RULE_TIME = "0.000"  # a rule's testcase: judged from facts gathered once for the whole host

_NOT_XML = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _escape_char(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def _legal_xml(root: ET.Element) -> None:
    """Make every text and attribute of the tree legal XML 1.0 (text from hosts is arbitrary)."""
    for el in root.iter():
        if el.text:
            el.text = _NOT_XML.sub(_escape_char, el.text)
        for key, value in list(el.attrib.items()):
            el.set(key, _NOT_XML.sub(_escape_char, value))


def render(
    run: RunResult,
    name: str,
    timestamp: str | None = None,
    prepared: Callable[[HostResult, HostVerdict, str | None], Suite | None] | None = None,
) -> str:
    """JUnit XML text: fail -> <failure>, warn -> passes with system-out, unverified -> <skipped>
    (<failure> under --strict), unreachable -> <error>; the host's verdict (GO, NO-GO, no
    verdict) is its suite's `verdict` property; `timestamp` (the run's start, RFC 3339) is each
    suite's. `prepared`: a host's suite made (by `suite`) while the run went on, for this very
    result, verdict and timestamp (report/early.py), else None. As ElementTree writes the whole
    tree indented, each suite written on its own and the root around them."""
    suites = [
        (prepared(r, verdict, timestamp) if prepared is not None else None)
        or suite(r, verdict, run.strict, timestamp)
        for r, verdict in run
    ]
    root = ET.Element("testsuites", name=name)
    # (no `skipped` here: Jenkins xUnit's schema allows none on <testsuites>)
    for key in ("tests", "failures", "errors"):
        root.set(key, str(sum(s.counts[key] for s in suites)))
    _legal_xml(root)
    if not suites:
        return _XML_HEAD + ET.tostring(root, encoding="unicode") + "\n"
    root.text = _MARK
    start = ET.tostring(root, encoding="unicode")[: -len(_MARK + "</testsuites>")]
    body = "\n  ".join(s.xml for s in suites)
    return f"{_XML_HEAD}{start}\n  {body}\n</testsuites>\n"


_XML_HEAD = '<?xml version="1.0" encoding="UTF-8"?>\n'
_MARK = "SUITES"  # (stands for the suites in the root's text while its start tag is written)


@dataclass(frozen=True)
class Suite:
    """One host's <testsuite> as written in junit.xml (indented one level), and its counts."""

    xml: str
    counts: Counter[str]


def suite(r: HostResult, verdict: HostVerdict, strict: bool, timestamp: str | None = None) -> Suite:
    """One host's <testsuite>: its testcases (`_host_cases`), counts and verdict property."""
    el = ET.Element("testsuite", name=r.host.name, time=f"{r.duration:.3f}")
    if timestamp:
        el.set("timestamp", timestamp)
    props = ET.SubElement(el, "properties")
    ET.SubElement(props, "property", name="verdict", value=verdict.word)
    counts = _host_cases(el, r, strict)
    for key in ("tests", "skipped", "failures", "errors"):
        el.set(key, str(counts[key]))
    _legal_xml(el)
    ET.indent(el, level=1)
    return Suite(tostring(el), counts)


class _NotPlain(Exception):
    """A tree `tostring` leaves to ElementTree: a tag, attribute or text not a plain string."""


def tostring(root: ET.Element) -> str:
    """ET.tostring(root, encoding="unicode"), the same text, for a tree of plain string tags,
    attribute names, values and texts (what `suite` builds; anything else, a namespace, a
    comment, is ElementTree's to write): without ElementTree's pass over the tree for namespaces
    and its stream (a host's whole suite 0.22 -> 0.18 ms)."""
    out: list[str] = []
    try:
        _write(root, out.append)
    except _NotPlain:
        return ET.tostring(root, encoding="unicode")
    return "".join(out)


def _write(el: ET.Element, write: Callable[[str], None]) -> None:
    """One element as ElementTree's _serialize_xml writes it (short empty elements, its tail)."""
    tag, text = el.tag, el.text
    if type(tag) is not str or "{" in tag or (text is not None and type(text) is not str):
        raise _NotPlain
    write("<" + tag)
    for key, value in el.items():
        if type(key) is not str or "{" in key or type(value) is not str:
            raise _NotPlain
        write(f' {key}="{_escape_attrib(value)}"')
    if text or len(el):
        write(">")
        if text:
            write(escape_text(text))
        for child in el:
            _write(child, write)
        write("</" + tag + ">")
    else:
        write(" />")
    tail = el.tail
    if tail:
        if type(tail) is not str:
            raise _NotPlain
        write(escape_text(tail))


# an attribute value's characters ElementTree escapes beyond a text's, and as what
_ATTRIB_MORE = (('"', "&quot;"), ("\r", "&#13;"), ("\n", "&#10;"), ("\t", "&#09;"))


def _escape_attrib(text: str) -> str:
    """An attribute value as ElementTree escapes it (& < > " and CR, LF, tab as references)."""
    text = escape_text(text)
    for char, ref in _ATTRIB_MORE:
        if char in text:
            text = text.replace(char, ref)
    return text


def _host_cases(suite: ET.Element, r: HostResult, strict: bool) -> Counter[str]:
    """One host's testcases in `suite`; its counts of tests, skipped, failures and errors."""
    counts: Counter[str] = Counter()

    def case(classname: str, name: str, time: str) -> ET.Element:
        counts["tests"] += 1
        return ET.SubElement(suite, "testcase", classname=classname, name=name, time=time)

    if r.status == "unreachable" or (r.status == "failed" and not r.steps):
        # (failed before any step ran: facts could not be gathered, an internal error: the
        # suite held no testcase, 0 tests and 0 failures, which CI showed as a green host)
        what = "connect" if r.status == "unreachable" else "host"
        ET.SubElement(case(r.host.name, what, f"{r.duration:.3f}"), "error", message=r.msg).text = r.msg
        counts["errors"] += 1
    for step in r.steps:
        if not step.checks:
            c = case(r.host.name, step.step, f"{step.duration:.3f}")
            if step.status == "failed":
                counts["failures"] += 1
                ET.SubElement(c, "failure", message=step.msg).text = step.msg
            elif step.status == "skipped":
                counts["skipped"] += 1
                ET.SubElement(c, "skipped", message=step.msg)
            continue
        for check in step.checks:
            _check_case(case(f"{r.host.name}.{step.step}", check.name, RULE_TIME), check, strict, counts)
        if step.status == "failed" and not any(c.verdict == "fail" for c in step.checks):
            # a step that failed with none of its checks failing (a prove step whose script
            # could not run after its first checks passed) was all green
            c = case(r.host.name, step.step, f"{step.duration:.3f}")
            counts["failures"] += 1
            ET.SubElement(c, "failure", message=step.msg).text = step.msg
    return counts


def _check_case(case: ET.Element, c: Any, strict: bool, counts: Counter[str]) -> None:
    """One check's (a steps.base.Check) testcase body: a failure, a skip (unverified: neither
    a pass nor a failure of the box) or the verdict as system-out."""
    text = f"expected: {c.expected}\nactual: {c.actual}" + (f"\n{c.detail}" if c.detail else "")
    if c.verdict == "fail" or (c.verdict == "unverified" and strict):
        counts["failures"] += 1
        ET.SubElement(case, "failure", message=f"expected {c.expected}, got {c.actual}").text = text
    elif c.verdict == "unverified":
        counts["skipped"] += 1
        ET.SubElement(case, "skipped", message=f"unverified: {c.actual}").text = text
    else:
        ET.SubElement(case, "system-out").text = f"verdict: {c.verdict}\n{text}"
