"""Playbooks: the shipped ones load; arguments render per host with Jinja2; errors name file,
line and step."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from gpuonboard import api, connection
from gpuonboard.errors import ExitCode, PlaybookError
from gpuonboard.inventory import Host, OrderSpec
from gpuonboard.runner import playbook
from gpuonboard.steps import REGISTRY

REPO = Path(__file__).resolve().parents[3]


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


# QA round 3 (playbooks): a template step naming a missing file stops the run before any
# connection (exit 2, file and line), instead of failing every host after its login.


def project(tmp_path: Path, src: str) -> Path:
    (tmp_path / "playbooks").mkdir()
    (tmp_path / "playbooks" / "t.yml").write_text(
        "steps:\n  - step: acceptance\n  - step: template\n    name: envfile\n"
        f"    args: {{src: {src}, dest: /tmp/x.env}}\n"
    )
    (tmp_path / "inventory").mkdir()
    (tmp_path / "inventory" / "hosts.yml").write_text("hosts:\n  gpu-1: {address: 192.0.2.1}\n")
    return tmp_path


def test_missing_template_is_a_playbook_error_before_connecting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_connection(*_: object, **__: object) -> None:
        raise AssertionError("connected despite a missing template")

    monkeypatch.setattr(api, "Preconnect", no_connection)
    monkeypatch.setattr(connection, "open_runner", no_connection)
    root = project(tmp_path, "remote/nope.j2")
    with pytest.raises(PlaybookError) as info:
        api.provision(api.Selection(), api.Settings(project=root), playbook="t")
    assert info.value.exit_code == ExitCode.USAGE
    assert str(info.value) == (
        f"{root / 'playbooks' / 't.yml'}, line 3: step 'envfile' names the template 'remote/nope.j2',"
        f" which is not under {root / 'templates'} nor the shipped templates; fix 'src' or add the file."
    )


def test_skipped_or_shipped_templates_pass_the_check(tmp_path: Path) -> None:
    from gpuonboard.runner import playbook

    root = project(tmp_path, "remote/nope.j2")
    book = playbook.load(root / "playbooks" / "t.yml")
    playbook.check_templates(book, root, ["acceptance"])  # --skip envfile
    (root / "playbooks" / "t.yml").write_text(
        "steps:\n  - step: template\n    args: {src: remote/acceptance.env.j2, dest: /tmp/x.env}\n"
    )
    playbook.check_templates(playbook.load(root / "playbooks" / "t.yml"), root, ["template"])


def test_acceptance_env_is_safe_to_source(tmp_path: Path) -> None:
    import subprocess

    from gpuonboard.inventory import Host, OrderSpec
    from gpuonboard.templating import render_file

    model = 'RTX 4090 "D" $(touch pwned) `id` \\'
    text = render_file(
        tmp_path,
        "remote/acceptance.env.j2",
        host="gpu-1",
        inventory_host=Host(name="gpu-1", address="x"),
        order=OrderSpec(gpu_model=model, gpu_count=8),
        vars={},
        facts={
            "gpu_count": 0,
            "gpu_model": None,
            "driver_version": "535.54.03",
            "cuda_version": None,
            "interconnect": "nvlink",
        },
        p={},
    )
    (tmp_path / "a.env").write_text(text)
    out = subprocess.run(
        [
            "sh",
            "-c",
            '. ./a.env && printf "%s|%s|%s|%s" "$ORDER_GPU_MODEL" "$ORDER_GPU_COUNT"'
            ' "$DELIVERED_GPU_MODEL" "$DRIVER_VERSION"',
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout == f"{model}|8||535.54.03"
    assert not (tmp_path / "pwned").exists()
    assert "DELIVERED_GPU_COUNT=0" in text


@pytest.mark.parametrize("name", ["pull,verify", " acceptance", "nap "])
def test_a_step_name_that_only_and_skip_cannot_name_is_refused(tmp_path: Path, name: str) -> None:
    from gpuonboard.runner import playbook

    path = tmp_path / "b.yml"
    path.write_text(f"steps:\n  - step: acceptance\n    name: {name!r}\n")
    with pytest.raises(PlaybookError) as info:
        playbook.load(path)
    assert str(info.value).startswith(f"{path}, line 3: step 1 name {name!r} must have no comma")


def test_playbook_by_file_name_is_found_under_playbooks(tmp_path: Path) -> None:
    root = project(tmp_path, "remote/acceptance.env.j2")
    assert api.find_playbook(root, "t.yml") == root / "playbooks" / "t.yml"
    assert api.find_playbook(root, "t") == root / "playbooks" / "t.yml"
    assert api.find_playbook(root, "provision.yml").name == "provision.yml"  # the shipped one
    (root / "t.yml").write_text("steps:\n  - step: acceptance\n")
    assert api.find_playbook(root, "t.yml") == root / "t.yml"  # a file in the project wins
    with pytest.raises(Exception, match="playbook not found"):
        api.find_playbook(root, "nope.yml")
