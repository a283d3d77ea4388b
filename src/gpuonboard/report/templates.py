"""The report templates' Jinja2 environments and rendering: the shipped template
(templates/report/*.j2 of this package) renders in plain Jinja2, made when first used
(ShippedEnvironment: the shipped HTML report is built without it), a project's own in the bounded
immutable sandbox (templating.BoundedSandbox) (`_environment_for`); compiled templates are kept
between runs (`_bytecode_cache`); every rendering is bounded by `report_limits` and an error is
one sentence naming the template (`_render_template`). The Markdown filters `md_cell`, `md_code`."""

from __future__ import annotations

import re
import threading
import weakref
from functools import lru_cache
from pathlib import Path
from typing import Any

from gpuonboard.errors import UsageError
from gpuonboard.once import lazy_re
from gpuonboard.report.view import _size

REPORT_TEXT_LIMIT = 64 << 20  # the most text one report may be (report_limits().text)


def report_limits() -> Any:
    """What one report rendering may do: the user-template limits (templating.TemplateLimits),
    with room for a fleet's report (the raw evidence of hundreds of hosts is tens of MiB of
    HTML). A function: templating imports Jinja2, which commands without a report never need."""
    from gpuonboard.templating import MIB, TemplateLimits

    return TemplateLimits(text=REPORT_TEXT_LIMIT, work=512 * MIB, steps=20_000_000, seconds=120.0)


def _bytecode_cache(kind: str) -> Any:
    """Compiled report templates kept between runs (the HTML report is written by every run:
    compiling it cost ~60 ms a run), in Jinja2's per-user cache folder (made 0700 and checked
    to be the user's), under a name of ours per kind of environment (`bounded`: the sandbox's
    code; `shipped`: plain Jinja2's): no other program's Jinja2, whose code is not bounded,
    shares the bounded entries (`-2`: the code our guard makes; a change of it, which the
    cache's checksum of the template source does not see, takes a new name). None where that
    folder cannot be had."""
    import jinja2

    name = {
        "bounded": "gpuonboard-bounded-report-2-%s.cache",
        "shipped": "gpuonboard-shipped-report-1-%s.cache",
    }
    try:
        return jinja2.FileSystemBytecodeCache(None, name[kind])
    except (OSError, RuntimeError):
        return None


_SHIPPED: weakref.WeakSet[Any] = weakref.WeakSet()  # the environments _env made with shipped=True


def is_shipped(env: Any) -> bool:
    """True for an environment of the templates this package ships (plain Jinja2, see
    _environment_for), whose html_host.j2 report.section builds without Jinja2."""
    return env in _SHIPPED


class ShippedEnvironment:
    """The Jinja2 environment of the templates this package ships, made on first use (Jinja2
    imported, ~30 ms of CPU with its set-up): a run whose HTML report is the shipped one builds
    its page and sections in Python (report.page, report.section) and never needs it. Every
    attribute is the environment's (`get_template`, `filters` ...)."""

    def __init__(self, roots: tuple[str, ...], html: bool) -> None:
        self.roots = roots
        self.html = html
        self._made: Any = None
        self._lock = threading.Lock()

    def real(self) -> Any:
        """The Jinja2 environment itself."""
        with self._lock:
            if self._made is None:
                self._made = _jinja_env(self.roots, self.html, True)
            return self._made

    def source(self, name: str) -> str | None:
        """The text of template `name` (None where it cannot be read)."""
        try:
            return (Path(self.roots[0]) / name).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError, IndexError):
            return None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real(), name)


@lru_cache(maxsize=8)
def _env(roots: tuple[str, ...], html: bool, shipped: bool = False) -> Any:
    """The report templates' environment (cached per template folders: Jinja then compiles each
    template once per process, not once per report). `shipped`: the environment for a template
    this package ships (see _environment_for), made when first used (ShippedEnvironment)."""
    if shipped:
        env = ShippedEnvironment(roots, html)
        _SHIPPED.add(env)
        return env
    return _jinja_env(roots, html, False)


