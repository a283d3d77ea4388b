"""The bundled prove scripts run for real on this machine's CPU with edge inputs: a training run
whose loss blows up and comes only part of the way back is no proof that the box trains, and an
all-reduce whose result marker follows another library's partial line on the ranks' shared
stdout (NCCL_DEBUG=INFO writes there through a C buffer) is still read."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpuonboard.steps.prove import allreduce_checks, load_references, parse_result, script_bytes, smoke_checks

pytestmark = pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch not installed")

PARTIAL = "box:4242:4242 [0] NCCL INFO Using network Socket"


def _run(script: str, args: list[str], tmp_path: Path, env: dict[str, str] | None = None) -> str:
    work = tmp_path / f"gpuonboard-{script.split('.')[0]}-qa"
    work.mkdir()
    (work / script).write_bytes(script_bytes(script))  # as shipped: its parts inlined
    r = subprocess.run(
        [sys.executable, str(work / script), *args],
        capture_output=True,
        text=True,
        timeout=240,
        env={**os.environ, **(env or {})},
        cwd=tmp_path,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def test_a_loss_that_blew_up_does_not_pass(tmp_path: Path) -> None:
    out = _run("smoke_train.py", ["--workers", "0", "--lr", "1e9"], tmp_path)
    r = parse_result(out)
    assert r is not None and r["ok"] and r["device"] == "cpu"
    # its windowed figures "fall" by > 99 %, far above where the run began
    assert r["loss_last"] < 0.2 * r["loss_first"] and r["loss_last"] > 10 * r["losses"][0]
    check = {c.name: c for c in smoke_checks(r, gpu_count=0)}["loss_falls"]
    assert check.verdict == "fail", check
    assert "but the first steps reached" in check.actual


def test_allreduce_result_after_a_partial_line_on_stdout(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    # every python started (launcher, torchrun, each rank) writes an unfinished line first
    (site / "sitecustomize.py").write_text(f"import os\nos.write(1, {PARTIAL.encode()!r})\n")
    out = _run(
        "allreduce.py",
        ["--min-bytes", "4096", "--max-bytes", "65536"],
        tmp_path,
        {"PYTHONPATH": str(site)},
    )
    assert PARTIAL + "GPUONBOARD_RESULT {" in out  # the launcher's own line, as the step reads it
    r = parse_result(out)
    assert r is not None and r["ok"] is True, out
    assert r["world_size"] == 2 and r["all_correct"] is True
    c = {x.name: x for x in allreduce_checks(r, load_references(), "", 0, "unknown")}
    assert c["allreduce_correct"].verdict == "pass"
