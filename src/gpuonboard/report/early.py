"""A run's reports prepared host by host, as each host is done (RunOptions.on_host_done, in
that host's worker thread, while other hosts still wait on the network), instead of all of
them after the last host: the host's raw files written (reports/<run-id>/raw/), its verdict,
its summary.json record and line, its HTML view and its section of the shipped HTML report
(templates/report/html_host.j2).

The end of the run (api.write_reports) uses a host's prepared parts only where they are of the
very objects it would make them from: the record, where the host's result is the object it was
prepared from and its verdict (judged once, results.conclude) is equal; the view and section,
where the summary holds that record and the lang, strictness and template environment are the
same. Whatever was not prepared (a host whose preparation failed, a project's own report
template, which renders in the bounded sandbox) is made at the end, as before: the files are
byte for byte the ones made at the end (tests/unit/report/test_early.py). A run that is
interrupted removes exactly the raw files written here, since such a run leaves no report.
"""

from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuonboard.report import jsonfile
from gpuonboard.report.strictjson import dumps
from gpuonboard.results import HostResult, HostVerdict, host_record, judge

_HTML = "report/html.j2"


@dataclass
class Prepared:
    """One host's parts, made as it was done."""

    result: HostResult
    verdict: HostVerdict
    record: dict[str, Any]  # its summary.json record (jsonfile.host_json)
    line: str  # that record as summary.json's line
    suite: Any = None  # its junit.xml suite (junit.Suite)
    view: dict[str, Any] | None = None  # its view (view.host_view), lang "en"
    env: Any = None  # the environment its section was rendered in
    section: str | None = None  # its section of the HTML report


class EarlyReport:
    """The on_host_done hook of a run (see the module). `project`: the project whose report
    template renders the run's HTML report (None: raw files and summary records only);
    `strict`: the run's --strict; `timestamp`: its start, as junit.xml writes it."""

    def __init__(
        self, out: Path, project: Path | None = None, strict: bool = False, timestamp: str | None = None
    ) -> None:
        self.out = out
        self.project = project
        self.strict = strict
        self.timestamp = timestamp
        # the raw files written here (by name under `out`), and the bytes of those a report
        # still reads: a host's are let go once its view holds their text (_render), so a run
        # keeps one copy of a host's raw texts, not two (~200 kB a host); the end of the run
        # reads a file back, verified by its sha256, for a prepared view it does not use
        self.files: list[str] = []
        self.written: dict[str, bytes] = {}
        self.hosts: set[str] = set()
        self.closed = False
        self._prepared: dict[str, Prepared] = {}
        self._lock = threading.Lock()
        # the environment of the HTML template, looked up by the first host done: the run's
        # report is rendered in the environment looked up at its end, and a section rendered
        # in another (a template the project added meanwhile) is not used (section_of)
        self._env: Any = None

    def __call__(self, result: HostResult) -> None:
        outputs, texts = jsonfile.raw_outputs_and_texts(result)
        with self._lock:  # (one host at a time: quick, and never after remove())
            if self.closed:
                return
            written = jsonfile.write_outputs(self.out, result.host.name, outputs)
            self.files += written
            self.written.update(written)
            self.hosts.add(result.host.name)
        verdict = judge(host_record(result), self.strict)
        record = jsonfile.host_json(result, verdict, outputs)
        from gpuonboard.report import junit  # (xml.etree: imported by the first host done)

        done = Prepared(result, verdict, record, dumps(record))
        done.suite = junit.suite(result, verdict, self.strict, self.timestamp)
        if self.project is not None:
            self._render(done, written, texts)
        with self._lock:
            self._prepared[result.host.name] = done
            if done.view is not None:  # (its text is the view's now: see __init__)
                for name in written:
                    self.written.pop(name, None)

    def _render(self, done: Prepared, written: dict[str, bytes], texts: dict[str, str]) -> None:
        """The host's view, and its HTML section when the shipped template renders the report
        (a project's own renders in the bounded sandbox, at the end). `texts`: by probe, the
        ASCII texts the raw files' bytes were encoded from (the view keeps those, no copy)."""
        from gpuonboard.report import render, templates, view
        from gpuonboard.report.runs import raw_file

        assert self.project is not None
        name = done.result.host.name
        by_file = {raw_file(name, probe): text for probe, text in texts.items()}
        done.view = view.host_view(done.record, self.out, "en", written, self.strict, by_file)
        env = self._env
        if env is None:
            env = self._env = templates._environment_for(self.project, _HTML, True)
        if not templates.is_shipped(env):  # (the project's own: the bounded sandbox's)
            return
        render.markup_chart(done.view)
        words = render.template_words("en")
        done.section = render.section_html(env, done.view, words)
        done.env = env

    def _get(self, name: Any) -> Prepared | None:
        with self._lock:
            return self._prepared.get(name) if isinstance(name, str) else None

    def record_of(self, result: HostResult, verdict: HostVerdict) -> dict[str, Any] | None:
        """The host's summary record, when prepared from this result with this verdict."""
        done = self._get(result.host.name)
        return done.record if done and done.result is result and done.verdict == verdict else None

    def suite_of(self, result: HostResult, verdict: HostVerdict, timestamp: str | None) -> Any:
        """The host's junit.xml suite, when prepared from this result, verdict and timestamp."""
        done = self._get(result.host.name)
        if (
            done is None
            or done.result is not result
            or done.verdict != verdict
            or timestamp != self.timestamp
        ):
            return None
        return done.suite

    def line_of(self, record: dict[str, Any]) -> str | None:
        """The summary.json line of a record prepared here."""
        done = self._get(record.get("name"))
        return done.line if done and done.record is record else None

    def view_of(self, record: dict[str, Any], lang: str, strict: bool) -> dict[str, Any] | None:
        """The view of a record prepared here, for the report in `lang` (`strict`: the run's)."""
        done = self._get(record.get("name"))
        if done is None or done.record is not record or lang != "en" or strict != self.strict:
            return None
        return done.view

    def section_of(self, view: dict[str, Any], env: Any, lang: str) -> str | None:
        """The HTML section of a view prepared here, rendered in `env` for `lang`."""
        done = self._get(view.get("name"))
        if done is None or done.view is not view or done.env is not env or lang != "en":
            return None
        return done.section

    def remove(self) -> None:
        """Remove the files written here, then their folders when that leaves them empty."""
        with self._lock:
            self.closed = True
            names = list(self.files)
        for name in names:
            with contextlib.suppress(OSError):
                (self.out / name).unlink()
        for folder in sorted({(self.out / n).parent for n in names}, reverse=True):
            with contextlib.suppress(OSError):
                folder.rmdir()
        for folder in (self.out / "raw", self.out):
            with contextlib.suppress(OSError):
                folder.rmdir()
