"""--host/--group/--limit given with nothing in them (`--host "$UNSET"`, `--host ,`) are usage
errors, never "no filter" (which selected every host of the inventory, and teardown then
deleted data on all of them); teardown refuses to run without an explicit selection."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpuonboard import api
from gpuonboard.errors import UsageError


def test_selection_keeps_names_and_refuses_a_flag_given_empty() -> None:
    sel = api.selection("inv", "a, b", "gpu", "rack*")
    assert (list(sel.hosts), sel.group, sel.limit) == (["a", "b"], "gpu", "rack*")
    assert list(api.selection("inv", None).hosts) == []  # not given: no filter
    for kw, flag, what in (
        ({"host": ""}, "--host", "host"),
        ({"host": " , "}, "--host", "host"),
        ({"host": None, "group": ""}, "--group", "group"),
        ({"host": None, "limit": ","}, "--limit", "pattern"),
    ):
        with pytest.raises(UsageError) as err:
            api.selection("inv", **kw)  # type: ignore[arg-type]
        value = next(v for v in kw.values() if v is not None)
        assert err.value.message == (
            f"{flag} {value!r} names no {what}; give one (see `invoke inventory`), or leave {flag} out."
        )


def _cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    inv = tmp_path / "inventory"
    inv.mkdir(exist_ok=True)
    # an address nothing listens on: a run that got past the selection would say unreachable
    (inv / "hosts.yml").write_text(
        "hosts:\n  a: {address: 127.0.0.1, port: 9}\n  b: {address: 127.0.0.1, port: 9}\n"
    )
    return subprocess.run(
        [sys.executable, "-c", "from gpuonboard.cli import main; main()", *args, "--inventory", str(inv)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "GPUONBOARD_SSH_CONFIG": "/dev/null"},
    )


def test_teardown_with_an_empty_or_no_selection_stops_before_connecting(tmp_path: Path) -> None:
    r = _cli(tmp_path, "teardown", "--host", "", "--check")
    assert r.returncode == 2 and r.stderr.strip() == (
        "error: --host '' names no host; give one (see `invoke inventory`), or leave --host out."
    ), r.stderr
    r = _cli(tmp_path, "teardown", "--check")
    assert r.returncode == 2 and r.stderr.strip() == (
        "error: teardown deletes data on the hosts it selects: name them with --host (or --group or"
        " --limit); it never takes every host of the inventory by default."
    ), r.stderr
    r = _cli(tmp_path, "check", "--group", "")
    assert r.returncode == 2 and "--group '' names no group" in r.stderr, r.stderr
    assert "Traceback" not in r.stdout + r.stderr
    assert not (tmp_path / "reports").exists()
