"""The typed results of a run, each host's verdict and the run's exit code, computed once.

The runner returns a `HostResult` per host; `conclude` judges each host once and derives the
exit code, giving the `RunResult` that terminal, JSON and JUnit render (summary.json stores each
host's verdict, which `invoke report` then reads back, never judging the host again).

A host is GO when it was reached, its acceptance step compared the box with its order, no step
failed and no rule or benchmark failed. A rule whose fact could not be read is `unverified`:
counted in the verdict line ("GO with 1 unverified") and a failure only under `--strict`. A run
that judged the box against no order (`prove`, `sync`, `--skip acceptance`) has "no verdict".
Pure: reads typed results and host records (summary.json's shape); the inventory, steps and
facts types are annotations only, so report/ reaches none of them through this module.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from gpuonboard.errors import ExitCode

if TYPE_CHECKING:  # (annotations only: report/ imports this module, never these)
    from gpuonboard.connection.gather import Facts
    from gpuonboard.inventory import Host
    from gpuonboard.steps.base import StepResult

Word = Literal["GO", "NO-GO", "no verdict"]
HostStatus = Literal["ok", "changed", "failed", "unreachable"]


@dataclass
class HostResult:
    """Everything one host's run produced."""

    host: Host
    status: HostStatus
    msg: str
    steps: list[StepResult] = field(default_factory=list)
    facts: Facts | None = None
    fingerprint: str | None = None
    duration: float = 0.0
    host_key_error: bool = False


@dataclass(frozen=True)
class Reason:
    """One reason against GO: an i18n key and its values (the report says it in its language)."""

    key: str
    values: Mapping[str, Any]


@dataclass(frozen=True)
class HostVerdict:
    """One host's verdict and the checks it names."""

    word: Word
    failed: tuple[str, ...]  # rules, benchmarks and `step NAME (msg)` that failed
    warned: tuple[str, ...]
    unverified: tuple[str, ...]
    reasons: tuple[Reason, ...]

    @property
    def go(self) -> bool:
        """GO (warned and unverified checks named after it)."""
        return self.word == "GO"

    def to_json(self) -> dict[str, Any]:
        """summary.json's `verdict` of a host (its reasons too: `invoke report` says them)."""
        return {
            "word": self.word,
            "failed": list(self.failed),
            "warned": list(self.warned),
            "unverified": list(self.unverified),
            "reasons": [{"key": r.key, "values": dict(r.values)} for r in self.reasons],
        }

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> HostVerdict | None:
        """The verdict summary.json stored (to_json's form), or None when `doc` is not one."""
        word = doc.get("word")
        if word not in ("GO", "NO-GO", "no verdict"):
            return None

        def names(key: str) -> tuple[str, ...]:
            value = doc.get(key)
            return tuple(str(v) for v in value) if isinstance(value, list) else ()

        reasons = tuple(
            Reason(str(r.get("key")), dict(r.get("values") or {}))
            for r in doc.get("reasons") or []
            if isinstance(r, Mapping) and isinstance(r.get("values") or {}, Mapping)
        )
        return cls(word, names("failed"), names("warned"), names("unverified"), reasons)


def judged(host: Mapping[str, Any]) -> bool:
    """Whether a host record holds an acceptance verdict (its `acceptance` step ran): a `sync`,
    `autostop` or `teardown` run judges no box."""
    steps = host.get("steps") if isinstance(host, Mapping) else None
    return any(
        isinstance(st, Mapping)
        and st.get("step") == "acceptance"
        and st.get("status") in ("ok", "changed", "failed")
        for st in steps or []
    )


