"""One host's section of the shipped HTML report, built in Python: the very text that
templates/report/html_host.j2 renders (autoescaped, trim_blocks and lstrip_blocks), byte for
byte (tests/unit/report/test_section.py renders both for every part of a view and in every
language), without Jinja2's cost per value (an attribute look-up that raises on a dict, a
Markup object per escaped value, a generator step per piece): ~0.8 ms a host where the
template took ~4 ms, 50-100 times a fleet's run.

html_host.j2 stays the definition, and what a project's own report template renders (in the
sandbox, render.section_html): a change to it is made here too, or the test fails. A view this
builder does not read as the template would (a missing key, a value of another shape) raises,
and the caller renders the template instead, which then says what is wrong as before.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from markupsafe import escape as _escape

from gpuonboard.report.escape import escape_text

Words = dict[str, Callable[..., str]]


def esc(value: Any) -> str:
    """markupsafe.escape(value) as text: markup (`__html__`) as it is; anything else as str(),
    with & < > ' " as markupsafe writes them (a short text by str.replace, which costs less
    than a Markup object; a long one, a raw output, by markupsafe's one pass in C)."""
    if type(value) is not str:
        html = getattr(value, "__html__", None)
        if html is not None:
            return str(html())
        value = str(value)
    if len(value) > 256:
        return _escape(value)
    value = escape_text(value)
    if "'" in value:
        value = value.replace("'", "&#39;")
    if '"' in value:
        value = value.replace('"', "&#34;")
    return value


def host_html(h: dict[str, Any], words: Words) -> str:
    """html_host.j2 rendered with h=`h` and `words` (render.template_words)."""
    out: list[str] = []
    _meta(out, h, words)
    _order_and_rules(out, h, words)
    _compat_and_benchmarks(out, h, words)
    _steps_and_raw(out, h, words)
    return "".join(out)


def _meta(out: list[str], h: dict[str, Any], words: Words) -> None:
    _ = words["_"]
    word = h["verdict_word"]
    cls = "go" if h["go"] else "nogo" if word == "NO-GO" else "noverdict"
    out += ['<section class="host">\n<h2>', esc(h["name"]), ' <span class="verdict ', esc(cls), '">']
    out += [esc(_(word)), "</span>"]
    if h["headline_suffix"]:
        out += ['<span class="warned">', esc(h["headline_suffix"]), "</span>"]
    out.append("</h2>\n")
    if h["reasons"]:
        out += ["<ul>", *[f"<li>{esc(r)}</li>" for r in h["reasons"]], "</ul>"]
    out += ['<div class="scroll"><table class="meta">\n<tr><td>', esc(_("address")), "</td><td>"]
    out += [esc(h["address"]), ":", esc(h["port"]), "</td></tr>\n<tr><td>", esc(_("vendor"))]
    out += ["</td><td>", esc((h["vendor_name"] or h["vendor"]) or "-"), "</td></tr>\n<tr><td>"]
    out += [esc(_("vendor_licence")), "</td><td>", esc(h.get("vendor_licence") or "-")]
    out += ["</td></tr>\n<tr><td>", esc(_("vendor_icp")), "</td><td>", esc(h.get("vendor_icp") or "-")]
    out.append("</td></tr>\n")
    for w in h["vendor_warnings"]:
        out += ['<tr class="warning"><td>', esc(_("warning")), "</td><td>", esc(w), "</td></tr>\n"]
    out += ["<tr><td>", esc(_("fingerprint")), "</td><td><code>", esc(h["host_key_fingerprint"] or "-")]
    out += ["</code></td></tr>\n<tr><td>", esc(_("status")), "</td><td>"]
    out += [esc(words["status_word"](h["status"])), ": ", esc(h["msg"]), "</td></tr>\n"]
    facts = h["facts"]
    if facts:
        get = facts.get
        out += ["<tr><td>", esc(_("os_kernel")), "</td><td>", esc(get("os") or "-"), " / "]
        out += [esc(get("kernel") or "-"), "</td></tr>\n<tr><td>", esc(_("driver_cuda")), "</td><td>"]
        out += [esc(get("driver_version") or "-"), " / ", esc(get("cuda_version") or "-")]
        out += ["</td></tr>\n<tr><td>", esc(_("container_runtime")), "</td><td>"]
        out += [esc(get("container_runtime") or "-"), "</td></tr>"]
    out.append("</table></div>\n")


def _head(out: list[str], words: Words, title: str, table: str, columns: list[tuple[str, str]]) -> None:
    """`<h3>title</h3>` and a table's opening with its header row (column key, th attributes)."""
    _ = words["_"]
    out += ["<h3>", esc(_(title)), f'</h3>\n<div class="scroll"><table class="{table}"><tr>']
    out += [f"<th{attrs}>{esc(_(key))}</th>" for key, attrs in columns]
    out.append("</tr>\n")


