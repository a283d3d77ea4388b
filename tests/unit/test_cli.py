"""A new user's first hour, through the real CLI: the first mistakes (a host of `sim.up` looked up
in ./inventory, a mistyped task, flag or profile, Invoke's `--dry` taken for a dry run) are one
sentence naming what to do, exit 2, before any connection; `--help` says what the task does."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from gpuonboard.api import sim_hint
from gpuonboard.cli import (
    _refuse_teardown_steps,
    empty_values,
    parse_error_text,
    profile_problem,
    several_tasks,
    unknown_word_text,
)
from gpuonboard.errors import UsageError
from gpuonboard.runner import playbook

REPO = Path(__file__).resolve().parents[2]
CLI = [
    sys.executable,
    "-c",
    "import sys; from gpuonboard.cli import main; sys.argv[0] = 'gpuonboard'; main()",
]
SEE = " (see `gpuonboard --help` or `gpuonboard --help TASK`)"


def _run(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "XDG_CACHE_HOME": str(cwd / "cache"), "GPUONBOARD_SSH_CONFIG": "/dev/null"}
    env.pop("GPUONBOARD_DEBUG", None)
    return subprocess.run([*CLI, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60)


def _project(tmp_path: Path, sim: bool = True, own: bool = True) -> Path:
    """A project dir: ./inventory with host `real-1`, and the inventory `sim.up` writes."""
    if own:
        (tmp_path / "inventory").mkdir()
        (tmp_path / "inventory" / "hosts.yml").write_text("hosts:\n  real-1:\n    address: 127.0.0.1\n")
    if sim:
        sim_inv = tmp_path / ".gpuonboard" / "sim" / "inventory"
        sim_inv.mkdir(parents=True)
        (sim_inv / "hosts.yml").write_text(
            "hosts:\n  demo-a100:\n    address: 127.0.0.1\n    port: 1\n  bad:\n    address: 127.0.0.1\n"
        )
    return tmp_path


# -- a simulated server's name looked up in ./inventory (--inventory forgotten) ---------------


def test_a_sim_host_without_its_inventory_says_which_inventory_to_pass(tmp_path: Path) -> None:
    project = _project(tmp_path)
    r = _run(project, "check", "--host", "demo-a100")
    assert (r.returncode, r.stdout) == (2, ""), r.stderr
    assert r.stderr == (
        f"error: no host named 'demo-a100' in {project / 'inventory' / 'hosts.yml'}; run `invoke"
        " inventory` to list hosts; 'demo-a100' is a simulated server in .gpuonboard/sim/inventory:"
        " pass --inventory .gpuonboard/sim/inventory to every command against it.\n"
    )
    listed = _run(project, "inventory", "--host", "bad")
    assert listed.returncode == 2
    assert "pass --inventory .gpuonboard/sim/inventory" in listed.stderr
    # with it, the name is found (the selection passes; `inventory` lists the host)
    ok = _run(project, "inventory", "--host", "demo-a100", "--inventory", ".gpuonboard/sim/inventory")
    assert ok.returncode == 0, ok.stderr
    assert "demo-a100" in ok.stdout


def test_no_inventory_here_but_a_sim_one_says_to_pass_it(tmp_path: Path) -> None:
    project = _project(tmp_path, own=False)
    r = _run(project, "check")
    assert r.returncode == 2
    assert r.stderr == (
        f"error: {project / 'inventory'}: inventory not found; pass --inventory PATH (default"
        " ./inventory); `sim.up` wrote its simulated servers in .gpuonboard/sim/inventory: pass"
        " --inventory .gpuonboard/sim/inventory to every command against it.\n"
    )


def test_a_name_in_neither_inventory_gets_no_sim_hint(tmp_path: Path) -> None:
    project = _project(tmp_path)
    r = _run(project, "check", "--host", "real-2")
    assert r.returncode == 2
    assert "sim" not in r.stderr
    assert "did you mean 'real-1'?" in r.stderr


@pytest.mark.parametrize(
    ("names", "expected"),
    [
        (["h1"], "no host named 'h1'; 'h1' is a simulated server in .gpuonboard/sim/inventory: pass"),
        (["x", "h1"], "no host named 'h1'; 'h1' is a simulated server in"),
        ([], "no host named 'h1'; `sim.up` wrote its simulated servers in .gpuonboard/sim/inventory"),
    ],
)
def test_sim_hint_names_the_simulated_server(names: list[str], expected: str) -> None:
    assert sim_hint("no host named 'h1'.", names, ["h1", "h2"]).startswith(expected)


def test_sim_hint_leaves_other_errors_alone() -> None:
    assert sim_hint("no host named 'x'.", ["x"], ["h1"]) == "no host named 'x'."
    assert sim_hint("no host named 'x'.", [], []) == "no host named 'x'."


# -- Invoke's own --dry (-R) is no dry run of ours ----------------------------------------------


@pytest.mark.parametrize("task", ["provision", "teardown", "check", "sync", "autostop"])
def test_invokes_dry_flag_is_refused_before_anything_runs(tmp_path: Path, task: str) -> None:
    """`gpuonboard --dry provision` ("Echo commands instead of running") ran the playbook for real:
    --dry changes only Invoke's c.run, which no task uses."""
    project = _project(tmp_path, sim=False)
    r = _run(project, "--dry", task, "--host", "real-1", "--connect-retries", "0")
    assert (r.returncode, r.stdout) == (2, ""), r.stderr
    assert r.stderr == (
        "error: --dry (-R) is Invoke's own flag, which only echoes shell commands and would not stop"
        " this task; for a dry run give the task --check (`gpuonboard provision --check --host NAME`),"
        " and leave --dry out.\n"
    )
    assert not (project / "reports").exists()
    assert not (project / ".gpuonboard").exists()


