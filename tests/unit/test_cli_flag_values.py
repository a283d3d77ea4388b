"""Bad values of the common flags and a mistyped playbook name, through the real CLI: one
sentence naming the flag or the name, exit 2, before any inventory or connection."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

CLI = [sys.executable, "-c", "from gpuonboard.cli import main; main()"]


def _run(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], cwd=cwd, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize(
    ("args", "sentence"),
    [
        (("check", "--connect-retries=-1"), "error: --connect-retries must be 0 or more, not -1.\n"),
        (("sync", "--forks", "0"), "error: --forks must be at least 1, not 0.\n"),
        (("teardown", "--host", "x", "--forks=-3"), "error: --forks must be at least 1, not -3.\n"),
    ],
)
def test_a_bad_common_flag_value_is_one_sentence_and_exit_2(
    tmp_path: Path, args: tuple[str, ...], sentence: str
) -> None:
    r = _run(tmp_path, *args)  # (no inventory here: the flag is judged first)
    assert (r.returncode, r.stderr, r.stdout) == (2, sentence, "")


def test_a_mistyped_playbook_name_gets_did_you_mean(tmp_path: Path) -> None:
    (tmp_path / "inventory").mkdir()
    (tmp_path / "inventory" / "hosts.yml").write_text("hosts:\n  h1:\n    address: 127.0.0.1\n")
    r = _run(tmp_path, "provision", "--playbook", "provison")
    assert r.returncode == 2, r.stderr
    assert (
        r.stderr
        == f"error: no playbook 'provison' under {tmp_path / 'playbooks'}; did you mean 'provision'?\n"
    )
    far = _run(tmp_path, "provision", "--playbook", "zzz")
    assert far.returncode == 2
    assert far.stderr.startswith(
        f"error: no playbook 'zzz' under {tmp_path / 'playbooks'} (the playbooks here: acceptance, container,"
        " prove, provision, teardown); run from a gpuonboard project directory or pass --playbook FILE."
    ), far.stderr
