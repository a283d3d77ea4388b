"""The host vars `invoke autostop` takes are checked before any connection, naming the var: a
YAML `autostop_shutdown_command:` with no value rendered as the text 'None', installed as the
shutdown command, which never shut the box down (and a mapping became its Python repr)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

GPUONBOARD = Path(sys.executable).parent / "gpuonboard"


def autostop(tmp_path: Path, var_line: str, *flags: str) -> subprocess.CompletedProcess[str]:
    hosts = tmp_path / "hosts.yml"
    hosts.write_text(
        "hosts:\n  gpu1:\n    address: 127.0.0.1\n    port: 1\n    vars:\n"
        f"      autostop_dir: {tmp_path / 'autostop'}\n      {var_line}\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "GPUONBOARD_DEBUG"}
    env["GPUONBOARD_SSH_CONFIG"] = str(tmp_path / "no-ssh-config")
    return subprocess.run(
        [str(GPUONBOARD), "autostop", "--host", "gpu1", "--inventory", str(hosts), *flags],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


PREFIX = "error: autostop: step 'autostop' for host 'gpu1': "


@pytest.mark.parametrize(
    ("var_line", "sentence"),
    [
        (
            "autostop_shutdown_command:",
            "vars.autostop_shutdown_command must be a text, not null (a key with no value); set it or"
            " remove it.",
        ),
        (
            "autostop_shutdown_command: {api: stop}",
            "vars.autostop_shutdown_command must be a text, not a mapping; set it or remove it.",
        ),
        (
            "autostop_shutdown_command: [poweroff]",
            "vars.autostop_shutdown_command must be a text, not a list; set it or remove it.",
        ),
    ],
)
def test_a_bad_autostop_var_is_one_sentence_and_exit_2(tmp_path: Path, var_line: str, sentence: str) -> None:
    r = autostop(tmp_path, var_line, "--check")
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr == PREFIX + sentence + "\n"
    assert not (tmp_path / "autostop").exists()


def test_a_blank_shutdown_command_var_is_refused(tmp_path: Path) -> None:
    # `sh -c ' '` succeeds: the watcher logged a shutdown every minute and the box kept running
    r = autostop(tmp_path, "autostop_shutdown_command: ' '", "--check")
    assert r.returncode == 2, r.stdout + r.stderr
    assert (
        r.stderr
        == "error: autostop: step 'autostop': argument 'shutdown_command' must be a command, not blank.\n"
    )


def test_a_blank_shutdown_command_flag_is_a_usage_error(tmp_path: Path) -> None:
    r = autostop(tmp_path, "autostop_cron: auto", "--shutdown-command", " ")
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr == (
        "error: --shutdown-command was given an empty value (an unset shell variable?); give it a"
        " value, or leave it out.\n"
    )
