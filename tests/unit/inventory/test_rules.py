"""A host (group, vendor) name is text that reaches shell scripts: one with a line break or a
control character is refused at inventory loading, and the autostop script's comment line
renders any name so that it stays a comment (cron runs that script as root every minute).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from gpuonboard import inventory
from gpuonboard.errors import InventoryError
from gpuonboard.steps.autostop import comment_label, render_script

REPO = Path(__file__).resolve().parents[3]
EVIL = "h1\ntouch {marker}\n"


@pytest.mark.parametrize(
    "name", [EVIL, "h1\r\ntouch {marker}", "h1\u2028touch {marker}", "h1\x85\ntouch {marker}", "a\x1b[2Jb"]
)
def test_the_autostop_script_keeps_any_host_name_in_its_comment(tmp_path: Path, name: str) -> None:
    marker = tmp_path / "PWNED"
    host = name.format(marker=marker)
    script = render_script(REPO, host, str(tmp_path / "autostop"))
    lines = script.splitlines()
    assert lines[1].startswith("# gpuonboard autostop watcher for host ")
    assert lines[2].startswith("# rerun `invoke autostop` instead)")
    assert all(c == "\n" or c.isprintable() for c in script)  # (no escape sequence for a terminal)
    assert "\n".join(lines[3:]) == "\n".join(
        render_script(REPO, "h1", str(tmp_path / "autostop")).splitlines()[3:]
    )
    # run as cron would: the config is missing, so it stops at once; nothing before that ran
    path = tmp_path / "autostop.sh"
    path.write_text(script)
    r = subprocess.run(["/bin/sh", str(path), "status"], capture_output=True, text=True, timeout=20)
    assert r.returncode == 1 and "autostop.conf is missing" in r.stderr, r.stderr
    assert not marker.exists()


def test_comment_label() -> None:
    assert comment_label("wuhan-a100-1") == "wuhan-a100-1"
    assert comment_label("h1\ntouch /x\n") == "'h1\\ntouch /x\\n'"
    assert comment_label("gpu\u2028x\x00") == "'gpu\\u2028x\\x00'"
    assert comment_label("北京-1") == "'北京-1'"


def load(tmp_path: Path, files: dict[str, str]) -> inventory.Inventory:
    root = tmp_path / "inv"
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(textwrap.dedent(text))
    return inventory.load(root / next(iter(files)))


@pytest.mark.parametrize(
    ("files", "sentence"),
    [
        (
            {
                "hosts.yml": "hosts:\n  ok: {address: 10.0.0.1}\n"
                '  "h1\\ntouch /tmp/PWNED\\n": {address: 10.0.0.2}\n'
            },
            "hosts.yml, line 3: host name 'h1\\ntouch /tmp/PWNED\\n' holds a line break ('\\n'); a host name"
            " must be one line of printable text: rename it.",
        ),
        (
            {"hosts.yml": 'hosts:\n  ok: {address: 10.0.0.1}\ngroups:\n  "g\\x1b[31m": {hosts: [ok]}\n'},
            "hosts.yml, line 4: group name 'g\\x1b[31m' holds a control character ('\\x1b'); a group name"
            " must be one line of printable text: rename it.",
        ),
        (
            {"hosts.yml": 'hosts:\n  ok: {address: 10.0.0.1, jump: "u@b\\nProxyCommand x"}\n'},
            "hosts.yml, line 2: host 'ok' jump host name 'u@b\\nProxyCommand x' holds a line break ('\\n');"
            " a jump host name must be one line of printable text: rename it.",
        ),
        (  # Ansible YAML: a group, and a host
            {
                "hosts.yml": 'all:\n  children:\n    "gpu\\u2028x":\n'
                "      hosts:\n        a1: {ansible_host: 10.0.0.1}\n"
            },
            "hosts.yml, line 3: group name 'gpu\\u2028x' holds a line break ('\\u2028'); a group name must be"
            " one line of printable text: rename it.",
        ),
        (
            {"hosts.yml": 'all:\n  hosts:\n    ok: {}\n    "a\\rb": {ansible_host: 10.0.0.1}\n'},
            "hosts.yml, line 4: host name 'a\\rb' holds a line break ('\\r'); a host name must be one line"
            " of printable text: rename it.",
        ),
        (  # Ansible INI: a section, a host, a child group
            {"hosts.ini": "[gpus]\nh1 ansible_host=10.0.0.1\n[gp\x01us]\nh2\n"},
            "hosts.ini, line 3: group name 'gp\\x01us' holds a control character ('\\x01'); a group name"
            " must be one line of printable text: rename it.",
        ),
        (
            {"hosts.ini": '[gpus]\nh1\n"h\x07" ansible_host=10.0.0.1\n'},
            "hosts.ini, line 3: host name 'h\\x07' holds a control character ('\\x07'); a host name must be"
            " one line of printable text: rename it.",
        ),
        (
            {"hosts.ini": "[gpus]\nh1\n[all:children]\ngpus\nx\x7fy\n"},
            "hosts.ini, line 5: group name 'x\\x7fy' holds a control character ('\\x7f'); a group name must"
            " be one line of printable text: rename it.",
        ),
    ],
)
def test_names_with_control_characters_are_one_sentence(
    tmp_path: Path, files: dict[str, str], sentence: str
) -> None:
    with pytest.raises(InventoryError) as err:
        load(tmp_path, files)
    assert str(err.value) == f"{tmp_path / 'inv'}/{sentence}"


def test_a_vendor_file_name_with_a_line_break(tmp_path: Path) -> None:
    with pytest.raises(InventoryError) as err:
        load(tmp_path, {"hosts.yml": "hosts:\n  ok: {address: 10.0.0.1}\n", "vendors/a\nb.yml": "name: A\n"})
    assert str(err.value) == (
        f"{tmp_path / 'inv' / 'vendors'}: vendor profile file 'a\\nb.yml': vendor name 'a\\nb' holds a line"
        " break ('\\n'); a vendor name must be one line of printable text: rename it."
    )


def test_ordinary_names_still_load(tmp_path: Path) -> None:
    inv = load(
        tmp_path,
        {
            "hosts.yml": "hosts:\n  gpu-1: {address: 10.0.0.1}\n  'gpu 2 北京': {address: 10.0.0.2}\n"
            "groups:\n  'a b': {hosts: [gpu-1]}\n"
        },
    )
    assert sorted(inv.hosts) == ["gpu 2 北京", "gpu-1"] and inv.groups == {"a b": ("gpu-1",)}


def test_the_cli_stops_with_exit_2_before_any_connection(tmp_path: Path) -> None:
    marker = tmp_path / "PWNED"
    hosts = tmp_path / "hosts.yml"
    hosts.write_text(f'hosts:\n  "h1\\ntouch {marker}\\n": {{address: 127.0.0.1, port: 1}}\n')
    env = {k: v for k, v in os.environ.items() if k != "GPUONBOARD_DEBUG"}
    env["GPUONBOARD_SSH_CONFIG"] = "/dev/null"
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "invoke",
            "--search-root",
            str(REPO),
            "autostop",
            "--inventory",
            str(hosts),
            "--idle",
            "30m",
            "--check",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr == (
        f"error: {hosts}, line 2: host name 'h1\\ntouch {marker}\\n' holds a line break ('\\n'); a host"
        " name must be one line of printable text: rename it.\n"
    )
    assert not marker.exists()
