"""A run's reports, written at its end: reports/<run-id>/summary.json, junit.xml, the HTML report
and the `latest` link, the --metrics-file for node_exporter; and, before connecting, whether the
folders and the metrics file they go to can be written. The HTML report's template and the
JUnit writer are loaded while the hosts run (preload_report), never before connecting.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gpuonboard import termtext, timings
from gpuonboard.errors import GpuonboardError
from gpuonboard.report import jsonfile
from gpuonboard.report.early import EarlyReport
from gpuonboard.results import RunResult


def unwritable_dir(path: Path) -> str | None:
    """Why the directory `path` cannot be made or written ("created (a-file is a file)"); None
    when it can. Nothing is left behind: a missing one is judged by its nearest existing
    parent (made later by what writes there, as before), and the write probe is a temp file."""
    import tempfile

    if path.exists() and not path.is_dir():
        return "created (it is a file)"
    verb, probe = "written", path
    if not path.exists():
        verb, probe = "created", path.parent
        while not probe.exists() and probe != probe.parent:
            probe = probe.parent
        if not probe.is_dir():
            return f"created ({probe} is a file)"
    try:
        with tempfile.TemporaryFile(dir=probe):  # (a read-only mount, /proc, another user's)
            pass
    except OSError as exc:
        return f"{verb} ({exc.strerror or exc})"
    return None


def metrics_file_problem(path: Path) -> str | None:
    """Before connecting: why --metrics-file cannot be written (its folder missing or read-only,
    the path a folder), or None. The folder is not made: node_exporter's textfile directory is
    set up with the exporter."""
    if path.is_dir():
        return f"--metrics-file {path} is a directory; give a file in it (node_exporter reads *.prom files)."
    if not path.parent.is_dir():
        return f"--metrics-file {path}: no directory {path.parent}; give a file in an existing directory."
    why = unwritable_dir(path.parent)
    if why is not None:
        return f"--metrics-file {path}: its directory cannot be {why}; give one you can write to."
    if _not_our_metrics(path):
        return (
            f"--metrics-file {path} is a file gpuonboard did not write (it does not start with"
            " gpuonboard's metrics), which the run would replace; give a new file, or the one an"
            " earlier run wrote."
        )
    return None


def _not_our_metrics(path: Path) -> bool:
    """A regular file with something in it that does not start as every metrics file gpuonboard
    writes does (`# HELP gpuonboard_`): `--metrics-file notes.txt` replaced the notes (the
    rename of the new file over it). An empty file (or one of only blanks and line ends, as
    `echo > gpu.prom` makes), or one an earlier run wrote, is replaced."""
    from gpuonboard.report.metrics import PREFIX

    head = f"# HELP {PREFIX}".encode()
    try:
        if not path.is_file():
            return False
        with path.open("rb") as f:
            start = f.read(_BLANK_READ)
            blank = not start.strip() and not f.read(1)
    except OSError:
        return False  # (the write says why it cannot replace it)
    return not blank and not start.startswith(head)


_BLANK_READ = 64 * 1024  # (a file of blanks past this much is not one `echo >` made)


def write_run_metrics(path: Path, doc: Mapping[str, Any]) -> None:
    """The run's metrics file (--metrics-file, report/metrics.py) from its summary document. A
    file that cannot be written is a warning on stderr: the reports, the run's record, stand."""
    from gpuonboard.report import metrics

    try:
        metrics.write(path, metrics.render(metrics.run_families(doc)))
    except OSError as exc:
        why = termtext.for_terminal(exc.strerror or str(exc))
        print(f"warning: --metrics-file {path} could not be written ({why}).", file=sys.stderr)
        return
    if not path.name.endswith(".prom"):
        print(
            f"warning: wrote {path}, but node_exporter's textfile collector reads only *.prom files.",
            file=sys.stderr,
        )


def write_reports(
    outcome: RunResult,
    meta: dict[str, Any],
    reports_dir: Path,
    run_id: str,
    project: Path | None = None,
    early: EarlyReport | None = None,
    metrics_file: Path | None = None,
) -> Path:
    """reports/<run-id>/summary.json and junit.xml, plus a `latest` link; with `project` (whose
    templates/ it uses), the HTML report too, so that every run leaves one to open; with
    `metrics_file`, the run's Prometheus text file.

    Each probe's raw output goes to raw/<host>/<probe>.txt (its sha256 is in summary.json)."""
    out = reports_dir / run_id
    done = early.hosts if early is not None else set()
    written = dict(early.written) if early is not None else {}
    written.update(jsonfile.write_raw(out, [r for r in outcome.hosts if r.host.name not in done]))
    doc = jsonfile.summary(outcome, meta, early.record_of if early is not None else None)
    jsonfile.write(out / "summary.json", doc, early.line_of if early is not None else None)
    timings.mark("summary")
    from gpuonboard.report import junit  # (xml.etree: not before connecting)

    junit_text = junit.render(
        outcome,
        f"gpuonboard {meta['playbook']}",
        timestamp=meta.get("started"),
        prepared=early.suite_of if early is not None else None,
    )
    jsonfile.write_atomic(out / "junit.xml", junit_text)
    timings.mark("junit")
    if metrics_file is not None:
        write_run_metrics(metrics_file, doc)
    if project is not None:
        write_html_report(doc, out, project, written, early)
    latest = reports_dir / "latest"
    try:
        tmp = reports_dir / f".latest.{run_id}"
        tmp.symlink_to(run_id)
        os.replace(tmp, latest)
    except OSError:
        pass  # a filesystem without symlinks still has the run directory
    return out


def write_html_report(
    doc: dict[str, Any],
    out: Path,
    project: Path,
    written: Mapping[str, bytes] | None = None,
    early: EarlyReport | None = None,
) -> Path | None:
    """reports/<run-id>/report.html (and its .sha256) from the summary just written: rendered
    once per run, whatever the number of hosts (`early`: the host sections rendered as each
    host was done). A project's broken report template does not undo the run: one warning on
    stderr says why, and None is returned."""
    from gpuonboard.report.render import render_pieces, report_name, write_with_sha

    try:
        path = out / report_name("html")
        # (in pieces: the page, 13 MB at 50 hosts, is not joined into one string to be written)
        write_with_sha(path, render_pieces(doc, out, "html", project, written=written, early=early))
    except GpuonboardError as exc:
        print(f"warning: no HTML report for this run: {termtext.for_terminal(exc.message)}", file=sys.stderr)
        return None
    except OSError as exc:  # (a full disk, a file-size limit: summary.json, the record, is written)
        why = termtext.for_terminal(exc.strerror or str(exc))
        print(f"warning: no HTML report for this run: {out} could not take it ({why}).", file=sys.stderr)
        return None
    return path


def preload_report(project: Path) -> None:
    """Load the HTML report's template (imports, its compiled code) while the hosts run; any
    problem is left for the real render to report."""
    from gpuonboard.report import junit  # noqa: F401  (its imports, before the first host is done)
    from gpuonboard.report.render import preload

    with contextlib.suppress(Exception):
        preload(project)
