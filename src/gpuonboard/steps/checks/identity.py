"""Step `gpu_identity`: are these the GPUs this host had last time, and are they not a box you
already rejected under another name? Read-only on the host; records a local GPU ledger.

Every run records each GPU's serial, UUID and board part number in the project's ledger
(`.gpuonboard/ledger/<host>.json`, see ledger.py), check mode included: that is bookkeeping on
this machine, not a change to the host. The rule `gpu_identity` then says:

- first sight of the host: pass, "recorded 8 GPUs: serials ...";
- the same GPUs as its last recorded run: pass (a new enumeration order is said, not judged);
- a GPU whose serial/UUID differs from the last recorded run at that index: warn, naming the
  index and the serial it changed from and to (a swap: fine when you asked for it);
- GPUs recorded for ANOTHER host whose last run failed acceptance (the broken box handed back
  under a new name): fail when every GPU of this host is one of that box's, and it had no other;
  warn when only some are (a box partly rebuilt from a rejected one);
- no serial or UUID in the GPU facts (the plain table): unverified; no GPU facts: no rule.

The outcome a run records is its acceptance verdict, computed by this step from the same facts
with the same pure rules as the `acceptance` and `gpu_health` steps (the run's final result is
not known when steps plan, and the runner has no per-host end hook that sees it): "fail" when
any of those rules fails. Acceptance tolerances given as step arguments in a playbook are not
seen here (the defaults are used); gpu_health thresholds from `vars.gpu_health` are.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gpuonboard.steps.base import VERDICT_RANK, Check, Plan, Step, StepArgsError, StepContext, Verdict
from gpuonboard.steps.checks import ledger
from gpuonboard.steps.checks.ledger import GpuIdentity, LedgerEntry, LedgerError, Outcome

RULE = "gpu_identity"


def same_gpu(a: GpuIdentity, b: GpuIdentity) -> bool | None:
    """Pure: whether two records are the same physical GPU (None: no identifier both carry).
    Every identifier both carry must agree (a serial kept with a new UUID is another GPU)."""
    agree = []
    if a.serial and b.serial:
        agree.append(a.serial == b.serial)
    if a.uuid and b.uuid:
        agree.append(a.uuid == b.uuid)
    return all(agree) if agree else None


def _change(old: GpuIdentity, new: GpuIdentity) -> str:
    """`serial A -> B` (or the UUIDs, when the serials do not tell the two apart)."""
    if old.serial and new.serial and old.serial != new.serial:
        return f"serial {old.serial} -> {new.serial}"
    if old.uuid and new.uuid and old.uuid != new.uuid:
        return f"UUID {old.uuid} -> {new.uuid}"
    return f"{old.label()} -> {new.label()}"


@dataclass
class Comparison:
    """How this run's GPUs differ from a recorded run's (every list empty: the same GPUs)."""

    swapped: list[str] = field(default_factory=list)  # "GPU 3: serial A -> B"
    added: list[str] = field(default_factory=list)  # "GPU 8: serial C (new)"
    gone: list[str] = field(default_factory=list)  # "GPU 7: serial D"
    moved: list[str] = field(default_factory=list)  # "serial A: GPU 0 -> GPU 3"

    @property
    def changed(self) -> bool:
        """Whether a GPU was swapped, added or is no longer reported."""
        return bool(self.swapped or self.added or self.gone)


def compare(before: Sequence[GpuIdentity], now: Sequence[GpuIdentity]) -> Comparison:
    """Pure: the GPUs of `now` against those of `before`, matched by serial/UUID (not by index,
    so a new enumeration order is no swap); an unmatched GPU pairs with the unmatched one that
    sat at its index before (a swap), else it is new or gone. GPUs without any identifier on
    either side are left out (the caller says they could not be identified)."""
    out = Comparison()
    old = [g for g in before if g.identified]
    unmatched_old = list(old)
    unmatched_new: list[GpuIdentity] = []
    for g in (g for g in now if g.identified):
        match = next((o for o in unmatched_old if same_gpu(o, g)), None)
        if match is None:
            unmatched_new.append(g)
            continue
        unmatched_old.remove(match)
        if match.index != g.index:
            out.moved.append(f"{g.label()}: GPU {match.index} -> GPU {g.index}")
    for g in unmatched_new:
        was = next((o for o in unmatched_old if o.index == g.index), None)
        if was is not None:
            unmatched_old.remove(was)
            out.swapped.append(f"GPU {g.index}: {_change(was, g)}")
        else:
            out.added.append(f"GPU {g.index}: {g.label()} (new)")
    out.gone += [f"GPU {o.index}: {o.label()}" for o in unmatched_old]
    return out


@dataclass(frozen=True)
class HandBack:
    """GPUs of this host recorded for another host whose last run failed acceptance."""

    entry: LedgerEntry  # that host's last run
    matched: tuple[GpuIdentity, ...]  # this host's GPUs that were in it
    whole_box: bool  # every GPU of this host, and that box had no other


def find_hand_back(now: Sequence[GpuIdentity], others: Mapping[str, LedgerEntry]) -> HandBack | None:
    """Pure: the failed box (another host's last run that failed acceptance) holding most of this
    host's GPUs, the latest on a tie; None when no GPU of this host was in one."""
    best: HandBack | None = None
    known = [g for g in now if g.identified]
    for entry in others.values():
        if entry.acceptance != "fail":
            continue
        theirs = [g for g in entry.gpus if g.identified]
        matched = tuple(g for g in known if any(same_gpu(g, o) for o in theirs))
        if not matched:
            continue
        whole = len(matched) == len(now) == len(entry.gpus)
        found = HandBack(entry, matched, whole)
        if best is None or (len(matched), entry.time) > (len(best.matched), best.entry.time):
            best = found
    return best


def seen_elsewhere(now: Sequence[GpuIdentity], others: Mapping[str, LedgerEntry]) -> list[str]:
    """Pure: `host X (DATE)` for each other host whose last run (not failed) held one of these
    GPUs: the box known under another name (renamed in the inventory, or moved GPUs)."""
    known = [g for g in now if g.identified]
    return [
        f"host {e.host} ({e.day()})"
        for e in sorted(others.values(), key=lambda e: e.time)
        if e.acceptance != "fail" and any(same_gpu(g, o) for g in known for o in e.gpus if o.identified)
    ]


def _list(gpus: Sequence[GpuIdentity]) -> str:
    """`serials A, B` when every GPU has one, else `GPU 0 serial A; GPU 1 UUID B`."""
    if all(g.serial for g in gpus):
        word = "serial" if len(gpus) == 1 else "serials"
        return f"{word} {', '.join(str(g.serial) for g in gpus)}"
    if all(g.uuid and not g.serial for g in gpus):
        word = "UUID" if len(gpus) == 1 else "UUIDs"
        return f"{word} {', '.join(str(g.uuid) for g in gpus)}"
    return "; ".join(f"GPU {g.index} {g.label()}" for g in gpus)


def _count(n: int) -> str:
    return f"{n} GPU" if n == 1 else f"{n} GPUs"


@dataclass
class _Findings:
    """What `rule_gpu_identity` has found so far: the worst verdict, the actual parts, advice."""

    verdict: Verdict = "pass"
    parts: list[str] = field(default_factory=list)
    advice: list[str] = field(default_factory=list)

    def worse(self, v: Verdict) -> None:
        """Raise the verdict to `v` when `v` is worse."""
        if VERDICT_RANK[v] > VERDICT_RANK[self.verdict]:
            self.verdict = v


def _against_history(
    now: Sequence[GpuIdentity],
    history: Sequence[LedgerEntry],
    history_problem: str | None,
    unidentified: Sequence[GpuIdentity],
    found: _Findings,
) -> str:
    """Compare this run's GPUs with the host's last recorded run; returns the expected text."""
    previous = next((e for e in reversed(history) if any(g.identified for g in e.gpus)), None)
    if history_problem is not None:
        found.worse("unverified")
        found.parts.append(f"{_count(len(now))}: {_list(now)}; not compared (the ledger is unreadable)")
        found.advice.append(history_problem)
        return "the same GPUs as the last recorded run"
    if previous is None:
        found.parts.append(f"recorded {_count(len(now))}: {_list(now)}")
        return "GPU serials / UUIDs recorded (first run of this host)"
    diff = compare(previous.gpus, now)
    if diff.changed:
        found.worse("warn")
        found.parts.append(
            "; ".join([*diff.swapped, *diff.added, *[f"{g} no longer reported" for g in diff.gone]])
        )
        what = "a GPU was swapped" if diff.swapped else "the GPUs changed"
        found.advice.append(
            f"{what} since the run of {previous.day()}: fine if you asked for it (a repair),"
            " otherwise ask the vendor why and whether the old GPU failed"
        )
    else:
        found.parts.append(f"same {_count(len(now) - len(unidentified))} as on {previous.day()}")
    if diff.moved:
        found.parts.append("enumerated in another order (" + "; ".join(diff.moved) + ")")
    return f"the same GPUs as on {previous.day()}"


def _against_others(now: Sequence[GpuIdentity], others: Mapping[str, LedgerEntry], found: _Findings) -> None:
    """Look for this run's GPUs among other hosts' last runs: a failed box handed back under a
    new name (whole: fail; in part: warn), else a box known under another name (said)."""
    back = find_hand_back(now, others)
    if back is not None:
        failed = f" ({', '.join(back.entry.failed_rules)})" if back.entry.failed_rules else ""
        when = f"host {back.entry.host}, which failed acceptance{failed} on {back.entry.day()}"
        if back.whole_box:
            found.worse("fail")
            found.parts.append(f"all {_count(len(now))} are the GPUs of {when}")
            found.advice.append(
                f"this is the box you rejected as host {back.entry.host}, handed back under a new"
                " name: do not accept it before the vendor says in writing what was repaired (to"
                " accept it knowingly, run with --skip gpu_identity)"
            )
        else:
            found.worse("warn")
            found.parts.append(
                f"{', '.join(f'GPU {g.index} ({g.label()})' for g in back.matched)} were in {when}"
            )
            found.advice.append(
                f"part of the box you rejected as host {back.entry.host} came back in this one: ask"
                " the vendor which parts were replaced and why the others were kept"
            )
    elif seen := seen_elsewhere(now, others):
        found.parts.append(f"seen before on {', '.join(seen)}")


def rule_gpu_identity(
    now: Sequence[GpuIdentity],
    history: Sequence[LedgerEntry],
    others: Mapping[str, LedgerEntry],
    history_problem: str | None = None,
) -> Check:
    """Pure: the `gpu_identity` verdict for this run's GPUs against the host's own recorded runs
    (`history`, oldest first), and the other hosts' last runs (`others`). `history_problem`: why
    the host's own ledger could not be read (the comparison with it is then unverified)."""
    if not now:
        raise ValueError("rule_gpu_identity needs at least one GPU")
    unidentified = [g for g in now if not g.identified]
    if len(unidentified) == len(now):
        return Check(
            RULE,
            "GPU serials / UUIDs recorded and compared across runs",
            "serials not reported by this nvidia-smi output",
            "unverified",
            "the GPUs cannot be told apart from another box's without a serial or UUID;"
            " `nvidia-smi -q` reports them (a table-only output does not)",
        )
    found = _Findings()
    expected = _against_history(now, history, history_problem, unidentified, found)
    if unidentified:
        found.worse("unverified")
        found.parts.append(
            f"{', '.join(f'GPU {g.index}' for g in unidentified)} not identified (no serial or UUID reported)"
        )
    _against_others(now, others, found)
    return Check(RULE, expected, "; ".join(found.parts), found.verdict, "; ".join(found.advice))


def acceptance_outcome(ctx: StepContext) -> tuple[Outcome, tuple[str, ...]]:
    """This run's acceptance verdict from its facts, by the `acceptance` and `gpu_health` rules
    (the same pure functions those steps run): ("fail", failed rule names) or ("pass", ())."""
    from gpuonboard.steps.checks import acceptance, gpu_health

    checks: list[Check] = acceptance.evaluated(ctx.host.order, ctx.facts)
    try:
        thresholds = gpu_health.thresholds_from({}, ctx.host.vars)
    except StepArgsError:
        thresholds = {}  # (gpu_health itself fails the run on these)
    checks += gpu_health.evaluated(ctx.facts, thresholds)
    failed = tuple(dict.fromkeys(c.name for c in checks if c.verdict == "fail"))
    return ("fail" if failed else "pass"), failed


class GpuIdentityStep(Step):
    """Record each GPU's serial / UUID / board part number and compare them across runs and hosts."""

    name = "gpu_identity"
    read_only = True

    def __init__(self, args: Mapping[str, Any], label: str | None = None) -> None:
        super().__init__(args, label)
        # The runner builds every host's steps before any host starts: runs of other hosts
        # recorded after this instant are of this same run, not a box seen before.
        self.created = time.time()

    def plan(self, ctx: StepContext) -> Plan:
        """Compare with the ledger, then record this run in it (check mode too: local only)."""
        gpus = list(ctx.facts.gpu.gpus) if ctx.facts.gpu else []
        if not gpus:
            return Plan(False, "no GPU facts: no GPU identity to record")
        now = ledger.identities(gpus)
        directory = ledger.ledger_dir(ctx.project)
        problem: str | None = None
        try:
            history = ledger.load(directory, ctx.host.name)
        except LedgerError as exc:
            history, problem = [], str(exc)
        others, unreadable = ledger.last_runs_of_other_hosts(directory, ctx.host.name, self.created)
        check = rule_gpu_identity(now, history, others, problem)
        notes = list(unreadable)
        if problem is None and any(g.identified for g in now):
            outcome, failed = acceptance_outcome(ctx)
            entry = ledger.new_entry(ctx.host.name, now, outcome, failed, ctx.check)
            try:
                ledger.record(directory, entry)
            except (LedgerError, OSError) as exc:
                why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
                where = ledger.ledger_path(directory, ctx.host.name)
                notes.append(f"this run was not recorded in {where} ({why})")
        if notes:
            check = dataclasses.replace(check, detail="; ".join(n for n in [check.detail, *notes] if n))
        msg = {
            "pass": "GPU identities recorded",
            "unverified": "GPU identities not verified",
            "warn": "GPU identity changed",
            "fail": "GPUs of a box that failed acceptance",
        }[check.verdict]
        return Plan(False, f"{msg}: {check.actual}", checks=[check], failed=check.verdict == "fail")
