"""Whether a text holds Jinja2 syntax, without importing Jinja2 (the inventory and playbook
loaders ask it at start-up; templating.py, which renders, asks it too): an expression `{{`, a
statement `{%` or a comment `{#`, Jinja2's three start strings, as Ansible's own test has them."""

from __future__ import annotations


def is_template(text: str) -> bool:
    """Whether Jinja2 would read anything in `text` other than plain text."""
    return "{{" in text or "{%" in text or "{#" in text
