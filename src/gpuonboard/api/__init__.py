"""What the CLI calls. No Invoke imports here or below: plain functions returning exit codes."""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from gpuonboard import inventory as inventory_mod
from gpuonboard import termtext, timings
from gpuonboard.api.run_reports import metrics_file_problem, preload_report, unwritable_dir, write_reports
from gpuonboard.connection import ConnectOptions, Preconnect, known_hosts_problem
from gpuonboard.errors import ExitCode, GpuonboardError, InventoryError, Terminated, UsageError
from gpuonboard.inventory import Host
from gpuonboard.inventory.loader import locate
from gpuonboard.report import terminal
from gpuonboard.report.early import EarlyReport
from gpuonboard.results import HostResult, RunResult, conclude
from gpuonboard.runner import RunOptions, new_run_id, run, select_steps
from gpuonboard.runner import playbook as playbook_mod
from gpuonboard.runner.playbook import Playbook
from gpuonboard.runner.runlog import RunLog
from gpuonboard.units import rfc3339
from gpuonboard.yamlload import did_you_mean  # (also the CLI's: the closest flag, task or profile)


@dataclass
class Selection:
    """Which hosts: inventory path plus --host/--group/--limit."""

    inventory: str = "inventory"
    hosts: Sequence[str] = ()
    group: str | None = None
    limit: str | None = None


@dataclass
class Settings:
    """Where state and reports live, and run switches."""

    project: Path = field(default_factory=Path.cwd)
    state_dir: Path | None = None
    known_hosts: Path | None = None
    reports_dir: Path | None = None
    trust_new_hosts: bool = False
    forks: int = 20
    connect_retries: int = 2
    quiet: bool = False
    progress: bool = True
    lang: str = "en"  # terminal tables: en or zh (i18n.py)
    strict: bool = False  # an unverified check fails the host (--strict)
    json: bool = False  # --json: the result as JSON on stdout, every human line on stderr
    metrics_file: Path | None = None  # --metrics-file: a Prometheus text file (report/metrics.py)

    def state_root(self) -> Path:
        """`.gpuonboard/` under the project unless overridden."""
        return self.project / ".gpuonboard"

    def reports_root(self) -> Path:
        """Where runs write their reports: --reports-dir, else `reports/` under the project."""
        return self.reports_dir or self.project / "reports"


def split_names(value: str | Sequence[str] | None) -> list[str]:
    """`a,b` or ['a', 'b'] -> ['a', 'b']."""
    if not value:
        return []
    items = value.split(",") if isinstance(value, str) else [p for v in value for p in v.split(",")]
    return [i.strip() for i in items if i.strip()]


def selection(
    inventory: str, host: str | None, group: str | None = None, limit: str | None = None
) -> Selection:
    """The Selection of a command's --host/--group/--limit, where None is a flag not given. A
    flag given with nothing in it (`--host "$UNSET"`, `--host ,`, `--group ""`) is a usage error:
    read as "no filter", it selected every host of the inventory."""
    for flag, value, what in (
        ("--host", host, "host"),
        ("--group", group, "group"),
        ("--limit", limit, "pattern"),
    ):
        if value is not None and not split_names(value):
            raise UsageError(
                f"{flag} {value!r} names no {what}; give one (see `invoke inventory`), or leave {flag} out."
            )
    return Selection(inventory, split_names(host), group or None, limit or None)


