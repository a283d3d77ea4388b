"""The container step's settings (args > host vars > vendor profile > defaults): the registry
mirrors (`parse_mirror`, `parse_mirrors`: one, or a list tried in order, and the image's own
registry as a last fallback), sizes, retries, the pull's time limit; `Settings` names each
source's pull reference, login registry and the names the runtime may hold the image under."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from gpuonboard.steps.base import StepArgsError, truthy
from gpuonboard.steps.checks.driver_compat import DEFAULT_IMAGE
from gpuonboard.steps.container.refs import ImageRef, parse_ref
from gpuonboard.units import parse_duration, parse_size

DEFAULT_SIZE_ESTIMATE = "20GB"  # NGC PyTorch 24.x: ~9-10 GB compressed, ~20 GB unpacked


DEFAULT_UNPACK_FACTOR = 1.5  # compressed layers and their unpacked copy coexist during a pull


# the manifest gives COMPRESSED sizes: the download plus its unpacked copy (~2x) must fit
DEFAULT_MANIFEST_UNPACK_FACTOR = 3.0


DEFAULT_RETRIES = 3


DEFAULT_BACKOFF = 2.0


# a pull's time limit: an NGC PyTorch image (~9-10 GB compressed) on a slow or metered link
# (~0.5 MB/s) takes hours, and a pull stopped mid-layer loses that layer's bytes
DEFAULT_PULL_TIMEOUT = "6h"


MAX_PULL_TIMEOUT = 7 * 86400  # (a bigger one overflows the host's shell arithmetic)


_MIRROR_RE = re.compile(
    r"^(?:(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://)?"
    r"(?P<host>[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?|\[[0-9A-Fa-f:.]+\])"
    r"(?::(?P<port>\d{1,5}))?(?P<prefix>(?:/[a-z0-9._-]+)*)/?$"
)


def parse_mirror(value: object) -> tuple[str, str | None]:
    """A `registry_mirror` setting -> (host[:port][/prefix] as image references name it, "http"
    when given as http://, else None). Anything else raises StepArgsError naming the setting: a
    scheme other than http(s), credentials in the URL (they would be in the pull's command line,
    the run log and the report), a bad port, spaces. (A list: see parse_mirrors.)"""
    example = "a host like mirror.example.cn, mirror.example.cn:5000/prefix or https://mirror.example.cn"
    if not isinstance(value, str):
        kind = "a list" if isinstance(value, list | tuple) else f"a {type(value).__name__}"
        raise StepArgsError(f"registry_mirror is {kind} ({value!r}); give a mirror: {example}")
    text = value.strip()
    if "@" in text.split("://", 1)[-1]:  # (anywhere: a password may hold a `/`)
        shown = re.sub(r"(://|^).*@", r"\1***@", text)
        raise StepArgsError(
            f"registry_mirror {shown!r} holds credentials (user:password@): they would show in the pull"
            " command, the run log and the report; give the mirror without them and put them in"
            " registry_credentials_file under the mirror's host"
        )
    m = _MIRROR_RE.match(text)
    if not m:  # (a query or fragment may carry a token: not shown)
        shown = re.sub(r"[?#].*$", "?***", text)
        raise StepArgsError(f"registry_mirror {shown!r} is not a registry mirror: give {example}")
    scheme = (m.group("scheme") or "").lower()
    if scheme not in ("", "http", "https"):
        raise StepArgsError(
            f"registry_mirror {text!r} has scheme {scheme}://; a registry mirror is https:// (or http://)"
        )
    port = m.group("port")
    if port is not None and not 1 <= int(port) <= 65535:
        raise StepArgsError(f"registry_mirror {text!r} has port {port}, not 1-65535")
    host = m.group("host").lower() + (f":{port}" if port else "")
    return host + (m.group("prefix") or ""), "http" if scheme == "http" else None


def parse_mirrors(value: object) -> tuple[tuple[str, str | None], ...]:
    """`registry_mirror`: one mirror, or a list of them tried in order -> ((ref, scheme), ...),
    each as parse_mirror reads it, duplicates dropped. A list's item that is no mirror is named
    by its position."""
    if value is None or value == "":
        return ()
    if not isinstance(value, list | tuple):
        return (parse_mirror(value),)
    out: list[tuple[str, str | None]] = []
    for n, item in enumerate(value, 1):
        try:
            parsed = parse_mirror(item)
        except StepArgsError as exc:
            raise StepArgsError(f"{exc} (item {n} of the list)") from None
        if parsed not in out:
            out.append(parsed)
    return tuple(out)


@dataclass
class Settings:
    """The step's resolved settings (args > host vars > vendor profile > defaults)."""

    image: str
    ref: ImageRef
    mirror: str | None
    size_estimate: int
    unpack_factor: float
    retries: int
    backoff: float
    user_env: str | None
    password_env: str | None
    smoke: bool
    credentials_file: str | None = None
    container_sudo: bool = False
    manifest_factor: float = DEFAULT_MANIFEST_UNPACK_FACTOR
    mirror_scheme: str | None = None  # "http" when the mirror was given as http://...
    pull_timeout: float = 6 * 3600.0  # seconds one pull attempt may take (pull_timeout)
    # where to pull from when this source fails: the next mirrors, then (None) the image's own
    # registry when `pull_fallback_origin` is true
    fallbacks: tuple[tuple[str | None, str | None], ...] = ()

    def sources(self) -> list[Settings]:
        """These settings, then one per fallback source (its mirror, or none), in order."""
        return [self] + [
            replace(self, mirror=m, mirror_scheme=sch, fallbacks=()) for m, sch in self.fallbacks
        ]

    @property
    def source_name(self) -> str:
        """`mirror HOST/PREFIX`, or the image's own registry."""
        return f"mirror {self.mirror}" if self.mirror else (self.ref.registry or "Docker Hub")

    @property
    def pull_ref(self) -> str:
        """What is pulled: the mirror's copy when a mirror is set."""
        return self.ref.on(self.mirror) if self.mirror else self.ref.pull_name

    @property
    def local_names(self) -> tuple[str, ...]:
        """The names the runtime may hold the image under, the canonical one first. A pin by
        digest only pulled through a mirror keeps the mirror's name (a digest reference is no
        tag target), and docker finds it only under that name (podman under any name with
        its digest); a tag is tagged back to the canonical name after a pull."""
        names = [self.ref.canonical]
        if self.ref.digest and not self.ref.tag:
            names += [src.pull_ref for src in self.sources() if src.mirror]
        return tuple(dict.fromkeys(names))

    @property
    def login_registry(self) -> str | None:
        """The registry logged in to: the mirror's host when a mirror is used (then only with
        credentials named for that mirror in the credentials file), else the image's registry."""
        if self.mirror:
            return self.mirror.split("/", 1)[0]
        return self.ref.registry


def resolve_settings(
    args: Mapping[str, Any], host_vars: Mapping[str, Any], vendor_mirror: str | tuple[str, ...] | None
) -> Settings:
    """The container step's settings from its (rendered) args, the host's vars and its vendor's
    registry mirror; a bad value raises StepArgsError naming it."""

    def get(key: str, default: Any = None) -> Any:
        value = args.get(key)
        if value is None or value == "":
            value = host_vars.get(key)
        return default if value is None or value == "" else value

    def read(key: str, default: Any, convert: Any, wanted: str) -> Any:
        value = get(key, default)
        try:
            if isinstance(value, bool):
                raise ValueError(value)
            return convert(value)
        except (TypeError, ValueError):
            raise StepArgsError(f"container setting {key}: {value!r} is not {wanted}") from None

    image = str(args.get("image") or host_vars.get("container_image") or DEFAULT_IMAGE)
    ref = parse_ref(image)
    mirrors = parse_mirrors(get("registry_mirror", vendor_mirror))
    mirror_ref, mirror_scheme = mirrors[0] if mirrors else (None, None)
    fallbacks: list[tuple[str | None, str | None]] = list(mirrors[1:])
    if mirrors and truthy(get("pull_fallback_origin", False), "pull_fallback_origin"):
        fallbacks.append((None, None))
    size = read("image_size_estimate", DEFAULT_SIZE_ESTIMATE, parse_size, "a size like 20GB")
    factor = read("unpack_factor", DEFAULT_UNPACK_FACTOR, float, "a number like 1.5")
    mfactor = read("manifest_unpack_factor", DEFAULT_MANIFEST_UNPACK_FACTOR, float, "a number like 3.0")
    retries = read("pull_retries", DEFAULT_RETRIES, int, "a whole number like 3")
    backoff = read("retry_backoff", DEFAULT_BACKOFF, float, "a number of seconds like 2")
    limit = read("pull_timeout", DEFAULT_PULL_TIMEOUT, parse_duration, "a duration like 6h or 90m")
    numbers = (backoff, factor, mfactor, limit)
    if not all(math.isfinite(x) for x in numbers) or limit > MAX_PULL_TIMEOUT:
        raise StepArgsError(
            "retry_backoff, unpack_factor, manifest_unpack_factor and pull_timeout must be finite"
            f" numbers, pull_timeout at most {MAX_PULL_TIMEOUT // 86400} days"
        )
    if retries < 0 or backoff < 0 or factor <= 0 or mfactor <= 0 or limit < 1:
        raise StepArgsError(
            "pull_retries and retry_backoff must be >= 0, unpack_factor and manifest_unpack_factor"
            " > 0, pull_timeout at least 1s"
        )
    smoke = get("smoke", True)
    creds_file = get("registry_credentials_file")
    return Settings(
        image=image,
        ref=ref,
        mirror=mirror_ref,
        size_estimate=size,
        unpack_factor=factor,
        retries=retries,
        backoff=backoff,
        user_env=get("registry_user_env"),
        password_env=get("registry_password_env"),
        smoke=truthy(smoke, "smoke"),
        credentials_file=str(creds_file) if creds_file else None,
        container_sudo=truthy(get("container_sudo", False), "container_sudo"),
        manifest_factor=mfactor,
        mirror_scheme=mirror_scheme,
        pull_timeout=limit,
        fallbacks=tuple(fallbacks),
    )
