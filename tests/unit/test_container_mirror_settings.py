"""The container step's settings from inventory values: a registry mirror is one host (with an
optional port and path prefix, http(s):// or none); anything else is refused with one sentence
naming the setting, never passed on to `docker pull`, the run log and the report."""

from __future__ import annotations

import pytest

from gpuonboard.steps.base import StepArgsError
from gpuonboard.steps.container import ContainerStep, Settings, parse_mirror, parse_ref


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