def find_playbook(project: Path, name_or_path: str) -> Path:
    """A playbook by path, or by name under playbooks/ of the project."""
    from gpuonboard.resources import search_dirs

    direct = Path(name_or_path)
    if direct.suffix in (".yml", ".yaml") or os.sep in name_or_path:
        if not direct.is_absolute():
            direct = project / direct
        if direct.is_file():
            return direct
        if os.sep not in name_or_path:  # `--playbook provision.yml`: the file under playbooks/
            for directory in search_dirs(project, "playbooks"):
                if (directory / name_or_path).is_file():
                    return directory / name_or_path
        raise UsageError(f"{direct}: playbook not found; pass an existing file to --playbook.")

    for directory in search_dirs(project, "playbooks"):
        for suffix in (".yml", ".yaml"):
            candidate = directory / f"{name_or_path}{suffix}"
            if candidate.is_file():
                return candidate
    names = sorted(
        {
            p.stem
            for directory in search_dirs(project, "playbooks")
            if directory.is_dir()
            for p in directory.iterdir()
            if p.suffix in (".yml", ".yaml")
        }
    )
    close = did_you_mean(name_or_path, names)
    if close:  # (`--playbook provison`)
        raise UsageError(f"no playbook {name_or_path!r} under {project / 'playbooks'}{close}")
    known = f" (the playbooks here: {', '.join(names)})" if names else ""
    raise UsageError(
        f"no playbook {name_or_path!r} under {project / 'playbooks'}{known}; run from a gpuonboard"
        " project directory or pass --playbook FILE."
    )


SIM_INVENTORY = Path(".gpuonboard") / "sim" / "inventory"  # where `sim.up` writes its hosts


def sim_hint(message: str, names: Sequence[str], sim_hosts: Sequence[str]) -> str:
    """Pure: an inventory error of a command whose --host names a simulated server of
    `sim.up` (or that gave no --host), ended with what to pass instead; else the message."""
    sim = [n for n in names if n in sim_hosts] if names else list(sim_hosts)
    if not sim:
        return message
    which = f"{sim[0]!r} is a simulated server" if names else "`sim.up` wrote its simulated servers"
    return (
        f"{message.rstrip('.')}; {which} in {SIM_INVENTORY}: pass --inventory {SIM_INVENTORY}"
        " to every command against it."
    )


def _sim_hosts(settings: Settings, used: Path) -> list[str]:
    """The host names of this project's `sim.up` inventory, unless it is the one in use."""
    sim = settings.project / SIM_INVENTORY
    if not (sim / "hosts.yml").is_file() or used.resolve() in (sim.resolve(), (sim / "hosts.yml").resolve()):
        return []
    try:
        return list(inventory_mod.load(sim).hosts)
    except (GpuonboardError, OSError):  # (a broken sim inventory: no hint, the user's error stands)
        return []


def _selected(
    selection: Selection, settings: Settings, every: bool = False
) -> tuple[inventory_mod.Inventory, list[Host]]:
    """Load the inventory and select the hosts; a missing inventory, or a --host that `sim.up`
    put in its own inventory (`--inventory` forgotten), says to pass that inventory. `every`:
    no --host/--group/--limit selects every host (`invoke inventory`)."""
    path = locate(settings.project, selection.inventory)  # (`ansible-inventory:SOURCE` kept)
    names = split_names(selection.hosts)
    try:
        inv = inventory_mod.load(path)
    except InventoryError as exc:
        if not isinstance(path, Path) or path.exists():
            raise
        hinted = sim_hint(exc.message, names, _sim_hosts(settings, path))
        if hinted == exc.message:
            raise
        raise InventoryError(hinted) from None
    if every and not (names or selection.group or selection.limit):
        return inv, list(inv.hosts.values())
    try:
        return inv, inv.select(names, selection.group, selection.limit)
    except UsageError as exc:
        unknown = [n for n in names if n not in inv.hosts]
        sims = _sim_hosts(settings, path) if isinstance(path, Path) else []
        hinted = sim_hint(exc.message, unknown, sims) if unknown else exc.message
        if hinted == exc.message:
            raise
        raise UsageError(hinted) from None


def load_hosts(selection: Selection, settings: Settings) -> tuple[inventory_mod.Inventory, list[Host]]:
    """The inventory and the hosts the selection picks (errors before any connection)."""
    inv, hosts = _selected(selection, settings)
    inv.check_connections(hosts)  # (a host Ansible reaches without SSH: refused only when selected)
    inv.check_key_files(hosts)  # (a missing key is an input error, exit 2, not "unreachable")
    return inv, hosts


