"""A harness's record of a command, its return code and its stdout on one line (`nvidia-smi -L
returncode=255; stdout=GPU 0: ...`): the non-zero status is kept as the output's exit code
(revS F4), so the listing is read as live reads the same answer (gather._failed_listing: exit
255 and no lost GPU's line, "failed (exit 255): what it printed before may leave GPUs out"),
never as a whole listing that passes gpu_count; a record of an empty stdout names its code."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api import offline
from gpuonboard.connection.gather import parse_facts
from gpuonboard.errors import UsageError

GPU0 = "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-1b6a2b3c-4d5e-6f70-8192-a3b4c5d6e7f8)"
GPU1 = "GPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-2c7b3c4d-5e6f-7081-92a3-b4c5d6e7f809)"


def _gpu_count(tmp_path: Path, text: str) -> tuple[str, str]:
    (tmp_path / "gpu-list.txt").write_text(text)
    (tmp_path / "order.yml").write_text("gpu_count: 2\n")
    raw = offline.load_outputs([str(tmp_path / "gpu-list.txt")])
    checks = offline.judge(parse_facts(raw), offline.load_order(str(tmp_path / "order.yml")))
    return next((c.verdict, c.actual) for c in checks if c.name == "gpu_count")


@pytest.mark.parametrize("code", [255, 15, 4])
def test_a_records_non_zero_status_leaves_the_listing_not_whole(tmp_path: Path, code: int) -> None:
    verdict, actual = _gpu_count(tmp_path, f"nvidia-smi -L returncode={code}; stdout={GPU0}\n{GPU1}\n")
    assert verdict == "unverified", actual
    assert f"failed (exit {code}): what it printed before may leave GPUs out" in actual, actual


def test_a_records_zero_status_is_read_whole(tmp_path: Path) -> None:
    assert _gpu_count(tmp_path, f"nvidia-smi -L returncode=0; stdout={GPU0}\n{GPU1}\n") == ("pass", "2")


def test_a_record_of_no_output_names_its_status(tmp_path: Path) -> None:
    (tmp_path / "smi.txt").write_text("nvidia-smi returncode=9; stdout=\n")
    with pytest.raises(UsageError, match="exit status 9"):
        offline.load_outputs([str(tmp_path / "smi.txt")])
