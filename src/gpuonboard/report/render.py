"""`invoke report`: an evidence-grade acceptance report (HTML, Markdown, JSON) from summary.json.

The view model (`context`, view.py) is computed apart from the Jinja2 templates under
`templates/report/`, which only lay it out (templates.py: their environments and limits).
HTML is rendered with autoescape on: every value from a host or inventory is text, never
markup. A `<file>.sha256` (sha256sum format) is written next to each report (runs.py, which
also names the files and loads a run); compare.py holds `--compare`.

This module renders and writes one report, and re-exports the names that callers and tests
read here.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpuonboard.errors import UsageError
from gpuonboard.i18n import check_lang, status_word, t, verdict_word
from gpuonboard.report.compare import compare, compare_rows, identity_warnings, ordered_gpus
from gpuonboard.report.runs import (
    FORMATS,
    judged,
    legacy_safe_name,
    load_summary,
    newest_acceptance_run,
    raw_file,
    run_dir,
    safe_name,
    sha256_bytes,
    shape_problem,
    write_atomic,
    write_with_sha,
)
from gpuonboard.report.strictjson import dumps as strict_dumps
from gpuonboard.report.templates import (
    REPORT_TEXT_LIMIT,
    _environment_for,
    _render_template,
    is_shipped,
    md_cell,
    md_code,
    report_limits,
)
from gpuonboard.report.view import (
    COMPAT_STEPS,
    HEALTH_STEPS,
    RAW_INLINE_LIMIT,
    RULE_PROBES,
    chart_svg,
    context,
    host_headline,
    host_verdict,
    order_rows,
    step_rows,
    warn_suffix,
    warned_checks,
)

if TYPE_CHECKING:
    from gpuonboard.report.early import EarlyReport

__all__ = [
    "COMPAT_STEPS",
    "FORMATS",
    "HEALTH_STEPS",
    "RAW_INLINE_LIMIT",
    "RULE_PROBES",
    "chart_svg",
    "compare",
    "compare_rows",
    "context",
    "host_headline",
    "HOST_TEMPLATE",
    "host_verdict",
    "identity_warnings",
    "judged",
    "legacy_safe_name",
    "load_summary",
    "markup_chart",
    "md_cell",
    "md_code",
    "newest_acceptance_run",
    "order_rows",
    "ordered_gpus",
    "preload",
    "raw_file",
    "render",
    "render_pieces",
    "report",
    "report_limits",
    "report_name",
    "run_dir",
    "safe_name",
    "section_html",
    "sha256_bytes",
    "shape_problem",
    "step_rows",
    "template_words",
    "warn_suffix",
    "warned_checks",
    "write_atomic",
    "write_with_sha",
]


HOST_TEMPLATE = "report/html_host.j2"  # one host's section of the shipped html.j2


def render(
    doc: dict[str, Any],
    run_path: Path,
    fmt: str,
    project: Path,
    lang: str = "en",
    written: Mapping[str, bytes] | None = None,
    early: EarlyReport | None = None,
) -> str:
    """The report text in html, md or json (json: always English, machine-readable); `written`:
    see view._raw_entries; `early`: the hosts' views and HTML sections prepared while the run
    went on (report/early.py), used where they are of these very host records."""
    return "".join(render_pieces(doc, run_path, fmt, project, lang, written, early))


def render_pieces(
    doc: dict[str, Any],
    run_path: Path,
    fmt: str,
    project: Path,
    lang: str = "en",
    written: Mapping[str, bytes] | None = None,
    early: EarlyReport | None = None,
) -> list[str]:
    """render's text in pieces (their join is that text): the shipped HTML page's own pieces,
    each host's section one (shipped_pieces), for runs.write_with_sha, which writes them one
    after another; any other report, one piece."""
    lang = check_lang(lang)
    ctx = context(doc, run_path, "en" if fmt == "json" else lang, written, early.view_of if early else None)
    if fmt == "json":
        slim = {k: v for k, v in ctx.items() if k != "doc"}
        slim["run"] = {k: v for k, v in doc.items() if k != "hosts"}
        slim["hosts"] = [
            {k: v for k, v in h.items() if k not in ("steps", "step_rows", "chart")}
            | {"raw_entries": [{k: v for k, v in e.items() if k != "text"} for e in h["raw_entries"]]}
            for h in ctx["hosts"]
        ]
        return [strict_dumps(slim, indent=2) + "\n"]
    for h in ctx["hosts"]:
        markup_chart(h)
    words = template_words(lang)
    env = _environment_for(project, f"report/{fmt}.j2", fmt == "html")

    def host_section(h: dict[str, Any]) -> Section:
        """One host's section (html_host.j2), as prepared when that host was done if it was."""
        done = early.section_of(h, env, lang) if early else None
        return Section(done if done is not None else section_html(env, h, words))

    fields = {**ctx, **words, "host_section": host_section, "report_file": report_name(fmt, lang)}
    if fmt == "html" and (page := shipped_pieces(env, fields)) is not None:
        return page
    return [_render_template(project, fmt, f"report/{fmt}.j2", **fields)]


