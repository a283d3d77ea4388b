"""A saved nvidia-smi failure that a container's log printed (`docker logs CTR`, `kubectl logs
POD`, `crictl logs ID`, `docker compose logs app`: api/command_line.py container_log): what that
container's own command printed there, so its failure is that container's, never certainly the
box's driver (api/narrowed.py ran_elsewhere), as of `docker run|exec ... nvidia-smi`. GPUs the
log listed above a whole failure were seen by the container before it lost them
(facts/gpu_failed.py listed_before)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..offline_judge import judged_box

SESSIONS = Path(__file__).parents[2] / "fixtures" / "sessions"
NCT381 = (
    SESSIONS
    / "page__docker-logs-nvidia-smi-L-loop-x5-then-NVML-Unknown-Error-x2__zsh-prompt__rtx4090-nct-381.txt"
)
LISTED = "GPU 0: NVIDIA GeForce RTX 4090 (UUID: GPU-64e84141-e88f-1449-50cc-2cb96be330ab)\n"
UNKNOWN = "Failed to initialize NVML: Unknown Error\n"
FAILED = (
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that"
    " the latest NVIDIA driver is installed and running.\n"
)


def test_a_docker_logs_loop_that_lost_its_gpu_is_the_containers_failure(tmp_path: Path) -> None:
    """NVIDIA/nvidia-container-toolkit#381 (real): `docker logs CTR` of a container running
    `nvidia-smi -L` in a loop, the 4090 listed five times, then NVML's Unknown Error (the host's
    daemon-reload took the container's devices; the host's GPU is fine). It failed nvidia_driver
    as the box's; unverified now, naming the log's command and that the container saw the GPU."""
    _, checks = judged_box(
        tmp_path, {"docker-logs.txt": NCT381.read_text()}, "gpu_model: RTX 4090\ngpu_count: 1\n"
    )
    driver = checks["nvidia_driver"]
    assert driver.verdict == "unverified", driver
    assert "`docker logs 3ff77b4177ff" in driver.actual and "a container's log" in driver.actual
    assert "it listed GPU 0 (NVIDIA GeForce RTX 4090) before it failed" in driver.actual
    assert "the container saw the GPU, then lost it" in driver.actual
    assert "systemctl daemon-reload" in driver.actual
    assert "save `nvidia-smi` run in the box's own shell" in driver.detail
    assert checks["gpu_model"].verdict == checks["gpu_count"].verdict == "unverified"


@pytest.mark.parametrize(
    "command",
    [
        "docker logs smi",
        "docker container logs -f smi",
        "podman logs --tail 20 smi",
        "nerdctl logs smi",
        "docker compose logs app",
        "docker compose -f gpu.yml logs --no-color app",
        "kubectl logs -n gpu-operator nvidia-smi-pod",
        "kubectl -n gpu-test logs gpu-check -c smi",
        "oc logs pod/smi",
        "microk8s kubectl logs smi",
        "k3s crictl logs 3ff77b4177ff",
        "crictl logs 3ff77b4177ff",
    ],
)
@pytest.mark.parametrize("failure", [FAILED, UNKNOWN])
def test_each_engines_log_of_a_failure_is_unverified(tmp_path: Path, command: str, failure: str) -> None:
    """nvidia-smi's whole failure in each container engine's log (the session written by the
    test): unverified naming the command, never the box's driver failing."""
    _, checks = judged_box(tmp_path, {"session.txt": f"$ {command}\n{failure}"}, "gpu_count: 1\n")
    driver = checks["nvidia_driver"]
    assert driver.verdict == "unverified", driver
    assert f"`{command}` printed a container's log" in driver.actual
    assert "before it failed" not in driver.actual  # (it listed no GPU)


def test_gpus_listed_before_another_failure_name_no_daemon_reload(tmp_path: Path) -> None:
    """A log that listed the GPU and then could not talk to the driver at all: the container saw
    the GPU, then lost it; daemon-reload (NVML's Unknown Error) is not named for this cause."""
    text = f"$ kubectl logs smi-loop\n{LISTED * 3}{FAILED}"
    _, checks = judged_box(tmp_path, {"session.txt": text}, "gpu_count: 1\n")
    driver = checks["nvidia_driver"]
    assert driver.verdict == "unverified", driver
    assert "it listed GPU 0 (NVIDIA GeForce RTX 4090) before it failed" in driver.actual
    assert "daemon-reload" not in driver.actual


@pytest.mark.parametrize("command", ["nvidia-smi -L", "docker ps", "kubectl get pods"])
def test_the_boxs_own_failure_still_fails(tmp_path: Path, command: str) -> None:
    """The same log text under the login's own call (or a command that prints no container's
    log) is the box's driver failing: the fix is the log's, not every failure's."""
    _, checks = judged_box(tmp_path, {"session.txt": f"$ {command}\n{FAILED}"}, "gpu_count: 1\n")
    assert checks["nvidia_driver"].verdict == "fail", checks["nvidia_driver"]
