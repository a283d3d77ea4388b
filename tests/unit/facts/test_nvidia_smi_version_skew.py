"""An nvidia-smi newer than the driver it talks to (Colab's `NVIDIA-SMI 450.36.06` over `Driver
Version: 418.67`: a newer user-space nvidia-smi over an older kernel driver) prints the fields the
driver's branch does not have as a fault marker (`MIG M.` reads `ERR!` on a K80 and a P100):
no reading of the GPU. Found by round 29 (m29b colab_k80): sensor_faults warned "GPU 0: MIG mode
reads ERR!", advising a failing fan or sensor. Real captures (tests/fixtures/real/SOURCES.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.facts.nvidia_smi import parse_any

from ..offline_judge import judged_box

REAL = Path(__file__).parents[2] / "fixtures" / "real"
COLAB = [
    "nvidia-smi__newer-tool-450.36.06-than-driver-418.67-mig-err__tesla-k80__colab-pytorch-page.txt",
    "nvidia-smi__newer-tool-450.36.06-than-driver-418.67-mig-err__p100-pcie__colab-notebook.txt",
]
SKEW = "nvidia-smi 450.36.06 is newer than the driver 418.67: fields the driver lacks read ERR!"


@pytest.mark.parametrize("name", COLAB)
def test_a_field_the_older_driver_lacks_is_no_sensor_fault(tmp_path: Path, name: str) -> None:
    """The real Colab tables: the MIG M. cell's ERR! is said as the tools' mismatch; sensor_faults
    and mig_mode are unverified naming it (sensor_faults warned of a failing fan or sensor)."""
    text = (REAL / name).read_text()
    assert parse_any(text).gpus[0].cell_faults == (f"MIG mode reads ERR! ({SKEW})",)
    _, got = judged_box(tmp_path, {"nvidia-smi.txt": text}, "gpu_count: 1\n")
    sensors = got["sensor_faults"]
    assert (sensors.verdict, sensors.actual) == ("unverified", f"GPU 0: MIG mode reads ERR! ({SKEW})")
    assert "newer branch than the driver" in sensors.detail and "failing fan" not in sensors.detail
    assert got["mig_mode"].verdict == "unverified" and SKEW in got["mig_mode"].actual
    assert got["gpu_count"].verdict == "pass" and got["temperature"].verdict == "pass"


def test_a_fault_in_a_field_both_know_is_still_a_fault(tmp_path: Path) -> None:
    """The K80 capture with its fan cell `N/A` written `ERR!` (edited in: a field R418 has):
    still a sensor fault, warned as before, the MIG cell said as the mismatch beside it."""
    text = (REAL / COLAB[0]).read_text().replace("| N/A   35C", "| ERR!  35C")
    _, got = judged_box(tmp_path, {"nvidia-smi.txt": text}, "gpu_count: 1\n")
    sensors = got["sensor_faults"]
    assert sensors.verdict == "warn" and "GPU 0: fan sensor reads ERR!" in sensors.actual
    assert SKEW in sensors.actual and "failing fan" in sensors.detail


def test_one_branch_of_tool_and_driver_reads_the_marker_as_a_fault(tmp_path: Path) -> None:
    """The K80 capture with its banner's nvidia-smi made the driver's own branch (edited in:
    `NVIDIA-SMI 418.67`): a MIG cell reading ERR! is then no mismatch, warned as a fault."""
    text = (REAL / COLAB[0]).read_text().replace("NVIDIA-SMI 450.36.06", "NVIDIA-SMI 418.67   ")
    _, got = judged_box(tmp_path, {"nvidia-smi.txt": text}, "gpu_count: 1\n")
    assert (got["sensor_faults"].verdict, got["sensor_faults"].actual) == (
        "warn",
        "GPU 0: MIG mode reads ERR!",
    )
