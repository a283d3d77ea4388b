"""Playbooks: the shipped ones load; arguments render per host with Jinja2; errors name file,
line and step."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from gpuonboard.errors import PlaybookError
from gpuonboard.inventory import Host, OrderSpec
from gpuonboard.runner import playbook
from gpuonboard.steps import REGISTRY

REPO = Path(__file__).resolve().parents[2]


def host(name: str = "gpu-1", **vars: object) -> Host:
    return Host(name=name, address="10.0.0.1", order=OrderSpec(gpu_count=8), vars=vars)


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "book.yml"
    path.write_text(textwrap.dedent(text))
    return path


@pytest.mark.parametrize("path", sorted((REPO / "playbooks").glob("*.yml")), ids=lambda p: p.name)
def test_shipped_playbooks_load_and_instantiate(path: Path) -> None:
    book = playbook.load(path)
    assert book.steps
    assert book.name == path.stem
    for spec in book.steps:
        assert spec.kind in REGISTRY
        assert spec.line is not None
        step = playbook.instantiate(book, spec, host())
        assert step.label == spec.label


def test_shipped_acceptance_is_read_only_and_provision_is_not() -> None:
    acceptance = playbook.load(REPO / "playbooks" / "acceptance.yml")
    provision = playbook.load(REPO / "playbooks" / "provision.yml")
    assert acceptance.read_only
    assert not provision.read_only
    assert provision.labels()[0] == "acceptance"
    assert "record-acceptance" in provision.labels()


def test_arguments_render_per_host(tmp_path: Path) -> None:
    book = playbook.load(
        write(
            tmp_path,
            """\
            name: render
            steps:
              - step: command
                name: mark
                args:
                  argv: [touch, "{{ vars.state_dir }}/{{ host.name }}-{{ order.gpu_count }}.done"]
                  creates: "{{ vars.state_dir }}/{{ host.name }}-{{ order.gpu_count }}.done"
            """,
        )
    )
    spec = book.steps[0]
    one = playbook.instantiate(book, spec, host("gpu-1", state_dir="/srv/one"))
    two = playbook.instantiate(book, spec, host("gpu-2", state_dir="/var/lib/two"))
    assert one.args == {"argv": ["touch", "/srv/one/gpu-1-8.done"], "creates": "/srv/one/gpu-1-8.done"}
    assert two.args["argv"] == ["touch", "/var/lib/two/gpu-2-8.done"]
    assert spec.args["creates"] == "{{ vars.state_dir }}/{{ host.name }}-{{ order.gpu_count }}.done"


def test_shipped_provision_dest_uses_state_dir_or_its_default() -> None:
    book = playbook.load(REPO / "playbooks" / "provision.yml")
    spec = next(s for s in book.steps if s.label == "record-acceptance")
    with_var = playbook.instantiate(book, spec, host(state_dir="/opt/gpuonboard"))
    without = playbook.instantiate(book, spec, host())
    assert with_var.args["dest"] == "/opt/gpuonboard/acceptance.env"
    assert without.args["dest"] == "/var/lib/gpuonboard/acceptance.env"


def test_undefined_variable_names_file_line_step_and_host(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """\
        name: undefined
        steps:
          - step: acceptance
          - step: command
            name: make-state-dir
            args:
              argv: [mkdir, -p, "{{ vars.state_dir }}"]
        """,
    )
    book = playbook.load(path)
    with pytest.raises(PlaybookError) as info:
        playbook.instantiate(book, book.steps[1], host("gpu-7"))
    assert str(info.value) == (
        f"{path}, line 4: step 'make-state-dir' for host 'gpu-7' uses an undefined variable"
        " ('dict object' has no attribute 'state_dir'); define it in the inventory's vars."
    )


def test_bad_template_syntax_names_file_line_and_step(tmp_path: Path) -> None:
    path = write(tmp_path, "steps:\n  - step: command\n    args: {argv: [echo, '{{ vars.x }']}\n")
    book = playbook.load(path)
    with pytest.raises(
        PlaybookError, match=rf"^{re.escape(str(path))}, line 2: step 'command' has a bad template \("
    ):
        playbook.instantiate(book, book.steps[0], host(x=1))


def test_rendered_argument_is_validated_by_the_step(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """\
        steps:
          - step: template
            name: env-file
            args: {src: remote/acceptance.env.j2, dest: "{{ vars.dir }}/acceptance.env"}
        """,
    )
    book = playbook.load(path)
    assert playbook.instantiate(book, book.steps[0], host(dir="/etc")).args["dest"] == "/etc/acceptance.env"
    with pytest.raises(PlaybookError) as info:
        playbook.instantiate(book, book.steps[0], host(dir="relative"))
    assert str(info.value) == (
        f"{path}, line 2: step 'env-file': argument 'dest' must be an absolute path,"
        " not 'relative/acceptance.env'."
    )


def test_step_names_default_to_their_type(tmp_path: Path) -> None:
    book = playbook.load(
        write(tmp_path, "steps:\n  - step: acceptance\n  - {step: command, args: {argv: [true]}}\n")
    )
    assert book.labels() == ["acceptance", "command"]
    assert book.name == "book"
    assert [s.line for s in book.steps] == [2, 3]


def test_missing_playbook_file(tmp_path: Path) -> None:
    with pytest.raises(PlaybookError, match="playbook file not found; check the path"):
        playbook.load(tmp_path / "nope.yml")


def test_every_registered_step_loads_under_its_own_name() -> None:
    for name, cls in REGISTRY.items():
        assert cls.name == name
