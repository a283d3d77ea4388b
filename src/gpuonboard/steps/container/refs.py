"""Image references (`[registry/]path[:tag][@digest]`) as the docker reference grammar reads
them: `parse_ref` and `ImageRef`, whose names say what is pulled, what a mirror serves and what
the local copy is tagged as (Docker Hub's `library/` and `docker.io/` forms included)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpuonboard.steps.base import StepArgsError
from gpuonboard.steps.checks.driver_compat import DEFAULT_IMAGE

# the names Docker Hub goes by in an image reference (docker normalizes index.docker.io to
# docker.io; registry-1.docker.io is its registry API host)
DOCKER_HUB_NAMES = frozenset({"docker.io", "index.docker.io", "registry-1.docker.io"})


@dataclass(frozen=True)
class ImageRef:
    """`[registry/]path[:tag][@digest]`, split so a mirror can serve the same path."""

    registry: str | None
    path: str
    tag: str | None
    digest: str | None

    @property
    def canonical(self) -> str:
        """The name the image carries locally (tag form when a tag is given)."""
        name = f"{self.registry}/{self.path}" if self.registry else self.path
        if self.tag:
            return f"{name}:{self.tag}"
        return f"{name}@{self.digest}" if self.digest else f"{name}:latest"

    @property
    def tag_target(self) -> str:
        """The name a mirror's (or a digest pull's) copy is tagged back to: the canonical name, for
        a Docker Hub image in its full form (`docker.io/library/ubuntu:22.04`). podman would file
        a short `ubuntu:22.04` as `localhost/ubuntu:22.04`, which `FROM ubuntu:22.04` or a run of
        `docker.io/library/ubuntu:22.04` does not find: they would pull it from Docker Hub, the
        registry the mirror is there to avoid. docker files both forms as `ubuntu:22.04`, and
        either runtime finds the full form under the short name."""
        if self.registry in (None, "docker.io") and self.tag:  # (registry-1.docker.io/... is
            # another registry name to podman and docker: kept as written, as the probe asks it)
            return f"docker.io/{self.repository}:{self.tag}"
        return self.canonical

    @property
    def docker_hub(self) -> bool:
        """The image is on Docker Hub: no registry, or one of Docker Hub's own names."""
        return self.registry is None or self.registry in DOCKER_HUB_NAMES

    @property
    def repository(self) -> str:
        """The repository path as the registry's API, and a mirror of it, serve it: a Docker Hub
        official image (`ubuntu`, `docker.io/ubuntu`) is `library/ubuntu` there, as docker and
        podman request it from a registry mirror of docker.io."""
        return f"library/{self.path}" if self.docker_hub and "/" not in self.path else self.path

    def on(self, registry: str) -> str:
        """The same repository and tag/digest on another registry (a mirror): `MIRROR/nvidia/pytorch`,
        `MIRROR/library/ubuntu` for Docker Hub's `ubuntu`."""
        ref = f"{registry}/{self.repository}"
        return f"{ref}@{self.digest}" if self.digest else f"{ref}:{self.tag or 'latest'}"

    @property
    def pull_name(self) -> str:
        """What `pull` gets without a mirror (the digest wins over the tag)."""
        name = f"{self.registry}/{self.path}" if self.registry else self.path
        return f"{name}@{self.digest}" if self.digest else self.canonical


_REF_RE = re.compile(
    r"^(?P<name>[a-z0-9][a-z0-9._/:-]*?)(?::(?P<tag>[\w][\w.-]{0,127}))?(?:@(?P<digest>sha256:[0-9a-f]{64}))?$"
)


def parse_ref(image: str) -> ImageRef:
    """Split an image reference; raises StepArgsError on anything else."""
    m = _REF_RE.match(image.strip())
    if not m or m.group("name").endswith("/"):
        why = ""
        if any(c.isspace() for c in image.strip()):
            why = " (it holds a space)"
        elif _REF_RE.match(image.strip().lower()):
            why = " (the repository name must be lowercase; only the tag may hold capitals)"
        raise StepArgsError(f"{image!r} is not an image reference like {DEFAULT_IMAGE}{why}")
    name = m.group("name")
    first, slash, rest = name.partition("/")
    if slash and ("." in first or ":" in first or first == "localhost"):
        registry, path = first, rest
    else:
        registry, path = None, name
    why = _ref_problem(registry, path)
    if why:  # (a pull of it could only fail, after every retry)
        raise StepArgsError(f"{image!r} is not an image reference like {DEFAULT_IMAGE} ({why})")
    return ImageRef(registry, path, m.group("tag"), m.group("digest"))


_REGISTRY_RE = re.compile(r"^[a-z0-9](?:[a-z0-9.-]*[a-z0-9])?(?::(?P<port>[^/]*))?$")


_PATH_PART_RE = re.compile(r"^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$")


def _ref_problem(registry: str | None, path: str) -> str:
    """Pure: what the docker reference grammar refuses in a parsed reference ('' when nothing):
    a registry port that is not a number, a `:` inside the repository path (`a/b:c:d`), an
    empty or badly separated path component (`a//b`, `a/-b`)."""
    if registry is not None:
        m = _REGISTRY_RE.match(registry)
        port = m.group("port") if m else None
        if not m or (port is not None and not (port.isdecimal() and 0 < int(port) < 65536)):
            return f"the registry {registry!r} must be a host name with an optional numeric port"
    if ":" in path:
        return "a ':' may stand only before the tag and in the registry's port"
    bad = next((part for part in path.split("/") if not _PATH_PART_RE.match(part)), None)
    if bad == "":
        return "an empty path component ('//', or a '/' at either end)"
    if bad is not None:
        return f"the path component {bad!r} must be lowercase letters and digits joined by '.', '_' or '-'"
    return ""
