"""Step `container` QA: the GPU smoke run asks each engine for the GPUs the way it honours:
docker `--gpus all`, podman (also behind the `docker` shim) the CDI device nvidia.com/gpu=all,
as podman 4 accepts `--gpus` and ignores it. Also: a host whose nvidia-smi failed has an
unknown GPU count, recorded as no passed smoke run."""

from __future__ import annotations

import shlex

from gpuonboard.connection.gather import parse_facts
from gpuonboard.facts.probe import ProbeOutput
from gpuonboard.steps.container import (
    _MARK,
    ContainerStep,
    gpu_check_command,
    host_gpu_count,
    parse_state,
    plan_from,
)

PODMAN_INFO = '{"store": {"graphRoot": "/s"}, "host": {}, "version": {"Version": "4.3.1"}}'
DOCKER_INFO = '{"ServerVersion": "27.1.1", "DockerRootDir": "/var/lib/docker", "Runtimes": {"nvidia": {}}}'


def _state(cli: str, info: str) -> object:
    return parse_state(f"{_MARK}cdi\n/etc/cdi/nvidia.yaml\n{_MARK}info {cli}\n{info}\n")


def _run_flags(command: str) -> list[str]:
    argv = shlex.split(command)
    return argv[argv.index("run") + 2 : argv.index("run") + 4]


def test_podman_gets_the_cdi_device_and_docker_gets_gpus_all() -> None:
    podman = _state("podman", PODMAN_INFO)
    shim = _state("docker", PODMAN_INFO)  # podman-docker: `docker info` answers podman's JSON
    docker = _state("docker", DOCKER_INFO)
    assert _run_flags(gpu_check_command(podman, "img", 1)) == ["--device", "nvidia.com/gpu=all"]  # type: ignore[arg-type]
    assert _run_flags(gpu_check_command(shim, "img", 1)) == ["--device", "nvidia.com/gpu=all"]  # type: ignore[arg-type]
    assert _run_flags(gpu_check_command(docker, "img", 1)) == ["--gpus", "all"]  # type: ignore[arg-type]


def test_a_failed_nvidia_smi_is_an_unknown_gpu_count_never_a_recorded_pass() -> None:
    broken = parse_facts(
        {
            "nvidia_smi": ProbeOutput("Failed to initialize NVML: Driver/library version mismatch\n", "", 18),
            "os_release": ProbeOutput("ID=ubuntu\n", "", 0),
        }
    )
    none = parse_facts({"os_release": ProbeOutput("ID=ubuntu\n", "", 0)})  # nvidia-smi not installed
    assert host_gpu_count(broken) is None and host_gpu_count(none) == 0
    s = ContainerStep({}).settings({}, None)
    # a pass recorded while the box had no driver (gpus=0) does not make a broken driver `ok`
    state = parse_state(
        f"{_MARK}smoke\npodman /s sha256:1234 gpus=0\n{_MARK}info podman\n{PODMAN_INFO}\n"
        f'{_MARK}image\nsha256:1234 ["nvcr.io/nvidia/pytorch@sha256:{"ab" * 32}"]\n'
    )
    assert not plan_from(state, s, none).changes
    plan = plan_from(state, s, broken)
    assert plan.changes and "no smoke run has passed for it on this host" in plan.msg