def provision(
    selection: Selection,
    settings: Settings,
    playbook: str = "provision",
    check: bool = False,
    only: Sequence[str] = (),
    skip: Sequence[str] = (),
    resume: bool = False,
) -> int:
    """Load inventory and playbook, run on the selected hosts, print and write reports."""
    if settings.forks < 1:
        raise UsageError(f"--forks must be at least 1, not {settings.forks}.")
    timings.mark("start")  # (GPUONBOARD_TIMINGS: bench/fanout.py's phases)
    inv, hosts = load_hosts(selection, settings)
    timings.mark("inventory")
    book = playbook_mod.load(find_playbook(settings.project, playbook))
    select_steps(book, split_names(only), split_names(skip))  # bad --only/--skip: before any connection
    timings.mark("playbook")
    return execute(inv, hosts, book, settings, check=check, only=only, skip=skip, resume=resume)


def refuse_teardown_steps(
    project: Path, playbook: str, only: str | Sequence[str] = (), skip: str | Sequence[str] = ()
) -> None:
    """A usage error when the steps that `only`/`skip` choose of the playbook pull results and
    delete data (`invoke teardown`'s): `provision --playbook teardown` without --host ran them on
    every host of the inventory. The CLI asks this when no host, group or limit was named."""
    book = playbook_mod.load(find_playbook(project, playbook))
    chosen = select_steps(book, split_names(only), split_names(skip))
    steps = playbook_mod.teardown_steps(book, chosen)
    if steps:
        raise UsageError(
            f"{book.path}: step(s) {', '.join(steps)} pull results and delete data on the hosts they"
            " run on: name them with --host (or --group or --limit); as `invoke teardown`, such a"
            " playbook never takes every host of the inventory by default."
        )


def reader_left() -> None:
    """The reader of our output has gone (`gpuonboard ... | head -1`): stdout points at
    /dev/null from now on (report.terminal's); the caller exits with ExitCode.READER_LEFT."""
    terminal.reader_left()


def print_step_lines(results: Sequence[HostResult], con: Any, without_checks: bool = False) -> None:
    """One line per host and step (for commands whose steps are not acceptance rules; with
    `without_checks`, of the steps that ran and whose rules are not in a table: what a
    `template` step wrote, or a teardown's `files` step would remove; a failed step's line is
    then printed beside its host's verdict, by terminal.print_results)."""
    for r in results:
        for step in r.steps:
            if without_checks and (step.checks or step.status in ("skipped", "failed")):
                continue
            con.out(f"{r.host.name}: {step.step}: {step.status}: {step.msg}", highlight=False)


def execute(
    inv: inventory_mod.Inventory,
    hosts: list[Host],
    book: Playbook,
    settings: Settings,
    *,
    check: bool = False,
    only: Sequence[str] = (),
    skip: Sequence[str] = (),
    resume: bool = False,
    core_facts: bool = True,
    show: Callable[[Sequence[HostResult], Any], None] | None = None,
    warm_report: bool = True,
) -> int:
    """Run a validated playbook on hosts: connections, progress, run log, reports, terminal.

    Every command (provision, check, container, sync, autostop, teardown) ends here, so they
    share exit codes, reports and the run log. `show` prints command-specific lines before
    the recap; without it the acceptance tables are printed. With `settings.json` (--json)
    stdout carries only the run's summary.json, once the run is done, and every human line
    (progress, tables, warnings, errors) goes to stderr. `warm_report`: load the HTML report's
    code in a thread while the hosts run (it overlaps their network waits); False where the
    hosts' work starts on this machine's CPU (an upload's scan and plan: the thread would take
    the interpreter from them and delay the first byte).
    """
    options: dict[str, Any] = {
        "check": check,
        "only": only,
        "skip": skip,
        "resume": resume,
        "core_facts": core_facts,
        "warm_report": warm_report,
    }
    if not settings.json:
        return _execute(inv, hosts, book, settings, show=show, **options)[0]
    with human_lines_to_stderr() as stdout:
        code, out_dir = _execute(inv, hosts, book, settings, show=show, **options)
    stdout.write((out_dir / "summary.json").read_text(encoding="utf-8"))
    stdout.flush()
    return code


