"""The host verdict and the run's exit code, computed once (terminal, JSON, JUnit, HTML render it).

A host is GO when it was reached, its acceptance step compared the box with its order, no step
failed and no rule or benchmark failed. A rule whose fact could not be read is `unverified`:
counted in the verdict line ("GO with 1 unverified") and a failure only under `--strict`. A run
that judged the box against no order (`prove`, `sync`, `--skip acceptance`) has "no verdict".
Pure: reads a host record (summary.json's shape), never the connection or the report layer.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from gpuonboard.errors import ExitCode

Word = Literal["GO", "NO-GO", "no verdict"]


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
        """summary.json's `verdict` of a host."""
        return {
            "word": self.word,
            "failed": list(self.failed),
            "warned": list(self.warned),
            "unverified": list(self.unverified),
        }


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
