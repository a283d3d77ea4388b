"""A saved nvidia-smi failure whose copied command ran nvidia-smi in a container, through a job
or HPC container launcher, or as another user (api/command_line.py elsewhere, api/narrowed.py
ran_elsewhere): that call's own answer (its devices, rights and GPUs), never certainly the
box's driver failing, alone or beside the box's own listing."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..offline_judge import judged_box

REAL = Path(__file__).parents[2] / "fixtures" / "real"
PODMAN = (
    REAL.parent
    / "sessions"
    / "page__podman-run-cdi-nvidia-smi-L-NO-PROMPT+NVML-Insufficient-Permissions__nct-210.txt"
)
H100X8 = "nvidia-smi__h100-80gb-hbm3__8gpu__driver550.90.07.txt"
FAILED = (
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that"
    " the latest NVIDIA driver is installed and running.\n"
)


def test_a_rootless_podman_containers_nvml_refusal_is_no_failure_of_the_box(tmp_path: Path) -> None:
    """NVIDIA/nvidia-container-toolkit#210 (real): `podman run --rm --device nvidia.com/gpu=all
    ubuntu nvidia-smi -L` answered `Failed to initialize NVML: Insufficient Permissions` (the
    poster's host nvidia-smi works). It failed nvidia_driver as the box's; unverified now,
    naming the container's command and what to save."""
    files = {"session.txt": PODMAN.read_text()}
    _, checks = judged_box(tmp_path, files, "gpu_count: 1\n")
    driver = checks["nvidia_driver"]
    assert driver.verdict == "unverified", driver
    assert (
        "`podman run --rm --device nvidia.com/gpu=all ubuntu nvidia-smi -L` ran in a container"
        in driver.actual
    )
    assert "Insufficient Permissions" in driver.actual
    assert "save `nvidia-smi` run in the box's own shell" in driver.detail
    assert checks["gpu_count"].verdict == "unverified"


@pytest.mark.parametrize(
    "command",
    [
        "docker run --rm --gpus all nvidia/cuda:12.4.0-base-ubuntu22.04 nvidia-smi",
        "nerdctl run --rm --gpus all ubuntu nvidia-smi -L",
        "kubectl exec -it cuda-pod -- nvidia-smi",
        "srun --gres=gpu:1 nvidia-smi",
        "salloc -N1 srun nvidia-smi -L",
        "apptainer exec --nv pytorch.sif nvidia-smi",
        "singularity exec --nv docker://ubuntu nvidia-smi -L",
        "enroot start --rw pytorch nvidia-smi",
        "sudo -u nobody nvidia-smi -q",
    ],
)
def test_each_failure_run_elsewhere_alone_is_unverified(tmp_path: Path, command: str) -> None:
    """nvidia-smi's whole failure (its own sentence) under each copied command that runs it
    elsewhere than in the login's shell (the session written by the test): unverified, the
    command named; srun, salloc, apptainer, singularity and enroot were read as the box's."""
    files = {"session.txt": f"$ {command}\n{FAILED}"}
    _, checks = judged_box(tmp_path, files, "gpu_count: 8\n")
    driver = checks["nvidia_driver"]
    assert driver.verdict == "unverified", driver
    assert f"`{command}` ran " in driver.actual


@pytest.mark.parametrize("command", ["nvidia-smi -L", "sudo nvidia-smi", "ssh gpu01 nvidia-smi"])
def test_the_boxs_own_failure_still_fails(tmp_path: Path, command: str) -> None:
    """The same failure under the login's own call (sudo's too, and `ssh HOST`'s: the box a
    saved session names) is the box's driver failing."""
    files = {"session.txt": f"$ {command}\n{FAILED}"}
    _, checks = judged_box(tmp_path, files, "gpu_count: 8\n")
    assert checks["nvidia_driver"].verdict == "fail", checks["nvidia_driver"]


@pytest.mark.parametrize(
    "command",
    ["srun -p gpu nvidia-smi", "apptainer exec --nv pytorch.sif nvidia-smi", "enroot start pyt nvidia-smi"],
)
def test_a_launchers_failure_beside_the_whole_table_is_that_calls_own(tmp_path: Path, command: str) -> None:
    """The real whole 8x H100 table beside a launcher's failure (written by the test): the box
    passes on its table (it was NO-GO on a disagreement), as a container's failure did."""
    files = {"nvidia-smi.txt": (REAL / H100X8).read_text(), "nvidia-smi-job.txt": f"$ {command}\n{FAILED}"}
    _, checks = judged_box(tmp_path, files, "gpu_count: 8\n")
    assert checks["nvidia_driver"].verdict == "pass", checks["nvidia_driver"]
    assert checks["gpu_count"].verdict == "pass", checks["gpu_count"]


def test_one_list_of_launchers_names_the_words_that_ran_the_tool() -> None:
    """The one list of launchers: each names the words that ran the tool, up to it."""
    from gpuonboard.api.command_line import LAUNCHERS, elsewhere, run

    assert {"srun", "apptainer", "singularity", "enroot"} <= LAUNCHERS
    assert (
        elsewhere(run("srun --gres=gpu:2 nvidia-smi -L", ("nvidia-smi",)), ("nvidia-smi",))
        == "srun --gres=gpu:2"
    )
    assert elsewhere(
        run("podman run --rm --device nvidia.com/gpu=all ubuntu nvidia-smi", ("nvidia-smi",)), ("nvidia-smi",)
    ) == ("podman run --rm --device nvidia.com/gpu=all ubuntu")
    assert elsewhere(run("sudo nvidia-smi", ("nvidia-smi",)), ("nvidia-smi",)) == ""