def test_invokes_dry_flag_is_refused_through_invoke_too(tmp_path: Path) -> None:
    project = _project(tmp_path, sim=False)
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    r = subprocess.run(
        [sys.executable, "-m", "invoke", "--search-root", str(REPO), "-R", "teardown", "--host", "real-1"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith("error: --dry (-R) is Invoke's own flag")
    assert not (project / "reports").exists()


# -- sim.up --profile that is none ---------------------------------------------------------------


def test_sim_up_with_an_unknown_profile_lists_the_profiles(tmp_path: Path) -> None:
    r = _run(tmp_path, "sim.up", "--name", "h1", "--profile", "a100", "--base", str(tmp_path / "sim"))
    assert r.returncode == 2
    assert r.stderr.startswith(
        "error: --profile 'a100' is no hardware profile (nor a profile file, FILE.yml); the profiles are:"
        " a10-remap-pending, a100-8x-nvlink, a100-misdelivered,"
    ), r.stderr
    assert "Errno" not in r.stderr and "\n" not in r.stderr.rstrip("\n")
    close = _run(tmp_path, "sim.up", "--profile", "rtx4090", "--base", str(tmp_path / "sim"))
    assert close.stderr == (
        "error: --profile 'rtx4090' is no hardware profile (nor a profile file, FILE.yml); did you mean"
        " 'rtx4090-1x'?\n"
    )
    assert not (tmp_path / "sim" / "testhosts-state.json").exists()


def test_profile_problem() -> None:
    known = ["a100-8x-nvlink", "t4-busy"]
    assert profile_problem("t4-busy", known, False) == ""
    assert profile_problem("./mine.yml", known, True) == ""
    assert profile_problem("./mine.yml", known, False) == (
        "--profile ./mine.yml: no such file; give an existing profile file, or a profile name"
        " (a100-8x-nvlink, t4-busy)."
    )
    assert profile_problem("t4-bsy", known, False).endswith("; did you mean 't4-busy'?")


# -- a mistyped task or flag -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["check", "--hots", "h1"], "No idea what '--hots' is; did you mean '--host'?"),
        (["chek", "--host", "h1"], "No idea what 'chek' is; did you mean 'check'?"),
        (["provision", "--skp", "container"], "No idea what '--skp' is; did you mean '--skip'?"),
        (["check", "--inventroy", "x"], "No idea what '--inventroy' is; did you mean '--inventory'?"),
        (["check", "--bogus"], "No idea what '--bogus' is!"),
    ],
)
def test_a_mistyped_task_or_flag_gets_did_you_mean(tmp_path: Path, argv: list[str], message: str) -> None:
    r = _run(tmp_path, *argv)
    assert (r.returncode, r.stderr) == (2, f"{message}{SEE}\n")


