"""The run log masks every live Secret and shortens long scripts."""

from __future__ import annotations

from pathlib import Path

from gpuonboard.masking import MASK, Secret
from gpuonboard.runner.runlog import RunLog


def test_secrets_never_reach_the_log(tmp_path: Path) -> None:
    token = Secret("nvapi-s3cr3t-value")
    log = RunLog(tmp_path / "logs" / "run.log")
    log.write("h1", "login with nvapi-s3cr3t-value failed")
    log.command("h1", "echo nvapi-s3cr3t-value | docker login --password-stdin\nsecond line", 1, 0.5)
    log.close()
    text = (tmp_path / "logs" / "run.log").read_text()
    assert "s3cr3t" not in text
    assert text.count(MASK) == 2
    assert "-> exit 1 in 0.50s" in text and text.rstrip().endswith("... -> exit 1 in 0.50s")
    assert token.reveal() == "nvapi-s3cr3t-value"
