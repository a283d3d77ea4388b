"""Why a container run failed, from real failed runs: the line naming the cause wherever it is
(not the noise after it), said with its cause and advice; unknown failures keep their last
line that is not noise."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.steps.container.run_errors import CAUSES, run_failure

RUNS = Path(__file__).parents[3] / "fixtures" / "container-runs"


def _read(name: str) -> str:
    return (RUNS / name).read_text()


@pytest.mark.parametrize(
    ("capture", "quoted", "said"),
    [
        (
            "docker-run__nvidia-docker-1034__gpus-no-hook.stderr",
            'could not select device driver "" with capabilities: [[gpu]].',
            "nvidia-container-runtime-hook is not on dockerd's PATH",
        ),
        (
            "torch__DA3-blender-25__rtx5090-no-kernel-image.stderr",
            "no kernel image is available for execution on the device",
            "no kernels for this GPU's architecture",
        ),
        (
            "torch__ColossalAI-4381__error-804-then-check-exit.stderr",
            "Error 804: forward compatibility was attempted on non supported HW",
            "forward compatibility does not work on GeForce cards",
        ),
        (
            "docker-start__nvidia-container-cli-version-mismatch.stderr",
            "nvidia-container-cli: initialization error: nvml error: driver/library version mismatch",
            # nvidia-smi's advice for the same NVML error (facts.nvidia_smi_failure)
            "the NVIDIA kernel module and the driver's library are different versions",
        ),
        (
            "torch__phys-bench-14__driver-too-old-found-12040.stderr",
            "The NVIDIA driver on your system is too old (found version 12040)",
            "the host's NVIDIA driver is too old for the image's CUDA",
        ),
        (
            "podman-docker-shim__FasterLivePortrait-116__unresolvable-cdi-gpu-all.stderr",
            "unresolvable CDI devices nvidia.com/gpu=all",
            "podman found no NVIDIA CDI spec naming the GPUs",
        ),
        (
            "podman-run__nvidia-container-toolkit-885__stale-cdi-host-device.stderr",
            'failed to stat CDI host device "/dev/dri/renderD129"',
            "generate it again: sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml",
        ),
        (
            "container__amd64-image-on-jetson__exec-format-error.stderr",
            "exec format error",
            "built for another CPU architecture than this host's (aarch64)",
        ),
    ],
)
def test_a_known_cause_is_said_wherever_its_line_is(capture: str, quoted: str, said: str) -> None:
    text = _read(capture)
    for stdout, stderr in ((text, ""), ("", text)):  # (python's output may come on either)
        why = run_failure(stdout, stderr, 1, "aarch64")
        assert quoted in why and said in why, why
        assert "TORCH_USE_CUDA_DSA" not in why and "error waiting for container" not in why


def test_noise_is_dropped_before_the_last_line_is_taken() -> None:
    why = run_failure("", _read("docker-run__permission-denied__see-help.stderr"), 126)
    assert why.startswith("docker: Got permission denied while trying to connect"), why
    assert run_failure("", "", 3) == "exit code 3"
    assert run_failure("", "See 'docker run --help'.\n", 125) == "See 'docker run --help'."


def test_every_cause_has_its_own_advice() -> None:
    assert len({c.pattern.pattern for c in CAUSES}) == len(CAUSES)
    assert all(c.cause and c.advice for c in CAUSES)