def shipped_page(env: Any, fields: dict[str, Any]) -> str | None:
    """The HTML report's page when `env` is the shipped templates' (html.j2's text, built by
    report.page without Jinja2); None where the template renders it (a project's own, a page
    the builder cannot build, one longer than a report may be: the template says why)."""
    pieces = shipped_pieces(env, fields)
    return None if pieces is None else "".join(pieces)


def shipped_pieces(env: Any, fields: dict[str, Any]) -> list[str] | None:
    """shipped_page's text in pieces (report.page.page_pieces), not joined."""
    if not is_shipped(env):
        return None
    from gpuonboard.report.page import page_pieces, static_head

    head = static_head(env.source("report/html.j2") or "")
    if head is None:
        return None
    try:
        pieces = page_pieces(fields, head)
    except Exception:  # (KeyError, TypeError ...: the template raises its own error)
        return None
    return pieces if sum(map(len, pieces)) <= REPORT_TEXT_LIMIT else None


class Section:
    """A host's section of the HTML report: markup (`__html__`) to an autoescaping template, and
    the very text, not a copy (13 MB at 50 hosts), where html.j2 writes it unescaped."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __html__(self) -> str:
        return self.text

    def __str__(self) -> str:
        return self.text


def section_html(env: Any, h: dict[str, Any], words: dict[str, Any]) -> str:
    """One host's section of the HTML report (HOST_TEMPLATE rendered in `env` with h=`h` and
    `words`): the shipped template's text built by report.section (the same bytes, a fifth of
    the CPU), a project's own report template's rendered in its sandbox. A view the builder
    cannot read as the template would is rendered by the template, which says what is wrong."""
    if is_shipped(env):
        from gpuonboard.report.section import host_html

        try:
            return host_html(h, words)
        except Exception:  # (KeyError, TypeError ...: the template raises its own error)
            pass
    return str(env.get_template(HOST_TEMPLATE).render(h=h, **words))


def markup_chart(h: dict[str, Any]) -> None:
    """A host view's chart as markup (built from numbers and escaped names only)."""
    from markupsafe import Markup

    h["chart"] = Markup(h["chart"])


def template_words(lang: str) -> dict[str, Any]:
    """The fixed-text functions every report template calls: `_`, verdict_word, status_word."""

    def _(key: str, **fields: Any) -> str:
        return t(key, lang, **fields)

    return {
        "_": _,
        "verdict_word": lambda v: verdict_word(v, lang),
        "status_word": lambda s: status_word(s, lang),
    }


def preload(project: Path, fmt: str = "html") -> None:
    """Load the report template a run will render (its environment, imports and compiled
    code), so that a run can do it while its hosts still run; the shipped HTML report, built
    without its template (shipped_page), has none to load."""
    env = _environment_for(project, f"report/{fmt}.j2", fmt == "html")
    if fmt == "html" and is_shipped(env):
        from gpuonboard.report import page, section  # noqa: F401  (their imports)

        return
    env.get_template(f"report/{fmt}.j2")


def report_name(fmt: str, lang: str = "en") -> str:
    """report.html, or report.zh.html for another language (json is always English)."""
    return f"report.{fmt}" if lang == "en" or fmt == "json" else f"report.{lang}.{fmt}"


def report(
    reports_dir: Path, run: str | None, fmt: str, project: Path, lang: str = "en"
) -> tuple[Path, str, bool]:
    """Render reports/<run>/report.<fmt>; return (path, sha256, go)."""
    if fmt not in FORMATS:
        raise UsageError(f"--format {fmt!r} is not one of {', '.join(FORMATS)}.")
    lang = check_lang(lang)
    path = run_dir(reports_dir, run)
    doc = load_summary(path / "summary.json")
    text = render(doc, path, fmt, project, lang)
    out = path / report_name(fmt, lang)
    digest = write_with_sha(out, text)
    return out, digest, context(doc, path)["go"]
