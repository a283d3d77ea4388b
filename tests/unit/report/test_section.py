"""report/section.py builds a host's section of the shipped HTML report byte for byte as
templates/report/html_host.j2 renders it: every part of a view (rich_run: warned, unverified and
failed rules, compat rows, benchmarks and their chart, vendor warnings, verified, edited and
missing raw files), the parts a view can lack, markup and quotes in every recorded value, a
raw output shown cut short; in every language. A view it cannot read renders by the template."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import jinja2
import pytest

from gpuonboard.i18n import LANGS
from gpuonboard.report import render, section, templates
from gpuonboard.report.view import context

from .rich_run import rich_run

NASTY = "<b>x</b> & 'q' \"dq\" &amp; \x1b[31m 武汉"


def _env(tmp_path: Path) -> Any:
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    env = templates._environment_for(project, "report/html.j2", True)
    assert templates.is_shipped(env)
    return env


def _views(tmp_path: Path, lang: str) -> list[dict[str, Any]]:
    run = rich_run(tmp_path / lang)
    doc = render.load_summary(run / "summary.json")
    hosts = context(doc, run, lang)["hosts"]
    for h in hosts:
        render.markup_chart(h)
    bare = copy.deepcopy(hosts[0])  # every optional part absent
    bare.update(
        raw_entries=[],
        compat_rows=[],
        benchmarks=[],
        facts=None,
        reasons=[],
        headline_suffix="",
        vendor_warnings=[],
        vendor_name=None,
        vendor=None,
        host_key_fingerprint=None,
    )
    bare.pop("vendor_licence", None)
    nasty = copy.deepcopy(hosts[1])  # markup, quotes and control characters in recorded values
    nasty.update(name=NASTY, address=NASTY, msg=NASTY, reasons=[NASTY, 3], headline_suffix=NASTY)
    nasty["facts"] = {"os": NASTY, "kernel": None, "driver_version": 535, "cuda_version": 12.2}
    for row in [*nasty["rule_rows"], *nasty["compat_rows"]]:
        row.update(expected=NASTY, actual=None, detail=NASTY)
    for row in nasty["rule_rows"]:
        row["evidence"] = row["evidence"][:1]
    for e in nasty["raw_entries"]:
        e.update(text=NASTY * 3, truncated=True, probe=NASTY)
    nasty["order_rows"] = [{"field": NASTY, "ordered": 8, "delivered": None}]
    nasty["benchmarks"] = [{"name": NASTY, "value": 1.5}, {"name": "b", "value": 2, "unit": "<u>"}]
    nasty["chart"] = NASTY  # (not markup: escaped, as the template does)
    return [*hosts, bare, nasty]


@pytest.mark.parametrize("lang", LANGS)
def test_the_section_is_the_templates_byte_for_byte(tmp_path: Path, lang: str) -> None:
    env = _env(tmp_path)
    words = render.template_words(lang)
    template = env.get_template(render.HOST_TEMPLATE)
    views = _views(tmp_path, lang)
    assert any(h["compat_rows"] and h["benchmarks"] and h["vendor_warnings"] for h in views)
    assert any(not h["raw_entries"] for h in views)
    for h in views:
        built = section.host_html(h, words)
        assert built == template.render(h=h, **words)
        assert render.section_html(env, h, words) == built


def test_a_view_the_builder_cannot_read_renders_by_the_template(tmp_path: Path) -> None:
    env = _env(tmp_path)
    words = render.template_words("en")
    h = _views(tmp_path, "en")[0]
    del h["step_rows"]
    with pytest.raises(KeyError):
        section.host_html(h, words)
    with pytest.raises(jinja2.UndefinedError):  # (the template's own error, as before)
        render.section_html(env, h, words)
    h["step_rows"] = [{"step": "s", "status": "ok", "msg": "m", "duration": 1.0}]
    h["rule_rows"] = [object()]  # (the template reads an attribute where the builder an item)
    with pytest.raises(TypeError):
        section.host_html(h, words)
    env.get_template(render.HOST_TEMPLATE)
    with pytest.raises(jinja2.UndefinedError):
        render.section_html(env, h, words)


def test_escaping_is_markupsafes() -> None:
    from markupsafe import Markup, escape

    for value in [NASTY, NASTY * 100, "", None, 0, 2.5, True, Markup("<i>kept</i>"), "plain"]:
        assert section.esc(value) == str(escape(value))
