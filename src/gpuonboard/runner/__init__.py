"""Run a playbook's steps on hosts: bounded parallel hosts, steps in order, check mode, journal.

Like Fabric's Group, every host's result is collected; a failed or unreachable host never
stops the others. Per host: ONE connection, ONE batched fact probe, then each step's
plan/apply/verify. After the first failed step no step that changes the host runs (it would
act on a box that is not as expected; it is reported skipped), while later read-only checks
still run so one report shows every verdict; the failed step is recorded so `--resume`
continues there.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import secrets
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from gpuonboard import children
from gpuonboard.connection import ConnectOptions, KnownHosts, Runner, open_runner
from gpuonboard.connection.gather import Facts, gather
from gpuonboard.errors import ConnectError, GpuonboardError, HostKeyError, UsageError
from gpuonboard.inventory import Host, Inventory
from gpuonboard.results import HostResult, HostStatus
from gpuonboard.runner import journal as journal_mod
from gpuonboard.runner.playbook import Playbook, instantiate
from gpuonboard.runner.runlog import LoggedRunner, RunLog
from gpuonboard.steps import FACT_CHECKS
from gpuonboard.steps.base import Step, StepContext, StepResult, Warm

Event = Callable[[str, str], None]


@dataclass
class RunOptions:
    """Run-wide switches from the command line."""

    check: bool = False
    only: Sequence[str] = ()
    skip: Sequence[str] = ()
    resume: bool = False
    forks: int = 20
    state_dir: Path = Path(".gpuonboard") / "state"
    project: Path = Path(".")
    connect: ConnectOptions = field(default_factory=ConnectOptions)
    run_id: str = ""
    on_event: Event | None = None
    core_facts: bool = True
    log: RunLog | None = None
    selected: frozenset[str] = frozenset()  # the hosts of this run (set by run())
    # called with each host's result as soon as that host is done, in its worker (the api
    # writes its raw outputs then, while other hosts still wait on the network); an error in
    # it is ignored here: whoever set it does the work again at the end
    on_host_done: Callable[[HostResult], None] | None = None


def new_run_id() -> str:
    """Sortable, unique run id: 20261129-173501-3fa2."""
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(2)


def select_steps(playbook: Playbook, only: Sequence[str], skip: Sequence[str]) -> list[str]:
    """Step labels to run after --only/--skip; unknown names are a usage error."""
    labels = playbook.labels()
    for name in [*only, *skip]:
        if name not in labels:
            raise UsageError(
                f"{playbook.path} has no step named {name!r}; its steps are: {', '.join(labels)}."
            )
    chosen = [s for s in labels if (not only or s in only) and s not in skip]
    if not chosen:
        raise UsageError("--only/--skip left no step to run.")
    return chosen


def run(
    hosts: Sequence[Host], playbook: Playbook, inventory: Inventory | None, options: RunOptions
) -> list[HostResult]:
    """Run the playbook on every host (bounded by --forks); results in host order."""
    chosen = select_steps(playbook, options.only, options.skip)
    options = dataclasses.replace(options, selected=frozenset(h.name for h in hosts))
    plans = {
        h.name: [instantiate(playbook, s, h) for s in playbook.steps if s.label in chosen] for h in hosts
    }
    store = KnownHosts(options.connect.known_hosts)
    children.STOPPING.clear()  # (a run before it in this process may have been interrupted)
    workers = max(1, min(options.forks, len(hosts)))
    if workers == 1:
        return [_host_done(_HostRun(h, plans[h.name], playbook, inventory, options, store)) for h in hosts]
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="host")
    futures: list[Future[HostResult]] = []
    try:
        futures += [
            pool.submit(_host_done, _HostRun(h, plans[h.name], playbook, inventory, options, store))
            for h in hosts
        ]
        return [f.result() for f in futures]
    except KeyboardInterrupt:
        # Ctrl-C: start no new host or step; stop the hosts' rsync and shard streams (the
        # signal reached only us); do what the hosts' steps registered for an interrupt over
        # their still open connections (an upload gives its lease back); then cut those
        # connections so nothing else runs (the exit then waits for nothing)
        pool.shutdown(wait=False, cancel_futures=True)
        children.stop_all()
        children.run_cleanups(INTERRUPT_GRACE_S)
        for runner in list(_OPEN_RUNNERS):
            with contextlib.suppress(Exception):
                runner.close()
        raise
    finally:
        pool.shutdown(wait=False)


# connections currently open (for Ctrl-C); a set guarded by the GIL is enough for add/discard
_OPEN_RUNNERS: set[Runner] = set()
INTERRUPT_GRACE_S = 3.0  # how long an interrupted run waits for its hosts' cleanups


_event_lock = threading.Lock()


def _emit(options: RunOptions, host: str, event: str) -> None:
    if options.on_event is not None:
        with _event_lock:
            options.on_event(host, event)


@dataclass(frozen=True)
class _HostRun:
    """One host's run: its steps, and what every host of the run shares."""

    host: Host
    steps: list[Step]
    playbook: Playbook
    inventory: Inventory | None
    options: RunOptions
    store: KnownHosts