def test_unknown_word_text_leaves_other_errors_alone() -> None:
    assert unknown_word_text("--forks needs a value", ["--forks"], ["check"]) == "--forks needs a value"
    assert unknown_word_text("No idea what 'zzz' is!", [], ["check"]) == "No idea what 'zzz' is!"


# -- --help says what the task does ------------------------------------------------------------------


def test_report_help_names_its_real_default_run(tmp_path: Path) -> None:
    """Without --run the report is of the newest run that judged a box, not reports/latest (a
    later sync or teardown run is the latest)."""
    r = _run(tmp_path, "--help", "report")
    assert r.returncode == 0
    text = " ".join(r.stdout.split())
    assert "reports/latest" not in text
    assert (
        "--run=STRING run id under reports/ (default: the newest run that judged a box: check, provision)"
        in text
    )


def test_sim_help_names_the_defaults(tmp_path: Path) -> None:
    up = " ".join(_run(tmp_path, "--help", "sim.up").stdout.split())
    down = " ".join(_run(tmp_path, "--help", "sim.down").stdout.split())
    for text in (up, down):
        assert "(default .gpuonboard/sim;" in text
    assert "(default demo-a100)" in up
    assert "(default a100-8x-nvlink;" in up


# -- the verdict line stays one line: its advice is copied from the terminal --------------------


def test_a_no_go_verdict_line_is_never_cut_at_the_console_width() -> None:
    """`provision` on a box without the NVIDIA container toolkit printed the install command in
    the verdict line cut by newlines at 80 columns (`.../nvidia-container-toolkit` / `.list`),
    so the line copied from the terminal was a broken command."""
    from rich.console import Console

    from gpuonboard.inventory import Host
    from gpuonboard.report import terminal
    from gpuonboard.results import HostResult, conclude
    from gpuonboard.steps.base import Check, StepResult

    url = "https://nvidia.github.io/libnvidia-container/stable/deb/nvidia-container-toolkit.list"
    msg = f"step container: no NVIDIA container toolkit; install it: curl -fsSL {url} | sudo tee x.list"
    result = HostResult(
        Host(name="h1", address="10.0.0.1"),
        "failed",
        msg,
        [
            StepResult("acceptance", "ok", "ok", [Check("gpu_count", "8", "8", "pass")]),
            StepResult("container", "failed", msg),
        ],
    )
    con = Console(record=True, width=80)
    terminal.print_results(conclude([result]), con)
    text = con.export_text()
    lines = [line for line in text.splitlines() if line.startswith("verdict for h1")]
    assert lines == ["verdict for h1: NO-GO, failed: step container"], text
    # the failed step's reason: a line of its own, never cut either (issue 27: the verdict line
    # is short, each failed step has its line)
    lines = [line for line in text.splitlines() if line.startswith("h1: container: failed: ")]
    assert len(lines) == 1 and f"curl -fsSL {url} | sudo tee x.list" in lines[0], text


# Any command whose reader leaves mid-output (`... | head -1`) exits 141 quietly, as a shell
# tool killed by SIGPIPE, not 70 "internal error (BrokenPipeError)": the guard every task runs in
# catches what a plain print into the closed pipe raises.


def test_a_broken_pipe_in_any_task_is_exit_141_without_a_word() -> None:
    script = textwrap.dedent(
        """
        import sys
        from invoke import Exit
        from gpuonboard.cli import _guard

        def command():
            for _ in range(100000):
                print("a line of output nobody reads any more")
            return 0

        try:
            _guard(command, debug=False)
        except Exit as exc:
            if exc.message:
                print(exc.message, file=sys.stderr)
            sys.exit(exc.code)
        """
    )
    r, w = os.pipe()
    os.close(r)  # the reader has gone before the first line
    try:
        p = subprocess.run([sys.executable, "-c", script], stdout=w, stderr=subprocess.PIPE, timeout=60)
    finally:
        os.close(w)
    assert p.returncode == 141, p.stderr
    assert p.stderr == b""


