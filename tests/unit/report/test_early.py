"""The reports prepared host by host as each host is done (report/early.py) are byte for byte
the ones made at the end of the run: summary.json, junit.xml, report.html and its .sha256, the
raw files; and a part is used only where it was made from the very result and verdict."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from gpuonboard import api
from gpuonboard.connection.gather import parse_facts
from gpuonboard.facts.probe import ProbeOutput
from gpuonboard.inventory import Host
from gpuonboard.report import jsonfile, junit
from gpuonboard.report.early import EarlyReport
from gpuonboard.results import HostResult, RunResult, conclude
from gpuonboard.steps.base import Check, StepResult

REAL = Path(__file__).parents[2] / "fixtures" / "real"
XML = "../derived/nvidia-smi-q-x__a100-sxm4-80gb__8gpu__derived.xml"  # (the simulator's 8xA100)
RUN = "20261202-000000-aaaa"
STARTED = "2026-12-02T00:00:00Z"


def _results() -> list[HostResult]:
    outputs = {
        "nvidia_smi": ProbeOutput((REAL / XML).read_text(), "", 0),
        "free": ProbeOutput((REAL / "free__ubuntu-18.04-vm.txt").read_text(), "", 0),
        "nproc": ProbeOutput("<b>8</b> & \x1b[31m\n", "", 127),  # markup and a control character
    }
    facts = dataclasses.replace(parse_facts(outputs), raw=outputs)
    checks = [
        Check("gpu_count", "8", "8", "pass"),
        Check("persistence_mode", "Enabled", "Disabled <on> GPU 0 & 1", "warn", "nvidia-smi -pm 1"),
        Check("gpu_model", "H100", "A100 \x1b[0m", "fail"),
        Check("pcie_link", "Gen4 x16", "unknown", "unverified", "lspci needs root"),
    ]
    steps = [
        StepResult("acceptance", "failed", "1 rule failed", checks, duration=0.25),
        StepResult("container", "skipped", "no image", duration=0.0),
    ]
    return [
        HostResult(Host(name="gpu-a", address="10.0.0.1"), "failed", "1 failed", steps, facts, "SHA:x", 1.5),
        HostResult(Host(name="武汉 1", address="10.0.0.2"), "ok", "2 ok", steps[1:], facts, "SHA256:y", 0.5),
        HostResult(Host(name="gone", address="10.0.0.3"), "unreachable", "no route to host", duration=3.0),
    ]


def _files(run: Path) -> dict[str, bytes]:
    return {p.relative_to(run).as_posix(): p.read_bytes() for p in sorted(run.rglob("*")) if p.is_file()}


def _write(tmp_path: Path, outcome: RunResult, early: EarlyReport | None, where: str) -> dict[str, bytes]:
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    meta = {"run_id": RUN, "playbook": "acceptance", "check_mode": True, "strict": outcome.strict}
    meta |= {"started": STARTED, "exit_code": int(outcome.exit_code)}
    out = api.write_reports(outcome, meta, tmp_path / where, RUN, project=project, early=early)
    return _files(out)


@pytest.mark.parametrize("strict", [False, True])
def test_the_early_reports_are_the_ones_made_at_the_end(tmp_path: Path, strict: bool) -> None:
    results = _results()
    early = EarlyReport(tmp_path / "early" / RUN, tmp_path / "project", strict, STARTED)
    (tmp_path / "project").mkdir()
    for r in results:
        early(r)
    outcome = conclude(results, strict)
    # every part was prepared, and is what the end uses
    for r, v in outcome:
        record = early.record_of(r, v)
        assert record is not None and early.suite_of(r, v, STARTED) is not None
        view = early.view_of(record, "en", strict)
        assert view is not None and early.section_of(view, early._get(r.host.name).env, "en")  # type: ignore[union-attr]
    doc = jsonfile.summary(outcome, {}, early.record_of)
    assert [h is early.record_of(r, v) for h, (r, v) in zip(doc["hosts"], outcome, strict=True)] == [True] * 3

    made_early = _write(tmp_path, outcome, early, "early")
    made_late = _write(tmp_path, outcome, None, "late")
    assert sorted(made_early) == sorted(made_late)
    assert {"summary.json", "junit.xml", "report.html", "report.html.sha256"} <= set(made_late)
    for name, data in made_late.items():
        assert made_early[name] == data, name
    assert b"\\x1b" in made_late["junit.xml"] and b"&lt;b&gt;8&lt;/b&gt;" in made_late["report.html"]


def test_a_part_is_used_only_for_the_result_verdict_and_timestamp_it_was_made_from(tmp_path: Path) -> None:
    results = _results()
    early = EarlyReport(tmp_path / "run", None, False, STARTED)
    for r in results:
        early(r)
    outcome = conclude(results, False)
    r, v = next(iter(outcome))
    assert early.record_of(r, v) is not None
    assert early.record_of(dataclasses.replace(r), v) is None  # another result object
    assert early.record_of(r, dataclasses.replace(v, word="GO")) is None  # another verdict
    assert early.suite_of(r, v, "2026-12-03T00:00:00Z") is None  # another run start
    record = early.record_of(r, v)
    assert record is not None and early.view_of(record, "en", False) is None  # no project: no view
    assert early.line_of(dict(record)) is None and early.line_of(record) is not None
    # junit.xml from the prepared suites and from none: the same text
    name = "gpuonboard check"
    assert junit.render(outcome, name, STARTED, early.suite_of) == junit.render(outcome, name, STARTED)


def test_a_report_template_the_project_adds_while_hosts_are_done_renders_the_whole_report(
    tmp_path: Path,
) -> None:
    """The early report looks the HTML template up once, for the first host done; a project
    that brings its own report/html.j2 after that (here: after the first of three hosts) still
    has its report rendered by its template, for every host, byte for byte as without any
    early part (the shipped sections made before are not used)."""
    from gpuonboard.resources import shipped_root

    results = _results()
    project = tmp_path / "project"
    project.mkdir()
    early = EarlyReport(tmp_path / "early" / RUN, project, False, STARTED)
    early(results[0])
    shipped = shipped_root()
    assert shipped is not None
    (project / "templates" / "report").mkdir(parents=True)
    template = (shipped / "templates" / "report" / "html.j2").read_text()
    (project / "templates" / "report" / "html.j2").write_text("<!-- the project's own -->\n" + template)
    for r in results[1:]:
        early(r)
    outcome = conclude(results, False)
    made_early = _write(tmp_path, outcome, early, "early")
    made_late = _write(tmp_path, outcome, None, "late")
    assert made_early["report.html"].startswith(b"<!-- the project's own -->")
    assert made_early == made_late


def test_a_prepared_host_keeps_one_copy_of_its_raw_texts(tmp_path: Path) -> None:
    """Once a host's view is made, the run keeps its raw texts once: the view's text of an
    ASCII output is the probe's output itself (no decoded copy of the written bytes), and the
    written bytes are let go (the file names stay, for remove()); a text with another character
    is decoded from the bytes, as before (a lone surrogate shows as U+FFFD)."""
    (tmp_path / "project").mkdir()
    early = EarlyReport(tmp_path / "run", tmp_path / "project", False, STARTED)
    r = _results()[0]
    raw = dict(r.facts.raw)  # type: ignore[union-attr]
    raw["uname"] = ProbeOutput("Linux caf\udce9 \u00e9t\u00e9\n", "", 0)
    r = dataclasses.replace(r, facts=dataclasses.replace(r.facts, raw=raw))  # type: ignore[type-var]
    early(r)
    assert early.written == {} and sorted(early.files) == sorted(jsonfile.write_raw(tmp_path / "late", [r]))
    view = early.view_of(early._get(r.host.name).record, "en", False)  # type: ignore[union-attr]
    texts = {e["probe"]: e["text"] for e in view["raw_entries"]}  # type: ignore[index]
    assert texts["nvidia_smi"] is raw["nvidia_smi"].stdout
    assert texts["uname"] == "Linux caf\ufffd \u00e9t\u00e9\n"
    early.remove()
    assert not (tmp_path / "run").exists()


def test_a_prepared_host_whose_view_the_end_does_not_use_reads_its_raw_files_back(tmp_path: Path) -> None:
    """The end of the run makes a host's view anew where the prepared one is not of its record
    (here: other result objects): its raw files, whose bytes were let go, are read back and
    verified by their sha256; every file is byte for byte the one made without early parts."""
    results = _results()
    (tmp_path / "project").mkdir()
    early = EarlyReport(tmp_path / "early" / RUN, tmp_path / "project", False, STARTED)
    for r in results:
        early(r)
    assert early.written == {}
    outcome = conclude([dataclasses.replace(r) for r in results], False)
    assert all(early.record_of(r, v) is None for r, v in outcome)
    made_early = _write(tmp_path, outcome, early, "early")
    made_late = _write(tmp_path, conclude(results, False), None, "late")
    assert made_early == made_late
    assert b"&lt;b&gt;8&lt;/b&gt;" in made_late["report.html"]


def test_the_run_writes_the_html_report_in_pieces_as_the_rendered_text(tmp_path: Path) -> None:
    """The run's report.html, written a piece at a time (render.render_pieces: each host's
    section one piece, never joined into one string), is the text `invoke report` renders from
    the same summary and raw files, encoded."""
    import json

    from gpuonboard.report import render

    made = _write(tmp_path, conclude(_results(), False), None, "late")
    doc = json.loads(made["summary.json"])
    pieces = render.render_pieces(doc, tmp_path / "late" / RUN, "html", tmp_path / "project")
    text = render.render(doc, tmp_path / "late" / RUN, "html", tmp_path / "project")
    assert len(pieces) > 3 and "".join(pieces) == text
    assert made["report.html"] == text.encode("utf-8", "backslashreplace")
