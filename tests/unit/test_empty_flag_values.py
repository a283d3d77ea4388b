"""A flag given an empty value (`--results "$UNSET"`) is a usage error naming it, exit 2,
before any connection: read as "not given", `teardown --results ""` pulled nothing and went on
to delete, and `sync --dest ""` sent to the default dir."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gpuonboard.cli import empty_values


def test_empty_and_blank_values_are_found() -> None:
    assert empty_values(["teardown", "--host", "x", "--results", ""]) == ["--results"]
    assert empty_values(["sync", "--dest=", "--name", "  "]) == ["--dest", "--name"]
    assert empty_values(["sync", "--dest", "/data", "--check"]) == []
    assert empty_values(["sync", "--host", ""]) == []  # (its own sentence: api.selection)


@pytest.mark.parametrize(
    "argv",
    [
        ["teardown", "--host", "gpu-1", "--results", ""],
        ["sync", "--host", "gpu-1", "--dest", ""],
        ["autostop", "--host", "gpu-1", "--shutdown-command", ""],
        ["autostop", "--host", "gpu-1", "--idle="],
        ["plan", "--params", "7B", "--bandwidth", ""],
    ],
)
def test_a_command_with_an_empty_flag_value_stops_before_anything(tmp_path: Path, argv: list[str]) -> None:
    r = subprocess.run(
        [sys.executable, "-c", "from gpuonboard.cli import main; main()", *argv],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )
    flag = next(a.split("=")[0] for a in argv if a.startswith("--") and a not in ("--host", "--params"))
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.strip() == (
        f"error: {flag} was given an empty value (an unset shell variable?); give it a value, or leave"
        " it out."
    )
