"""A view of some of the box's own GPUs, an HPC container runtime's on the login's machine
(`singularity exec --nv IMAGE nvidia-smi`) or a `-i N` asked for, hides GPUs but never makes them
up: as many as ordered pass on that floor ("1 listed; at least 1 on the box: ..."), as rules.md
says of check_env's view; gpu_model and vram stay unverified (GPUs left out may be other models).
measure40d 15: apptainer/singularity #2020's table of one Quadro M620 with 1 ordered was
unverified. A launcher whose job may run on another node (`srun`, `pdsh`) is no floor."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api.narrowed import narrowed

from ..offline_judge import verdicts

REAL = Path(__file__).parents[2] / "fixtures" / "real"
SINGULARITY = (
    "session__singularity-exec-nv-docker-ubuntu-nvidia-smi__quadro-m620__tab-completion-then-whole-gpu-table"
    "__singularity-2020.txt"
)
M2090 = (
    "nvidia-smi-q__tesla-m2090__i0-1of2gpu__driver270.41.19__copied-command__gpu-0-2-0-head-no-processes"
    "__microway-blog.txt"
)
ORDER = "gpu_model: Quadro M620\ngpu_count: 1\nvram: 2GB\n"
COMMAND = "singularity  exec --nv docker://ubuntu nvidia-smi"


def test_the_singularity_view_meets_an_order_of_one_on_its_floor(tmp_path: Path) -> None:
    got = verdicts(tmp_path, "s.txt", (REAL / SINGULARITY).read_text(), ORDER)
    assert got["gpu_count"][0] == "pass"
    assert got["gpu_count"][1].startswith(f"1 listed; at least 1 on the box: `{COMMAND}` shows the GPUs")
    assert "its launcher gave the job" not in got["gpu_count"][1]
    assert got["gpu_model"][0] == "unverified" and got["vram"][0] == "unverified"


def test_the_same_view_below_the_order_stays_unverified(tmp_path: Path) -> None:
    got = verdicts(tmp_path, "s.txt", (REAL / SINGULARITY).read_text(), ORDER.replace("count: 1", "count: 2"))
    assert got["gpu_count"][0] == "unverified"


@pytest.mark.parametrize(("ordered", "verdict"), [(1, "pass"), (2, "unverified")])
def test_a_dash_i_view_is_a_floor(tmp_path: Path, ordered: int, verdict: str) -> None:
    """The real `nvidia-smi -i 0 -q` of a 2-GPU Tesla M2090 box: 1 ordered is met on the floor,
    2 stay unverified (never a missing GPU)."""
    order = f"gpu_model: Tesla M2090\ngpu_count: {ordered}\n"
    got = verdicts(tmp_path, "q.txt", (REAL / M2090).read_text(), order)
    assert got["gpu_count"][0] == verdict
    assert "`nvidia-smi -i 0 -q` shows only the GPUs it asked for" in got["gpu_count"][1]


@pytest.mark.parametrize("launcher", ["srun --gres=gpu:1", "pdsh -w node01"])
def test_a_launcher_of_another_node_is_no_floor(tmp_path: Path, launcher: str) -> None:
    text = (REAL / SINGULARITY).read_text().replace(COMMAND, f"{launcher} nvidia-smi")
    got = verdicts(tmp_path, "s.txt", text, ORDER)
    assert got["gpu_count"][0] == "unverified"
    assert "its launcher gave the job" in got["gpu_count"][1]


@pytest.mark.parametrize(
    "command", ["apptainer exec --nv img.sif nvidia-smi -L", "enroot start img nvidia-smi"]
)
def test_the_local_runtimes_words(command: str) -> None:
    assert "container runtime was given" in narrowed("nvidia_smi_list", command)
