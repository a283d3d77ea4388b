"""`nvidia-smi vgpu`, a vGPU host's listing of the vGPUs it runs for its VMs (vGPU ID, VM ID, VM
Name), prints nvidia-smi's banner above a table that is not the GPU table: it was read as a table
whose GPU rows could not be read, "nvidia-smi answered, but no GPU row of its output could be read
(cut short or mangled)", and in a session its banner's driver was taken as the box's. It is
refused in one sentence saying what it is and what to save; in a session, noted and not read.

Real capture: tests/fixtures/real/SOURCES.md."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.errors import UsageError

from ..offline_judge import verdicts

REAL = Path(__file__).parents[2] / "fixtures" / "real"
VGPU = "nvidia-smi-vgpu__tesla-t4-vgpu-host__2gpu__driver470.63__gpu-operator-267.txt"
SAID = "this is `nvidia-smi vgpu`'s listing of the vGPUs a vGPU host runs for its VMs"


def test_nvidia_smi_vgpu_alone_is_refused_as_what_it_is(tmp_path: Path) -> None:
    """gpu-operator #267's real host listing, saved alone: refused (it was judged "cut short or
    mangled", exit 0)."""
    with pytest.raises(UsageError) as refused:
        verdicts(tmp_path, "nvidia-smi.txt", (REAL / VGPU).read_text(), "gpu_count: 1\n")
    assert SAID in str(refused.value)
    assert "save `nvidia-smi` (or `nvidia-smi -q -x`) of the box you rent" in str(refused.value)


def test_nvidia_smi_vgpu_in_a_session_gives_no_driver(tmp_path: Path) -> None:
    """The listing under its `❯ nvidia-smi vgpu` prompt after an `nvidia-smi -L` of one GPU (edit:
    the -L lines written for the test, the listing verbatim): the host's banner driver was read as
    the box's (`nvidia_driver` passed "driver 470.63"); the listing is now not read."""
    text = (
        "$ nvidia-smi -L\nGPU 0: Tesla T4 (UUID: GPU-0a1b2c3d-1111-2222-3333-444455556666)\n"
        "❯ nvidia-smi vgpu\n" + (REAL / VGPU).read_text()
    )
    got = verdicts(tmp_path, "session.txt", text, "gpu_count: 1\n")
    assert got["nvidia_driver"][0] == "unverified", got["nvidia_driver"]
    assert "470.63" not in got["nvidia_driver"][1]