def _jinja_env(roots: tuple[str, ...], html: bool, shipped: bool) -> Any:
    """A Jinja2 environment of the report templates in `roots` (see _env)."""
    import jinja2

    from gpuonboard.templating import BoundedSandbox

    options: dict[str, Any] = {
        "loader": jinja2.FileSystemLoader(list(roots)),
        "bytecode_cache": _bytecode_cache("shipped" if shipped else "bounded"),
        "undefined": jinja2.StrictUndefined,
        "autoescape": html,
        "keep_trailing_newline": True,
        "trim_blocks": True,
        "lstrip_blocks": True,
    }
    filters = {"mdcell": md_cell, "mdcode": md_code, "size": _size}
    if shipped:
        env = jinja2.Environment(**options)
        env.filters.update(filters)
        return env
    # the bounded immutable sandbox, as for playbooks and templates/ (templating.py): a
    # project's own report template is configuration, never a way to run code on this machine
    # or to build a value without end
    return BoundedSandbox(**options, filters=filters)


def _environment_for(project: Path, name: str, html: bool) -> Any:
    """The environment that renders report template `name` for `project`: a template the project
    brings (its own templates/ folder holds `name`) renders in the bounded sandbox; the one this
    package ships, code of ours tested with it, renders in plain Jinja2 (the sandbox's checks on
    every attribute, call and output piece were about a third of a fleet's HTML report). Its
    output is still limited to report_limits().text."""
    from gpuonboard.resources import search_dirs, shipped_root

    roots = search_dirs(project, "templates")
    origin = next((root for root in roots if (root / name).is_file()), None)
    root = shipped_root()
    if origin is not None and root is not None and origin.resolve() == (root / "templates").resolve():
        return _env((str(origin),), html, shipped=True)
    return _env(tuple(str(d) for d in roots), html)


# Markdown (CommonMark/GFM) escaping of data: a backslash before each character that could
# start markup - raw HTML or an autolink (<), a table cell end (|), code (`), emphasis (*, and
# _ at a word edge), a link ([ ]), an entity (&name;) - and before a literal backslash. Text
# such as ">= 1.0 TB" stays as it is: HTML entities (&gt;) are for the HTML report only.
_MD_SPECIAL = lazy_re(r"[\\`*\[\]<|]|&(?=#?\w+;)|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")


def md_cell(value: Any) -> str:
    """A value as one Markdown table cell: markup characters backslash-escaped, newlines as <br>."""
    text = "" if value is None else str(value)
    text = _MD_SPECIAL.sub(lambda m: "\\" + m.group(0), text)
    return text.replace("\r", "").replace("\n", "<br>")


def md_code(value: Any) -> str:
    """A value as inline code in a Markdown table cell (backslash escapes do not work in code:
    the fence is longer than any backtick run inside, and only `|` is escaped, for the table)."""
    text = ("" if value is None else str(value)).replace("\r", "").replace("\n", " ")
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text.replace('|', chr(92) + '|')}{pad}{fence}"


def _render_template(project: Path, fmt: str, name: str, **fields: Any) -> str:
    """A report template rendered; its error (a project's own template that tries to reach
    Python internals, a syntax or expression error) is one sentence naming it (exit 2)."""
    import jinja2

    env = _environment_for(project, name, fmt == "html")
    where = name
    try:
        template = env.get_template(name)
        where = template.filename or name
        return _bounded_render(template, fields)
    except jinja2.TemplateError as exc:
        line = getattr(exc, "lineno", None)
        at = f"{getattr(exc, 'filename', None) or where}" + (f", line {line}" if line else "")
        why = str(exc).rstrip(".")
        raise UsageError(
            f"report template {at}: {why}; fix the template (or remove it to use the shipped one)."
        ) from None


def _bounded_render(template: Any, fields: dict[str, Any]) -> str:
    """The template's output within report_limits(). Rendered whole, not streamed piece by
    piece (a fleet's report is ~2,000 pieces a host): every piece is already charged to the
    rendering's work budget as it is written, so the text cannot outgrow that meanwhile."""
    from gpuonboard.templating import TemplateLimitError, _bounded

    limits = report_limits()
    with _bounded(limits):
        text = str(template.render(**fields))
    if len(text) > limits.text:
        raise TemplateLimitError(
            f"its output is longer than {limits.text >> 20} MiB, the most a report may be"
        )
    return text
