"""report/page.py builds the page of the shipped HTML report byte for byte as
templates/report/html.j2 renders it: GO, NO-GO and no verdict, a warned headline, the run's
warnings, a check-mode run, markup and quotes in every recorded value; in every language. A
page it cannot build renders by the template, and a report of the shipped template imports no
Jinja2."""

from __future__ import annotations

import copy
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import jinja2
import pytest

import gpuonboard
from gpuonboard.i18n import LANGS
from gpuonboard.report import page, render, templates
from gpuonboard.report.view import context

from .rich_run import rich_run
from .test_section import NASTY

REPO = Path(__file__).resolve().parents[3]


def _env(tmp_path: Path) -> Any:
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    env = templates._environment_for(project, "report/html.j2", True)
    assert templates.is_shipped(env)
    return env


def _fields(tmp_path: Path, lang: str) -> list[dict[str, Any]]:
    """render.render's fields for the rich run, and the same with each part changed."""
    run = rich_run(tmp_path / lang)
    doc = render.load_summary(run / "summary.json")
    ctx = context(doc, run, lang)
    for h in ctx["hosts"]:
        render.markup_chart(h)
    base = {
        **ctx,
        **render.template_words(lang),
        "host_section": lambda h: render.Section(f"<section>{h['name']}</section>\n"),
        "report_file": render.report_name("html", lang),
    }
    variants = [base]
    for go, verdict in [(True, "GO"), (False, "NO-GO"), (False, "no verdict")]:
        variants.append({**base, "go": go, "verdict": verdict})
    variants.append({**base, "headline_suffix": "", "warnings": [], "hosts": []})
    nasty = copy.deepcopy({k: v for k, v in base.items() if k != "host_section"})
    nasty["host_section"] = base["host_section"]
    nasty["doc"].update(
        run_id=NASTY, playbook=NASTY, inventory=NASTY, started=NASTY, finished=None, duration=1.5
    )
    nasty["doc"].update(check_mode=True, tool_version=NASTY, schema=NASTY)
    nasty.update(headline_suffix=NASTY, explain=NASTY, warnings=[NASTY, 3], renderer_version=NASTY)
    nasty["report_file"] = NASTY
    for h in nasty["hosts"]:
        h.update(name=NASTY, headline_suffix=NASTY)
    variants.append(nasty)
    return variants


@pytest.mark.parametrize("lang", LANGS)
def test_the_page_is_the_templates_byte_for_byte(tmp_path: Path, lang: str) -> None:
    env = _env(tmp_path)
    template = env.get_template("report/html.j2")
    head = page.static_head(env.source("report/html.j2"))
    assert head is not None and "<style>" in head
    variants = _fields(tmp_path, lang)
    assert any(f["warnings"] and f["headline_suffix"] and f["doc"]["check_mode"] for f in variants)
    for fields in variants:
        built = page.page_html(fields, head)
        assert built == template.render(**fields)
        assert render.shipped_page(env, fields) == built


def test_a_page_the_builder_cannot_build_renders_by_the_template(tmp_path: Path) -> None:
    env = _env(tmp_path)
    fields = _fields(tmp_path, "en")[0]
    del fields["doc"]["schema"]
    assert render.shipped_page(env, fields) is None
    with pytest.raises(jinja2.UndefinedError):  # (the template's own error, as before)
        env.get_template("report/html.j2").render(**fields)
    assert page.static_head("<title>{{ x }}</title>\n<style>{{ y }}</style><h1>") is None
    assert page.static_head("no head") is None


def test_a_report_of_the_shipped_template_imports_no_jinja2(tmp_path: Path) -> None:
    """The shipped HTML report, rendered in a fresh interpreter: the same text as before, and
    Jinja2 never imported (its import and environment were ~30 ms of CPU a run)."""
    run = rich_run(tmp_path)
    code = (
        "import sys; from pathlib import Path; from gpuonboard.report import render;"
        f"render.preload(Path({str(tmp_path)!r}));"
        f"doc = render.load_summary(Path({str(run)!r}) / 'summary.json');"
        f"sys.stdout.write(render.render(doc, Path({str(run)!r}), 'html', Path({str(tmp_path)!r})));"
        "assert 'jinja2' not in sys.modules, 'jinja2 imported'"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(gpuonboard.__file__).parents[1])}  # (this package)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False)
    assert done.returncode == 0, done.stderr
    doc = render.load_summary(run / "summary.json")
    by_template = render._render_template(
        tmp_path,
        "html",
        "report/html.j2",
        **_fields_of(doc, run),
    )
    assert done.stdout == by_template


def _fields_of(doc: dict[str, Any], run: Path) -> dict[str, Any]:
    """render.render's fields for `doc`, its sections rendered by html_host.j2."""
    ctx = context(doc, run, "en")
    for h in ctx["hosts"]:
        render.markup_chart(h)
    words = render.template_words("en")
    host = templates._env((str(REPO / "templates"),), True, True).get_template(render.HOST_TEMPLATE)
    return {
        **ctx,
        **words,
        "host_section": lambda h: render.Section(host.render(h=h, **words)),
        "report_file": "report.html",
    }
