"""A flag given without its value (`gpuonboard sync --dest`) said Invoke's internal
"Flag <Argument: dest> needed value and was not given one!": now the flag as typed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gpuonboard.cli import parse_error_text


def test_the_sentence_names_the_flag_as_typed() -> None:
    assert (
        parse_error_text("Flag <Argument: known_hosts> needed value and was not given one!")
        == "--known-hosts needs a value"
    )
    assert parse_error_text("No idea what 'nope' is!") == "No idea what 'nope' is!"


@pytest.mark.parametrize(("task", "flag"), [("sync", "--dest"), ("provision", "--known-hosts")])
def test_a_flag_without_its_value(tmp_path: Path, task: str, flag: str) -> None:
    r = subprocess.run(
        [sys.executable, "-c", "from gpuonboard.cli import main; main()", task, flag],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )
    assert r.returncode == 2
    assert r.stderr.strip() == f"{flag} needs a value (see `gpuonboard --help` or `gpuonboard --help TASK`)"
