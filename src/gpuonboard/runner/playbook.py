"""Playbooks: YAML lists of steps, validated at load, arguments rendered per host with Jinja2."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuonboard.errors import PlaybookError
from gpuonboard.inventory import Host
from gpuonboard.jinjatext import is_template
from gpuonboard.steps import REGISTRY, Step
from gpuonboard.steps.base import StepArgsError
from gpuonboard.yamlload import did_you_mean, load_yaml, shown, where

PLAYBOOK_KEYS = {"name", "description", "steps"}
STEP_KEYS = {"step", "name", "args"}


@dataclass(frozen=True)
class StepSpec:
    """One step entry of a playbook, before per-host rendering."""

    kind: str
    label: str
    args: dict[str, Any]
    line: int | None


@dataclass(frozen=True)
class Playbook:
    """A named, ordered list of steps from one file."""

    path: Path
    name: str
    steps: tuple[StepSpec, ...]

    @property
    def read_only(self) -> bool:
        """True when no step can change a host."""
        return all(REGISTRY[s.kind].read_only for s in self.steps)

    def labels(self) -> list[str]:
        """Step labels in order."""
        return [s.label for s in self.steps]


def load(path: Path | str) -> Playbook:
    """Load and validate a playbook file; every problem names file, line and key."""
    path = Path(path)
    data = load_yaml(path, PlaybookError, "playbook")
    if data is None:
        raise PlaybookError(f"{path}: the playbook is empty; add a 'steps:' list like '- step: acceptance'.")
    if not isinstance(data, dict):
        raise PlaybookError(f"{path}, line 1: a playbook must be a mapping with a 'steps:' list.")
    for key in data:
        if key not in PLAYBOOK_KEYS:
            raise PlaybookError(
                f"{where(path, data, key)}: the playbook has an unknown key {key!r}"
                f"{did_you_mean(key, PLAYBOOK_KEYS) or '; allowed: name, description, steps.'}"
            )
    for key in ("name", "description"):
        if isinstance(data.get(key), list | dict):  # `name: [a]` was the playbook's name "['a']"
            raise PlaybookError(f"{where(path, data, key)}: the playbook's {key!r} must be a text.")
    steps_raw = data.get("steps")
    if not isinstance(steps_raw, list) or not steps_raw:
        raise PlaybookError(
            f"{where(path, data, 'steps')}: 'steps' must be a non-empty list of steps,"
            " each written like '- step: acceptance'."
        )
    specs: list[StepSpec] = []
    labels: set[str] = set()
    for i, entry in enumerate(steps_raw, 1):
        spec = _load_step(path, data, i, entry)
        if spec.label in labels:
            raise PlaybookError(
                f"{path}, line {spec.line}: step name {spec.label!r} is used twice; give each step a"
                " unique 'name:' (the journal and --only/--skip refer to steps by name)."
            )
        labels.add(spec.label)
        specs.append(spec)
    return Playbook(path=path, name=str(data.get("name") or path.stem), steps=tuple(specs))


def _load_step(path: Path, data: dict[str, Any], i: int, entry: Any) -> StepSpec:
    if not isinstance(entry, dict):
        raise PlaybookError(
            f"{where(path, data, 'steps')}: step {i} must be a mapping like 'step: acceptance',"
            f" not {shown(entry)}."
        )
    line = getattr(entry, "line", None)
    for key in entry:
        if key not in STEP_KEYS:
            raise PlaybookError(
                f"{where(path, entry, key)}: step {i} has an unknown key {key!r}"
                f"{did_you_mean(key, STEP_KEYS) or '; allowed: step, name, args.'}"
            )
    kind = entry.get("step")
    if not isinstance(kind, str) or not kind:
        raise PlaybookError(f"{where(path, entry)}: step {i} needs 'step: <type>' ({', '.join(REGISTRY)}).")
    if kind not in REGISTRY:
        raise PlaybookError(
            f"{where(path, entry, 'step')}: unknown step type {kind!r}"
            f"{did_you_mean(kind, REGISTRY) or '; known: ' + ', '.join(REGISTRY) + '.'}"
        )
    args = entry.get("args")
    if args is None:  # `args:` with nothing after it
        args = {}
    if not isinstance(args, dict):  # (`args: []` or `args: ""` too: never taken as "no args")
        raise PlaybookError(f"{where(path, entry, 'args')}: step {i} 'args' must be a mapping.")
    label = entry.get("name") or kind
    if not isinstance(label, str):
        raise PlaybookError(f"{where(path, entry, 'name')}: step {i} 'name' must be a text.")
    if "," in label or label != label.strip():
        # --only/--skip split on commas and strip spaces: such a step could never be picked
        raise PlaybookError(
            f"{where(path, entry, 'name')}: step {i} name {label!r} must have no comma and no"
            " leading or trailing space (--only/--skip take comma-separated names)."
        )
    unknown = [k for k in args if k not in REGISTRY[kind].ARGS]
    if unknown:
        allowed = ", ".join(sorted(REGISTRY[kind].ARGS)) or "none"
        raise PlaybookError(
            f"{where(path, args, unknown[0])}: step {label!r} has an unknown argument {unknown[0]!r}"
            f"{did_you_mean(unknown[0], REGISTRY[kind].ARGS) or '; allowed: ' + allowed + '.'}"
        )
    return StepSpec(kind=kind, label=label, args=dict(args), line=line)


def check_templates(playbook: Playbook, project: Path, labels: Iterable[str]) -> None:
    """A `template` step whose `src` names no file under templates/ is a playbook error before
    any connection (found only after the login and the probe, it failed every host: exit 1).
    Jinja2 is imported only where there is such a step."""
    chosen = set(labels)
    for spec in playbook.steps:
        src = spec.args.get("src")
        if spec.kind != "template" or spec.label not in chosen or not isinstance(src, str):
            continue
        from gpuonboard.templating import find_template

        if not is_template(src) and not find_template(project, src):
            raise PlaybookError(
                f"{_at(playbook, spec)}: step {spec.label!r} names the template {src!r}, which is not"
                f" under {project / 'templates'} nor the shipped templates; fix 'src' or add the file."
            )


# steps that pull results and delete on the host: they need what `invoke teardown` gives them
# (a host named, the pull's known_hosts, inventory and the dirs the files step removes, so a
# symlink in the results into them is refused before anything is deleted)
TEARDOWN_KINDS = frozenset({"teardown_pull", "teardown_containers", "teardown_files"})


def teardown_steps(playbook: Playbook, labels: Iterable[str]) -> list[str]:
    """Pure: the chosen steps (by label) that only `invoke teardown` may run."""
    chosen = set(labels)
    return [s.label for s in playbook.steps if s.kind in TEARDOWN_KINDS and s.label in chosen]


def host_context(host: Host) -> dict[str, Any]:
    """Variables a playbook argument may use: host, vars, order, vendor."""
    return {"host": host, "vars": host.vars, "order": host.order, "vendor": host.vendor}


def _at(playbook: Playbook, spec: StepSpec) -> str:
    """Where a step comes from: file and line, or only the name of a playbook made from flags
    (`invoke sync`: no line to point at)."""
    return f"{playbook.path}, line {spec.line}" if spec.line else str(playbook.path)


def instantiate(playbook: Playbook, spec: StepSpec, host: Host) -> Step:
    """Render a step's arguments for one host and build the Step; errors name file and step."""
    raw_keys = REGISTRY[spec.kind].RAW_ARGS
    args = dict(spec.args)
    if any(_templated(v) for k, v in spec.args.items() if k not in raw_keys):
        args = _rendered_args(playbook, spec, host, raw_keys)
    try:
        step = REGISTRY[spec.kind](args, spec.label)
    except StepArgsError as exc:
        raise PlaybookError(f"{_at(playbook, spec)}: step {spec.label!r}: {exc}.") from None
    try:
        step.check_host(host)
    except StepArgsError as exc:
        raise PlaybookError(
            f"{_at(playbook, spec)}: step {spec.label!r} for host {host.name!r}: {exc}."
        ) from None
    return step


