"""Every input is bounded (issue 26), the templates side: a playbook argument or a templates/
file is configuration from the user, rendered in Jinja2's sandbox with limits on what one
rendering may do (loop iterations and calls, the size of any value it builds, the size of its
output, the total it builds, its wall time, the size of a number). Each case used to run
unbounded (minutes, or gigabytes of memory); now it stops at once with one sentence naming
the limit. Each case runs in a child process with its memory capped, so that a template that
still ran away would fail its test instead of taking this machine's memory."""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

CHILD = textwrap.dedent(
    """\
    import json, resource, sys
    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
    from gpuonboard.templating import render_value
    try:
        out = render_value(sys.argv[1], {"vars": {"n": 3}})
        print(json.dumps({"ok": len(out)}))
    except Exception as exc:
        print(json.dumps({"error": type(exc).__name__, "message": str(exc)}))
    """
)


def child_cpu() -> float:
    """CPU seconds (user + system) of this process's finished children so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _render(template: str, timeout: float = 20) -> tuple[dict[str, object], float]:
    """Render `template` as a playbook argument in a child process: its result and the child's
    CPU seconds (the work it did, whatever else the machine runs; the wall time on a timeout)."""
    start, cpu = time.monotonic(), child_cpu()
    try:
        r = subprocess.run(
            [sys.executable, "-c", CHILD, template], capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        return {"error": "timeout"}, time.monotonic() - start
    lines = r.stdout.strip().splitlines()
    result = json.loads(lines[-1]) if lines else {"error": "crash", "message": r.stderr[-500:]}
    return result, child_cpu() - cpu


RUNAWAY = {
    "nested loops": (
        "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
        "1,000,000 loop iterations and calls",
    ),
    "exponential macro": (
        "{% macro f(n) %}{% if n %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(60) }}",
        "1,000,000 loop iterations and calls",
    ),
    "lipsum": ("{{ lipsum(n=10**7) }}", "lipsum"),
    "percent width filter": ("{{ '%999999999d' | format(1) }}", "width or precision of 999999999"),
    "percent width operator": ("{{ '%999999999d' % 1 }}", "width or precision of 999999999"),
    "percent star width": ("{{ '%*d' % (10**9, 1) }}", "width or precision of 1000000000"),
    "str.format width": ("{{ '{:>999999999}'.format(1) }}", "width or precision of 999999999"),
    "str.format nested width": ("{{ '{:>{}}'.format(1, 10**9) }}", "width or precision of 1000000000"),
    "str.format repeats": ("{{ ('{0}' * 100000).format('x' * 1000) }}", "longer than 4 MiB"),
    "percent repeats": ("{{ ('%(a)s' * 100000) % {'a': 'x' * 1000} }}", "longer than 4 MiB"),
    "string times": ("{{ 'a' * 10**10 }}", "longer than 4 MiB"),
    "list times": ("{{ [1, 2] * 10**9 }}", "longer than 4 MiB"),
    "center method": ("{{ 'a'.center(10**9) }}", "longer than 4 MiB"),
    "center filter": ("{{ 'a' | center(10**9) }}", "longer than 4 MiB"),
    "indent filter": ("{{ 'a\nb' | indent(10**9) }}", "longer than 4 MiB"),
    "batch fill": ("{{ [1] | batch(10**9, 0) | list }}", "longer than 4 MiB"),
    "join": ("{{ (['x' * 1000000] * 1000) | join }}", "longer than 4 MiB"),
    "power": ("{{ 10 ** (10 ** 10) }}", "65,536 bits"),
    "range": ("{{ range(10**9) | list }}", "range() of more than 100,000 numbers"),
    "doubling concat": (
        "{% set ns = namespace(x='ab') %}{% for i in range(64) %}{% set ns.x = ns.x ~ ns.x %}{% endfor %}"
        "{{ ns.x | length }}",
        "longer than 4 MiB",
    ),
    "doubling replace": (
        "{{ ('a' * 100000) | replace('a', 'aaaaaaaaaa') | replace('a', 'aaaaaaaaaa') }}",
        "longer than 4 MiB",
    ),
    "buffered output": (
        "{% set a = 'x' * 1000000 %}{% set b %}{% for i in range(100000) %}{{ a }}{% endfor %}{% endset %}"
        "{{ b | length }}",
        "64 MiB",
    ),
    "output size": ("{% for i in range(100) %}{{ 'x' * 100000 }}{% endfor %}", "output is longer than 4 MiB"),
}


@pytest.mark.parametrize("name", list(RUNAWAY))
def test_a_runaway_template_stops_at_a_limit_named_in_one_sentence(name: str) -> None:
    template, limit = RUNAWAY[name]
    result, seconds = _render(template)
    assert result.get("error") == "TemplateLimitError", result
    message = str(result["message"])
    assert limit in message, message
    assert "\n" not in message and message.endswith("; simplify the template"), message
    assert seconds < 10, seconds


def test_ordinary_templates_render_as_before() -> None:
    from gpuonboard.templating import render_value

    context = {"vars": {"hosts": ["a", "b"], "n": 3, "name": "x"}}
    assert render_value("{{ vars.hosts | join(',') }}-{{ vars.n * 2 }}-{{ '%05d' % 42 }}", context) == (
        "a,b-6-00042"
    )
    assert render_value("{% for h in vars.hosts %}{{ loop.index }}{{ h }}{% endfor %}", context) == "1a2b"
    assert render_value("{{ '{:>6}'.format(vars.name) }}|{{ 'ab' ~ 'cd' }}", context) == "     x|abcd"
    assert render_value(["{{ vars.name | upper }}", {"k": "{{ 2 ** 10 }}"}], context) == ["X", {"k": "1024"}]
    assert (
        render_value("{{ range(3) | list }}{{ lipsum(1, false, 5, 6) | wordcount }}", context) == "[0, 1, 2]5"
    )


def test_every_reader_takes_a_jinja_comment_as_template_syntax() -> None:
    """Rendering, literal() and the playbook's check agree on what is a template: a value with
    only a `{# comment #}` is rendered (the comment goes, as Jinja2 and Ansible do), not passed
    through with its comment text; a user's literal value holding one stays as written."""
    from gpuonboard.jinjatext import is_template, literal
    from gpuonboard.runner.playbook import _templated
    from gpuonboard.templating import render_value

    for text, template in (("a {# note #}b", True), ("{{x}}", True), ("{%x%}", True), ("a { {b} }", False)):
        assert is_template(text) is template is _templated({"k": [text]})
    assert render_value("data {# the mount #}/x", {}) == "data /x"
    assert render_value(literal("data {# kept #}"), {}) == "data {# kept #}"
    assert render_value("plain {b}", {}) == "plain {b}"