@contextlib.contextmanager
def human_lines_to_stderr() -> Iterator[TextIO]:
    """For --json: sys.stdout points at stderr while the block runs (print, the rich consoles,
    which look up sys.stdout at each write, the live progress, worker threads), so that the
    real stdout, yielded, carries nothing but the one JSON document written after it."""
    stdout = sys.stdout
    with contextlib.redirect_stdout(sys.stderr):
        yield stdout


def _execute(
    inv: inventory_mod.Inventory,
    hosts: list[Host],
    book: Playbook,
    settings: Settings,
    *,
    check: bool,
    only: Sequence[str],
    skip: Sequence[str],
    resume: bool,
    core_facts: bool,
    show: Callable[[Sequence[HostResult], Any], None] | None,
    warm_report: bool,
) -> tuple[int, Path]:
    """execute's run: the exit code and the run's report folder."""
    playbook_mod.check_templates(
        book, settings.project, select_steps(book, split_names(only), split_names(skip))
    )
    check_outputs(settings, hosts, inv, check)
    # Inputs are valid: start the TCP connections now, so sshd's start-up overlaps our imports.
    timings.mark("outputs")
    early = Preconnect(hosts)
    timings.mark("preconnect")
    run_id = new_run_id()
    log = RunLog(settings.state_root() / "logs" / f"{run_id}.log")
    options = _run_options(settings, run_id, log, early, check, only, skip, resume, core_facts)
    reports_dir = settings.reports_root()
    started = time.time()
    early_raw = options.on_host_done = EarlyReport(
        reports_dir / run_id, settings.project, settings.strict, _iso(started)
    )
    warming = threading.Thread(target=preload_report, args=(settings.project,), daemon=True)
    if warm_report:
        warming.start()
    try:
        outcome = _run_hosts(hosts, book, inv, options, settings, log, early_raw)
    finally:
        early.close()
        log.close()
    timings.mark("runner")
    code = outcome.exit_code  # (each host judged once, by conclude)
    meta = {
        "run_id": run_id,
        "playbook": book.name,
        "playbook_path": str(book.path),
        "inventory": str(inv.source),
        "check_mode": check,
        "started": _iso(started),
        "finished": _iso(time.time()),
        "duration": round(time.time() - started, 3),
        "exit_code": int(code),
        "strict": settings.strict,
    }
    if warm_report:
        warming.join()
    try:
        out_dir = write_reports(
            outcome,
            meta,
            reports_dir,
            run_id,
            project=settings.project,
            early=early_raw,
            metrics_file=settings.metrics_file,
        )
    except OSError as exc:  # (checked before the run: a disk that filled up, a folder removed since)
        raise UsageError(
            f"the reports of run {run_id} could not be written in {reports_dir} ({exc.strerror or exc});"
            f" free space or pass --reports-dir a directory you can write to (the run log: {log.path})."
        ) from None
    timings.mark("html")  # (the HTML report, and the `latest` link)
    _print_outcome(outcome, settings, out_dir, log.path, show)
    timings.mark("terminal")
    return int(code), out_dir


def _run_options(
    settings: Settings,
    run_id: str,
    log: RunLog,
    early: Preconnect,
    check: bool,
    only: Sequence[str],
    skip: Sequence[str],
    resume: bool,
    core_facts: bool,
) -> RunOptions:
    """The runner's options for one run of execute."""
    root = settings.state_root()
    return RunOptions(
        check=check,
        only=split_names(only),
        skip=split_names(skip),
        resume=resume,
        forks=settings.forks,
        state_dir=settings.state_dir or root / "state",
        project=settings.project,
        connect=ConnectOptions(
            known_hosts=settings.known_hosts or root / "known_hosts",
            trust_new_hosts=settings.trust_new_hosts,
            retries=settings.connect_retries,
            preconnect=early,
        ),
        run_id=run_id,
        log=log,
        core_facts=core_facts,
    )


