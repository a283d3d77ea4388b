"""nvidia-smi operations NVML refused, named (api/nvml_refusal.py `nvml_refusal`), and the names
of saved outputs' kinds in sentences (`kind_name`): the commands the user ran, never a probe's
internal name."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api import offline
from gpuonboard.errors import UsageError

REAL = Path(__file__).parents[2] / "fixtures" / "real"
NVLINK_G = "nvidia-smi-nvlink-g-0__v100-sxm2-32gb-dgx__nvml-insufficient-permissions__pynvml-19.txt"
# the prompt line above the output, as it was pasted (the fixture keeps the output alone)
PROMPT = "(base) bzaitlen@dgx15:~$ nvidia-smi nvlink -g 0\n"


def test_nvlink_counters_refused_by_nvml_are_named(tmp_path: Path) -> None:
    """gpuopenanalytics/pynvml#19: `nvidia-smi nvlink -g 0` on a DGX, its GPU line then NVML's
    `Insufficient Permissions`, was refused with the generic "not a recognised command output"
    (saved as pasted: under its prompt line, PROMPT)."""
    (tmp_path / "nvlink-g.txt").write_text(PROMPT + (REAL / NVLINK_G).read_text())
    with pytest.raises(UsageError) as refused:
        offline.load_outputs([str(tmp_path / "nvlink-g.txt")])
    said = str(refused.value)
    assert "`nvidia-smi nvlink -g 0` refused by NVML (Insufficient Permissions: the query needs root" in said
    assert "it tells nothing of the links: save `nvidia-smi nvlink -s`" in said
    assert "not a recognised command output" not in said


def test_kind_names_are_the_users_commands() -> None:
    """Every kind a refusal may name reads as the command the user knows."""
    from gpuonboard.api.kind_names import kind_name

    assert kind_name("nvidia_smi_csv") == "`nvidia-smi --query-gpu` CSV"
    assert kind_name("nvidia_smi_table") == "plain `nvidia-smi` table"
    assert "_" not in kind_name("kernel_log") + kind_name("rdma_ports") + kind_name("docker_info")