def test_the_wall_time_limit_stops_a_slow_template() -> None:
    from gpuonboard.templating import TemplateLimitError, TemplateLimits, render_value

    # ~60 ms of CPU a round here, 200 rounds: ~12 CPU-s unless the limit stops it. The CPU spent is
    # measured, not the wall time: on a loaded machine 0.2 s of wall time holds little CPU, and the
    # wall time to the check can be seconds (a test run beside ~100 runnable processes took 4 s)
    slow = "{% for i in range(200) %}{{ range(100000) | list | sort | join(',') | length }}{% endfor %}"
    start = time.process_time()
    with pytest.raises(TemplateLimitError) as err:
        render_value(slow, {}, limits=TemplateLimits(seconds=0.2, work=1 << 40))
    assert time.process_time() - start < 2
    assert (
        str(err.value) == "it ran longer than 0.2 s, the most one rendering may take; simplify the template"
    )


def _cli(cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(cwd), "GPUONBOARD_SSH_CONFIG": "/dev/null"}
    code = "import resource; resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30));"
    code += " from gpuonboard.cli import main; main()"
    return subprocess.run(
        [sys.executable, "-c", code, *argv], capture_output=True, text=True, cwd=cwd, env=env, timeout=60
    )


def test_a_runaway_playbook_argument_is_exit_2_naming_file_step_and_limit(tmp_path: Path) -> None:
    inv = tmp_path / "inventory"
    inv.mkdir()
    (inv / "hosts.yml").write_text("hosts:\n  node01: {address: 192.0.2.1}\n")
    book = tmp_path / "loop.yml"
    book.write_text(
        "name: loop\nsteps:\n  - step: command\n    name: spin\n    args:\n      argv:\n"
        '        - "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"\n'
    )
    start = time.monotonic()
    r = _cli(tmp_path, "provision", "--host", "node01", "--playbook", str(book))
    assert time.monotonic() - start < 15
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.strip() == (
        f"error: {book}, line 3: step 'spin' has a bad template (it runs more than 1,000,000 loop"
        " iterations and calls, the most one rendering may do; simplify the template)."
    )


# ---------------------------------------------------------------- output directories