def _run_hosts(
    hosts: list[Host],
    book: Playbook,
    inv: inventory_mod.Inventory,
    options: RunOptions,
    settings: Settings,
    log: RunLog,
    early_raw: EarlyReport,
) -> RunResult:
    """The hosts run under the live progress and judged once; an interrupted run (Ctrl-C,
    SIGTERM/SIGHUP) ends its log saying so and removes the raw files it had written (such a
    run leaves no report)."""
    started = time.time()
    progress = terminal.Progress([h.name for h in hosts], enabled=settings.progress and not settings.quiet)
    options.on_event = progress.event
    try:
        with progress:
            return conclude(run(hosts, book, inv, options), settings.strict)
    except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM/SIGHUP (errors.Terminated)
        # the log is the only record such a run leaves (no report is written): end it saying so
        how = "terminated" if isinstance(exc, Terminated) else "interrupted (Ctrl-C)"
        log.write("run", f"{how} after {time.time() - started:.1f}s; no report was written")
        early_raw.remove()
        raise


def _print_outcome(
    outcome: RunResult,
    settings: Settings,
    out_dir: Path,
    log_path: Path,
    show: Callable[[Sequence[HostResult], Any], None] | None,
) -> None:
    """The run's end on the terminal: the command's lines (or the acceptance tables), the
    verdicts and where the reports are; with --quiet, only a line per host that failed."""
    results = outcome.hosts
    if not settings.quiet:
        con = terminal.console()
        if show is not None:
            show(results, con)
        else:  # (the acceptance tables show the rules: this says what the other steps did)
            print_step_lines(results, con, without_checks=True)
        terminal.print_results(outcome, con, rules=show is None, lang=settings.lang)
        # as it is: one line (a wrapped path cannot be copied or grepped), no markup (a
        # `[v2]` in a path was dropped)
        html = out_dir / "report.html"
        if html.is_file():  # (every run writes it; a broken project template said why on stderr)
            con.out(f"report: {html}", highlight=False)
        con.out(f"reports: {out_dir}  log: {log_path}", highlight=False)
    else:  # "print nothing but errors": a line for each host that failed or was never reached
        for line in failure_lines(results):
            print(f"error: {termtext.for_terminal(line, keep='')}", file=sys.stderr)
    for warning in same_machine_warnings(results):  # even with --quiet: it changes what was proven
        print(f"warning: {warning}", file=sys.stderr)


def check_outputs(
    settings: Settings, hosts: Sequence[Host], inv: inventory_mod.Inventory, check: bool
) -> None:
    """Before connecting: every folder the run writes (reports, the run log, the journal unless
    --check) can be made and written, and so can the known_hosts file when keys are to be
    recorded. `--reports-dir /proc/nope` ran every host, then failed writing the reports
    (internal error, exit 70); a known_hosts directory recorded nothing and said nothing."""
    root = settings.state_root()
    folders = [
        (settings.reports_root(), "the reports directory", "pass --reports-dir"),
        (root / "logs", "the run log directory", ""),
    ]
    if not check:
        folders.append((settings.state_dir or root / "state", "the journal directory", "pass --state-dir"))
    if settings.metrics_file is not None:
        problem = metrics_file_problem(settings.metrics_file)
        if problem:
            raise UsageError(problem)
    for path, what, flag in folders:
        why = unwritable_dir(path)
        if why is not None:
            fix = (
                f"{flag} a directory you can write to"
                if flag
                else "run from a project directory you can write to (gpuonboard keeps its state in"
                " .gpuonboard/ there)"
            )
            raise UsageError(f"{what} {path} cannot be {why}; {fix}.")
    problem = known_hosts_problem(
        settings.known_hosts or root / "known_hosts", hosts, inv, settings.trust_new_hosts
    )
    if problem is not None:
        raise UsageError(problem)


def failure_lines(results: Sequence[HostResult]) -> list[str]:
    """Pure: what `--quiet` prints (on stderr): a line per unreachable host, and per failed step
    of a failed host (the host's own message when no step failed: it failed before any ran)."""
    lines = []
    for r in results:
        if r.status == "unreachable":
            lines.append(f"{r.host.name}: unreachable: {r.msg}")
        elif r.status == "failed":
            failed = [s for s in r.steps if s.status == "failed"]
            lines += [f"{r.host.name}: {s.step}: failed: {s.msg}" for s in failed]
            if not failed:
                lines.append(f"{r.host.name}: failed: {r.msg}")
    return lines


