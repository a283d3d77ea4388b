"""The new flags' bad values, through the real CLI: one sentence on stderr naming the flag and
the fix, exit 2, nothing connected (the inventory's hosts are unroutable TEST-NET addresses)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

CLI = "from gpuonboard.cli import main; main()"


def _run(cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(cwd), "GPUONBOARD_SSH_CONFIG": "/dev/null"}
    return subprocess.run(
        [sys.executable, "-c", CLI, *argv], capture_output=True, text=True, cwd=cwd, env=env, timeout=60
    )


def test_a_bad_reconnect_for_is_exit_2_naming_the_flag(tmp_path: Path) -> None:
    r = _run(tmp_path, "tensorboard", "--host", "x", "--reconnect-for", "5x")
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip() == "error: --reconnect-for: '5x' is not a duration like 30s, 5m or 2h."


def test_a_limit_typo_is_exit_2_with_did_you_mean(tmp_path: Path) -> None:
    inv = tmp_path / "inventory"
    inv.mkdir()
    (inv / "hosts.yml").write_text("hosts:\n  node01: {address: 192.0.2.1}\n  node02: {address: 192.0.2.2}\n")
    r = _run(tmp_path, "check", "--limit", "node*,!nod02")
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip() == (
        f"error: --limit pattern '!nod02' names no host or group in {inv / 'hosts.yml'}; fix the name"
        " (run `invoke inventory` to list hosts and groups); did you mean 'node02'?"
    )
