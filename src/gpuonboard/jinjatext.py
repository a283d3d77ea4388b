"""Whether a text holds Jinja2 syntax, without importing Jinja2 (the inventory and playbook
loaders ask it at start-up; templating.py, which renders, asks it too): an expression `{{`, a
statement `{%` or a comment `{#`, Jinja2's three start strings, as Ansible's own test has them;
and `literal`, which keeps a command-line value out of rendering (the commands that build a step
from flags call it before their first connection: Jinja2's import, ~30 ms, is not paid there)."""

from __future__ import annotations

from gpuonboard.errors import UsageError


def is_template(text: str) -> bool:
    """Whether Jinja2 would read anything in `text` other than plain text."""
    return "{{" in text or "{%" in text or "{#" in text


def literal(value: str) -> str:
    """Keep a user's text out of Jinja rendering when it becomes a step argument
    (a command-line value such as `{{.State.Running}}` must stay as it is)."""
    if not is_template(value):
        return value
    if "endraw" in value:
        raise UsageError(f"the value {value!r} cannot contain both '{{{{' and 'endraw'.")
    return "{% raw %}" + value + "{% endraw %}"