def same_machine_warnings(results: Sequence[HostResult]) -> list[str]:
    """One sentence per host key that several hosts of the run presented: one box checked twice
    under two names (a copied address), or clones of one image that kept its host keys. Either
    way "2 hosts GO" did not prove two good boxes."""
    by_key: dict[str, list[str]] = {}
    for r in results:
        if r.fingerprint:
            by_key.setdefault(r.fingerprint, []).append(r.host.name)
    return [
        f"hosts {', '.join(names)} presented the same host key ({key}): the same machine under"
        " several names (check their addresses in the inventory), or clones of one image that kept"
        " its SSH host keys (ask the vendor to regenerate them); their results are not independent."
        for key, names in by_key.items()
        if len(names) > 1
    ]


def _iso(ts: float) -> str:
    """RFC 3339 in UTC with `Z` (`2026-12-02T07:11:57Z`): what `jq fromdateiso8601`, Python's
    datetime.fromisoformat and xs:dateTime all read (the local `+0800` of older runs is not
    RFC 3339, and jq takes only `Z`)."""
    return rfc3339(ts)


def host_order(selection: Selection, settings: Settings) -> inventory_mod.OrderSpec:
    """The order spec of the one selected host (for offline judgement)."""
    return _selected(Selection(selection.inventory, selection.hosts), settings)[1][0].order


def list_inventory(selection: Selection, settings: Settings) -> int:
    """`invoke inventory`: the hosts with vendor, address and order spec (api/listing.py)."""
    from gpuonboard.api import listing

    return listing.list_inventory(selection, settings)


def container(selection: Selection, settings: Settings, image: str | None = None, check: bool = False) -> int:
    """`invoke container`: only the container step; `image` overrides vars.container_image.

    Uses the project's playbooks/container.yml when there is one and no image is given,
    else a one-step playbook written under .gpuonboard/playbooks/.
    """
    import hashlib

    import yaml

    from gpuonboard.steps.base import StepArgsError
    from gpuonboard.steps.container import DEFAULT_IMAGE, parse_ref

    if not image and any(
        (settings.project / "playbooks" / f"container{s}").is_file() for s in (".yml", ".yaml")
    ):
        return provision(selection, settings, "container", check)
    args: dict[str, Any] = {"image": "{{ vars.container_image | default('" + DEFAULT_IMAGE + "') }}"}
    if image:
        try:
            parse_ref(image)
        except StepArgsError as exc:
            raise UsageError(f"--image: {exc}.") from None
        # the playbook renders its args with Jinja2: keep the image literal
        args["image"] = "{% raw %}" + image + "{% endraw %}"
    book = {"name": "container", "steps": [{"step": "container", "args": args}]}
    path = (
        settings.state_root()
        / "playbooks"
        / f"container-{hashlib.sha1(str(image).encode()).hexdigest()[:8]}.yml"
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(book, sort_keys=False))
    return provision(selection, settings, str(path), check)


def new_keys(file: str = "") -> int:
    """`keys.new`: write an age key pair for encrypted uploads and print the inventory lines
    that use it (the recipe that `sync --encrypt` without keys names)."""
    from gpuonboard.transfer import crypto

    path = Path(os.path.expanduser(file or crypto.DEFAULT_KEY_FILE)).absolute()
    try:
        recipient = crypto.new_key_pair(path)
    except FileExistsError:
        raise UsageError(
            f"{path} already exists (a key is never replaced: what was encrypted to it needs it);"
            " pass --file a new path, or use that key."
        ) from None
    except OSError as exc:
        raise UsageError(
            f"cannot write {path} ({exc.strerror or exc}); pass --file a path you can write."
        ) from None
    print(f"wrote a new age identity (secret key) to {path} (mode 600): back it up and keep it private.")
    print(f"public key (recipient): {recipient}")
    print("add to the vars of the host (or of defaults) in the inventory, then `sync --encrypt`:")
    print(f"  age_recipients: [{recipient}]")
    print(f"  age_identity_file: {path}")
    return int(ExitCode.OK)
