"""The step contract: plan (pure) -> apply (skipped in check mode) -> verify; one result record.

Like pyinfra, a step declares the extra read-only probes it needs, which ride in the host's
ONE batched fact probe, so a step whose plan finds nothing to do costs no extra round trip.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from gpuonboard.errors import GpuonboardError

if TYPE_CHECKING:
    from gpuonboard.connection import KnownHosts, Runner
    from gpuonboard.connection.gather import Facts
    from gpuonboard.facts.probe import Probe
    from gpuonboard.inventory import Host, Inventory

Status = Literal["ok", "changed", "failed", "skipped"]
# `unverified`: the fact could not be read, was refused by the provider, or its output was cut
# short; never a pass and never a hardware claim. Counted in the verdict line ("GO with 1
# unverified"); a failure only under --strict.
Verdict = Literal["pass", "warn", "fail", "unverified"]
# a verdict's weight where two are joined into one: the worse one stands
VERDICT_RANK: dict[Verdict, int] = {"pass": 0, "unverified": 1, "warn": 2, "fail": 3}


@dataclass(frozen=True)
class Check:
    """One acceptance rule's outcome: expected vs actual and a verdict."""

    name: str
    expected: str
    actual: str
    verdict: Verdict
    detail: str = ""


@dataclass
class StepResult:
    """Ansible-style result record of one step on one host."""

    step: str
    status: Status
    msg: str
    checks: list[Check] = field(default_factory=list)
    diff: dict[str, Any] | None = None
    duration: float = 0.0
    check_mode: bool = False

    def to_json(self) -> dict[str, Any]:
        """Stable JSON form (see README: summary.json)."""
        return {
            "step": self.step,
            "status": self.status,
            "msg": self.msg,
            "check_mode": self.check_mode,
            "duration": round(self.duration, 3),
            "diff": self.diff,
            # (its fields are all strings: a copy of them, without asdict's deep copy)
            "checks": [dict(c.__dict__) for c in self.checks],
        }


@dataclass
class Plan:
    """What a step would do: nothing (`changes=False`), or a change described by msg/diff."""

    changes: bool
    msg: str
    diff: dict[str, Any] | None = None
    checks: list[Check] = field(default_factory=list)
    failed: bool = False
    data: Any = None


@dataclass
class StepContext:
    """What a step sees: the host, its open connection, its facts, check mode, project dir."""

    host: Host
    runner: Runner
    facts: Facts
    check: bool
    project: Path
    # live progress text for the terminal's per-host line (None: nobody is watching)
    progress: Callable[[str], None] | None = None
    # run-wide settings for steps that open their own transport (rsync over OpenSSH)
    inventory: Inventory | None = None
    known_hosts: Path | None = None
    # the hosts of this run and --forks (steps that make hosts meet, e.g. multi-node all-reduce)
    run_hosts: frozenset[str] = frozenset()
    forks: int = 0


@dataclass
class Warm:
    """What `Step.warm` gets: the host and run settings; `settled` is set once the login is
    over, with `connected` True when the connection is open and its host key verified."""

    host: Host
    inventory: Inventory | None
    project: Path
    known_hosts: Path | None
    check: bool
    settled: threading.Event = field(default_factory=threading.Event)
    connected: bool = False
    store: KnownHosts | None = None  # the run's known_hosts (is the host's key recorded already?)

    def key_known(self) -> bool:
        """The host's key is recorded already (and matches the pin, when one is set), and no
        jump host is involved: a transport that checks keys strictly against the same
        known_hosts may then connect before our own login has finished."""
        from gpuonboard.connection import fingerprint, known_hosts_name

        if self.store is None or self.host.jump:
            return False
        keys = self.store.lookup(known_hosts_name(self.host.address, self.host.port)).values()
        return any(not self.host.host_key or fingerprint(k) == self.host.host_key for k in keys)


def last_line(text: str, code: int) -> str:
    """Pure: the last non-blank line of a command's output (its error, mostly), else `exit code N`."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else f"exit code {code}"


class StepArgsError(GpuonboardError):
    """A step's arguments in a playbook are wrong (raised at load time, before connecting)."""


TRUE_WORDS = frozenset({"true", "yes", "on", "1"})
FALSE_WORDS = frozenset({"false", "no", "off", "0", ""})


def truthy(value: Any, name: str) -> bool:
    """The one rule for a yes/no setting (a step argument, a flag, a host variable): true for
    true/yes/on/1, false for false/no/off/0 and "" (any case, spaces stripped), True/False
    and None as themselves; anything else is a StepArgsError naming the setting, as a guess
    either way (`encrypt: maybe`) would do what the user did not ask for."""
    if value is None or isinstance(value, bool):
        return bool(value)
    text = str(value).strip().lower() if isinstance(value, str | int) else None
    if text in TRUE_WORDS:
        return True
    if text in FALSE_WORDS:
        return False
    raise StepArgsError(f"argument {name!r} must be true or false, not {value!r}")


class Step:
    """Base class: subclasses set `name`, `read_only`, `ARGS`, and implement plan/apply."""

    name: ClassVar[str] = ""
    read_only: ClassVar[bool] = True
    ARGS: ClassVar[dict[str, str]] = {}
    # arguments that are remote command texts: never Jinja-rendered from host values, so an
    # inventory value can never become shell code
    RAW_ARGS: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, args: Mapping[str, Any], label: str | None = None) -> None:
        unknown = [k for k in args if k not in self.ARGS]
        if unknown:
            allowed = ", ".join(sorted(self.ARGS)) or "none"
            raise StepArgsError(f"unknown argument {unknown[0]!r} (allowed: {allowed})")
        self.args = dict(args)
        self.label = label or self.name

    def probes(self) -> list[Probe]:
        """Extra read-only probes for the batched fact probe (none by default)."""
        return []

    def check_host(self, host: Host) -> None:
        """Validate what this step takes from the host's inventory values, before connecting
        (raise StepArgsError); nothing by default."""

    def warm(self, warm: Warm) -> None:
        """Called before the host's connection is opened: start, in the background, work that
        needs no connection (a local scan), or that may start once the host key is verified
        (wait for `warm.settled`, then check `warm.connected`: a transport of the step's own),
        so that it overlaps the login and the fact probe; plan() collects it. Must return at
        once and never raise. Nothing by default."""

    def release(self) -> None:
        """Called once the host's run is over, whatever happened: stop what `warm` started and
        plan/apply did not take over (e.g. the host was unreachable). Nothing by default."""

    def plan(self, ctx: StepContext) -> Plan:
        """Pure: decide from facts what would change, or why nothing needs to."""
        raise NotImplementedError

    def apply(self, ctx: StepContext, plan: Plan) -> Any:
        """Make the change (never called in check mode)."""
        return None

    def verify(self, ctx: StepContext, plan: Plan, applied: Any) -> str | None:
        """After apply: None when the host is now as planned, else why not."""
        return None

    def execute(self, ctx: StepContext) -> StepResult:
        """plan -> (check mode: report) -> apply -> verify, timed, as one result."""
        start = time.monotonic()
        plan = self.plan(ctx)

        def done(status: Status, msg: str) -> StepResult:
            return StepResult(
                self.label, status, msg, plan.checks, plan.diff, time.monotonic() - start, ctx.check
            )

        if plan.failed:
            return done("failed", plan.msg)
        if not plan.changes:
            return done("ok", plan.msg)
        if ctx.check:
            return done("changed", f"would {plan.msg} (check mode: nothing changed)")
        applied = self.apply(ctx, plan)
        problem = self.verify(ctx, plan, applied)
        if problem:
            return done("failed", problem)
        return done("changed", plan.msg)
