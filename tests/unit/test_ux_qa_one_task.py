"""A command line naming two tasks ran both: `provision --host h1 --only acceptance container`
(a space for a comma) ran provision on h1, then the `container` task with its own defaults on
every host of ./inventory (`--skip container autostop`: autostop installed on every box).
Through `gpuonboard` and `invoke` alike, it is a usage error (exit 2) before either runs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gpuonboard.cli import several_tasks

REPO = Path(__file__).resolve().parents[2]
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