def _unroutable_project(tmp_path: Path) -> Path:
    """A project whose one host is a TEST-NET address (never answers; 1 s connect timeout)."""
    inv = tmp_path / "inventory"
    inv.mkdir()
    (inv / "hosts.yml").write_text("hosts:\n  node01: {address: 192.0.2.1, connect_timeout: 1}\n")
    return tmp_path


@pytest.mark.parametrize(
    ("flag", "value", "what", "fix"),
    [
        (
            "--reports-dir",
            "/proc/nope",
            "the reports directory /proc/nope cannot be created",
            "--reports-dir",
        ),
        (
            "--reports-dir",
            "a-file/sub",
            "the reports directory a-file/sub cannot be created",
            "--reports-dir",
        ),
        ("--reports-dir", "a-file", "the reports directory a-file cannot be created", "--reports-dir"),
        ("--state-dir", "a-file", "the journal directory a-file cannot be created", "--state-dir"),
        ("--state-dir", "/proc/nope", "the journal directory /proc/nope cannot be created", "--state-dir"),
    ],
)
def test_an_output_directory_that_cannot_be_made_is_exit_2_before_connecting(
    tmp_path: Path, flag: str, value: str, what: str, fix: str
) -> None:
    project = _unroutable_project(tmp_path)
    (project / "a-file").write_text("not a directory\n")
    start = time.monotonic()
    r = _cli(project, "provision", "--host", "node01", "--connect-retries", "0", flag, value)
    assert r.returncode == 2, r.stdout + r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {what} ("), r.stderr
    assert lines[0].endswith(f"); pass {fix} a directory you can write to."), r.stderr
    assert time.monotonic() - start < 5  # (before any connection: no 1 s connect timeout waited)
    assert not (project / "reports").exists() or flag != "--reports-dir"


def test_a_project_whose_state_folder_cannot_be_made_is_exit_2(tmp_path: Path) -> None:
    project = _unroutable_project(tmp_path)
    (project / ".gpuonboard").write_text("a file where the state folder goes\n")
    r = _cli(project, "check", "--host", "node01", "--connect-retries", "0")
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.strip() == (
        f"error: the run log directory {project / '.gpuonboard' / 'logs'} cannot be created"
        f" ({project / '.gpuonboard'} is a file); run from a project directory you can write to"
        " (gpuonboard keeps its state in .gpuonboard/ there)."
    )


def test_a_known_hosts_path_that_is_a_directory_is_exit_2(tmp_path: Path) -> None:
    project = _unroutable_project(tmp_path)
    (project / "kh").mkdir()
    r = _cli(project, "check", "--host", "node01", "--known-hosts", "kh", "--trust-new-hosts")
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.strip() == (
        "error: kh is a directory, not a known_hosts file; pass --known-hosts the path of a file"
        " (the default is .gpuonboard/known_hosts)."
    )


def test_a_known_hosts_file_that_cannot_be_written_is_exit_2_when_keys_are_to_be_recorded(
    tmp_path: Path,
) -> None:
    project = _unroutable_project(tmp_path)
    r = _cli(project, "check", "--host", "node01", "--known-hosts", "/proc/nope/kh", "--trust-new-hosts")
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.strip() == (
        "error: the known_hosts file /proc/nope/kh cannot be written (No such file or directory), so"
        " the host key of node01 could not be recorded; pass --known-hosts a file you can write to."
    )
    # without --trust-new-hosts (and no pinned key) nothing is to be recorded: no refusal
    r = _cli(project, "check", "--host", "node01", "--known-hosts", "/proc/nope/kh", "--connect-retries", "0")
    assert r.returncode == 3, r.stdout + r.stderr


# ---------------------------------------------------------------- checks that cost no more than the work


MEASURED = textwrap.dedent(
    """\
    import json, resource, sys
    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
    from gpuonboard.templating import render_value
    try:
        out = render_value(sys.argv[1], {"vars": {"big": "x" * int(sys.argv[2])}})
        result = {"ok": len(out)}
    except Exception as exc:
        result = {"error": type(exc).__name__, "message": str(exc)}
    # VmHWM: this program's own peak (ru_maxrss keeps the forking parent's, a test worker's)
    with open("/proc/self/status") as status:
        hwm = next(line for line in status if line.startswith("VmHWM:"))
    result["peak_mib"] = int(hwm.split()[1]) / 1024
    print(json.dumps(result))
    """
)


def _render_measured(template: str, big: int = 0, timeout: float = 20) -> tuple[dict[str, object], float]:
    """Like _render, with `vars.big` a text of `big` characters; the result has the child's peak
    memory (MiB); seconds are the child's CPU time, as _render's."""
    start, cpu = time.monotonic(), child_cpu()
    try:
        r = subprocess.run(
            [sys.executable, "-c", MEASURED, template, str(big)],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return {"error": "timeout"}, time.monotonic() - start
    lines = r.stdout.strip().splitlines()
    result = json.loads(lines[-1]) if lines else {"error": "crash", "message": r.stderr[-500:]}
    return result, child_cpu() - cpu


@pytest.mark.parametrize(
    "template",
    [
        "{{ '%s' * 20000 % ((1,) * 20000) }}",  # the check of each field looked at every value
        "{{ ('%s' * 100000) | format(*range(100000)) }}",
        "{{ ('%(a)s' * 100000) % {'a': range(3000) | list} }}",
        "{{ ('{:>{}}' * 20000).format(*([1] * 40000)) }}",
    ],
)
def test_checking_a_format_with_many_fields_takes_linear_time(template: str) -> None:
    result, seconds = _render(template, timeout=15)
    assert result.get("error") in (None, "TemplateLimitError"), result
    assert seconds < 5, (seconds, result)


def test_wordwrap_of_a_long_word_into_narrow_lines_stops_at_a_limit() -> None:
    result, seconds = _render("{{ ('a' * 1000000) | wordwrap(1) }}", timeout=15)
    assert result.get("error") == "TemplateLimitError", result
    assert str(result["message"]).endswith("; simplify the template"), result
    assert seconds < 5, seconds


def test_wordwrap_of_ordinary_text_renders_as_before() -> None:
    import jinja2

    from gpuonboard.templating import render_value

    text = "lorem ipsum dolor sit amet " * 20 + "x" * 200
    expected = jinja2.Environment().from_string("{{ t | wordwrap(30) }}").render(t=text)
    assert render_value("{{ vars.t | wordwrap(30) }}", {"vars": {"t": text}}) == expected
    assert render_value("{{ ('a' * 50000) | wordwrap(76) | length }}", {}) == str(50000 + 50000 // 76)


@pytest.mark.parametrize(
    ("template", "big"),
    [
        ("{{ [" + ", ".join(["vars.big | list | batch(1) | list"] * 8) + "] | length }}", 3_000_000),
        ("{{ [" + ", ".join(["vars.big | list | batch(1) | list"] * 8) + "] | length }}", 900_000),
        ("{{ [" + ", ".join(["vars.big | batch(1) | list"] * 8) + "] | length }}", 4_000_000),
    ],
)
def test_lists_of_many_items_are_charged_for_their_memory(template: str, big: int) -> None:
    result, seconds = _render_measured(template, big)
    assert result.get("error") == "TemplateLimitError", result
    assert "64 MiB" in str(result["message"]), result
    assert float(str(result["peak_mib"])) < 400, result  # (it reached 2 GiB)
    assert seconds < 10, seconds


def test_a_list_of_many_items_still_renders_within_the_budget() -> None:
    from gpuonboard.templating import render_value

    assert render_value("{{ range(100000) | map('string') | list | sort | join(',') | length }}", {}) == str(
        len(",".join(sorted(str(i) for i in range(100000))))
    )
    assert render_value("{{ range(100000) | batch(10) | list | length }}", {}) == "10000"


@pytest.mark.parametrize("kind", ["fifo", "/dev/zero", "/proc", "missing"])
def test_a_dataset_that_is_no_data_is_refused_before_connecting(tmp_path: Path, kind: str) -> None:
    """`sync --dataset` a FIFO (a wait for a writer), /dev/zero or /proc (no end), or a path that
    does not exist (found only after connecting to every host, exit 1): one sentence, exit 2,
    before any connection (the host here is a closed port: it would be exit 3)."""
    import os
    import subprocess
    import sys

    inv = tmp_path / "inv"
    inv.mkdir()
    (inv / "hosts.yml").write_text("hosts:\n  h1: {address: 127.0.0.1, port: 1}\n")
    dataset = kind
    if kind == "fifo":
        dataset = str(tmp_path / "fifo")
        os.mkfifo(dataset)
    if kind == "missing":
        dataset = str(tmp_path / "nonexist")
    r = subprocess.run(
        [sys.executable, "-c", "from gpuonboard.cli import main; main()", "sync", "--host", "h1"]
        + ["--inventory", str(inv), "--dataset", dataset, "--connect-retries", "0"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith(f"error: --dataset {dataset} ") and len(r.stderr.splitlines()) == 1
    if kind == "missing":
        assert r.stderr == f"error: --dataset {dataset} does not exist; check the path.\n"
