"""`--only`/`--skip`/`--runs` given only commas (`--skip "$A,$B"` with both unset) named no
step, were read as "not given", and `provision --only ,` ran every step of the playbook (the
container install and the template writes included). A usage error (exit 2) instead, as for
`--host ,`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gpuonboard.cli import empty_values


def test_a_list_flag_with_no_name_in_it_is_empty() -> None:
    assert empty_values(["provision", "--only", ","]) == ["--only"]
    assert empty_values(["provision", "--skip= , ,"]) == ["--skip"]
    assert empty_values(["report", "--compare", "--runs", ","]) == ["--runs"]
    assert empty_values(["provision", "--only", "acceptance,", "--skip", ",gpu_health"]) == []
    assert empty_values(["sync", "--dest", ","]) == []  # (a path, not a list: its own checks)


@pytest.mark.parametrize(
    "argv",
    [
        ["provision", "--host", "gpu-1", "--only", ","],
        ["provision", "--host", "gpu-1", "--skip", " , "],
        ["report", "--compare", "--runs", ","],
    ],
)
def test_a_command_with_only_commas_in_a_list_flag_stops_before_anything(
    tmp_path: Path, argv: list[str]
) -> None:
    r = subprocess.run(
        [sys.executable, "-c", "from gpuonboard.cli import main; main()", *argv],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )
    flag = argv[-2]
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.strip() == (
        f"error: {flag} was given an empty value (an unset shell variable?); give it a value,"
        " or leave it out."
    )
    assert list(tmp_path.iterdir()) == []  # no run started: no reports/, no .gpuonboard/
