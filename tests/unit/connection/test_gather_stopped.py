"""An nvidia-smi call a signal stopped before the probe's timeout (exit 137 `Killed`: another
process or the kernel's OOM killer; 143 `Terminated`) is no hang: its code is kept and the
rules say it "was stopped (exit N)", never "did not answer within 60 s"; a call the probe's own
timeout stopped is still a hang (tests/unit/steps/checks/test_acceptance.py)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from gpuonboard.api import offline
from gpuonboard.connection.gather import parse_facts
from gpuonboard.connection.probe_commands import TIMED_OUT, core_probes
from gpuonboard.facts.probe import ProbeOutput, build_script, new_token, split_output
from gpuonboard.inventory import OrderSpec

SMI_PROBES = ("nvidia_smi", "nvidia_smi_q", "nvidia_smi_csv", "nvidia_smi_table", "nvidia_smi_list")


def _probed(tmp_path: Path, body: str) -> dict[str, ProbeOutput]:
    """The probes run with an `nvidia-smi` of `body` first in PATH (a real sh, real `timeout`)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "nvidia-smi"
    fake.write_text(f"#!/bin/sh\n{body}\n")
    fake.chmod(0o755)
    probes = core_probes(nvidia_smi_timeout=30)
    token = new_token()
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(
        ["sh", "-c", build_script(probes, token)], capture_output=True, text=True, env=env, timeout=120
    )
    return dict(split_output(done.stdout, done.stderr, token, [p.name for p in probes]))


@pytest.mark.parametrize(("signal", "code", "how"), [("KILL", 137, "killed"), ("TERM", 143, "terminated")])
def test_a_call_stopped_by_a_signal_is_no_hang(tmp_path: Path, signal: str, code: int, how: str) -> None:
    """Before, the probe read 137 and 143 as its own timeout (exit 124): "did not answer within
    60 s (stopped)", a hung driver, for a call killed at once."""
    raw = _probed(tmp_path, f"kill -{signal} $$")
    codes = {name: raw[name].exit_code for name in SMI_PROBES}
    assert codes == dict.fromkeys(SMI_PROBES, code) and TIMED_OUT not in codes.values()
    facts = parse_facts(raw)
    checks = {c.name: c for c in offline.judge(facts, OrderSpec(gpu_count=1))}
    driver = checks["nvidia_driver"]
    assert driver.verdict == "fail"
    assert f"was stopped (exit {code}: {how}) before it answered" in driver.actual
    assert "did not answer" not in driver.actual and "hung" not in driver.detail
