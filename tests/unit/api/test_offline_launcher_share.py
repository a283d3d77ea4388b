"""A saved nvidia-smi output that a launcher ran (`srun ... nvidia-smi -L`, `apptainer exec --nv
img.sif nvidia-smi`, `pdsh -w node nvidia-smi`) lists the GPUs the launcher's job was given, a
share of the box's: it is judged as a view (api/narrowed.py, as `nvidia-smi -i 0` and a container's
share are), its count unverified where it lists fewer than the order, never a missing GPU.

Real capture (round 32, truthleft5), inline: NVIDIA/deepops#1102 (comment by ajdecon,
2022-02-22), a Slurm 21.08.5 development cluster whose node has two Tesla P100 (its gres.conf
lists /dev/nvidia0 and /dev/nvidia1), copied from the comment's Markdown code block with its
prompt line; each of the job's two tasks printed the one GPU its cgroup holds. Its first task's
line alone, as a user copies one answer, was read as the whole box: gpu_count failed "1" for
an order of the node's 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api.narrowed import narrowed

from ..offline_judge import verdicts

DEEPOPS_1102 = (
    "vagrant@virtual-login01:~$ srun --nodes=1 --ntasks=2 --gpus-per-task=1 nvidia-smi -L\n"
    "GPU 0: Tesla P100-SXM2-16GB (UUID: GPU-b668a901-6b19-5c0c-554c-cce49d58af0a)\n"
    "GPU 0: Tesla P100-SXM2-16GB (UUID: GPU-6fb6d3db-aafb-f8da-a089-89b8077580fe)\n"
)
ORDER = "gpu_count: 2\ngpu_model: P100\n"


def test_one_task_of_a_srun_listing_is_a_share_not_the_box(tmp_path: Path) -> None:
    """deepops#1102's first task's answer under its prompt: was gpu_count fail "1" (1 of the 2
    ordered GPUs missing); now unverified, naming the launcher's share."""
    text = "\n".join(DEEPOPS_1102.splitlines()[:2]) + "\n"
    got = verdicts(tmp_path, "session.txt", text, ORDER)
    assert got["gpu_count"][0] == "unverified", got["gpu_count"]
    assert "its launcher gave the job" in got["gpu_count"][1]


@pytest.mark.parametrize(
    "command",
    [
        "srun --nodes=1 --ntasks=2 --gpus-per-task=1 nvidia-smi -L",
        "srun -p gpu --gres=gpu:1 nvidia-smi",
        "salloc --gres=gpu:2 nvidia-smi -q",
        "pdsh -w node01 nvidia-smi -L",
    ],
)
def test_a_launchers_nvidia_smi_is_a_view(command: str) -> None:
    """Each launcher of command_line.LAUNCHERS whose job may run on another node running
    nvidia-smi: a view of some GPUs (apptainer's and singularity's on the login's own machine:
    api/test_view_floor_r40.py)."""
    assert "its launcher gave the job" in narrowed("nvidia_smi_list", command)


@pytest.mark.parametrize(
    "command", ["nvidia-smi -L", "sudo nvidia-smi -L", "docker run --gpus all img nvidia-smi -L"]
)
def test_the_boxs_own_nvidia_smi_is_no_launchers_share(command: str) -> None:
    assert "launcher" not in narrowed("nvidia_smi_list", command)