def failed_steps(host: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(step, message) of each failed step that no failed rule of its own explains, other than
    the one the host's own message names."""
    out = []
    for st in host.get("steps") or []:
        if not isinstance(st, Mapping) or st.get("status") != "failed":
            continue
        if any(c.get("verdict") == "fail" for c in st.get("checks") or [] if isinstance(c, Mapping)):
            continue
        name, msg = str(st.get("step")), str(st.get("msg") or "")
        if str(host.get("msg") or "") != f"step {name}: {msg}":
            out.append((name, msg))
    return out


def _named(items: Iterable[Mapping[str, Any]], verdict: str) -> list[Mapping[str, Any]]:
    return [i for i in items if isinstance(i, Mapping) and i.get("verdict") == verdict]


def judge(host: Mapping[str, Any], strict: bool = False, require_acceptance: bool = True) -> HostVerdict:
    """The verdict of one host record (summary.json's `hosts[]` shape). `strict`: an unverified
    check fails the host. `require_acceptance=False`: a host that ran no acceptance step and
    failed nothing is not held against that (the terminal after a `prove` run)."""
    rules = list(host.get("rules") or [])
    benchmarks = list(host.get("benchmarks") or [])
    reasons: list[Reason] = []
    if host.get("status") in ("failed", "unreachable"):
        reasons.append(Reason("r_status", {"status": host.get("status"), "msg": host.get("msg", "")}))
    fail_rules = _named(rules, "fail")
    reasons += [
        Reason("r_rule", {"name": r.get("name"), "expected": r.get("expected"), "actual": r.get("actual")})
        for r in fail_rules
    ]
    fail_bench = _named(benchmarks, "fail")
    reasons += [
        Reason("r_bench", {"name": b.get("name"), "value": b.get("value"), "unit": b.get("unit", "")})
        for b in fail_bench
    ]
    steps = failed_steps(host)
    reasons += [Reason("r_step", {"name": n, "msg": m}) for n, m in steps]
    unverified = tuple(
        str(r.get("name")) for r in [*_named(rules, "unverified"), *_named(benchmarks, "unverified")]
    )
    if strict:
        reasons += [Reason("r_unverified", {"name": n}) for n in unverified]
    failed = tuple(
        [str(r.get("name")) for r in fail_rules]
        + [str(b.get("name")) for b in fail_bench]
        + [f"step {n} ({m})" for n, m in steps]
        + (list(unverified) if strict else [])
    )
    warned = tuple(str(r.get("name")) for r in [*_named(rules, "warn"), *_named(benchmarks, "warn")])
    word: Word
    if reasons:
        word = "NO-GO"
    elif host.get("status") != "unreachable" and (not rules or (require_acceptance and not judged(host))):
        # compared with no order: neither a GO nor a NO-GO of the box
        word = "no verdict"
        reasons.append(Reason("r_no_rules", {}))
    else:
        word = "GO"
    return HostVerdict(word, failed, warned, unverified, tuple(reasons))


def run_word(verdicts: Sequence[HostVerdict]) -> Word:
    """The run's verdict: NO-GO when any host is, no verdict when any host has none, else GO."""
    words = {v.word for v in verdicts}
    if not verdicts or "NO-GO" in words:
        return "NO-GO"
    return "no verdict" if "no verdict" in words else "GO"


def exit_code(verdicts: Sequence[HostVerdict], runner_code: ExitCode) -> ExitCode:
    """The run's exit code from the same verdicts the reports show: the runner's own code
    (failures, host keys, unreachable hosts) unless a host's verdict is NO-GO (a check that
    failed without failing its step, an unverified check under --strict): then 1."""
    if runner_code == ExitCode.OK and any(v.word == "NO-GO" for v in verdicts):
        return ExitCode.ACCEPTANCE_FAILED
    return runner_code


def recorded(host: Mapping[str, Any], strict: bool = False) -> HostVerdict:
    """The verdict a host record of summary.json stores (what `invoke report` shows: the run's
    own, never judged again). A record written before verdicts were stored, or by hand, has
    none: it is judged once here from its rules. A stored verdict without its reasons (an
    older summary.json) takes the reasons its rules give for that same word."""
    stored = host.get("verdict")
    if not isinstance(stored, Mapping) or (verdict := HostVerdict.from_json(stored)) is None:
        return judge(host, strict)
    if "reasons" not in stored:
        again = judge(host, strict)
        if again.word == verdict.word:
            return dataclasses.replace(verdict, reasons=again.reasons)
    return verdict


def host_rules(r: HostResult) -> list[dict[str, Any]]:
    """Every check of every step, as summary.json's `rules` (what the GO / NO-GO verdict reads)."""
    return [
        {"name": c.name, "expected": c.expected, "actual": c.actual, "verdict": c.verdict, "detail": c.detail}
        for s in r.steps
        for c in s.checks
    ]


def host_record(r: HostResult) -> dict[str, Any]:
    """The part of a host's record its verdict reads (judge): status, rules, steps."""
    return {"status": r.status, "msg": r.msg, "rules": host_rules(r), "steps": [s.to_json() for s in r.steps]}


def runner_code(hosts: Sequence[HostResult]) -> ExitCode:
    """The exit code of the hosts' statuses: failures first, then host-key refusals, then
    unreachable hosts."""
    if any(r.status == "failed" for r in hosts):
        return ExitCode.ACCEPTANCE_FAILED
    if any(r.host_key_error for r in hosts):
        return ExitCode.HOST_KEY
    if any(r.status == "unreachable" for r in hosts):
        return ExitCode.UNREACHABLE
    return ExitCode.OK


def recap(hosts: Sequence[HostResult]) -> dict[str, int]:
    """Counts of hosts per status."""
    out = {"ok": 0, "changed": 0, "failed": 0, "unreachable": 0}
    for r in hosts:
        out[r.status] += 1
    return out


@dataclass(frozen=True)
class RunResult:
    """A run's host results with each host's verdict and the run's exit code, computed once
    (`conclude`): what every report renders."""

    hosts: tuple[HostResult, ...]
    verdicts: tuple[HostVerdict, ...]  # one per host, in the same order
    exit_code: ExitCode
    strict: bool = False

    def __iter__(self) -> Iterator[tuple[HostResult, HostVerdict]]:
        return iter(zip(self.hosts, self.verdicts, strict=True))

    @property
    def word(self) -> Word:
        """The run's verdict (run_word)."""
        return run_word(self.verdicts)

    def recap(self) -> dict[str, int]:
        """Counts of hosts per status."""
        return recap(self.hosts)


def conclude(hosts: Sequence[HostResult], strict: bool = False) -> RunResult:
    """Judge each host once and derive the run's exit code: the one RunResult of a run."""
    verdicts = tuple(judge(host_record(r), strict) for r in hosts)
    return RunResult(tuple(hosts), verdicts, exit_code(verdicts, runner_code(hosts)), strict)
