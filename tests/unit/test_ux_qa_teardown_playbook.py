"""`provision --playbook teardown` without --host ran the teardown steps (pull, containers,
files: deleting data) on every host of the inventory, which `invoke teardown` refuses (exit 2).
Provision refuses it too, before any connection; with hosts named, or with only the read-only
teardown steps chosen, it runs as before."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gpuonboard.cli import _refuse_teardown_steps
from gpuonboard.errors import UsageError
from gpuonboard.runner import playbook

REPO = Path(__file__).resolve().parents[2]


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
