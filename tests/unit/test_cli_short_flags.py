"""Ansible's short flags through the real command line: `-i INVENTORY` and `-l PATTERN` on the
commands that take --inventory and --limit. The `gpuonboard` program drops Invoke's core `-l`
(`--list`), so `-l` is --limit after a command and an unknown flag anywhere else; under the
`invoke` program `-l` before the task name is still Invoke's --list."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CLI = [
    sys.executable,
    "-c",
    "import sys; from gpuonboard.cli import main; sys.argv[0] = 'gpuonboard'; main()",
]
INI = (
    "[gpus]\ngpu1 ansible_host=10.0.0.1\ngpu2 ansible_host=10.0.0.2\ngpu3 ansible_host=10.0.0.3\n"
    "[cpus]\ncpu1\n"
)


def _run(cwd: Path, *args: str, program: list[str] = CLI) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "XDG_CACHE_HOME": str(cwd / "cache"), "GPUONBOARD_SSH_CONFIG": "/dev/null"}
    env.pop("GPUONBOARD_DEBUG", None)
    return subprocess.run([*program, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60)


def _listed(r: subprocess.CompletedProcess[str]) -> list[str]:
    assert r.returncode == 0, r.stderr
    return [h["name"] for h in json.loads(r.stdout)["hosts"]]


def test_i_and_l_are_inventory_and_limit(tmp_path: Path) -> None:
    (tmp_path / "hosts.ini").write_text(INI)
    assert _listed(_run(tmp_path, "inventory", "-i", "hosts.ini", "-l", "gpus[1:]", "--json")) == [
        "gpu2",
        "gpu3",
    ]
    long = _run(tmp_path, "inventory", "--inventory", "hosts.ini", "--limit", "gpus[1:]", "--json")
    assert _listed(long) == ["gpu2", "gpu3"]


def test_check_with_l_fails_fast_on_a_subscript_past_the_end(tmp_path: Path) -> None:
    (tmp_path / "hosts.ini").write_text(INI)
    r = _run(tmp_path, "check", "-i", "hosts.ini", "-l", "gpus[7]")
    assert r.returncode == 2, r.stderr
    assert r.stderr == (
        "error: --limit pattern 'gpus[7]' selects no host: 'gpus' matches 3 hosts (positions 0 to 2,"
        " or -3 to -1), and Ansible fails on this subscript too.\n"
    )
    assert not (tmp_path / "reports").exists()  # (refused before any run)


def test_l_is_no_listing_in_gpuonboard(tmp_path: Path) -> None:
    r = _run(tmp_path, "-l")
    assert r.returncode == 2
    assert r.stderr.startswith("No idea what '-l' is!")
    listing = _run(tmp_path, "--list")
    assert listing.returncode == 0 and "inventory" in listing.stdout
    assert "-l, --list" not in _run(tmp_path, "--help").stdout


def test_under_invoke_l_after_the_task_is_still_limit(tmp_path: Path) -> None:
    (tmp_path / "hosts.ini").write_text(INI)
    invoke = [sys.executable, "-m", "invoke", "--search-root", str(REPO)]
    r = _run(tmp_path, "inventory", "-i", "hosts.ini", "-l", "gpus[0]", "--json", program=invoke)
    assert _listed(r) == ["gpu1"]
    before = _run(tmp_path, "-l", program=invoke)  # (before the task: Invoke's own --list)
    assert before.returncode == 0 and "inventory" in before.stdout


def test_an_empty_i_is_refused_as_an_empty_inventory_is(tmp_path: Path) -> None:
    (tmp_path / "hosts.ini").write_text(INI)  # (`-i ""` was read as `.`: this directory)
    r = _run(tmp_path, "inventory", "-i", "")
    assert r.returncode == 2
    assert r.stderr.startswith("error: --inventory was given an empty value")