def _order_and_rules(out: list[str], h: dict[str, Any], words: Words) -> None:
    _head(out, words, "h_order", "order", [("c_item", ""), ("c_ordered", ""), ("c_delivered", "")])
    for r in h["order_rows"]:
        out += ["<tr><td>", esc(r["field"]), "</td><td>", esc(r["ordered"]), "</td><td>"]
        out += [esc(r["delivered"]), "</td></tr>\n"]
    out.append("</table></div>\n")
    columns = [("c_rule", ""), ("c_expected", ""), ("c_actual", ""), ("c_verdict", ' class="v"')]
    _head(out, words, "h_rules", "rules", [*columns, ("c_evidence", "")])
    verdict_word = words["verdict_word"]
    for r in h["rule_rows"]:
        name, verdict = esc(r["name"]), r["verdict"]
        out += ['<tr class="rule" data-rule="', name, '" data-verdict="', esc(verdict), '"><td>', name]
        out += ['</td><td class="x">', esc(r["expected"]), '</td><td class="x">', esc(r["actual"])]
        if r["detail"]:
            out += ['<div class="detail">', esc(r["detail"]), "</div>"]
        out += ['</td><td class="v ', esc(verdict), '">', esc(verdict_word(verdict)), "</td><td>"]
        evidence = [f"<code>{esc(e['probe'])}: {esc(e['sha256'][:16])}&hellip;</code>" for e in r["evidence"]]
        out += ["<br>".join(evidence) or "-", "</td></tr>\n"]
    out.append("</table></div>\n")


def _compat_and_benchmarks(out: list[str], h: dict[str, Any], words: Words) -> None:
    verdict_word = words["verdict_word"]
    if h["compat_rows"]:
        columns = [("c_step", ""), ("c_check", ""), ("c_expected", ""), ("c_actual", "")]
        _head(out, words, "h_compat", "compat", [*columns, ("c_verdict", ' class="v"')])
        for c in h["compat_rows"]:
            out += ["<tr><td>", esc(c["step"]), "</td><td>", esc(c["name"]), '</td><td class="x">']
            out += [esc(c["expected"]), '</td><td class="x">', esc(c["actual"])]
            if c["detail"]:
                out += ['<div class="detail">', esc(c["detail"]), "</div>"]
            verdict = c["verdict"]
            out += ['</td><td class="v ', esc(verdict), '">', esc(verdict_word(verdict)), "</td></tr>\n"]
        out.append("</table></div>\n")
    if h["benchmarks"]:
        columns = [("c_benchmark", ""), ("c_value", ""), ("c_reference", "")]
        _head(out, words, "h_bench", "benchmarks", [*columns, ("c_verdict", ' class="v"')])
        for b in h["benchmarks"]:
            out += ["<tr><td>", esc(b["name"]), "</td><td>", esc(b["value"]), " ", esc(b.get("unit", ""))]
            out += ["</td><td>", esc(b.get("reference", "-")), '</td><td class="v ']
            out += [esc(b.get("verdict", "")), '">', esc(verdict_word(b.get("verdict"))), "</td></tr>\n"]
        out += ["</table></div>\n", esc(h["chart"]), "\n"]


def _steps_and_raw(out: list[str], h: dict[str, Any], words: Words) -> None:
    _ = words["_"]
    status_word = words["status_word"]
    columns = [("c_step", ""), ("c_status", ' class="v"'), ("c_message", ""), ("c_duration", "")]
    _head(out, words, "h_steps", "steps", columns)
    unit_s = esc(_("unit_s"))
    for s in h["step_rows"]:
        out += ["<tr><td>", esc(s["step"]), '</td><td class="v">', esc(status_word(s["status"]))]
        out += ['</td><td class="x">', esc(s["msg"]), '</td><td class="n">', esc(s["duration"])]
        out += [" ", unit_s, "</td></tr>\n"]
    out += ["</table></div>\n<h3>", esc(_("h_raw")), "</h3>\n"]
    entries = h["raw_entries"]
    if not entries:
        out += ["<p>", esc(_("no_raw")), "</p></section>\n"]
        return
    out += ['<div class="scroll"><table class="raw"><tr><th>', esc(_("c_probe")), "</th><th>"]
    out += [esc(_("c_file")), "</th><th>", esc(_("c_bytes")), "</th><th>", esc(_("c_exit"))]
    out += ['</th><th>sha256</th><th class="v">', esc(_("c_file_check")), "</th></tr>\n"]
    for e in entries:
        out += ["<tr><td>", esc(e["probe"]), '</td><td class="x"><code>', esc(e["file"])]
        out += ['</code></td><td class="n">', esc(e["bytes"]), '</td><td class="n">', esc(e["exit_code"])]
        out += ['</td><td class="x"><code>', esc(e["sha256"]), '</code></td><td class="v">']
        out += [esc(e["status_text"]), "</td></tr>\n"]
    out.append("</table></div>\n")
    bytes_unit = esc(_("bytes_unit"))
    for e in entries:
        out += ["<details><summary>", esc(e["probe"]), " (", esc(e["bytes"]), " ", bytes_unit, ")"]
        if e["truncated"]:
            out += [", ", esc(_("first_chars", n=len(e["text"])))]
        out += ["</summary><pre>", esc(e["text"]), "</pre></details>\n"]
    out.append("</section>\n")
