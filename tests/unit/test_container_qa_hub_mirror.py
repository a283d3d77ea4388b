"""QA: a Docker Hub image pulled through a registry mirror is named as docker and podman name it.

A mirror of docker.io (docker's registry-mirrors, podman's [[registry.mirror]], a `registry:2`
pull-through cache, a Harbor proxy-cache project) serves Docker Hub's official images under
`library/`: `ubuntu:22.04` is `MIRROR/library/ubuntu:22.04` there, never `MIRROR/ubuntu:22.04`.
"""

from __future__ import annotations

import pytest

from gpuonboard.steps.container import ContainerStep, mirror_copy, parse_ref, parse_state
from gpuonboard.steps.container.pull import registry_api
from gpuonboard.steps.teardown import _image_refs

DIGEST = "sha256:" + "ab" * 32
M = "mirror.example:5000"


@pytest.mark.parametrize(
    ("image", "copy"),
    [
        ("ubuntu:22.04", f"{M}/library/ubuntu:22.04"),
        ("ubuntu", f"{M}/library/ubuntu:latest"),
        ("docker.io/ubuntu:22.04", f"{M}/library/ubuntu:22.04"),
        ("index.docker.io/ubuntu:22.04", f"{M}/library/ubuntu:22.04"),
        ("registry-1.docker.io/ubuntu:22.04", f"{M}/library/ubuntu:22.04"),
        ("docker.io/library/ubuntu:22.04", f"{M}/library/ubuntu:22.04"),
        (
            "pytorch/pytorch:2.4.0-cuda12.1-cudnn9-runtime",
            f"{M}/pytorch/pytorch:2.4.0-cuda12.1-cudnn9-runtime",
        ),
        ("docker.io/pytorch/pytorch:2.4.0", f"{M}/pytorch/pytorch:2.4.0"),
        (f"ubuntu@{DIGEST}", f"{M}/library/ubuntu@{DIGEST}"),
        (f"ubuntu:22.04@{DIGEST}", f"{M}/library/ubuntu@{DIGEST}"),
        ("nvcr.io/nvidia/pytorch:24.08-py3", f"{M}/nvidia/pytorch:24.08-py3"),
        # another registry's one-component path is its own: no library/ added
        ("localhost/tiny:1", f"{M}/tiny:1"),
        ("127.0.0.1:5000/tiny:1", f"{M}/tiny:1"),
        ("quay.io/tiny:1", f"{M}/tiny:1"),
    ],
)
def test_the_mirror_copy_of_an_image_is_named_as_docker_and_podman_pull_it(image: str, copy: str) -> None:
    assert parse_ref(image).on(M) == copy


def test_canonical_and_pull_name_keep_the_name_as_written() -> None:
    """Tagged back (and looked up) under the name the user wrote; docker and podman normalize it."""
    ref = parse_ref("ubuntu:22.04")
    assert (ref.canonical, ref.pull_name) == ("ubuntu:22.04", "ubuntu:22.04")
    assert parse_ref("docker.io/ubuntu:22.04").canonical == "docker.io/ubuntu:22.04"


def test_the_pull_through_a_mirror_with_a_prefix_and_the_tag_back() -> None:
    s = ContainerStep({}).settings(
        {"container_image": "ubuntu:22.04", "registry_mirror": "https://harbor.example/dockerhub/"}, None
    )
    assert s.pull_ref == "harbor.example/dockerhub/library/ubuntu:22.04"
    assert s.ref.canonical == "ubuntu:22.04" and s.local_names == ("ubuntu:22.04",)
    pinned = ContainerStep({}).settings({"container_image": f"ubuntu@{DIGEST}", "registry_mirror": M}, None)
    assert pinned.local_names == (f"ubuntu@{DIGEST}", f"{M}/library/ubuntu@{DIGEST}")


def test_the_manifest_is_asked_where_the_pull_goes() -> None:
    """fetch_manifest's (registry, repository): Docker Hub's API host and `library/` path, the
    mirror's /prefix before it."""
    ref = parse_ref("docker.io/ubuntu:22.04")
    assert registry_api(None if ref.docker_hub else ref.registry, ref.repository) == (
        "registry-1.docker.io",
        "library/ubuntu",
    )
    assert registry_api("harbor.example/dockerhub", ref.repository) == (
        "harbor.example",
        "dockerhub/library/ubuntu",
    )
    ngc = parse_ref("nvcr.io/nvidia/pytorch:24.08-py3")
    assert not ngc.docker_hub and ngc.repository == "nvidia/pytorch"


def test_a_present_image_is_known_to_have_come_through_the_mirror() -> None:
    """The mirror-digest warning on a rerun: podman's RepoDigests name the `library/` copy."""
    s = ContainerStep({}).settings(
        {"container_image": "ubuntu:22.04", "registry_mirror": f"http://{M}/"}, None
    )
    state = parse_state(
        "##gpuonboard-container image\n"
        f'sha256:1234 ["{M}/library/ubuntu@{DIGEST}", "localhost/ubuntu@{DIGEST}"]\n'
    )
    came = mirror_copy(state, s)
    assert came is not None and came[0].mirror == M and came[1] == DIGEST


def test_teardown_removes_the_mirror_copy_the_container_step_pulled() -> None:
    assert _image_refs("ubuntu:22.04", f"['{M}', 'https://harbor.example/dockerhub/']") == [
        "ubuntu:22.04",
        f"{M}/library/ubuntu:22.04",
        "harbor.example/dockerhub/library/ubuntu:22.04",
    ]


@pytest.mark.parametrize(
    ("image", "target"),
    [
        # Docker Hub: the full name (podman files a short tag target under localhost/)
        ("ubuntu:22.04", "docker.io/library/ubuntu:22.04"),
        ("docker.io/library/ubuntu:22.04", "docker.io/library/ubuntu:22.04"),
        # another name of Docker Hub's registry is another registry to docker and podman: as written
        ("index.docker.io/ubuntu:22.04", "index.docker.io/ubuntu:22.04"),
        ("pytorch/pytorch:2.4.0", "docker.io/pytorch/pytorch:2.4.0"),
        (f"ubuntu:22.04@{DIGEST}", "docker.io/library/ubuntu:22.04"),
        # any other registry: the name as written
        ("nvcr.io/nvidia/pytorch:24.08-py3", "nvcr.io/nvidia/pytorch:24.08-py3"),
        ("127.0.0.1:5000/tiny:1", "127.0.0.1:5000/tiny:1"),
    ],
)
def test_a_copy_is_tagged_back_to_the_full_canonical_name(image: str, target: str) -> None:
    assert parse_ref(image).tag_target == target
