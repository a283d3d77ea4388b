"""An image reference read as NGC PyTorch (``nvcr.io/nvidia/pytorch:YY.MM-py3``, or a configured
mirror of it): its release and variant, or one sentence saying why it tells none. Pure: no I/O.
Re-exported by `steps.checks.ngc`, whose release table judges what this reads."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

NGC_IMAGE = "nvcr.io/nvidia/pytorch"
_NGC_PATH = "nvidia/pytorch"
_TAG_RE = re.compile(r"^(?P<yy>\d{2})\.(?P<mm>\d{2})-(?P<variant>[A-Za-z0-9._-]+)$")
VARIANTS = ("py3", "py3-igpu")
IGPU_VARIANT = "py3-igpu"


@dataclass(frozen=True)
class NgcImage:
    """What an image reference says about NGC PyTorch (see :func:`read_image`).

    ``is_ngc``: the repository is ``nvcr.io/nvidia/pytorch`` or a configured mirror of it.
    ``release``/``variant`` are set only for an NGC image with a valid ``YY.MM-py3`` /
    ``YY.MM-py3-igpu`` tag; otherwise ``problem`` says, in one sentence, what is wrong.
    """

    image: str
    is_ngc: bool
    tag: str | None
    release: str | None
    variant: str | None
    problem: str | None

    @property
    def igpu(self) -> bool:
        """The Jetson / integrated-GPU flavour (``YY.MM-py3-igpu``), not for discrete GPUs."""
        return self.variant == IGPU_VARIANT


def mirror_host(mirror: str) -> str:
    """`https://nvcr.mirror.example.cn/` -> `nvcr.mirror.example.cn` (host[:port][/prefix]):
    a registry mirror as image references name it (the scheme in any case)."""
    return re.sub(r"^[a-z]+://", "", mirror.strip(), flags=re.IGNORECASE).rstrip("/")


def _split_ref(ref: str) -> tuple[str, str | None, str | None]:
    """``name[:tag][@digest]`` -> (name, tag, digest); a ``:port`` in the host is not a tag."""
    name, _, digest = ref.partition("@")
    head, sep, tail = name.rpartition(":")
    if sep and "/" not in tail:
        return head, tail, digest or None
    return name, None, digest or None


def _unreadable_tag(ref: str, tag: str | None, problem: str) -> NgcImage:
    """An NGC image whose tag tells no release (`problem` says why)."""
    return NgcImage(ref, True, tag, None, None, problem)


def read_image(image: str, mirrors: Sequence[str] = ()) -> NgcImage:
    """Read an image reference as an NGC PyTorch image.

    Only ``nvcr.io/nvidia/pytorch`` (host case-insensitive) and ``<mirror>/nvidia/pytorch`` for
    a configured ``registry_mirror`` (``https://`` and a trailing ``/`` ignored) are NGC;
    ``nvidia/pytorch`` alone is Docker Hub and ``ghcr.io/x/nvidia/pytorch`` someone else's.
    A digest next to a tag (``:24.08-py3@sha256:...``) is ignored: the tag names the release.
    """
    ref = image.strip()
    name, tag, digest = _split_ref(ref)
    host, _, path = name.partition("/")
    allowed = {f"nvcr.io/{_NGC_PATH}"} | {
        f"{mirror_host(m).lower()}/{_NGC_PATH}" for m in mirrors if m.strip()
    }
    is_ngc = bool(path) and f"{host.lower()}/{path}" in allowed
    if not is_ngc:
        where = f"{NGC_IMAGE} or a mirror of it" if mirrors else NGC_IMAGE
        return NgcImage(ref, False, tag, None, None, f"{ref!r} is not {where}")
    if tag is None:
        why = "is pinned by digest only" if digest else "has no tag"
        return _unreadable_tag(
            ref, None, f"{ref!r} {why}: the release cannot be told; pin a tag such as {NGC_IMAGE}:24.08-py3"
        )
    t = _TAG_RE.match(tag)
    if t is None or not 1 <= int(t.group("mm")) <= 12:
        return _unreadable_tag(
            ref,
            tag,
            f"{tag!r} is not a valid NGC tag: NGC PyTorch tags are YY.MM-py3 with a month 01-12 "
            "(e.g. 24.08-py3)",
        )
    release, variant = f"{t.group('yy')}.{t.group('mm')}", t.group("variant")
    if variant not in VARIANTS:
        return _unreadable_tag(
            ref,
            tag,
            f"{tag!r} is not an NGC PyTorch tag: the variants are {release}-py3 (discrete GPUs) "
            f"and {release}-py3-igpu (Jetson / integrated GPUs), not -{variant}",
        )
    return NgcImage(ref, True, tag, release, variant, None)


def parse_image(image: str, mirrors: Sequence[str] = ()) -> tuple[str | None, str | None]:
    """Split an NGC PyTorch image reference into ``(release, variant)``.

    ``"nvcr.io/nvidia/pytorch:24.08-py3"`` -> ``("24.08", "py3")``; a configured mirror
    (``mirrors=["mirror.example.cn"]``: ``"mirror.example.cn/nvidia/pytorch:24.08-py3"``) works
    too, and ``":24.08-py3@sha256:..."`` gives the tag's release. Anything :func:`read_image`
    finds a problem with gives ``(None, None)``.
    """
    info = read_image(image, mirrors)
    return (info.release, info.variant) if info.problem is None else (None, None)
