"""The page of the shipped HTML report around its hosts' sections, built in Python: the very
text that templates/report/html.j2 renders (autoescaped, trim_blocks and lstrip_blocks), byte
for byte (tests/unit/report/test_page.py renders both, in every language), so that a run whose
report the shipped template writes imports no Jinja2 (its import, environment and compiled
template were ~30 ms of CPU a run).

html.j2 stays the definition: its head (the style sheet, which holds no template tag) is read
from it, the rest is written here, and a change to it is made here too, or the test fails. A
page this builder cannot build (a field of another shape, a head that holds a template tag) is
rendered by the template instead (render.render), which then says what is wrong as before.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from gpuonboard.report.section import esc

_HEAD_START = '<meta name="viewport" content="width=device-width, initial-scale=1">\n<title>'


def static_head(source: str) -> str | None:
    """What html.j2 writes between its <title> and its <h1> (the style sheet), from the
    template's source; None where that part holds a template tag or is not found."""
    start, end = source.find("</title>\n"), source.find("<h1>")
    if _HEAD_START not in source or start < 0 or end < start:
        return None
    head = source[start:end]
    return None if any(tag in head for tag in ("{{", "{%", "{#")) else head


def page_html(fields: Mapping[str, Any], head: str) -> str:
    """html.j2 rendered with `fields` (render.render's: the view's context, the template's
    words, `host_section` and `report_file`); `head`: static_head of html.j2."""
    return "".join(page_pieces(fields, head))


def page_pieces(fields: Mapping[str, Any], head: str) -> list[str]:
    """page_html's text in pieces (their join is the page), each host's section one piece."""
    _: Callable[..., str] = fields["_"]
    doc, hosts = fields["doc"], fields["hosts"]
    lang = "zh-CN" if fields["lang"] == "zh" else "en"
    verdict = fields["verdict"]
    cls = "go" if fields["go"] else "nogo" if verdict == "NO-GO" else "noverdict"
    out = ['<!DOCTYPE html>\n<html lang="', lang, '">\n<head>\n<meta charset="utf-8">\n', _HEAD_START]
    out += [esc(_("title")), " ", esc(doc["run_id"]), head, "<h1>", esc(_("heading")), "</h1>\n"]
    out += ['<p><span class="verdict ', cls, '" id="verdict">', esc(_(verdict)), "</span>"]
    if fields["headline_suffix"]:
        out += ['<strong class="warned" id="warned">', esc(fields["headline_suffix"]), "</strong>"]
    out += [" ", esc(fields["explain"]), "</p>\n"]
    if fields["warnings"]:
        word = esc(_("warning"))
        out.append('<ul class="warnings">')
        out += [f"<li><strong>{word}:</strong> {esc(w)}</li>" for w in fields["warnings"]]
        out.append("</ul>")
    _meta(out, fields, _)
    for h in hosts:
        out.append(str(fields["host_section"](h)))
    footer = _("footer", version=fields["renderer_version"], schema=doc["schema"])
    sha = _("footer_sha", file=fields["report_file"] + ".sha256")
    out += ['<p class="detail">', esc(footer), " ", esc(sha), "</p>\n</body>\n</html>\n"]
    return out


def _meta(out: list[str], fields: Mapping[str, Any], _: Callable[..., str]) -> None:
    """The run's table: its id, playbook, inventory, times, versions and hosts."""
    doc, version = fields["doc"], esc(fields["renderer_version"])
    out += ['<div class="scroll"><table class="meta">\n<tr><td>', esc(_("run")), "</td><td>"]
    out += [esc(doc["run_id"]), "</td></tr>\n<tr><td>", esc(_("playbook")), "</td><td>", esc(doc["playbook"])]
    if doc["check_mode"]:
        out += [" (", esc(_("check_mode")), ")"]
    out += ["</td></tr>\n<tr><td>", esc(_("inventory")), "</td><td>", esc(doc["inventory"]), "</td></tr>\n"]
    out += ["<tr><td>", esc(_("started_finished")), "</td><td>", esc(doc["started"]), " / "]
    out += [esc(doc["finished"]), " (", esc(doc["duration"]), " ", esc(_("unit_s")), ")</td></tr>\n"]
    out += ["<tr><td>", esc(_("tool_version")), "</td><td>gpuonboard ", esc(doc["tool_version"]), " ("]
    out += [esc(_("of_run")), "), ", version, " (", esc(_("of_report")), ")</td></tr>\n"]
    names = [
        f"{esc(h['name'])}: {esc(_(h['verdict_word']))}{esc(h['headline_suffix'])}" for h in fields["hosts"]
    ]
    out += ["<tr><td>", esc(_("hosts")), "</td><td>", ", ".join(names), "</td></tr>\n</table></div>\n"]
