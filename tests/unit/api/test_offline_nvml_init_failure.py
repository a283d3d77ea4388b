"""A saved nvidia-smi that printed only NVML's init failure, whatever reason NVML gives, is read
as nvidia-smi run and failed (offline mode), not as "not a recognised output": the reasons
nvidia_smi_failure names were recognised, any other was not (a WSL2 or Hyper-V guest's "GPU
access blocked by the operating system", the rented Windows Server boxes with L40S of the
issues below). Real outputs, inline, as their users pasted them (prompt lines included)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api import offline
from gpuonboard.connection.gather import parse_facts
from gpuonboard.errors import UsageError

BLOCKED = [
    # github.com/microsoft/WSL/issues/9166 (RTX 2080 Ti, WSL2, Ubuntu 22.10), as pasted
    "# nvidia-smi\n\nFailed to initialize NVML: GPU access blocked by the operating system\n"
    "Failed to properly shut down NVML: GPU access blocked by the operating system\n\n",
    # github.com/staralt/dxgkrnl-dkms/issues/7 (a Hyper-V guest with GPU-PV)
    "$ /usr/lib/wsl/lib/nvidia-smi\n"
    "Failed to initialize NVML: GPU access blocked by the operating system\n"
    "Failed to properly shut down NVML: GPU access blocked by the operating system\n",
    # github.com/microsoft/WSL/issues/14339 (an L40S on Windows Server 2025, WSL2)
    "$ nvidia-smi\nFailed to initialize NVML: GPU access blocked by the operating system\n"
    "Failed to properly shut down NVML: GPU access blocked by the operating system\n",
]


@pytest.mark.parametrize("text", BLOCKED)
def test_a_saved_nvml_init_failure_of_any_reason_is_a_failed_nvidia_smi(text: str, tmp_path: Path) -> None:
    path = tmp_path / "nvidia-smi.txt"
    path.write_text(text)
    raw = offline.load_outputs([str(path)])
    assert list(raw) == ["nvidia_smi"] and raw["nvidia_smi"].exit_code != 0
    facts = parse_facts(raw)
    row = {c.name: c for c in offline.judge(facts, None)}["nvidia_driver"]
    assert row.verdict == "fail"
    assert row.actual.startswith(
        "nvidia-smi failed (Failed to initialize NVML: GPU access blocked by the operating system"
    )
    assert offline.summary(facts)["gpu_count"] is None  # unknown, never "0 GPUs"


def test_a_long_text_quoting_the_line_is_still_not_a_failing_nvidia_smi(tmp_path: Path) -> None:
    # (a page or log that quotes the line among many others is another command's output)
    path = tmp_path / "notes.txt"
    lines = [f"note {i}: checked the host" for i in range(60)]
    path.write_text("\n".join([*lines, BLOCKED[2].splitlines()[1]]))
    with pytest.raises(UsageError, match="not a recognised command output"):
        offline.load_outputs([str(path)])
