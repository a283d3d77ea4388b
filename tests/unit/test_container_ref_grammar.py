"""An image reference the docker grammar refuses is a clear error when the settings are read,
not a pull retried with backoff that could only fail (`foo:bar/x`: a port that is no number)."""

from __future__ import annotations

import pytest

from gpuonboard.steps.base import StepArgsError
from gpuonboard.steps.container import ImageRef, parse_ref


@pytest.mark.parametrize(
    ("ref", "why"),
    [
        ("foo:bar/x", "the registry 'foo:bar' must be a host name with an optional numeric port"),
        ("nvcr.io:99999/nvidia/pytorch:24.08-py3", "the registry 'nvcr.io:99999' must be a host name"),
        ("nvcr.io:/nvidia/pytorch", "the registry 'nvcr.io:' must be a host name"),
        ("nvidia/pytorch:24.08:py3", "a ':' may stand only before the tag and in the registry's port"),
        ("nvcr.io/nvidia//pytorch:24.08-py3", "an empty path component"),
        ("nvcr.io/nvidia/-pytorch:24.08-py3", "the path component '-pytorch' must be lowercase letters"),
        ("nvcr.io/nvidia/pytorch.:24.08-py3", "the path component 'pytorch.' must be lowercase letters"),
    ],
)
def test_a_reference_the_grammar_refuses_is_named_with_why(ref: str, why: str) -> None:
    with pytest.raises(StepArgsError) as err:
        parse_ref(ref)
    assert str(err.value).startswith(
        f"{ref!r} is not an image reference like nvcr.io/nvidia/pytorch:24.08-py3 ("
    )
    assert why in str(err.value)


@pytest.mark.parametrize(
    ("ref", "parsed"),
    [
        ("nvcr.io/nvidia/pytorch:24.08-py3", ImageRef("nvcr.io", "nvidia/pytorch", "24.08-py3", None)),
        ("localhost:5000/a/b:c", ImageRef("localhost:5000", "a/b", "c", None)),
        (
            "127.0.0.1:5000/nvidia/pytorch:tiny-py3",
            ImageRef("127.0.0.1:5000", "nvidia/pytorch", "tiny-py3", None),
        ),
        ("my_org/my__img:1", ImageRef(None, "my_org/my__img", "1", None)),
        (
            "harbor.corp/nvcr-proxy/nvidia/py---torch",
            ImageRef("harbor.corp", "nvcr-proxy/nvidia/py---torch", None, None),
        ),
        ("ubuntu", ImageRef(None, "ubuntu", None, None)),
    ],
)
def test_valid_references_still_parse(ref: str, parsed: ImageRef) -> None:
    assert parse_ref(ref) == parsed
