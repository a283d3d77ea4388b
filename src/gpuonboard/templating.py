"""Jinja2 rendering for playbook arguments and templates/ files (StrictUndefined: no silent blanks).

Both render in Jinja2's immutable sandbox: a playbook or template is configuration, so it may
read values and call their plain methods, but never reach Python internals
(`host.__class__.__init__.__globals__` runs any code on this machine) nor change the values it
reads (`vars.update(...)` would change the host's vars for every later step).
"""

from __future__ import annotations

import threading
from functools import lru_cache
from pathlib import Path
from typing import Any

import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment


def _sh(value: Any) -> str:
    """`{{ x | sh }}`: one shell word (a file meant to be sourced stays data: quotes, `$(...)`)."""
    from .shell import quote

    return quote("" if value is None else str(value))


@lru_cache(maxsize=8)
def _file_env(roots: tuple[str, ...]) -> jinja2.Environment:
    env = ImmutableSandboxedEnvironment(
        loader=jinja2.FileSystemLoader(list(roots)),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
    )
    env.filters["sh"] = _sh
    return env


_STRING_ENV = ImmutableSandboxedEnvironment(undefined=jinja2.StrictUndefined, autoescape=False)
_STRING_ENV.filters["sh"] = _sh
# Hosts render in parallel threads: without a lock, the first 50 hosts all miss the caches at
# once and each compiles the same template (a Jinja2 compile costs milliseconds of CPU).
_COMPILE = threading.Lock()


@lru_cache(maxsize=512)
def _compiled_unlocked(text: str) -> jinja2.Template:
    return _STRING_ENV.from_string(text)


def _compiled(text: str) -> jinja2.Template:
    """Compile each argument template once per run, not once per host (50 hosts, 1 compile)."""
    with _COMPILE:
        return _compiled_unlocked(text)


def render_file(project: Path, src: str, **context: Any) -> str:
    """Render templates/<src> of the project (else the shipped templates)."""
    from .resources import search_dirs

    roots = tuple(str(d) for d in search_dirs(project, "templates"))
    with _COMPILE:  # Jinja2 caches the compiled file (and re-checks its mtime); one compile
        template = _file_env(roots).get_template(src)
    return template.render(**context)


def find_template(project: Path, src: str) -> bool:
    """True when templates/<src> exists for render_file (the project's or the shipped copy)."""
    from .resources import search_dirs

    roots = tuple(str(d) for d in search_dirs(project, "templates"))
    env = _file_env(roots)
    assert env.loader is not None
    try:
        env.loader.get_source(env, src)
    except jinja2.TemplateNotFound:
        return False
    return True


def render_value(value: Any, context: dict[str, Any]) -> Any:
    """Render every string inside a YAML value (dicts and lists recursively)."""
    if isinstance(value, str):
        if "{{" not in value and "{%" not in value:
            return value
        return _compiled(value).render(**context)
    if isinstance(value, dict):
        return {k: render_value(v, context) for k, v in value.items()}
    if isinstance(value, list):
        return [render_value(v, context) for v in value]
    return value


def literal(value: str) -> str:
    """Keep a user's text out of Jinja rendering when it becomes a step argument
    (a command-line value such as `{{.State.Running}}` must stay as it is)."""
    from .errors import UsageError

    if not any(tag in value for tag in ("{{", "{%", "{#")):
        return value
    if "endraw" in value:
        raise UsageError(f"the value {value!r} cannot contain both '{{{{' and 'endraw'.")
    return "{% raw %}" + value + "{% endraw %}"
