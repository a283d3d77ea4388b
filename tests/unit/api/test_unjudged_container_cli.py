"""`nvidia-container-cli info` (api/unjudged.py `container_cli_info`): the NVIDIA Container
Toolkit's view of the driver, named in a note and not judged; never an lscpu for its GPU's
`Architecture:   6.1` line (api/saved_kinds.py `_LSCPU_ARCH`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api import offline
from gpuonboard.api.saved_kinds import detect_kind
from gpuonboard.errors import UsageError

REAL = Path(__file__).parents[2] / "fixtures" / "real"
CLI_INFO = (
    "nvidia-container-cli-info__geforce-gtx-1080-max-q__1gpu__driver390.87__glog-tail__nvidia-docker-904.txt"
)


def test_nvidia_container_cli_info_is_no_lscpu() -> None:
    """NVIDIA/nvidia-docker#904: its `Architecture:   6.1` (the GPU's compute capability) made
    the whole output an lscpu (cpu architecture "6.1", source lscpu)."""
    assert detect_kind((REAL / CLI_INFO).read_text()) != "lscpu"


def test_nvidia_container_cli_info_alone_is_named_not_judged(tmp_path: Path) -> None:
    """The output alone, with an order's cpu_cores: cpu_cores said "lscpu gave no readable
    output" though no lscpu was given; now the file is named for what it is, nothing judged."""
    (tmp_path / "info.txt").write_text((REAL / CLI_INFO).read_text())
    with pytest.raises(UsageError) as refused:
        offline.load_outputs([str(tmp_path / "info.txt")])
    said = str(refused.value)
    assert "an `nvidia-container-cli info` output (the NVIDIA Container Toolkit's view: driver 390.87" in said
    assert "CUDA 9.1, 1 GPU(s): GeForce GTX 1080 with Max-Q Design at 00000000:01:00.0" in said
    assert "lscpu" not in said


def test_a_real_lscpu_cut_after_its_first_line_is_still_an_lscpu() -> None:
    """lscpu's `Architecture:` line with a CPU architecture, the rest cut away (written by the
    test), is still read as lscpu (an incomplete one), not refused."""
    assert detect_kind("Architecture:                    x86_64\n") == "lscpu"
