"""Playbook arguments and template files render in Jinja2's immutable sandbox; an expression
that fails at render time is one sentence naming file, line, step and host (exit 2), never an
internal error; YAML aliases that expand without bound are refused at load."""

from __future__ import annotations

import textwrap
import time
from pathlib import Path

import jinja2
import pytest

from gpuonboard.errors import ExitCode, InventoryError, PlaybookError
from gpuonboard.inventory import Host, OrderSpec
from gpuonboard.runner import playbook
from gpuonboard.templating import render_file
from gpuonboard.yamlload import parse_yaml


def host(**vars: object) -> Host:
    return Host(name="gpu-1", address="10.0.0.1", order=OrderSpec(gpu_count=8), vars=dict(vars))


def book(tmp_path: Path, arg: str) -> tuple[Path, playbook.Playbook]:
    path = tmp_path / "book.yml"
    path.write_text(
        textwrap.dedent(
            f"""\
            name: t
            steps:
              - step: acceptance
              - step: command
                name: echo
                args:
                  argv: [echo, {arg!r}]
            """
        )
    )
    return path, playbook.load(path)


def test_a_playbook_argument_cannot_run_code_on_this_machine(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    payload = (
        "{{ host.__class__.__init__.__globals__['os'].system('touch " + str(marker) + "') }}"
        "{{ cycler.__init__.__globals__.os.system('touch " + str(marker) + "') }}"
    )
    path, pb = book(tmp_path, payload)
    with pytest.raises(PlaybookError) as info:
        playbook.instantiate(pb, pb.steps[1], host())
    assert str(info.value).startswith(f"{path}, line 4: step 'echo' has a bad template (access to attribute")
    assert "is unsafe" in str(info.value)
    assert info.value.exit_code == ExitCode.USAGE
    assert not marker.exists()


def test_a_playbook_argument_cannot_change_the_host_vars(tmp_path: Path) -> None:
    _, pb = book(tmp_path, "{{ vars.update({'state_dir': '/'}) }}{{ vars.state_dir }}")
    h = host(state_dir="/var/lib/gpuonboard")
    with pytest.raises(PlaybookError, match=r"access to attribute 'update' of 'dict' object is unsafe"):
        playbook.instantiate(pb, pb.steps[1], h)
    assert h.vars == {"state_dir": "/var/lib/gpuonboard"}


def test_plain_reads_and_filters_still_render(tmp_path: Path) -> None:
    _, pb = book(
        tmp_path, "{{ vars.get('x', 'd') }}-{{ vars.items() | list | length }}-{{ [1,2] | join(',') }}"
    )
    assert playbook.instantiate(pb, pb.steps[1], host(y=1)).args["argv"] == ["echo", "d-1-1,2"]


@pytest.mark.parametrize(
    ("expr", "error"),
    [
        ("{{ 1 / 0 }}", "ZeroDivisionError: division by zero"),
        ("{{ host.name + 1 }}", 'TypeError: can only concatenate str (not "int") to str'),
        ("{{ '%d' % vars.n }}", "TypeError: %d format: a real number is required, not str"),
    ],
)
def test_an_expression_failing_at_render_time_names_file_line_step_and_host(
    tmp_path: Path, expr: str, error: str
) -> None:
    path, pb = book(tmp_path, expr)
    with pytest.raises(PlaybookError) as info:
        playbook.instantiate(pb, pb.steps[1], host(n="eight"))
    assert str(info.value) == (
        f"{path}, line 4: step 'echo' for host 'gpu-1': a template in its arguments failed"
        f" ({error}); fix the expression."
    )
    assert info.value.exit_code == ExitCode.USAGE


def test_a_template_file_cannot_reach_python_internals(tmp_path: Path) -> None:
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "evil.j2").write_text(
        "{{ inventory_host.__class__.__init__.__globals__['os'].system('touch pwned') }}\n"
    )
    with pytest.raises(jinja2.TemplateError, match="unsafe"):
        render_file(tmp_path, "evil.j2", inventory_host=host(), vars={})
    assert not (tmp_path / "pwned").exists()


@pytest.mark.parametrize("args", ["[]", "''", "[acceptance]", "0"])
def test_args_that_are_not_a_mapping_are_refused(tmp_path: Path, args: str) -> None:
    path = tmp_path / "b.yml"
    path.write_text(f"steps:\n  - step: acceptance\n    args: {args}\n")
    with pytest.raises(PlaybookError) as info:
        playbook.load(path)
    assert str(info.value) == f"{path}, line 3: step 1 'args' must be a mapping."


