"""prove's `train_in_container` gives the container the GPUs the way its engine takes them:
docker `--gpus all`; podman (and podman behind the `docker` shim) its CDI device, since podman
before 5.0 accepts `--gpus all` and ignores it, so the run saw no GPU and the box read NO-GO."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from gpuonboard import shell
from gpuonboard.steps.prove import Launch, build_command


@pytest.mark.parametrize(
    ("cli", "engine", "flags"),
    [
        ("docker", "docker", "--gpus all"),
        ("podman", "podman", "--device nvidia.com/gpu=all"),
        ("docker", "podman", "--device nvidia.com/gpu=all"),  # the podman-docker shim
    ],
)
def test_the_container_gets_the_gpus_as_its_engine_takes_them(cli: str, engine: str, flags: str) -> None:
    runtime = SimpleNamespace(cli=cli, info=SimpleNamespace(engine=engine), command=shell.join)
    launch = Launch("python3", True, "nvcr.io/nvidia/pytorch:24.08-py3", "/tmp", 60)
    cmd = build_command(launch, "smoke_train.py", [], "/tmp/gpuonboard-smoke_train-x", runtime, gpus=True)
    assert f"--ipc=host {flags} -v /tmp/gpuonboard-smoke_train-x" in cmd
    if "--device" in flags:
        assert "--gpus" not in cmd
    # a box without GPUs: none asked for
    cmd = build_command(launch, "smoke_train.py", [], "/tmp/gpuonboard-smoke_train-x", runtime, gpus=False)
    assert "--gpus" not in cmd and "nvidia.com/gpu" not in cmd
