"""Invoke tasks (the CLI boundary): `invoke provision|check|inventory|autostop|sim.up|sim.down`.

Errors become one sentence on stderr and an exit code here, and only here; a traceback is
shown only with --debug (or GPUONBOARD_DEBUG=1).
"""

from __future__ import annotations

import gc

# The cyclic collector is off while this module's imports run (~100 ms of CPU: functions,
# classes and tables, nearly all of it kept for the whole run, which at the default thresholds
# it passed over ~45 times as they were made). What they made is then frozen (gc.freeze: out
# of its way, as _common freezes what a command has made before its hosts run) and the
# collector is on again, as it was (a caller's gc.disable() is kept).
_COLLECTING = gc.isenabled()
gc.disable()

# (before the imports: the dataclasses they make take their methods' code from the cache)
from gpuonboard import codecache  # noqa: E402

codecache.install()

import dataclasses  # noqa: E402
import functools  # noqa: E402
import os  # noqa: E402
import re  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402
import types  # noqa: E402
from collections.abc import Callable, Mapping  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any, TypeVar, overload  # noqa: E402


class _LazyMock:
    """What invoke.context's `from unittest.mock import Mock` gets: unittest.mock's Mock, imported
    when first called (only Invoke's MockContext calls it, for tests); see _import_invoke."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        import unittest.mock

        return unittest.mock.Mock(*args, **kwargs)


def _import_invoke() -> None:
    """Import Invoke without unittest.mock, which invoke.context imports for its MockContext
    alone, and with it unittest and asyncio (~30 ms of every command's start-up, a tenth of it):
    a stand-in module holds `Mock` while Invoke is imported, then the name is free again, so
    that any later `import unittest.mock` loads the real one. Invoke's own copy of PyYAML
    (invoke.vendor.yaml, ~6 ms of CPU, for its config files' `safe_load` alone) is the PyYAML that
    gpuonboard loads anyway, as in the distributions that unvendor Invoke. Nothing is done where
    either is imported already (the `invoke` program, a test run)."""
    if "invoke" in sys.modules or "unittest.mock" in sys.modules:
        return
    import yaml

    stand_in = types.ModuleType("unittest.mock")
    stand_in.Mock = _LazyMock  # type: ignore[attr-defined]
    stand_ins = {"unittest.mock": stand_in, "invoke.vendor.yaml": yaml}
    sys.modules.update(stand_ins)
    try:
        import invoke.context  # noqa: F401
    finally:
        for name, module in stand_ins.items():
            if sys.modules.get(name) is module:
                del sys.modules[name]


try:  # (the collector off until here: see the top)
    _import_invoke()

    from invoke import Collection, Exit, Program, Task, task  # noqa: E402
    from invoke.exceptions import ParseError  # noqa: E402

    from gpuonboard import __version__, api, flags, interrupt, masking, termtext  # noqa: E402
    from gpuonboard.api.options import (  # noqa: E402
        AutostopOptions,
        MonitorCommand,
        PlanArgs,
        SyncOptions,
        TeardownOptions,
    )
    from gpuonboard.errors import ExitCode, GpuonboardError, Terminated, UsageError  # noqa: E402
    from gpuonboard.flags import OWN, RUN, SELECT, CommonFlags  # noqa: E402
finally:
    gc.freeze()
    if _COLLECTING:
        gc.enable()

SIM_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")  # what a test host's name may be


Opts = TypeVar("Opts")


@overload
def command(
    *layout: str, options: None = None, **task_options: Any
) -> Callable[[Callable[[Any, CommonFlags], None]], Any]: ...
@overload
def command(
    *layout: str, options: type[Opts], **task_options: Any
) -> Callable[[Callable[[Any, CommonFlags, Opts], None]], Any]: ...
def command(*layout: str, options: type | None = None, **task_options: Any) -> Callable[..., Any]:
    """An Invoke task of `body(c, given: CommonFlags)`, or `body(c, given, opts)` with
    `options`: it takes the shared flags of `layout` (flags.py declares them: default, type,
    help) and, where `layout` puts them (OWN: the rest, in order), the own flags of its
    `options` dataclass (each field with a help text: its name, default, type and help), from
    whose values it builds `opts`. Invoke reads the signature of the task
    (inspect.signature, which reads __signature__)."""

    def make(body: Callable[..., None]) -> Any:
        declared = body if options is None else flags.taking(options, body)
        signature, shared_help = flags.signature(declared, layout)
        own_help = flags.own_help(options) if options is not None else {}

        @functools.wraps(declared)
        def run(c: Any, **values: Any) -> None:
            given, own = flags.split(declared, values)
            declared(c, given, **own)

        run.__signature__ = signature  # type: ignore[attr-defined]
        made = task(
            help={**shared_help, **own_help}, auto_shortflags=False, klass=_ShortFlagTask, **task_options
        )(run)
        made.short_flags = flags.short_flags(list(shared_help))
        return made

    return make


class _ShortFlagTask(Task):
    """Invoke's Task with the one-letter short flags that flags.py declares for the shared
    flags it takes (Ansible's `-i INVENTORY`, `-l PATTERN`), no other."""

    short_flags: Mapping[str, str] = {}

    def arg_opts(self, name: str, default: str, taken_names: set[str]) -> dict[str, Any]:
        opts: dict[str, Any] = super().arg_opts(name, default, taken_names)
        if name in self.short_flags:
            opts["names"] = [*opts["names"], self.short_flags[name]]
        return opts


def _printable_names() -> None:
    """A file name that is not UTF-8 (kept as lone surrogates) prints as a `\\udcXX` escape
    instead of failing the run with UnicodeEncodeError (a terminal in a UTF-8 locale is strict)."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")


# said before the last word of a stopped run ("interrupted" / "terminated", which scripts read)
# of a command that changes the host (provision, prove, sync; not in check mode, which keeps
# no journal): the journal skips what finished, and rsync resumes what was partly sent; other
# commands (facts offline, check, report) have nothing to resume and say nothing of it
RESUME_HINT = (
    "to resume, rerun the same command: steps that finished are kept and skipped, and files"
    " already uploaded are not sent again."
)


def error_line(exc: GpuonboardError) -> str:
    """`error: SENTENCE` on one line: a line break in what the sentence quotes (a path or a
    file name holding one) is written as its escape (`\\n`), as every other control character
    is, so the error never starts a second line that reads as another one. Every live Secret
    in it is masked (masking.mask), as in the run log."""
    return f"error: {termtext.for_terminal(masking.mask(exc.message), keep='')}"


def _guard(fn: Callable[[], int], debug: bool, resumes: bool = False) -> None:
    """Run an api call; map errors to one sentence + exit code (a stop of one that `resumes`,
    with how to resume)."""
    debug = debug or os.environ.get("GPUONBOARD_DEBUG") == "1"
    _refuse_several_tasks()
    _refuse_empty_values()
    _printable_names()
    interrupt.install()  # (SIGTERM/SIGHUP: Terminated, Ctrl-C: KeyboardInterrupt; never inside paramiko)
    if debug:
        os.environ["GPUONBOARD_DEBUG"] = "1"  # worker threads re-raise instead of reporting
    try:
        code = fn()
        sys.stdout.flush()  # (a closed pipe's BrokenPipeError here, inside the guard)
    except GpuonboardError as exc:
        if debug:
            raise
        raise Exit(error_line(exc), code=int(exc.exit_code)) from None
    except Terminated:
        if resumes:
            print(RESUME_HINT, file=sys.stderr)
        raise Exit("terminated", code=143) from None
    except KeyboardInterrupt:
        if resumes:
            print(RESUME_HINT, file=sys.stderr)
        raise Exit("interrupted", code=130) from None
    except BrokenPipeError:  # the reader of our output left (`... | head -1`): quietly, as a shell tool
        api.reader_left()
        raise Exit(code=int(ExitCode.READER_LEFT)) from None
    except Exception as exc:  # a bug of ours: one sentence, the traceback only with --debug
        if debug:
            raise
        raise Exit(
            masking.mask(
                f"error: internal error ({type(exc).__name__}: {exc}); rerun with --debug and report it."
            ),
            code=70,
        ) from None
    if code:
        raise Exit(code=code)


# flags whose value is a comma-separated list of names: `--skip "$A,$B"` with both unset is `,`,
# which names nothing (read as "not given", `--only ,` ran every step of the playbook)
LIST_FLAGS = frozenset({"--only", "--skip", "--runs"})
SHORT_FLAGS = {"-i": "--inventory", "-l": "--limit"}  # (flags.py's short flags)


_PROGRAM: Program | None = None  # the `gpuonboard` console script's, once main() runs it


def _tasks_named() -> list[str]:
    """The tasks the command line named, through `gpuonboard` or `invoke` (whose program is
    invoke.main's); [] for a task called from Python."""
    program = _PROGRAM
    if program is None:
        program = getattr(sys.modules.get("invoke.main"), "program", None)
    return [str(t.name) for t in getattr(program, "tasks", None) or []]


def several_tasks(names: list[str]) -> str | None:
    """Pure: the sentence for a command line that names more than one task, else None."""
    if len(names) < 2:
        return None
    return (
        f"error: the command line names {len(names)} tasks ({', '.join(names)}): a word after a"
        " task's flags is read as another task to run with its own defaults (every host of"
        " ./inventory); run one task per command, and list steps with commas"
        " (--only acceptance,container)."
    )


def _refuse_several_tasks() -> None:
    """`provision --host h1 --skip container autostop` (a space for a comma) ran provision, then
    the autostop task with its defaults on every host of the inventory. Exit 2 before either."""
    sentence = several_tasks(_tasks_named())
    if sentence:
        raise Exit(sentence, code=int(ExitCode.USAGE))


def empty_values(argv: list[str]) -> list[str]:
    """Pure: the flags of a command line given an empty (or blank) value: `--dest ""`,
    `--results=$UNSET`, a list flag with no name in it (`--only ,`). (--host/--group/--limit
    have their own sentence, in api.selection.)"""
    found = []
    for i, arg in enumerate(argv):
        flag, eq, value = arg.partition("=")
        flag = SHORT_FLAGS.get(flag, flag)  # (`-i "$UNSET"` as `--inventory "$UNSET"`)
        if not flag.startswith("--") or flag in ("--host", "--group", "--limit"):
            continue
        if not eq:  # `--flag VALUE`: the next word, when there is one
            value = argv[i + 1] if i + 1 < len(argv) else "x"
        if flag in LIST_FLAGS:
            value = value.replace(",", "")
        if not value.strip():
            found.append(flag)
    return found


def _refuse_empty_values() -> None:
    """A flag given empty (an unset shell variable) was read as "not given": `teardown
    --results ""` then pulled nothing and went on to delete, `sync --dest ""` sent to the default
    dir. Exit 2 instead, naming the flag."""
    empty = empty_values(sys.argv[1:])
    if empty:
        raise Exit(
            f"error: {empty[0]} was given an empty value (an unset shell variable?); give it a value,"
            " or leave it out.",
            code=int(ExitCode.USAGE),
        )


def invoke_dry(c: Any) -> bool:
    """Whether Invoke's core `--dry` (-R) was given: its config's run.dry."""
    return bool(getattr(getattr(getattr(c, "config", None), "run", None), "dry", False))


def _refuse_invoke_dry(c: Any) -> None:
    """Invoke's core `--dry` (-R, "Echo commands instead of running") only changes Invoke's own
    `c.run`, which no task uses: `gpuonboard --dry provision` provisioned the box, and `--dry
    teardown` deleted its data. Exit 2 before anything, naming gpuonboard's dry run."""
    if invoke_dry(c):
        raise Exit(
            "error: --dry (-R) is Invoke's own flag, which only echoes shell commands and would not"
            " stop this task; for a dry run give the task --check (`gpuonboard provision --check"
            " --host NAME`), and leave --dry out.",
            code=int(ExitCode.USAGE),
        )


def _common(c: Any, given: CommonFlags) -> tuple[api.Selection, api.Settings]:
    """Selection and settings from a task's shared flags."""
    _refuse_invoke_dry(c)
    # what the imports made lives for the whole run (through `invoke` or `gpuonboard`): out of
    # the cyclic collector's way, whose full passes would walk it again and again later
    gc.freeze()
    # and a run makes ~10,000 short-lived objects a host (nvidia-smi's XML tree, its facts):
    # collected every 700 allocations, they were traversed again and again (a third of the
    # parsing's CPU); every 50,000, most are gone before a collection
    gc.set_threshold(50_000, 20, 10)
    sel = _selection(given.inventory, given.host, given.group, given.limit)
    settings = _settings(given)
    if given.lang:  # provision/check: the terminal tables' language
        from gpuonboard.i18n import check_lang

        try:
            settings.lang = check_lang(given.lang)
        except UsageError as exc:
            raise Exit(error_line(exc), code=int(exc.exit_code)) from None
    return sel, settings


def _selection(
    inventory: str, host: str | None, group: str | None = None, limit: str | None = None
) -> api.Selection:
    """api.selection, its usage error as one sentence and exit 2 (before _guard runs)."""
    try:
        return api.selection(inventory, host, group, limit)
    except UsageError as exc:
        raise Exit(error_line(exc), code=int(exc.exit_code)) from None


def _settings(given: CommonFlags | None = None) -> api.Settings:
    s = flags.settings(given or CommonFlags(), Path.cwd())
    bad = (
        f"--connect-retries must be 0 or more, not {s.connect_retries}."  # (-1: not even one try)
        if s.connect_retries < 0
        else f"--connect-retries must be at most 100, not {s.connect_retries}."  # (10**9: for ever)
        if s.connect_retries > 100
        else f"--forks must be at least 1, not {s.forks}."
        if s.forks < 1
        else ""
    )
    if bad:  # (every task: `sync --forks 0` was an internal error of the thread pool)
        raise Exit(f"error: {bad}", code=int(ExitCode.USAGE))
    return s


@command(*SELECT, OWN, *RUN, "lang", "strict", "json", "metrics_file", options=flags.ProvisionFlags)
def provision(c: Any, given: CommonFlags, opts: flags.ProvisionFlags) -> None:
    """Connect, gather facts, run the playbook's steps, report (acceptance first)."""
    sel, settings = _common(c, given)

    def go() -> int:
        if not (sel.hosts or sel.group or sel.limit):
            _refuse_teardown_steps(settings.project, opts.playbook, opts.only, opts.skip)
        only, skip = api.split_names(opts.only), api.split_names(opts.skip)
        return api.provision(sel, settings, opts.playbook, opts.check, only, skip, opts.resume)

    _guard(go, given.debug, resumes=not opts.check)


def _refuse_teardown_steps(project: Path, name: str, only: str, skip: str) -> None:
    """`provision --playbook teardown` without --host ran the teardown steps on every host of the
    inventory, which `invoke teardown` refuses: so does provision, for a playbook with them."""
    api.refuse_teardown_steps(project, name, only, skip)


@command(*SELECT, *RUN, "lang", "strict", "json", "metrics_file")
def check(c: Any, given: CommonFlags) -> None:
    """Run only the read-only acceptance playbook (check mode: nothing changes on the host)."""
    sel, settings = _common(c, given)
    _guard(lambda: api.provision(sel, settings, "acceptance", check=True), given.debug)


@command(*SELECT, "json", "debug", name="inventory")
def inventory_(c: Any, given: CommonFlags) -> None:
    """List hosts with vendor, address and order spec."""
    sel = _selection(given.inventory, given.host, given.group, given.limit)
    _guard(lambda: api.list_inventory(sel, _settings(given)), given.debug)


@command(OWN, "inventory", "order", "debug", positional=["paths"], options=flags.FactsFlags)
def facts(c: Any, given: CommonFlags, opts: flags.FactsFlags) -> None:
    """Parse saved command outputs offline (no SSH) and judge them: `invoke facts outputs/`."""
    from gpuonboard.api import offline

    paths, host, order = opts.paths, opts.host, opts.order

    def go() -> int:
        if paths in ("--help", "-h"):  # (`invoke facts --help`: invoke's parser gave it to PATHS)
            raise UsageError("for this task's help run `invoke --help facts` (or `gpuonboard facts --help`).")
        if order and host:
            raise UsageError("give either --host or --order, not both.")
        spec = None
        if order:
            spec = offline.load_order(order)
        elif host:
            spec = api.host_order(api.Selection(given.inventory, [host]), api.Settings(project=Path.cwd()))
        return offline.run([paths] if paths else [], spec, opts.json)

    _guard(go, given.debug)


@command(*SELECT, OWN, *RUN, options=flags.ContainerFlags)
def container(c: Any, given: CommonFlags, opts: flags.ContainerFlags) -> None:
    """Only the container step: runtime and NVIDIA toolkit, pull the image (mirror, retries), smoke run."""
    sel, settings = _common(c, given)
    _guard(lambda: api.container(sel, settings, opts.image or None, opts.check), given.debug)


@command(OWN, options=flags.SimUpFlags)
def sim_up(c: Any, given: CommonFlags, opts: flags.SimUpFlags) -> None:
    """Start a simulated rented server (real sshd on loopback replaying real captures)."""
    from gpuonboard.api import sim

    name, profile = opts.name, opts.profile

    def go() -> int:
        if not SIM_NAME.fullmatch(name):  # (else the test host's own check: "internal error", 70)
            raise UsageError(
                f"--name {name!r} is not a host name; use letters, digits, '.', '_' and '-',"
                " starting with a letter or digit."
            )
        sim_profile_error(profile)
        return sim.up(Path(opts.base), name, profile, opts.hint, opts.container)

    _guard(go, False)


def profile_problem(profile: str, known: list[str], file_exists: bool) -> str:
    """Pure: the sentence for a `sim.up --profile` that is none of the shipped profiles (`known`)
    nor a profile file that exists, or ''."""
    from gpuonboard.api import sim

    names = ", ".join(known)
    if sim.is_profile_file(profile):
        if file_exists:
            return ""
        return (
            f"--profile {profile}: no such file; give an existing profile file, or a profile name ({names})."
        )
    if profile in known:
        return ""
    return (
        f"--profile {profile!r} is no hardware profile (nor a profile file, FILE.yml)"
        f"{api.did_you_mean(profile, known) or f'; the profiles are: {names}.'}"
    )


def sim_profile_error(profile: str) -> None:
    """`sim.up --profile a100` was "unknown or broken hardware profile 'a100': cannot read
    profile a100: [Errno 2] No such file or directory: '/.../profiles/a100.yml'": name the choices."""
    from gpuonboard.api import sim

    problem = profile_problem(profile, sim.profiles(), Path(profile).is_file())
    if problem:
        raise UsageError(problem)


@command(OWN, options=flags.SimDownFlags)
def sim_down(c: Any, given: CommonFlags, opts: flags.SimDownFlags) -> None:
    """Stop every simulated server started by sim.up (by PID), or only --name."""
    from gpuonboard.api import sim

    _guard(lambda: sim.down(Path(opts.base), opts.name or None), False)


@command(OWN, options=flags.SimCronFlags)
def sim_cron(c: Any, given: CommonFlags, opts: flags.SimCronFlags) -> None:
    """Run a simulated server's cron entries once, now (its cron runs them each minute)."""
    from gpuonboard.api import sim

    _guard(lambda: sim.cron(Path(opts.base), opts.name), False)


@command(*SELECT, OWN, *RUN, options=AutostopOptions)
def autostop(c: Any, given: CommonFlags, opts: AutostopOptions) -> None:
    """Install (or --status, --cancel) the watcher that shuts an idle box down: `invoke autostop --host X`."""
    from gpuonboard.api import autostop as autostop_mod

    sel, settings = _common(c, given)
    _guard(lambda: autostop_mod.autostop(sel, settings, opts), given.debug)


@command(*SELECT, OWN, *RUN, options=TeardownOptions)
def teardown(c: Any, given: CommonFlags, opts: TeardownOptions) -> None:
    """Pull results back (rsync, sha256-verified), then remove containers, autostop, data, markers."""
    from gpuonboard.api import teardown as teardown_mod

    sel, settings = _common(c, given)
    _guard(lambda: teardown_mod.teardown(sel, settings, opts), given.debug)


@command(*SELECT, OWN, *RUN, options=SyncOptions)
def sync(c: Any, given: CommonFlags, opts: SyncOptions) -> None:
    """Upload the dataset with rsync (resumable, sha256-verified, optionally age-encrypted)."""
    from gpuonboard.api import sync as sync_mod

    sel, settings = _common(c, given)
    _guard(lambda: sync_mod.sync(sel, settings, opts), given.debug, resumes=not opts.check)


@command(OWN, "inventory", "json", "debug", options=PlanArgs)
def plan(c: Any, given: CommonFlags, opts: PlanArgs) -> None:
    """Before renting: memory needed, the GPUs that fit, host size, upload ETA, cost per vendor."""
    from gpuonboard.api import advise

    args = dataclasses.replace(opts, inventory=given.inventory)
    _guard(lambda: advise.plan(args, Path.cwd()), given.debug)


@command(OWN, "reports_dir", "debug", "lang", name="report", options=flags.ReportFlags)
def report_(c: Any, given: CommonFlags, opts: flags.ReportFlags) -> None:
    """Render the acceptance report (go/no-go, rules, evidence hashes) from summary.json."""
    from gpuonboard.api import advise

    project = Path.cwd()
    rdir = Path(given.reports_dir) if given.reports_dir else project / "reports"
    args = (opts.run, opts.format, opts.compare, opts.runs, opts.lang)
    _guard(lambda: advise.report(rdir, project, *args), given.debug)


@command(
    *SELECT,
    OWN,
    "metrics_file",
    "trust_new_hosts",
    "known_hosts",
    "debug",
    "connect_retries",
    options=MonitorCommand,
)
def monitor(c: Any, given: CommonFlags, opts: MonitorCommand) -> None:
    """Live GPU table of the hosts (one streaming nvidia-smi channel per host), with alerts."""
    from gpuonboard.api import monitor as monitor_mod

    _refuse_invoke_dry(c)
    sel = _selection(given.inventory, given.host, given.group, given.limit)
    settings = _settings(given)
    _guard(lambda: monitor_mod.monitor(sel, settings, opts), given.debug)


@command(
    "host",
    "inventory",
    OWN,
    "trust_new_hosts",
    "known_hosts",
    "debug",
    "connect_retries",
    options=flags.TensorboardFlags,
)
def tensorboard(c: Any, given: CommonFlags, opts: flags.TensorboardFlags) -> None:
    """Start TensorBoard on the host (unless running), forward a local port over SSH, stop on exit."""
    from gpuonboard.api import tunnel

    _refuse_invoke_dry(c)
    sel = _selection(given.inventory, opts.host)
    settings = _settings(given)
    local = None if opts.local_port < 0 else opts.local_port
    _guard(
        lambda: tunnel.tensorboard(
            sel, settings, opts.logdir, opts.port, local, opts.duration, reconnect_for=opts.reconnect_for
        ),
        given.debug,
    )


@command(*SELECT, *RUN)
def prove(c: Any, given: CommonFlags) -> None:
    """Prove the box trains: smoke training, all-reduce, checkpoint disk speed, GPU benchmark, network."""
    sel, settings = _common(c, given)
    _guard(lambda: api.provision(sel, settings, "prove"), given.debug, resumes=True)


@command(OWN, "debug", name="new", options=flags.KeysNewFlags)
def keys_new(c: Any, given: CommonFlags, opts: flags.KeysNewFlags) -> None:
    """Make an age key pair for `sync --encrypt` and print the inventory lines that use it."""
    _guard(lambda: api.new_keys(opts.file), given.debug)


keys_ns = Collection("keys")
keys_ns.add_task(keys_new, name="new")
sim_ns = Collection("sim")
sim_ns.add_task(sim_up, name="up")
sim_ns.add_task(sim_down, name="down")
sim_ns.add_task(sim_cron, name="cron")
ns = Collection(provision, check, inventory_, facts, container, autostop, teardown, sync, sim_ns)
ns.add_task(monitor)
ns.add_task(tensorboard)
ns.add_task(plan)
ns.add_task(report_, name="report")
ns.add_task(prove)
ns.add_collection(keys_ns)


def _typed_value_error() -> None:
    """Invoke casts `--forks abc` with int() and lets the ValueError escape as a traceback
    (both `invoke` and `gpuonboard`): turn it into a ParseError naming the flag."""
    from invoke.parser.argument import Argument

    original = Argument.set_value
    if getattr(original, "_gpuonboard", False):
        return

    def set_value(self: Argument, value: Any, cast: bool = True) -> None:
        try:
            original(self, value, cast)
        except ValueError:
            kind = {int: "a whole number", float: "a number"}.get(self.kind, self.kind.__name__)
            flag = "--" + str(self.name).replace("_", "-")
            raise ParseError(f"{flag} takes {kind}, not {value!r}") from None

    set_value._gpuonboard = True  # type: ignore[attr-defined]
    Argument.set_value = set_value  # type: ignore[method-assign]


_typed_value_error()


def parse_error_text(text: str) -> str:
    """Pure: Invoke's "Flag <Argument: known_hosts> needed value and was not given one!" as
    the flag the user typed: "--known-hosts needs a value"."""
    m = re.fullmatch(r"Flag <Argument: (\w+)[^>]*> needed value and was not given one!", text)
    return f"--{m.group(1).replace('_', '-')} needs a value" if m else text


def unknown_word_text(text: str, flags: list[str], tasks: list[str]) -> str:
    """Pure: Invoke's "No idea what '--hots' is!" with the closest flag of the task (or, for a
    word, the closest task: 'chek'), "No idea what '--hots' is; did you mean '--host'?"."""
    m = re.fullmatch(r"No idea what '(.+)' is!", text)
    if not m:
        return text
    word = m.group(1)
    if word.startswith("-"):  # (compared without the dashes, which every flag shares)
        close = api.did_you_mean(word.lstrip("-"), [f.lstrip("-") for f in flags])
        close = close.replace("'", "'--", 1) if close else ""
    else:
        close = api.did_you_mean(word, tasks)
    return f"No idea what {word!r} is{close}" if close else text


HELP_HEAD = """\
Usage: gpuonboard COMMAND [--OPTIONS]     (a command's options: gpuonboard --help COMMAND)

Acceptance-test and onboard rented GPU servers over SSH: check that a box is what was
ordered (GO / NO-GO), provision it, upload data, prove it trains, tear it down.
Try it without a server: gpuonboard sim.up, then the `next:` line it prints.
Exit codes: 0 GO, 1 NO-GO / a step failed, 2 bad input, 3 unreachable, 4 host key.
"""


class _Program(Program):
    """Invoke's Program, but a malformed command line exits 2 (like a malformed inventory),
    and `--help` opens with the tool's own usage and commands (Invoke's core options last)."""

    def print_help(self) -> None:
        print(HELP_HEAD)
        self.list_tasks()
        print("Invoke's core options (rarely needed; they come before COMMAND):")
        print("")
        self.print_columns(self.initial_context.help_tuples())

    def core_args(self) -> list[Any]:
        """Invoke's core flags, but `--list` without its `-l`: `gpuonboard check -l gpu1` is
        --limit, as in Ansible, and `-l` where a command has no --limit is an unknown flag,
        never a listing of the commands (`gpuonboard --list` still lists them)."""
        args: list[Any] = super().core_args()
        for arg in args:
            if arg.name == "list":
                arg.names = tuple(n for n in arg.names if n != "l")
        return args

    def task_list_opener(self, extra: str = "") -> str:
        return "Commands" + (f" ({extra})" if extra else "")

    def _usage_error(self, exc: ParseError) -> Exit:
        context = getattr(exc, "context", None)
        flags = [str(f) for f in getattr(context, "flags", None) or {} if str(f).startswith("--")]
        text = unknown_word_text(parse_error_text(str(exc)), flags, list(ns.task_names))
        return Exit(f"{text} (see `gpuonboard --help` or `gpuonboard --help TASK`)", code=2)

    def parse_core(self, argv: list[str] | None) -> None:
        try:
            super().parse_core(argv)
        except ParseError as exc:
            raise self._usage_error(exc) from None

    def parse_tasks(self) -> None:
        try:
            super().parse_tasks()
        except ParseError as exc:
            raise self._usage_error(exc) from None

    def parse_cleanup(self) -> None:
        try:
            super().parse_cleanup()
        except ParseError as exc:
            raise self._usage_error(exc) from None


def help_first(argv: list[str]) -> list[str]:
    """`TASK --help` as `--help TASK`: a task with a positional argument (facts PATHS) took
    `--help` for its value ("cannot read this file")."""
    tasks = set(ns.task_names)
    if len(argv) == 3 and argv[1] in tasks and argv[2] in ("--help", "-h"):
        return [argv[0], "--help", argv[1]]
    return argv


def quiet_broken_pipe() -> None:
    """For the `invoke` program itself (its own main, which tasks.py cannot wrap): an uncaught
    BrokenPipeError (`invoke --list | head`) exits 141 quietly instead of a traceback."""
    previous = sys.excepthook

    def hook(kind: type[BaseException], value: BaseException, tb: Any) -> None:
        if issubclass(kind, BrokenPipeError):
            api.reader_left()
            os._exit(ExitCode.READER_LEFT)  # (the interpreter is already unwinding: no sys.exit here)
        previous(kind, value, tb)

    sys.excepthook = hook


def main() -> None:
    """Console script `gpuonboard`: the same tasks outside the repository."""
    global _PROGRAM
    program = _PROGRAM = _Program(namespace=ns, version=__version__, name="gpuonboard", binary="gpuonboard")
    try:
        program.run(help_first(sys.argv))
        sys.stdout.flush()
    except BrokenPipeError:  # `gpuonboard --help | head`: the reader left, nothing to say
        api.reader_left()
        sys.exit(ExitCode.READER_LEFT)
    except SystemExit as done:
        leave(done.code)
    leave(0)


def leave(code: int | str | None) -> None:
    """Exit with `code` (as sys.exit takes it) once the command is done, without the interpreter
    tearing down, one by one, the objects a fleet's run made (~50-100 ms after 50 hosts): the
    exit handlers run (the timings file, temporary folders) and the streams are flushed first.
    Only when no other thread that Python would wait for is alive; else a plain sys.exit."""
    import atexit

    others = [t for t in threading.enumerate() if t is not threading.main_thread() and not t.daemon]
    if any(t.is_alive() for t in others):
        sys.exit(code)
    if code is not None and not isinstance(code, int):
        print(code, file=sys.stderr)
        code = 1
    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BrokenPipeError:
        api.reader_left()
        code = ExitCode.READER_LEFT
    os._exit(int(code or 0))