def _templated(value: Any) -> bool:
    """Whether a YAML value holds a Jinja2 expression or statement anywhere (the strings that
    templating.render_value renders; the rest it returns as they are)."""
    if isinstance(value, str):
        return is_template(value)
    if isinstance(value, dict):
        return any(_templated(v) for v in value.values())
    if isinstance(value, list):
        return any(_templated(v) for v in value)
    return False


def _rendered_args(playbook: Playbook, spec: StepSpec, host: Host, raw_keys: Any) -> dict[str, Any]:
    """The step's arguments rendered for `host` (Jinja2 is imported only for a playbook that
    has templates: the acceptance check's has none)."""
    import jinja2

    from gpuonboard.templating import render_value

    args = {k: v for k, v in spec.args.items() if k in raw_keys}
    key = ""
    try:
        context = host_context(host)
        for key, value in spec.args.items():
            if key not in raw_keys:
                args[key] = render_value(value, context)
    except jinja2.UndefinedError as exc:
        raise PlaybookError(
            f"{_at(playbook, spec)}: step {spec.label!r} for host {host.name!r} uses an"
            f" undefined variable ({exc.message}); define it in the inventory's vars."
        ) from None
    except jinja2.TemplateSyntaxError as exc:
        # `{{.State.Running}}` (a Go template for docker) is Jinja2 syntax too
        raise PlaybookError(
            f"{_at(playbook, spec)}: step {spec.label!r} has a bad template ({exc}) in argument"
            f" {key!r}; a literal '{{{{' (a Go template like '{{{{.State.Running}}}}') must be written"
            " inside {% raw %}...{% endraw %}."
        ) from None
    except jinja2.TemplateError as exc:
        raise PlaybookError(
            f"{_at(playbook, spec)}: step {spec.label!r} has a bad template ({exc})."
        ) from None
    except Exception as exc:  # `{{ 1/0 }}`, `{{ host.name + 1 }}`: the template's error, not ours
        raise PlaybookError(
            f"{_at(playbook, spec)}: step {spec.label!r} for host {host.name!r}: a template in its"
            f" arguments failed ({type(exc).__name__}: {exc}); fix the expression."
        ) from None
    return args