def _host_done(job: _HostRun) -> HostResult:
    """One host's run, then `options.on_host_done` with its result (its errors ignored)."""
    result = _run_host(job)
    if job.options.on_host_done is not None:
        try:
            job.options.on_host_done(result)
        except Exception:  # (the hook's owner redoes its work at the end of the run)
            if os.environ.get("GPUONBOARD_DEBUG") == "1":
                raise
    return result


def _run_host(job: _HostRun) -> HostResult:
    """One host's whole run; whatever goes wrong stays this host's failure, never the run's."""
    host, steps, inventory, options = job.host, job.steps, job.inventory, job.options
    start = time.monotonic()
    # work that needs no connection (or only a verified host key) overlaps the login and probe
    warm = Warm(host, inventory, options.project, options.connect.known_hosts, options.check, store=job.store)
    try:
        for step in steps:
            step.warm(warm)
        return _run_host_inner(job, start, warm)
    except Exception as exc:  # a bug or an unforeseen error: report it, keep the other hosts
        if os.environ.get("GPUONBOARD_DEBUG") == "1":
            raise
        msg = f"internal error on this host ({type(exc).__name__}: {exc}); rerun with --debug and report it"
        if options.log:
            options.log.write(host.name, msg)
        _emit(options, host.name, "failed")
        return HostResult(host, "failed", msg, duration=time.monotonic() - start)
    finally:
        warm.settled.set()
        for step in steps:
            try:
                step.release()
            except Exception:  # best-effort cleanup: never the host's result, never the run's
                if os.environ.get("GPUONBOARD_DEBUG") == "1":
                    raise


def _run_host_inner(job: _HostRun, start: float, warm: Warm) -> HostResult:
    host, inventory, options = job.host, job.inventory, job.options
    _emit(options, host.name, "connecting")
    try:
        runner = open_runner(host, options.connect, job.store, inventory)
    except ConnectError as exc:  # (warm.settled is set by _run_host on the way out)
        if options.log:
            options.log.write(host.name, f"unreachable: {exc}")
        result = HostResult(
            host,
            "unreachable",
            str(exc),
            duration=time.monotonic() - start,
            host_key_error=isinstance(exc, HostKeyError),
        )
        _emit(options, host.name, "unreachable")
        return result
    connection = runner
    warm.connected = True
    warm.settled.set()
    if options.log:
        options.log.write(
            host.name, f"connected to {host.address}:{host.port}, host key {runner.fingerprint}"
        )
        runner = LoggedRunner(runner, options.log)
    _OPEN_RUNNERS.add(connection)
    try:
        result = _run_steps(host, runner, job.steps, job.playbook, options, inventory)
    finally:
        runner.close()
        _OPEN_RUNNERS.discard(connection)
    if options.log:
        for step in result.steps:
            options.log.write(host.name, f"step {step.step}: {step.status}: {step.msg}")
        options.log.write(host.name, f"{result.status}: {result.msg}")
    result.duration = time.monotonic() - start
    _emit(options, host.name, result.status)
    return result