# A flag given an empty value (`--results "$UNSET"`) is a usage error naming it, exit 2,
# before any connection: read as "not given", `teardown --results ""` pulled nothing and went on
# to delete, and `sync --dest ""` sent to the default dir.


def test_empty_and_blank_values_are_found() -> None:
    assert empty_values(["teardown", "--host", "x", "--results", ""]) == ["--results"]
    assert empty_values(["sync", "--dest=", "--name", "  "]) == ["--dest", "--name"]
    assert empty_values(["sync", "--dest", "/data", "--check"]) == []
    assert empty_values(["sync", "--host", ""]) == []  # (its own sentence: api.selection)


@pytest.mark.parametrize(
    "argv",
    [
        ["teardown", "--host", "gpu-1", "--results", ""],
        ["sync", "--host", "gpu-1", "--dest", ""],
        ["autostop", "--host", "gpu-1", "--shutdown-command", ""],
        ["autostop", "--host", "gpu-1", "--idle="],
        ["plan", "--params", "7B", "--bandwidth", ""],
    ],
)
def test_a_command_with_an_empty_flag_value_stops_before_anything(tmp_path: Path, argv: list[str]) -> None:
    r = subprocess.run(
        [sys.executable, "-c", "from gpuonboard.cli import main; main()", *argv],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )
    flag = next(a.split("=")[0] for a in argv if a.startswith("--") and a not in ("--host", "--params"))
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.strip() == (
        f"error: {flag} was given an empty value (an unset shell variable?); give it a value, or leave"
        " it out."
    )


# `--only`/`--skip`/`--runs` given only commas (`--skip "$A,$B"` with both unset) named no
# step, were read as "not given", and `provision --only ,` ran every step of the playbook (the
# container install and the template writes included). A usage error (exit 2) instead, as for
# `--host ,`.


def test_a_list_flag_with_no_name_in_it_is_empty() -> None:
    assert empty_values(["provision", "--only", ","]) == ["--only"]
    assert empty_values(["provision", "--skip= , ,"]) == ["--skip"]
    assert empty_values(["report", "--compare", "--runs", ","]) == ["--runs"]
    assert empty_values(["provision", "--only", "acceptance,", "--skip", ",gpu_health"]) == []
    assert empty_values(["sync", "--dest", ","]) == []  # (a path, not a list: its own checks)


@pytest.mark.parametrize(
    "argv",
    [
        ["provision", "--host", "gpu-1", "--only", ","],
        ["provision", "--host", "gpu-1", "--skip", " , "],
        ["report", "--compare", "--runs", ","],
    ],
)
def test_a_command_with_only_commas_in_a_list_flag_stops_before_anything(
    tmp_path: Path, argv: list[str]
) -> None:
    r = subprocess.run(
        [sys.executable, "-c", "from gpuonboard.cli import main; main()", *argv],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )
    flag = argv[-2]
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.strip() == (
        f"error: {flag} was given an empty value (an unset shell variable?); give it a value,"
        " or leave it out."
    )
    assert list(tmp_path.iterdir()) == []  # no run started: no reports/, no .gpuonboard/


# A flag given without its value (`gpuonboard sync --dest`) said Invoke's internal
# "Flag <Argument: dest> needed value and was not given one!": now the flag as typed.


def test_the_sentence_names_the_flag_as_typed() -> None:
    assert (
        parse_error_text("Flag <Argument: known_hosts> needed value and was not given one!")
        == "--known-hosts needs a value"
    )
    assert parse_error_text("No idea what 'nope' is!") == "No idea what 'nope' is!"


@pytest.mark.parametrize(("task", "flag"), [("sync", "--dest"), ("provision", "--known-hosts")])
def test_a_flag_without_its_value(tmp_path: Path, task: str, flag: str) -> None:
    r = subprocess.run(
        [sys.executable, "-c", "from gpuonboard.cli import main; main()", task, flag],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )
    assert r.returncode == 2
    assert r.stderr.strip() == f"{flag} needs a value (see `gpuonboard --help` or `gpuonboard --help TASK`)"


