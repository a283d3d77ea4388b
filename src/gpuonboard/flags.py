"""The flags that several commands share, each declared once: name, type, default and help.

`CommonFlags` is that declaration: one dataclass field per flag (`--trust-new-hosts` is the
field `trust_new_hosts`), its help text and the `api.Settings` field it sets in the field's
metadata. A command names the flags it takes in its layout (`SELECT`, `RUN`, `OWN` for its
own parameters, in the order its help lists them); `signature` builds the Python signature
Invoke reads from that layout and the command's own parameters, and `settings` the run
settings from the values given. No Invoke here (cli.py turns this into tasks).
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpuonboard.api import Settings

LANG_HELP = "language of the fixed texts: en (default) or zh (Chinese)"
OWN = "..."  # in a layout: the command's own parameters not named in it, in their order


def flag(default: Any, help: str, setting: str | None = None, path: bool = False) -> Any:
    """One flag: its default (None: a value flag that may be left out), its help (`{default}`
    is filled in), the api.Settings field it sets, and whether that field is a path (then
    an empty value leaves the setting's own default)."""
    return field(default=default, metadata={"help": help, "setting": setting, "path": path})


@dataclass
class CommonFlags:
    """The shared flags' values for one command (defaults for those it does not take)."""

    host: str | None = flag(None, "host name(s) from the inventory, comma-separated")
    inventory: str = flag(
        "inventory", "inventory directory or file (Ansible YAML/INI works too); default ./inventory"
    )
    group: str | None = flag(None, "only hosts of this inventory group")
    limit: str | None = flag(None, "Ansible-style pattern over host/group names: 'wuhan-*,!wuhan-a100-3'")
    forks: int = flag(20, "hosts run concurrently (default {default})", "forks")
    trust_new_hosts: bool = flag(
        False, "accept and record host keys never seen before (verify fingerprints first!)", "trust_new_hosts"
    )
    known_hosts: str = flag(
        "", "known_hosts file (default .gpuonboard/known_hosts)", "known_hosts", path=True
    )
    state_dir: str = flag("", "journal directory (default .gpuonboard/state)", "state_dir", path=True)
    reports_dir: str = flag("", "reports directory (default ./reports)", "reports_dir", path=True)
    quiet: bool = flag(False, "print nothing but errors (reports are still written)", "quiet")
    debug: bool = flag(False, "show tracebacks")
    connect_retries: int = flag(
        2, "retries on network errors when connecting (default {default})", "connect_retries"
    )
    lang: str = flag("en", LANG_HELP + " (terminal tables)")  # (cli checks it: a usage error)
    strict: bool = flag(
        False,
        "treat an unverified check (a fact that could not be read) as a failure: NO-GO, exit 1",
        "strict",
    )


SPECS: dict[str, dataclasses.Field[Any]] = {f.name: f for f in dataclasses.fields(CommonFlags)}
SELECT = ("host", "inventory", "group", "limit")  # which hosts
RUN = (
    "forks",
    "trust_new_hosts",
    "known_hosts",
    "state_dir",
    "reports_dir",
    "quiet",
    "debug",
    "connect_retries",
)


def help_text(name: str) -> str:
    """The help of the shared flag `name` (its default filled in)."""
    spec = SPECS[name]
    return str(spec.metadata["help"]).format(default=spec.default)


def signature(body: Callable[..., Any], layout: Sequence[str]) -> tuple[inspect.Signature, dict[str, str]]:
    """The signature of a command whose own parameters are `body`'s after its context and
    its CommonFlags (the second), with the shared flags of `layout` in their places, and the
    help of those shared flags. A name in `layout` that `body` takes itself is its own (a
    `--host` that means something else there)."""
    params = list(inspect.signature(body).parameters.values())
    context, own = params[0], {p.name: p for p in params[2:]}
    named = set(layout)
    out, helps = [context], {}
    for name in layout:
        if name == OWN:
            out += [p for n, p in own.items() if n not in named]
        elif name in own:
            out.append(own[name])
        else:
            spec = SPECS[name]  # (a KeyError names a flag nobody declared)
            kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
            out.append(inspect.Parameter(name, kind, default=spec.default, annotation=spec.type))
            helps[name] = help_text(name)
    missing = [n for n in own if n not in {p.name for p in out}]
    if missing:
        raise TypeError(f"{body.__name__}: the layout places no {OWN} for {', '.join(missing)}")
    return inspect.Signature(out), helps


def split(body: Callable[..., Any], values: Mapping[str, Any]) -> tuple[CommonFlags, dict[str, Any]]:
    """A command's parsed values as its CommonFlags and the keyword arguments of its own."""
    own = list(inspect.signature(body).parameters)[2:]
    common = {k: v for k, v in values.items() if k not in own}
    return CommonFlags(**common), {k: v for k, v in values.items() if k in own}


def settings(given: CommonFlags, project: Path) -> Settings:
    """api.Settings from the shared flags' values (a path flag left empty keeps the default)."""
    s = Settings(project=project)
    for name, spec in SPECS.items():
        target, value = spec.metadata["setting"], getattr(given, name)
        if target is None:
            continue
        if spec.metadata["path"]:
            if value:
                setattr(s, target, Path(value))
        elif value is not None:
            setattr(s, target, value)
    return s