def _run_steps(
    host: Host,
    runner: Runner,
    steps: list[Step],
    playbook: Playbook,
    options: RunOptions,
    inventory: Inventory | None = None,
) -> HostResult:
    """The host's steps in order on its open connection: facts gathered once, the steps done in
    the run --resume continues skipped, no step that changes the host after a failed one."""
    previous, resume_from, not_resumed = _resume_point(host, runner.fingerprint, playbook, options)
    done_before = previous.done_steps() if previous is not None and resume_from else set()
    _emit(options, host.name, "gathering facts")
    extra = [p for s in steps for p in s.probes()]
    try:
        # a step that may change the host will need a second channel: open it meanwhile
        may_change = not options.check and any(not s.read_only for s in steps)
        facts = gather(runner, extra, core=options.core_facts, prefetch=may_change)
    except ConnectError as exc:
        return HostResult(host, "unreachable", str(exc), fingerprint=runner.fingerprint)
    except GpuonboardError as exc:
        return HostResult(host, "failed", str(exc), fingerprint=runner.fingerprint)
    record = journal_mod.Journal(host.name, playbook.name, options.run_id, host_key=runner.fingerprint)
    results: list[StepResult] = []
    reached_failed = resume_from is None
    failed: StepResult | None = None
    for step in steps:
        digest = journal_mod.args_digest(step.name, step.args)
        if not reached_failed and step.label == resume_from:
            reached_failed = True
        if not reached_failed:
            resumed = _done_before(step, digest, done_before, previous, record)
            if resumed is not None:
                results.append(resumed)
                continue
        if children.STOPPING.is_set():  # the run is being interrupted: no new step
            raise KeyboardInterrupt
        if failed is not None and not step.read_only:
            # a step that changes the host never runs on a box that failed an earlier step
            results.append(StepResult(step.label, "skipped", f"not run: step {failed.step} failed"))
            continue
        _emit(options, host.name, f"step {step.label}")
        ctx = _step_context(host, runner, facts, options, inventory)
        try:
            res = _execute_step(step, ctx, options, record)
        except ConnectError as exc:  # (recorded in the journal as where --resume continues)
            return HostResult(
                host, "unreachable", f"step {step.label}: {exc}", results, facts, runner.fingerprint
            )
        results.append(res)
        record.steps[step.label] = {"status": res.status, "run_id": options.run_id, "args": digest}
        if res.diff:
            # what the step found or made (an image digest, a file's sha256) stays in the journal
            record.steps[step.label]["diff"] = res.diff
        if res.status == "failed" and failed is None:
            # read-only checks after it still run, so one report shows every verdict
            failed = res
            record.failed_step = step.label
    return _host_outcome(host, runner.fingerprint, results, facts, failed, record, options, not_resumed)


def _resume_point(
    host: Host, fingerprint: str | None, playbook: Playbook, options: RunOptions
) -> tuple[journal_mod.Journal | None, str | None, str | None]:
    """Where --resume continues: the previous journal (None without --resume), the step it
    failed at (None: from the start), and why it was not resumed (another machine; logged)."""
    previous = journal_mod.load(options.state_dir, host.name, playbook.name) if options.resume else None
    resume_from = previous.failed_step if previous and not previous.finished else None
    not_resumed = _other_machine(previous, fingerprint) if resume_from else None
    if not_resumed:
        resume_from = None
        if options.log:
            options.log.write(host.name, not_resumed)
    return previous, resume_from, not_resumed


