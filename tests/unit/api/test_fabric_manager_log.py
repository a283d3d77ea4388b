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


FM_GREP = REAL / "fabricmanager-log-grep-fatal-A11__gpu-nvl-fatal-error-gpuguid__gb200-rack-runbook.txt"


def test_a_grep_of_the_log_is_refused_naming_it_and_its_error(tmp_path: Path) -> None:
    """measure35d 27: `$ grep -i "Fatal" fabricmanager.log* -A 11` above one ERROR line and its
    context lines (a GB200's GPU NVL fatal error) was refused as "not a recognised command output"."""
    saved = tmp_path / "fm.txt"
    saved.write_text(FM_GREP.read_text())
    with pytest.raises(UsageError) as refused:
        offline.load_outputs([str(saved)])
    said = str(refused.value)
    assert "a Fabric Manager log" in said and "not a recognised" not in said, said
    assert "Fabric Manager detected GPU NVL Fatal error on :" in said, said


@pytest.mark.parametrize(
    "text",
    [
        "fabricmanager.log.1:[Oct 13 2025 18:14:38] [ERROR] [tid 202] Fabric Manager detected GPU NVL Fatal"
        " error on :\nfabricmanager.log.1-moduleId : 3\n--\n",
        "$ grep ERROR /var/log/fabricmanager.log\n"
        "[Oct 13 2025 18:14:38] [ERROR] [tid 202] Fabric Manager failed\n",
    ],
)
def test_every_grep_shape_of_the_log_is_named(text: str) -> None:
    said = fabric_manager_log(text)
    assert said is not None and "[ERROR] [tid 202]" in said, said
