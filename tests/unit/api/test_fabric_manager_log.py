"""A saved Fabric Manager log (nv-fabricmanager's `/var/log/fabricmanager.log`) is refused naming
it, its first ERROR / FATAL line quoted, and what to save instead (the daemon's state, nvidia-smi
-q's fabric state, the kernel log's SXids); before, it was refused as "not a recognised command
output" (measure33d 04).

Real capture: tests/fixtures/real/SOURCES.md (leptonai/gpud's testdata)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api import offline
from gpuonboard.api.fabric_log import fabric_manager_log
from gpuonboard.errors import UsageError

REAL = Path(__file__).parents[2] / "fixtures" / "real"
FM_LOG = REAL / "fabricmanager-log__multicast-team-setup-release__nvswitch-non-fatal-12028__gpud.txt"


def test_a_fabric_manager_log_is_refused_naming_it_and_its_error(tmp_path: Path) -> None:
    saved = tmp_path / "fabricmanager.log"
    saved.write_text(FM_LOG.read_text())
    with pytest.raises(UsageError) as refused:
        offline.load_outputs([str(saved)])
    said = str(refused.value)
    assert "a Fabric Manager log" in said and "not a recognised" not in said, said
    assert "detected NVSwitch non-fatal error 12028" in said, said
    assert "systemctl is-active nvidia-fabricmanager" in said and "sudo dmesg -T" in said, said


def test_a_log_of_info_lines_only_says_so() -> None:
    lines = [line for line in FM_LOG.read_text().splitlines() if "[ERROR]" not in line]
    said = fabric_manager_log("\n".join(lines) + "\n")
    assert said is not None and "none an error" in said, said


def test_a_kernel_log_is_no_fabric_manager_log() -> None:
    assert fabric_manager_log("[Tue Feb 25 13:59:45 2025] NVRM: loading NVIDIA UNIX x86_64 ...\n") is None
