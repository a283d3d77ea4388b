"""The container step's settings from inventory values: a registry mirror is one host (with an
optional port and path prefix, http(s):// or none); anything else is refused with one sentence
naming the setting, never passed on to `docker pull`, the run log and the report."""

from __future__ import annotations

import pytest

from gpuonboard.steps.base import StepArgsError
from gpuonboard.steps.container import (
    ContainerStep,
    Settings,
    mirror_copy,
    parse_mirror,
    parse_ref,
    parse_state,
)
from gpuonboard.steps.container.pull import registry_api
from gpuonboard.steps.teardown import _image_refs


def _settings(**vars: object) -> Settings:
    return ContainerStep({}).settings(vars, None)


@pytest.mark.parametrize(
    ("given", "mirror", "scheme"),
    [
        ("mirror.example.cn", "mirror.example.cn", None),
        ("https://Mirror.Example.CN/", "mirror.example.cn", None),
        ("HTTP://127.0.0.1:5000/nvcr/", "127.0.0.1:5000/nvcr", "http"),
        ("  mirror.example.cn:443/a/b  ", "mirror.example.cn:443/a/b", None),
    ],
)
def test_a_mirror_is_read_as_image_references_name_it(given: str, mirror: str, scheme: str | None) -> None:
    assert parse_mirror(given) == (mirror, scheme)
    s = _settings(registry_mirror=given)
    assert (s.mirror, s.mirror_scheme) == (mirror, scheme)
    assert s.pull_ref == f"{mirror}/nvidia/pytorch:24.08-py3"


def test_credentials_in_the_mirror_url_are_refused_and_not_repeated() -> None:
    """`https://user:pw@mirror` used to become the pull reference `user:pw@mirror/...`: the
    password in the remote command line, the run log and the report's diff."""
    with pytest.raises(StepArgsError) as info:
        _settings(registry_mirror="https://robot:Pa55word@harbor.example.cn/proxy/")
    msg = str(info.value)
    assert "Pa55word" not in msg and "robot" not in msg
    assert "holds credentials" in msg and "registry_credentials_file" in msg
    # a password holding a `/`, and a token in a query: never shown either
    for given, secret in (
        ("https://bob:s3cr/et@mirror.example.cn", "s3cr"),
        ("https://m.cn/?token=abc", "abc"),
    ):
        with pytest.raises(StepArgsError) as info:
            _settings(registry_mirror=given)
        assert secret not in str(info.value), info.value


@pytest.mark.parametrize(
    ("given", "words"),
    [
        (["mirror-a.example.cn", "ftp://mirror-b.example.cn"], "or http://) (item 2 of the list)"),
        ([["nested"]], "registry_mirror is a list"),
        ("ftp://mirror.example.cn", "has scheme ftp://"),
        ("mirror .example.cn", "is not a registry mirror"),
        ("https://mirror.example.cn:abc/", "is not a registry mirror"),
        ("https://mirror.example.cn:99999", "has port 99999"),
        ("https://mirror.example.cn/v2?x=1", "is not a registry mirror"),
        (5000, "registry_mirror is a int"),
    ],
)
def test_a_malformed_mirror_is_one_sentence_naming_the_setting(given: object, words: str) -> None:
    with pytest.raises(StepArgsError) as info:
        _settings(registry_mirror=given)
    assert words in str(info.value) and "registry_mirror" in str(info.value)


@pytest.mark.parametrize(
    ("key", "value", "words"),
    [
        ("pull_retries", "three", "container setting pull_retries: 'three' is not a whole number"),
        ("retry_backoff", "2 s", "container setting retry_backoff: '2 s' is not a number of seconds"),
        ("image_size_estimate", "20 GG", "container setting image_size_estimate: '20 GG' is not a size"),
        ("pull_timeout", "forever", "container setting pull_timeout: 'forever' is not a duration"),
        ("unpack_factor", True, "container setting unpack_factor: True is not a number"),
    ],
)
def test_a_bad_number_names_its_setting(key: str, value: object, words: str) -> None:
    with pytest.raises(StepArgsError) as info:
        _settings(**{key: value})
    assert str(info.value).startswith(words)


@pytest.mark.parametrize("value", [float("nan"), float("inf"), 1e308, "30d"])
def test_a_pull_timeout_that_is_no_finite_week_is_refused(value: object) -> None:
    """(nan passed `< 1` and broke int(); 1e308 overflowed the host's shell arithmetic, which
    stopped the pull at once)"""
    with pytest.raises(StepArgsError, match="pull_timeout at most 7 days"):
        _settings(pull_timeout=value)


def test_pull_timeout_defaults_to_hours_and_takes_durations() -> None:
    assert _settings().pull_timeout == 6 * 3600
    assert _settings(pull_timeout="12h").pull_timeout == 12 * 3600
    assert _settings(pull_timeout=90).pull_timeout == 90


@pytest.mark.parametrize(
    ("image", "why"),
    [
        ("nvcr.io/NVIDIA/pytorch:24.08-py3", "must be lowercase"),
        ("nvcr.io/nvidia/pytorch: 24.08-py3", "holds a space"),
    ],
)
def test_an_image_reference_says_what_is_wrong_with_it(image: str, why: str) -> None:
    with pytest.raises(StepArgsError) as info:
        parse_ref(image)
    assert why in str(info.value)


def test_a_list_of_mirrors_is_tried_in_order_then_the_origin_only_when_asked() -> None:
    s = _settings(registry_mirror=["https://a.example.cn/", "http://b.example.cn:5000/ngc", "a.example.cn"])
    assert [x.source_name for x in s.sources()] == ["mirror a.example.cn", "mirror b.example.cn:5000/ngc"]
    assert [x.mirror_scheme for x in s.sources()] == [None, "http"]
    assert [x.pull_ref for x in s.sources()][1] == "b.example.cn:5000/ngc/nvidia/pytorch:24.08-py3"
    s = _settings(registry_mirror=["a.example.cn"], pull_fallback_origin=True)
    assert [x.source_name for x in s.sources()] == ["mirror a.example.cn", "nvcr.io"]
    assert s.sources()[1].pull_ref == "nvcr.io/nvidia/pytorch:24.08-py3"
    assert [x.source_name for x in _settings().sources()] == ["nvcr.io"]  # (no mirror: no fallback)


# QA: a Docker Hub image pulled through a registry mirror is named as docker and podman name it.
#
# A mirror of docker.io (docker's registry-mirrors, podman's [[registry.mirror]], a `registry:2`
# pull-through cache, a Harbor proxy-cache project) serves Docker Hub's official images under
# `library/`: `ubuntu:22.04` is `MIRROR/library/ubuntu:22.04` there, never `MIRROR/ubuntu:22.04`.

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