def _done_before(
    step: Step,
    digest: str,
    done_before: set[str],
    previous: journal_mod.Journal | None,
    record: journal_mod.Journal,
) -> StepResult | None:
    """A resumed run's result for a step done before the failed one with the same args (its
    journal entry carried over), else None: it runs."""
    if (
        step.label in done_before
        and step.name not in FACT_CHECKS  # (they cost nothing: the verdict of now)
        and previous is not None
        and previous.same_args(step.label, digest)  # changed args: work not done yet
    ):
        result = StepResult(
            step.label,
            "skipped",
            f"done in run {previous.run_id}; resumed after it",
        )
        record.steps[step.label] = dict(previous.steps[step.label])
        return result
    return None


def _step_context(
    host: Host, runner: Runner, facts: Facts, options: RunOptions, inventory: Inventory | None
) -> StepContext:
    """What one step sees of the host and the run; its progress goes to the run's events."""
    ctx = StepContext(
        host=host,
        runner=runner,
        facts=facts,
        check=options.check,
        project=options.project,
        inventory=inventory,
        known_hosts=options.connect.known_hosts,
        run_hosts=options.selected,
        forks=options.forks,
    )
    ctx.progress = functools.partial(_emit, options, host.name)
    return ctx


def _execute_step(
    step: Step, ctx: StepContext, options: RunOptions, record: journal_mod.Journal
) -> StepResult:
    """Run one step: its result, any error of its own as a failed result. A lost connection or
    an interrupt is recorded in the journal as the step --resume continues at, and raised."""
    try:
        return step.execute(ctx)
    except ConnectError:
        record.failed_step = step.label
        if not options.check:
            journal_mod.save(options.state_dir, record)  # so --resume continues here
        raise
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM (errors.Terminated) during this step
        record.failed_step = step.label
        if not options.check:  # (--resume continues here, the steps done before skipped)
            with contextlib.suppress(OSError):
                journal_mod.save(options.state_dir, record)
        raise
    except GpuonboardError as exc:
        return StepResult(step.label, "failed", str(exc), check_mode=options.check)
    except Exception as exc:  # a bug in the step: it failed; what ran before stays recorded
        if os.environ.get("GPUONBOARD_DEBUG") == "1":
            raise
        return StepResult(
            step.label,
            "failed",
            f"internal error in this step ({type(exc).__name__}: {exc}); rerun with --debug and report it",
            check_mode=options.check,
        )


def _host_outcome(
    host: Host,
    fingerprint: str | None,
    results: list[StepResult],
    facts: Facts,
    failed: StepResult | None,
    record: journal_mod.Journal,
    options: RunOptions,
    not_resumed: str | None,
) -> HostResult:
    """The host's result once its steps ran: the journal saved (or why it could not be), the
    status and its sentence."""
    if failed is None:
        record.finished = True
    unsaved = ""
    if not options.check:
        try:
            journal_mod.save(options.state_dir, record)
        except OSError as exc:  # (a full disk): the steps' results are still the truth
            unsaved = f"; the journal could not be written ({exc}), so --resume cannot continue here"
    status: HostStatus
    if failed is not None:
        status, msg = "failed", f"step {failed.step}: {failed.msg}"
    elif any(r.status == "changed" for r in results):
        status, msg = "changed", _summary(results)
    else:
        status, msg = "ok", _summary(results)
    if not_resumed:
        msg = f"{msg} ({not_resumed})"
    return HostResult(host, status, msg + unsaved, results, facts, fingerprint)


def _other_machine(previous: journal_mod.Journal | None, fingerprint: str | None) -> str | None:
    """Why the journal cannot be resumed on this box: it records another host key (the name
    now leads to another machine, which none of the recorded steps touched), else None."""
    if previous is None or not previous.host_key or not fingerprint or previous.host_key == fingerprint:
        return None
    return (
        f"not resumed: run {previous.run_id} was on a box with host key {previous.host_key}, this one"
        f" presents {fingerprint}, so every step ran again"
    )


def _summary(results: list[StepResult]) -> str:
    counts: dict[str, int] = {}
    for r in results:
        counts[r.status] = counts.get(r.status, 0) + 1
    return ", ".join(f"{n} {s}" for s, n in counts.items())
