"""Every flag of the command line declared once: name, type, default and help.

`CommonFlags` declares the flags that several commands share: one dataclass field per flag
(`--trust-new-hosts` is the field `trust_new_hosts`), its help text and the `api.Settings`
field it sets in the field's metadata. A command's own flags are the fields of its options
dataclass that carry a help text in their metadata: the api's (api/options.py:
`AutostopOptions`, `SyncOptions`, ...), or one of the classes below for a command whose
api takes plain arguments. A command names the shared flags it takes in its layout
(`SELECT`, `RUN`, `OWN` for its own, in the order its help lists them); `taking` turns its
options dataclass into keyword parameters, `signature` builds the Python signature Invoke
reads from that layout and those parameters, and `settings` the run settings from the
values given. No Invoke here (cli.py turns this into tasks).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from gpuonboard.api import Settings

LANG_HELP = "language of the fixed texts: en (default) or zh (Chinese)"
OWN = "..."  # in a layout: the command's own parameters not named in it, in their order


def flag(
    default: Any, help: str, setting: str | None = None, path: bool = False, short: str | None = None
) -> Any:
    """One flag: its default (None: a value flag that may be left out), its help (`{default}`
    is filled in for a shared flag), the api.Settings field a shared flag sets, whether that
    field is a path (then an empty value leaves the setting's own default), and its one-letter
    short flag, if any (Ansible's `-i`, `-l`)."""
    return field(default=default, metadata={"help": help, "setting": setting, "path": path, "short": short})


@dataclass
class CommonFlags:
    """The shared flags' values for one command (defaults for those it does not take)."""

    host: str | None = flag(None, "host name(s) from the inventory, comma-separated")
    inventory: str = flag(
        "inventory",
        "inventory directory or file (Ansible YAML/INI works too); default ./inventory",
        short="i",
    )
    group: str | None = flag(None, "only hosts of this inventory group")
    limit: str | None = flag(
        None,
        "Ansible's host pattern: 'wuhan-*,!wuhan-a100-3', 'gpus[0:3]', '@retry-file'",
        short="l",
    )
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
    json: bool = flag(
        False,
        "print the result as one JSON document on stdout (check, provision: the run's summary.json;"
        " inventory: the resolved hosts); every other line goes to stderr",
        "json",
    )
    metrics_file: str = flag(
        "",
        "also write a Prometheus text file there, atomically, for node_exporter's textfile collector"
        " (name it *.prom): check, provision: the verdicts; monitor: the latest GPU samples",
        "metrics_file",
        path=True,
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


def short_flags(names: Sequence[str]) -> dict[str, str]:
    """The one-letter short flag of each shared flag among `names` that has one
    (`{"inventory": "i", "limit": "l"}`)."""
    return {n: SPECS[n].metadata["short"] for n in names if n in SPECS and SPECS[n].metadata["short"]}


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


Options = TypeVar("Options")


def own_flags(options: type) -> list[dataclasses.Field[Any]]:
    """The fields of an options dataclass that are flags (those whose metadata has a help
    text; the others the command fills in itself), in their order."""
    found = [f for f in dataclasses.fields(options) if "help" in f.metadata]
    for f in found:
        if f.default is dataclasses.MISSING:
            raise TypeError(f"{options.__name__}.{f.name}: a flag needs a default")
    return found


def own_help(options: type) -> dict[str, str]:
    """The help of each own flag of an options dataclass, as written (no `{default}` filled
    in: a help may show braces, `'{host}' is replaced`)."""
    return {f.name: str(f.metadata["help"]) for f in own_flags(options)}


def taking(options: type[Options], body: Callable[[Any, CommonFlags, Options], None]) -> Callable[..., None]:
    """`body(c, given, opts)` as a command of its own flags: `(c, given, flag=default, ...)`,
    one keyword parameter per flag field of `options` (its name, default and type), which
    builds the dataclass from the values given and passes it on."""
    context, given = list(inspect.signature(body).parameters.values())[:2]
    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    own = [inspect.Parameter(f.name, kind, default=f.default, annotation=f.type) for f in own_flags(options)]

    @functools.wraps(body)
    def declared(c: Any, common: CommonFlags, **values: Any) -> None:
        body(c, common, options(**values))

    declared.__signature__ = inspect.Signature([context, given, *own])  # type: ignore[attr-defined]
    return declared


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


# The own flags of the commands whose api takes plain arguments (the others' are the api's
# options dataclasses, in api/options.py).


@dataclass
class ProvisionFlags:
    """`provision`'s own flags."""

    playbook: str = flag("provision", "playbook name under playbooks/ or a file (default provision)")
    check: bool = flag(False, "dry run: report what would change, change nothing")
    only: str = flag("", "run only these steps (comma-separated)")
    skip: str = flag("", "skip these steps (comma-separated)")
    resume: bool = flag(False, "continue at the step that failed in the last run")


@dataclass
class FactsFlags:
    """`facts`' own flags (PATHS is positional)."""

    # no default value: invoke fills only unset positionals
    paths: str | None = flag(None, "saved outputs: files (comma-separated), a directory, or a glob")
    json: bool = flag(False, "print the facts and rules as JSON")
    # (one host whose order applies: not the shared --host)
    host: str | None = flag(None, "apply this inventory host's order (acceptance rules)")
    order: str = flag("", "apply the order in this YAML file (order: {gpu_model: ..., gpu_count: ...})")


@dataclass
class ContainerFlags:
    """`container`'s own flags."""

    image: str = flag(
        "", "image to pull instead of vars.container_image (e.g. nvcr.io/nvidia/pytorch:24.08-py3)"
    )
    check: bool = flag(False, "dry run: report what would be pulled, change nothing")


@dataclass
class ReportFlags:
    """`report`'s own flags."""

    run: str = flag("", "run id under reports/ (default: the newest run that judged a box: check, provision)")
    format: str = flag("html", "html (default), md or json")
    compare: bool = flag(False, "put several hosts/vendors side by side (reports/compare/compare.FORMAT)")
    runs: str = flag("", "with --compare: run ids, comma-separated (default: the newest record of each host)")
    # (its own: html/md reports, not the terminal tables)
    lang: str = flag("en", LANG_HELP + "; html/md only (json stays English); zh writes report.zh.FORMAT")


@dataclass
class TensorboardFlags:
    """`tensorboard`'s own flags."""

    host: str | None = flag(None, "the host (one) to run TensorBoard on")  # (the one host: its own help)
    logdir: str = flag("", "TensorBoard --logdir on the host (default vars.tensorboard_logdir, else runs)")
    port: int = flag(6006, "TensorBoard port on the host (default 6006)")
    local_port: int = flag(-1, "local port to forward (default: the same as --port, or any free one; 0: any)")
    duration: str = flag("", "stop after this long (default: until Ctrl-C)")
    reconnect_for: str = flag(
        "5m", "after the SSH link drops, reconnect for up to this long (default 5m; 0: exit)"
    )


@dataclass
class KeysNewFlags:
    """`keys.new`'s own flags."""

    file: str = flag(
        "", "where to write the age identity (default ~/.config/gpuonboard/age-key.txt; never replaced)"
    )


SIM_BASE = ".gpuonboard/sim"
SIM_BASE_HELP = "state directory of the simulated servers (default .gpuonboard/sim; its inventory/ is theirs)"


@dataclass
class SimUpFlags:
    """`sim.up`'s own flags."""

    name: str = flag("demo-a100", "inventory host name of the simulated server (default demo-a100)")
    profile: str = flag(
        "a100-8x-nvlink",
        "hardware profile (default a100-8x-nvlink; rtx4090-1x, a100-misdelivered, h200-1gpu, ...)",
    )
    base: str = flag(SIM_BASE, SIM_BASE_HELP)
    hint: bool = flag(
        True, "print the command to run next (default on; --no-hint: the demo, which stops it again)"
    )
    container: bool = flag(
        True,
        "give it a container runtime (podman as docker) with a simulated NVIDIA toolkit and"
        " a local registry mirror, where podman, runc, docker-registry and busybox are installed"
        " (default on; --no-container: none)",
    )


@dataclass
class SimDownFlags:
    """`sim.down`'s own flags."""

    base: str = flag(SIM_BASE, SIM_BASE_HELP)
    name: str = flag("", "stop only this simulated server (the others keep running)")


@dataclass
class SimCronFlags:
    """`sim.cron`'s own flags."""

    name: str = flag("demo-a100", "the simulated server (default demo-a100)")
    base: str = flag(SIM_BASE, SIM_BASE_HELP)
