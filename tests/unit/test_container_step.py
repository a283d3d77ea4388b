"""Pure parts of the container step: image references, the probe parser and the plan."""

from __future__ import annotations

import pytest

from gpuonboard.facts.gather import parse_facts
from gpuonboard.facts.probe import ProbeOutput
from gpuonboard.steps.base import StepArgsError
from gpuonboard.steps.container import ContainerStep, mirror_host, parse_ref, parse_state, plan_from

M = "##gpuonboard-container "
DIGEST = "sha256:" + "ab" * 32


def test_image_references_split_for_mirrors() -> None:
    ref = parse_ref("nvcr.io/nvidia/pytorch:24.08-py3")
    assert (ref.registry, ref.path, ref.tag, ref.digest) == ("nvcr.io", "nvidia/pytorch", "24.08-py3", None)
    assert ref.on("mirror.example.cn:5000") == "mirror.example.cn:5000/nvidia/pytorch:24.08-py3"
    pinned = parse_ref(f"nvcr.io/nvidia/pytorch:24.08-py3@{DIGEST}")
    assert pinned.canonical == "nvcr.io/nvidia/pytorch:24.08-py3" and pinned.pull_name.endswith(DIGEST)
    assert parse_ref("127.0.0.1:5000/a/b:t").registry == "127.0.0.1:5000"
    assert parse_ref("ubuntu").canonical == "ubuntu:latest"
    assert mirror_host("https://nvcr.mirror.example.cn/") == "nvcr.mirror.example.cn"
    with pytest.raises(StepArgsError):
        parse_ref("nvcr.io/x; rm -rf /")


def _facts(os_id: str = "ubuntu") -> object:
    return parse_facts({"os_release": ProbeOutput(f"ID={os_id}\n", "", 0)})


def _settings(**vars: object):  # type: ignore[no-untyped-def]
    return ContainerStep({}).settings({"image_size_estimate": "10GB", **vars}, None)


def test_probe_output_parsed_and_planned() -> None:
    text = (
        f"{M}error docker 1 Cannot connect to the Docker daemon\n{M}cdi\n/etc/cdi/nvidia.yaml\n"
        f'{M}info podman\n{{"store": {{"graphRoot": "/var/lib/containers/storage"}}, "host": {{}},'
        f' "version": {{"Version": "4.3.1"}}}}\n'
        f"{M}df\n/dev/vda 100 50 20000000 50% /\n{M}image\n"
        f'sha256:1234 ["nvcr.io/nvidia/pytorch@{DIGEST}"]\n'
    )
    state = parse_state(text)
    assert state.cli == "podman" and state.info.engine == "podman"
    assert state.errors == {"docker": "Cannot connect to the Docker daemon"}
    assert state.nvidia_toolkit and state.free_bytes == 20000000 * 1024 and state.digests == (DIGEST,)
    plan = plan_from(state, _settings(), _facts())  # type: ignore[arg-type]
    assert not plan.changes and not plan.failed and DIGEST in plan.msg
    other = parse_ref("nvcr.io/nvidia/pytorch:24.08-py3@sha256:" + "cd" * 32)
    s = _settings(container_image=f"nvcr.io/nvidia/pytorch:24.08-py3@{other.digest}")
    assert plan_from(state, s, _facts()).changes  # type: ignore[arg-type]
    small = _settings(image_size_estimate="100GB")
    absent = parse_state(text.split(f"{M}image")[0])
    plan = plan_from(absent, small, _facts())  # type: ignore[arg-type]
    assert plan.failed and "needed (image estimate 100.0 GB x 1.5" in plan.msg


def test_missing_runtime_remediation_by_os() -> None:
    state = parse_state(f"{M}error docker 127 sh: docker: not found\n{M}error podman 127 x\n{M}cdi\n")
    rhel = plan_from(state, _settings(), _facts("rocky"))  # type: ignore[arg-type]
    assert rhel.failed and "sudo dnf install -y docker-ce" in rhel.msg
    deb = plan_from(state, _settings(), _facts("debian"))  # type: ignore[arg-type]
    assert "sudo apt-get install -y docker.io" in deb.msg
    down = parse_state(f"{M}error docker 1 Cannot connect\n{M}error podman 127 x\n{M}cdi\n")
    assert "docker is installed but does not answer" in plan_from(down, _settings(), _facts()).msg  # type: ignore[arg-type]
