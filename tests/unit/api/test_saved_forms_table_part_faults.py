"""A part of nvidia-smi's table (GPU rows without banner and header, or after the poster's own
`[...]`) whose cells hold a sensor's fault (`ERR!` as a fan speed or power draw) is refused
naming that fault: before, the refusal dropped it unsaid (measure32c 12, 28).

Real captures: tests/fixtures/real/SOURCES.md (azhpc-diagnostics#77, nvidia_gpu_exporter#393)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api import offline
from gpuonboard.errors import UsageError

REAL = Path(__file__).parents[2] / "fixtures" / "real"


@pytest.mark.parametrize(
    ("name", "fault"),
    [
        (
            "part-of-nvidia-smi__gpu-rows-only__1x-v100-pcie-power-draw-err__azure-ncv3__azhpc-diagnostics-77.txt",
            "GPU 1's power draw reads ERR!",
        ),
        (
            "part-of-nvidia-smi__copied-command-elided-gpu13-14-rows__rtx-4000-ada-gpu14-fan-err__nvidia-gpu-exporter-393.txt",
            "GPU 14's fan sensor reads ERR!",
        ),
    ],
)
def test_the_refusal_names_the_rows_fault(tmp_path: Path, name: str, fault: str) -> None:
    path = tmp_path / "nvidia-smi.txt"
    path.write_text((REAL / name).read_text())
    with pytest.raises(UsageError) as err:
        offline.load_outputs([str(path)])
    said = str(err.value)
    assert "part of nvidia-smi's table" in said and f"it shows a fault: {fault}" in said, said