# A command line naming two tasks ran both: `provision --host h1 --only acceptance container`
# (a space for a comma) ran provision on h1, then the `container` task with its own defaults on
# every host of ./inventory (`--skip container autostop`: autostop installed on every box).
# Through `gpuonboard` and `invoke` alike, it is a usage error (exit 2) before either runs.

SENTENCE = (
    "error: the command line names 2 tasks (plan, inventory): a word after a task's flags is read"
    " as another task to run with its own defaults (every host of ./inventory); run one task per"
    " command, and list steps with commas (--only acceptance,container)."
)


def test_one_task_is_fine_and_two_are_named() -> None:
    assert several_tasks([]) is None
    assert several_tasks(["provision"]) is None
    assert several_tasks(["plan", "inventory"]) == SENTENCE


@pytest.mark.parametrize(
    "entry",
    [
        [sys.executable, "-c", "from gpuonboard.cli import main; main()"],
        [sys.executable, "-m", "invoke", "-r", str(REPO)],
    ],
    ids=["gpuonboard", "invoke"],
)
def test_two_tasks_on_one_command_line_run_neither(tmp_path: Path, entry: list[str]) -> None:
    inv = tmp_path / "inventory" / "hosts.yml"
    inv.parent.mkdir()
    inv.write_text(yaml.safe_dump({"hosts": {"gpu-1": {"address": "10.0.0.1"}}}))
    r = subprocess.run(
        [*entry, "plan", "--params", "7B", "inventory"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.strip() == SENTENCE
    assert r.stdout == ""  # neither the plan nor the host list was printed


def test_one_task_still_runs_through_invoke(tmp_path: Path) -> None:
    r = subprocess.run(
        [sys.executable, "-m", "invoke", "-r", str(REPO), "plan", "--params", "7B"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert "recommended:" in r.stdout


# `provision --playbook teardown` without --host ran the teardown steps (pull, containers,
# files: deleting data) on every host of the inventory, which `invoke teardown` refuses (exit 2).
# Provision refuses it too, before any connection; with hosts named, or with only the read-only
# teardown steps chosen, it runs as before.


def project(tmp_path: Path) -> Path:
    inv = tmp_path / "inventory" / "hosts.yml"
    inv.parent.mkdir()
    # port 1 of loopback: nothing listens, so a run that got past the check is "unreachable" (3)
    inv.write_text(yaml.safe_dump({"hosts": {"gpu-1": {"address": "127.0.0.1", "port": 1}}}))
    return tmp_path


def cli(cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "from gpuonboard.cli import main; main()", *argv, "--connect-retries", "0"],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=60,
        env={"GPUONBOARD_SSH_CONFIG": "/dev/null", "PATH": "/usr/bin:/bin", "HOME": str(cwd)},
    )


@pytest.mark.parametrize("extra", [[], ["--check"], ["--skip", "pull,containers"]])
def test_teardown_steps_without_a_host_are_refused_before_connecting(
    tmp_path: Path, extra: list[str]
) -> None:
    root = project(tmp_path)
    r = cli(root, "provision", "--playbook", "teardown", *extra)
    assert r.returncode == 2, r.stdout + r.stderr
    book = REPO / "playbooks" / "teardown.yml"
    steps = "files" if extra[:1] == ["--skip"] else "pull, containers, files"
    assert r.stderr.strip() == (
        f"error: {book}: step(s) {steps} pull results and delete data on the hosts they run on: name"
        " them with --host (or --group or --limit); as `invoke teardown`, such a playbook never takes"
        " every host of the inventory by default."
    )
    assert not (root / "reports").exists()


@pytest.mark.parametrize(
    "argv",
    [
        ["--host", "gpu-1"],
        ["--limit", "all"],
        ["--only", "cost"],  # (read-only: what the rental cost)
    ],
)
def test_with_hosts_named_or_only_read_only_steps_it_runs(tmp_path: Path, argv: list[str]) -> None:
    r = cli(project(tmp_path), "provision", "--playbook", "teardown", *argv)
    assert r.returncode == 3, r.stdout + r.stderr  # it went on and found the host unreachable


def test_the_check_reads_the_chosen_steps(tmp_path: Path) -> None:
    book = playbook.load(REPO / "playbooks" / "teardown.yml")
    assert playbook.teardown_steps(book, book.labels()) == ["pull", "containers", "files"]
    assert playbook.teardown_steps(book, ["autostop", "cost"]) == []
    _refuse_teardown_steps(REPO, "provision", "", "")  # no teardown step: nothing to refuse
    with pytest.raises(UsageError):
        _refuse_teardown_steps(REPO, "teardown", "files", "")


@pytest.mark.parametrize(
    ("code", "rc", "err"),
    [("0", 0, ""), ("3", 3, ""), ("None", 0, ""), ("'error: stop here'", 1, "error: stop here\n")],
)
def test_leave_runs_the_exit_handlers_flushes_and_keeps_the_code(
    tmp_path: Path, code: str, rc: int, err: str
) -> None:
    """The console script's end skips the interpreter's object-by-object teardown, but the exit
    handlers still run (the timings file, temporary folders), buffered output is written and
    the exit code is sys.exit's."""
    mark = tmp_path / "handler-ran"
    script = (
        "import atexit, sys; from gpuonboard.cli import leave;"
        f" atexit.register(lambda: open({str(mark)!r}, 'w').write('ran'));"
        f" sys.stdout.write('buffered'); leave({code})"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (rc, "buffered", err)
    assert mark.read_text() == "ran"


def test_leave_waits_for_a_thread_python_would_wait_for(tmp_path: Path) -> None:
    """A non-daemon thread still running: the plain exit, which lets it finish its work."""
    out = tmp_path / "thread-wrote"
    script = (
        "import threading, time; from gpuonboard.cli import leave;"
        f" threading.Thread(target=lambda: (time.sleep(0.3), open({str(out)!r}, 'w').write('x'))).start();"
        " leave(4)"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 4 and out.read_text() == "x", done.stderr


def _holds(pid: int, path: Path) -> bool:
    """Whether process `pid` has `path` open (its /proc fd links)."""
    fds = Path(f"/proc/{pid}/fd")
    try:
        links = [os.readlink(fd) for fd in fds.iterdir()]
    except OSError:  # (a descriptor closed while listed)
        return False
    return str(path) in links


def test_ctrl_c_in_offline_facts_says_nothing_of_resuming_an_upload(tmp_path: Path) -> None:
    """Ctrl-C while `gpuonboard facts` waited on a FIFO nothing writes to printed "to resume,
    rerun the same command: ... files already uploaded are not sent again": offline facts
    uploads nothing and keeps nothing to resume. Only commands that change the host say it."""
    import signal
    import time

    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "GPUONBOARD_SSH_CONFIG": "/dev/null"}
    env.pop("GPUONBOARD_DEBUG", None)
    proc = subprocess.Popen(
        [*CLI, "facts", str(fifo)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    # (started, and waiting in the FIFO's open: it holds the FIFO open; a fixed sleep raced a
    # loaded machine's start, whose Ctrl-C came before the CLI's handler)
    deadline = time.monotonic() + 60
    while not _holds(proc.pid, fifo):
        assert proc.poll() is None and time.monotonic() < deadline, "the CLI never opened the FIFO"
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, out + err
    assert err.strip().splitlines()[-1] == "interrupted", err
    assert "to resume" not in err, err


@pytest.mark.parametrize("collecting", [True, False])
def test_the_cli_imports_without_collector_passes_and_leave_it_as_it_was(collecting: bool) -> None:
    """Importing the CLI (~100 ms of modules kept for the whole run) made ~45 passes of the
    cyclic collector over what it had made so far; now it is off while they are imported, what
    they made is frozen, and the collector is left on (or off) as it was."""
    script = textwrap.dedent(
        f"""
        import gc
        passes = []
        gc.callbacks.append(lambda phase, info: passes.append(phase) if phase == "start" else None)
        if not {collecting}:
            gc.disable()
        import gpuonboard.cli
        print(len(passes), gc.isenabled(), gc.get_freeze_count() > 10_000)
        """
    )
    p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    passes, enabled, frozen = p.stdout.split()
    assert int(passes) <= 2, p.stdout
    assert (enabled, frozen) == (str(collecting), "True")