def test_empty_args_still_mean_no_arguments(tmp_path: Path) -> None:
    path = tmp_path / "b.yml"
    path.write_text("steps:\n  - step: acceptance\n    args:\n  - step: gpu_health\n    args: {}\n")
    assert [s.args for s in playbook.load(path).steps] == [{}, {}]


def _bomb(levels: int) -> str:
    anchors = ["&a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    anchors += [f"&a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, levels)]
    return "name: bomb\nsteps:\n  - step: command\n    args:\n      argv: [" + ", ".join(anchors) + "]\n"


def test_an_alias_bomb_is_refused_at_load_naming_the_line(tmp_path: Path) -> None:
    path = tmp_path / "bomb.yml"
    path.write_text(_bomb(9))  # 10^9 strings once expanded
    start = time.monotonic()
    with pytest.raises(PlaybookError) as info:
        playbook.load(path)
    assert time.monotonic() - start < 5
    assert str(info.value) == (
        f"{path}, line 5: its aliases expand to more than 1,000,000 values (anchors"
        ' that repeat each other, a "billion laughs"); write the values out instead.'
    )


def test_ordinary_anchors_and_merges_still_load(tmp_path: Path) -> None:
    text = (
        "defaults: &d {user: root, port: 22}\n"
        "hosts:\n  a: {<<: *d, address: 10.0.0.1}\n  b: {<<: *d, port: 2222}\n"
        "list: &l [1, 2, 3]\nagain: [*l, *l]\n"
    )
    data = parse_yaml(text, tmp_path / "hosts.yml", InventoryError)
    assert data["hosts"]["b"] == {"user": "root", "port": 2222}
    assert data["again"] == [[1, 2, 3], [1, 2, 3]]
    assert data["hosts"].line_of("b") == 4
    # a bomb just under the limit (10^5 strings) loads: the limit is on the expansion only
    assert parse_yaml(_bomb(5), tmp_path / "b.yml", InventoryError)["name"] == "bomb"


def test_a_playbook_without_templates_is_built_without_importing_jinja2() -> None:
    """Jinja2 (~50 ms of start-up) is imported for a playbook that has templates, not for the
    acceptance check's, which has none (neither to build its steps nor to check that its
    template steps' files exist: it has none); a templated one still renders."""
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[3]
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from gpuonboard.cli import main\n"
        "from gpuonboard.inventory import Host\n"
        "from gpuonboard.runner import playbook\n"
        f"book = playbook.load({str(repo / 'playbooks' / 'acceptance.yml')!r})\n"
        "host = Host(name='h', address='10.0.0.1')\n"
        "steps = [playbook.instantiate(book, spec, host) for spec in book.steps]\n"
        "playbook.check_templates(book, Path('.'), book.labels())\n"
        "print(len(steps), 'jinja2' in sys.modules)\n"
        f"book = playbook.load({str(repo / 'playbooks' / 'container.yml')!r})\n"
        "steps = [playbook.instantiate(book, spec, host) for spec in book.steps]\n"
        "print(len(steps), 'jinja2' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    first, second = out.stdout.split("\n")[:2]
    assert first.endswith(" False") and not first.startswith("0 ")
    assert second.endswith(" True")


def test_an_upload_from_flags_is_built_without_importing_jinja2() -> None:
    """`sync --dataset D --dest P`: the step's arguments are the flags' values, kept literal, so
    Jinja2 (~30 ms) is not imported before the upload's first connection; without --dest the
    host's data_dir is a template, rendered as before."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from gpuonboard.cli import main\n"
        "from gpuonboard.api import sync\n"
        "from gpuonboard.api.options import SyncOptions\n"
        "from gpuonboard.inventory import Host\n"
        "from gpuonboard.runner import playbook\n"
        "host = Host(name='h', address='10.0.0.1', data_dir='/data')\n"
        "for opts in (SyncOptions(dataset='/srv/ds', dest='/scratch'), SyncOptions(dataset='/srv/ds')):\n"
        "    spec = sync.build_spec(opts)\n"
        "    book = playbook.Playbook(path=Path('sync'), name='sync', steps=(spec,))\n"
        "    step = playbook.instantiate(book, spec, host)\n"
        "    playbook.check_templates(book, Path('.'), book.labels())\n"
        "    print(step.args['dest'], 'jinja2' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["/scratch False", "/data True"]
