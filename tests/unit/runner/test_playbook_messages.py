"""Playbook mistakes a user makes, each one sentence naming file, line and what to do:
a Go template (`docker inspect -f '{{.State.Running}}'`) in an argument, and a playbook
`name:`/`description:` that is a list or a mapping (it became the name "['a']")."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from gpuonboard.errors import ExitCode, PlaybookError
from gpuonboard.inventory import Host, OrderSpec
from gpuonboard.runner import playbook


def host() -> Host:
    return Host(name="gpu-1", address="10.0.0.1", order=OrderSpec(gpu_count=8), vars={})


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "book.yml"
    path.write_text(textwrap.dedent(text))
    return path


def test_a_go_template_in_an_argument_names_the_argument_and_the_raw_block(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """\
        steps:
          - step: command
            name: running
            args:
              creates: /tmp/x
              argv: [docker, inspect, -f, "{{.State.Running}}", trainer]
        """,
    )
    book = playbook.load(path)
    with pytest.raises(PlaybookError) as info:
        playbook.instantiate(book, book.steps[0], host())
    assert str(info.value) == (
        f"{path}, line 2: step 'running' has a bad template (unexpected '.') in argument 'argv';"
        " a literal '{{' (a Go template like '{{.State.Running}}') must be written inside"
        " {% raw %}...{% endraw %}."
    )
    assert info.value.exit_code == ExitCode.USAGE


def test_the_raw_block_the_message_advises_works(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """\
        steps:
          - step: command
            args:
              argv: [docker, inspect, -f, "{% raw %}{{.State.Running}}{% endraw %}", trainer]
        """,
    )
    book = playbook.load(path)
    step = playbook.instantiate(book, book.steps[0], host())
    assert step.args["argv"] == ["docker", "inspect", "-f", "{{.State.Running}}", "trainer"]


@pytest.mark.parametrize(
    ("text", "line", "key"),
    [
        ("name: [provision]\nsteps:\n  - step: acceptance\n", 1, "name"),
        ("name: p\ndescription: {a: 1}\nsteps:\n  - step: acceptance\n", 2, "description"),
    ],
)
def test_a_playbook_name_or_description_that_is_not_a_text(
    tmp_path: Path, text: str, line: int, key: str
) -> None:
    path = write(tmp_path, text)
    with pytest.raises(PlaybookError) as info:
        playbook.load(path)
    assert str(info.value) == f"{path}, line {line}: the playbook's {key!r} must be a text."


def test_a_number_or_no_name_still_loads(tmp_path: Path) -> None:
    assert playbook.load(write(tmp_path, "name: 2024\nsteps:\n  - step: acceptance\n")).name == "2024"
    assert playbook.load(write(tmp_path, "name:\nsteps:\n  - step: acceptance\n")).name == "book"
