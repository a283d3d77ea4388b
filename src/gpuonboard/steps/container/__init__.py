"""Step `container`: a working container runtime with the training image pulled and smoke-tested.

Plan (pure, from ONE read-only probe in the batched fact probe): which runtime answers
(`docker info`, else `podman info`), whether the NVIDIA container toolkit is there (docker's
`nvidia` runtime or an nvidia CDI spec), free space under the runtime's storage root, and the
local image's id and repo digests, and the host's record of a passed smoke run for it. Apply:
registry login over stdin (never argv) into a temporary auth dir removed when the pull ends,
pull through the vendor's registry mirror with retries and backoff (a re-run reuses the layers
already present), tag the mirror's copy back to the canonical name, then a smoke run, whose
pass is recorded on the host (an image present without that record is smoke-run again).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from gpuonboard import machine, masking, shell
from gpuonboard.connection.gather import Facts
from gpuonboard.facts.container import RuntimeInfo, parse_cdi_listing, parse_docker_info, parse_podman_info
from gpuonboard.facts.probe import Probe
from gpuonboard.steps.base import Check, Plan, Step, StepArgsError, StepContext, last_line, truthy
from gpuonboard.steps.checks.driver_compat import DEFAULT_IMAGE, driver_failure
from gpuonboard.steps.checks.ngc import mirror_host
from gpuonboard.steps.container.pull import (
    Manifest,
    format_pull_progress,
    manifest_command,
    parse_manifest,
    parse_pull_progress,
    registry_api,
)
from gpuonboard.units import format_bytes, parse_duration, parse_size
from gpuonboard.yamlload import load_yaml

DEFAULT_SIZE_ESTIMATE = "20GB"  # NGC PyTorch 24.x: ~9-10 GB compressed, ~20 GB unpacked
DEFAULT_UNPACK_FACTOR = 1.5  # compressed layers and their unpacked copy coexist during a pull
# the manifest gives COMPRESSED sizes: the download plus its unpacked copy (~2x) must fit
DEFAULT_MANIFEST_UNPACK_FACTOR = 3.0
PROGRESS_EVERY = 0.5  # seconds between live progress updates
DEFAULT_RETRIES = 3
DEFAULT_BACKOFF = 2.0
# a pull's time limit: an NGC PyTorch image (~9-10 GB compressed) on a slow or metered link
# (~0.5 MB/s) takes hours, and a pull stopped mid-layer loses that layer's bytes
DEFAULT_PULL_TIMEOUT = "6h"
MAX_PULL_TIMEOUT = 7 * 86400  # (a bigger one overflows the host's shell arithmetic)
_PULL_TIMED_OUT = "##gpuonboard-pull-timed-out"
_MARK = "##gpuonboard-container "
_LOGIN_FAILED = "##gpuonboard-login-failed"
# where the host records a passed smoke run (no secrets): one file per image name
SMOKE_DIR = "${XDG_CACHE_HOME:-$HOME/.cache}/gpuonboard/container-smoke"
# login errors that are the network's, not the credentials': retried like a failed pull
_NETWORK_ERRORS = (
    "connection refused",
    "no such host",
    "i/o timeout",
    "network is unreachable",
    "connection reset",
    "tls handshake timeout",
    "no route to host",
    "temporary failure in name resolution",
    "server misbehaving",
    "timeout exceeded",
    "eof",
)

# Install commands per OS family (sources: docs.docker.com/engine/install, Debian/Ubuntu
# `docker.io` packages, docs.nvidia.com/datacenter/cloud-native/container-toolkit/install-guide).
_DOCKER_INSTALL = {
    "debian": (
        "sudo apt-get update && sudo apt-get install -y docker.io && sudo systemctl enable --now docker"
    ),
    "rhel": (
        "sudo dnf install -y dnf-plugins-core && sudo dnf config-manager --add-repo"
        " https://download.docker.com/linux/rhel/docker-ce.repo && sudo dnf install -y docker-ce"
        " docker-ce-cli containerd.io && sudo systemctl enable --now docker"
    ),
}
_TOOLKIT_INSTALL = {
    "debian": (
        "curl -fsSL https://nvidia.github.io/libnvidia-container/gpgkey | sudo gpg --dearmor -o"
        " /usr/share/keyrings/nvidia-container-toolkit-keyring.gpg && curl -fsSL"
        " https://nvidia.github.io/libnvidia-container/stable/deb/nvidia-container-toolkit.list | sed"
        " 's#deb https://#deb [signed-by=/usr/share/keyrings/nvidia-container-toolkit-keyring.gpg]"
        " https://#g' | sudo tee /etc/apt/sources.list.d/nvidia-container-toolkit.list && sudo apt-get"
        " update && sudo apt-get install -y nvidia-container-toolkit"
    ),
    "rhel": (
        "curl -fsSL https://nvidia.github.io/libnvidia-container/stable/rpm/nvidia-container-toolkit.repo"
        " | sudo tee /etc/yum.repos.d/nvidia-container-toolkit.repo && sudo dnf install -y"
        " nvidia-container-toolkit"
    ),
}
_TOOLKIT_CONFIGURE = {
    "docker": "sudo nvidia-ctk runtime configure --runtime=docker && sudo systemctl restart docker",
    "podman": "sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml",
}


def os_family(os_release: Mapping[str, str]) -> str | None:
    """'debian' (Debian, Ubuntu, ...), 'rhel' (RHEL, Rocky, Alma, Fedora, ...) or None."""
    ids = {os_release.get("ID", "").lower(), *os_release.get("ID_LIKE", "").lower().split()}
    if ids & {"debian", "ubuntu"}:
        return "debian"
    if ids & {"rhel", "fedora", "centos", "rocky", "almalinux"}:
        return "rhel"
    return None


def install_hint(table: Mapping[str, str], os_release: Mapping[str, str]) -> str:
    """The install command line for this host's OS family (both families when unknown)."""
    family = os_family(os_release)
    if family:
        return table[family]
    return f"on Debian/Ubuntu: {table['debian']}; on RHEL/Rocky: {table['rhel']}"


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


@dataclass(frozen=True)
class ContainerState:
    """What the container probe found (parsed, pure)."""

    cli: str | None  # the command that answered: docker | podman
    info: RuntimeInfo
    errors: dict[str, str]  # cli -> why it did not answer ("not installed" or its error)
    cdi_specs: tuple[str, ...]
    free_bytes: int | None
    image_id: str | None
    repo_digests: tuple[str, ...]
    sudo: bool = False  # the runtime answered only through `sudo -n`
    uid: int | None = None
    user: str | None = None
    groups: tuple[str, ...] = ()
    smoke_record: str | None = None  # the host's record of a passed smoke run for this image
    image_name: str | None = None  # the name the probe found the image under (see local_names)

    @property
    def access(self) -> str:
        """How the login user reaches the runtime (a fact for the report)."""
        if self.sudo:
            return "sudo -n"
        if self.uid == 0:
            return "root"
        if self.info.engine == "podman" or self.cli == "podman":
            return "rootless podman"
        if "docker" in self.groups:
            return "docker group"
        return "direct"

    def command(self, argv: list[str]) -> str:
        """A runtime command (argv[0] is the cli), through `sudo -n` when that is how it answers."""
        built = shell.join(argv)
        return shell.sudo(built) if self.sudo else built

    @property
    def nvidia_toolkit(self) -> bool:
        """docker's `nvidia` runtime or an nvidia CDI spec (podman, docker >= 25 with CDI)."""
        return self.info.nvidia_runtime or any("nvidia" in s.rsplit("/", 1)[-1] for s in self.cdi_specs)

    @property
    def digests(self) -> tuple[str, ...]:
        """sha256 digests of the local image's manifests (from `repo@sha256:...`)."""
        return tuple(d.rpartition("@")[2] for d in self.repo_digests if "@" in d)


def smoke_file(local_ref: str) -> str:
    """The host file (shell text, $HOME expanded there) recording a passed smoke run of an image."""
    return f"{SMOKE_DIR}/{hashlib.sha256(local_ref.encode()).hexdigest()[:16]}"


def smoke_key(state: ContainerState, gpus: int | None) -> str:
    """What a passed smoke run is recorded as: runtime, storage, image id and GPU count; a
    record matching none of today's values means the smoke run must be run (again). An unknown
    count (nvidia-smi failed) is `gpus=?`, which no passed run records."""
    root = state.info.storage_root or "-"
    return f"{state.cli} {root.replace(' ', '_')} {state.image_id} gpus={'?' if gpus is None else gpus}"


def host_gpu_count(facts: Facts) -> int | None:
    """How many GPUs the host's nvidia-smi lists: 0 without nvidia-smi (no driver), None when
    it is installed but failed or hung (a broken driver: the GPUs are there, uncounted)."""
    if facts.gpu is not None:
        return len(facts.gpu.gpus)
    return None if facts.nvidia_smi_present else 0


def probe_command(local_ref: str, also: tuple[str, ...] = ()) -> str:
    """The read-only probe: runtime info, CDI specs, df of the storage root, the local image
    (under `local_ref`, else the first of `also` the runtime holds: see local_names), and the
    host's record of a passed smoke run for it (kept under `local_ref`)."""
    m = _MARK
    names = " ".join(shell.quote(n) for n in dict.fromkeys((local_ref, *also)))
    return (
        "c=; info=; pre=\n"
        f"printf '{m}smoke\\n'; cat \"{smoke_file(local_ref)}\" 2>/dev/null | head -n 1\n"
        "q() { if [ $2 = docker ]; then $1 docker info --format '{{json .}}';"
        " else $1 podman info --format json; fi; }\n"
        "for x in docker podman; do\n"
        "  info=$(q '' $x 2>/dev/null)\n"
        "  rc=$?; if [ $rc = 0 ]; then c=$x; break; fi\n"
        "  err=$($x info 2>&1 >/dev/null | tail -n 1)\n"
        f"  printf '{m}error %s %s %s\\n' $x $rc \"$err\"\n"
        '  case "$err" in *ermission\\ denied*)\n'
        "    if info=$(q 'sudo -n' $x 2>/dev/null); then c=$x; pre='sudo -n'; break; fi ;; esac\n"
        "done\n"
        f'printf \'{m}user %s %s %s\\n\' "$(id -u)" "$(id -un)" "$(id -nG | tr \' \' ,)"\n'
        f"printf '{m}cdi\\n'; ls -1d /etc/cdi/* /var/run/cdi/* 2>/dev/null\n"
        '[ -n "$c" ] || exit 0\n'
        f"printf '{m}info %s %s\\n' $c \"${{pre:+sudo}}\"; printf '%s\\n' \"$info\"\n"
        "root=$(printf '%s' \"$info\" | sed -n"
        ' \'s/.*"\\(DockerRootDir\\|graphRoot\\)": *"\\([^"]*\\)".*/\\2/p\' | head -n 1)\n'
        f'printf \'{m}df\\n\'; [ -n "$root" ] && df -P -k "$root" 2>/dev/null | tail -n 1\n'
        f"for n in {names}; do\n"
        "  r=$($pre $c image inspect --format '{{.Id}} {{json .RepoDigests}}' \"$n\" 2>/dev/null)"
        " || continue\n"
        f'  [ -n "$r" ] && {{ printf \'{m}image %s\\n%s\\n\' "$n" "$r"; break; }}\n'
        "done\n"
        "exit 0"
    )


def parse_state(text: str) -> ContainerState:
    """Pure: the probe's output -> ContainerState."""
    sections: dict[str, list[str]] = {}
    errors: dict[str, str] = {}
    cli: str | None = None
    via_sudo = False
    uid: int | None = None
    user: str | None = None
    groups: tuple[str, ...] = ()
    image_name: str | None = None
    current = ""
    for line in text.splitlines():
        if line.startswith(_MARK):
            kind, _, rest = line[len(_MARK) :].partition(" ")
            if kind == "error":
                name, _, why = rest.partition(" ")
                code, _, detail = why.partition(" ")
                errors[name] = "not installed" if code == "127" else (detail.strip() or f"exit code {code}")
                continue
            if kind == "user":
                words = rest.split()
                uid = int(words[0]) if words and words[0].isdecimal() else None
                user = words[1] if len(words) > 1 else None
                groups = tuple(g for g in words[2].split(",") if g) if len(words) > 2 else ()
                continue
            if kind == "info":
                words = rest.split()
                cli = words[0] if words else None
                via_sudo = "sudo" in words[1:]
            if kind == "image":
                image_name = rest.strip() or None
            current = kind
            sections[current] = []
            continue
        if current:
            sections[current].append(line)
    info_text = "\n".join(sections.get("info", []))
    info = _parse_info(info_text) if cli else RuntimeInfo()
    free = None
    df_fields = " ".join(sections.get("df", [])).split()
    if len(df_fields) >= 4 and df_fields[3].isdecimal():
        free = int(df_fields[3]) * 1024
    image_id: str | None = None
    digests: tuple[str, ...] = ()
    image_line = " ".join(sections.get("image", [])).strip()
    if image_line:
        image_id, _, raw = image_line.partition(" ")
        try:
            parsed = json.loads(raw) if raw.strip() else []
            digests = tuple(str(d) for d in parsed or [])
        except ValueError:
            digests = ()
    cdi = parse_cdi_listing("\n".join(sections.get("cdi", [])))
    record = " ".join(sections.get("smoke", [])).strip() or None
    return ContainerState(
        cli, info, errors, cdi, free, image_id, digests, via_sudo, uid, user, groups, record, image_name
    )


def _parse_info(text: str) -> RuntimeInfo:
    # podman behind a `docker` shim answers `docker info` with podman's own JSON layout
    try:
        data = json.loads(text)
    except ValueError:
        return parse_docker_info(text)
    if isinstance(data, dict) and "store" in data:
        return parse_podman_info(text)
    return parse_docker_info(text)


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


@dataclass
class Applied:
    """What apply did, for verify and the result."""

    attempts: int = 0
    pull_error: str | None = None
    fail: str | None = None  # a failure that ends the step as it is (not retried)
    tag_error: str | None = None
    image_id: str | None = None
    digests: tuple[str, ...] = ()
    smoke: list[str] = field(default_factory=list)
    smoke_error: str | None = None
    smoke_only: bool = False  # the image was present: only the smoke run was (re)done
    source: Any = None  # the Settings of the source the image came from (a mirror, or none)
    retried_login: bool = False


class ContainerStep(Step):
    """Runtime + NVIDIA toolkit + image pulled (through a mirror, with retries) + smoke run."""

    name = "container"
    read_only = False
    ARGS = {
        "image": f"image to pull (default: vars.container_image, else {DEFAULT_IMAGE}); may pin @sha256:...",
        "registry_mirror": "pull MIRROR/<path>:<tag> and tag it back (default: vars/vendor registry_mirror);"
        " a list: each mirror in turn while the ones before fail",
        "pull_fallback_origin": "after every mirror failed, pull from the image's own registry"
        " (default false)",
        "image_size_estimate": f"download size of the image (default: vars, else {DEFAULT_SIZE_ESTIMATE})",
        "unpack_factor": f"free space needed = estimate x this (default {DEFAULT_UNPACK_FACTOR})",
        "pull_retries": f"retries after a failed pull (default {DEFAULT_RETRIES})",
        "retry_backoff": f"seconds before the first retry, doubled each time (default {DEFAULT_BACKOFF})",
        "registry_user_env": "environment variable (on this machine) holding the registry user",
        "registry_password_env": "environment variable holding the registry password or token",
        "smoke": "run the image after pulling (default true)",
        "registry_credentials_file": "YAML/JSON {registry: {username, password}} on this machine, mode 0600",
        "container_sudo": "run the runtime through `sudo -n` when the user cannot use it directly",
        "pull_timeout": f"time one pull attempt may take, e.g. 12h (default {DEFAULT_PULL_TIMEOUT})",
        "manifest_unpack_factor": (
            "free space needed = the manifest's compressed size x this"
            f" (default {DEFAULT_MANIFEST_UNPACK_FACTOR})"
        ),
    }

    def settings(self, host_vars: Mapping[str, Any], vendor_mirror: str | tuple[str, ...] | None) -> Settings:
        """Resolve every setting; a bad value raises StepArgsError naming it."""

        def get(key: str, default: Any = None) -> Any:
            value = self.args.get(key)
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

        image = str(self.args.get("image") or host_vars.get("container_image") or DEFAULT_IMAGE)
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

    def probe_for(self, local_ref: str, also: tuple[str, ...] = ()) -> Probe:
        """The container probe for this image, under its name or the others in `also` (named
        by them so two steps do not clash)."""
        names = "\n".join(dict.fromkeys((local_ref, *also)))
        name = "container:" + hashlib.sha1(names.encode()).hexdigest()[:10]
        return Probe(name, probe_command(local_ref, also))

    def probes(self) -> list[Probe]:
        """Runtime, toolkit, free space and the local image, in the batched fact probe.

        Host vars are not visible here, so the probe looks for the image named by the step's
        (rendered) `image` arg; when vars name another image, plan() probes that one itself.
        """
        try:
            ref = parse_ref(str(self.args.get("image") or DEFAULT_IMAGE))
        except StepArgsError:
            return []
        return [self.probe_for(ref.canonical)]

    def plan(self, ctx: StepContext) -> Plan:
        """Runtime -> toolkit -> image present (digest) -> free space -> pull."""
        vendor_mirror = ctx.host.vendor.registry_mirror if ctx.host.vendor else None
        try:
            s = self.settings(ctx.host.vars, vendor_mirror)
        except StepArgsError as exc:
            return Plan(False, str(exc), failed=True)
        probe = self.probe_for(s.ref.canonical, s.local_names)
        raw = ctx.facts.raw.get(probe.name)
        if raw is None:
            # the image comes from host vars: probe it now (one extra read-only command)
            raw_result = ctx.runner.run(shell.sh_c(probe.command), timeout=120)
            text = raw_result.stdout
        else:
            text = raw.stdout
        state = parse_state(text)
        creds = _credentials(s, ctx.project)
        if isinstance(creds, str):
            return Plan(False, creds, failed=True)
        if creds is not None and s.mirror and s.mirror_scheme == "http":
            return Plan(
                False,
                f"refusing to log in to mirror {s.login_registry} over plain http:// (the password would"
                " cross the network unencrypted): serve the mirror over https:// or remove its entry"
                " from the registry credentials file",
                failed=True,
            )
        manifest = None
        if state.cli and state.image_id is None:
            manifest = fetch_manifest(ctx, s, creds)
        plan = plan_from(state, s, ctx.facts, manifest)
        if plan.changes:
            plan.data = (s, state, creds, manifest)
        return plan

    def apply(self, ctx: StepContext, plan: Plan) -> Any:
        """Login (stdin, temporary auth dir) + pull with retries (mirror, then tag back),
        inspect, smoke run; an image already present gets only the smoke run."""
        s, state, secret, manifest = plan.data
        cli = state.cli
        out = Applied()
        run = ctx.runner.run
        if image_ready(state, s):
            out.smoke_only = True
            out.image_id, out.digests = state.image_id, state.digests
            if s.smoke:  # (run under the name the runtime holds: another one, docker would pull)
                _smoke(ctx, state, state.image_name or s.ref.canonical, out)
                _record_smoke(ctx, state, s.ref.canonical, out)
            return out
        tried: list[str] = []  # (one sentence per source, in order)
        last: tuple[str | None, str | None] = (None, None)  # (fail, pull_error) of the last source
        for n, source in enumerate(s.sources()):
            if n:  # a fallback source: its own credentials (only its entry in the file)
                creds = _credentials(source, ctx.project)
                if isinstance(creds, str) or (creds is not None and source.mirror_scheme == "http"):
                    why = creds if isinstance(creds, str) else "no login over plain http://"
                    tried.append(f"{source.source_name}: not tried ({why})")
                    continue
                secret = creds
                if ctx.progress:
                    ctx.progress(f"step {self.label}: {tried[-1]}; trying {source.source_name}")
            outcome = self._pull_from(ctx, plan, source, state, secret, manifest, out)
            if outcome == "done":
                out.source = source
                break
            if outcome == "stop":
                return out
            tried.append(f"{source.source_name}: {out.fail or out.pull_error}")
            last = (out.fail, None if out.fail else out.pull_error)
            out.fail = out.pull_error = None
        else:
            if s.fallbacks:
                out.pull_error = "; ".join(tried)
            else:  # (one source: its own sentence)
                out.fail, out.pull_error = last
            return out
        s = out.source
        local = s.ref.canonical
        if s.ref.tag and s.pull_ref != local:
            # a mirror's copy, or a `name:tag@sha256:` pin pulled by its digest (which leaves no
            # tag): tag it with the canonical name, which the probe and the smoke run look for
            r = run(state.command([cli, "tag", s.pull_ref, s.ref.tag_target]))
            if not r.ok:
                out.tag_error = last_line(r.stderr, r.exit_code)
                return out
        elif s.mirror:
            local = s.pull_ref  # digest-only pin: a digest reference cannot be a tag target
        r = run(state.command([cli, "image", "inspect", "--format", "{{.Id}} {{json .RepoDigests}}", local]))
        if r.ok and r.stdout.strip():
            state_after = parse_state(f"{_MARK}image\n{r.stdout}")
            out.image_id, out.digests = state_after.image_id, state_after.digests
        if s.smoke:
            _smoke(ctx, state, local, out)
            if out.image_id:  # (kept under the canonical name, which the probe's record is read by)
                _record_smoke(ctx, replace(state, image_id=out.image_id), s.ref.canonical, out)
        return out

    def _pull_from(
        self,
        ctx: StepContext,
        plan: Plan,
        s: Settings,
        state: ContainerState,
        secret: tuple[str, masking.Secret] | None,
        manifest: Manifest | None,
        out: Applied,
    ) -> str:
        """Login + pull from one source with retries: "done", "next" (this source failed in a
        way another may not: unreachable, no such tag there) or "stop" (out.fail says why)."""
        run = ctx.runner.run
        login = (secret[0], s.login_registry) if secret is not None and s.login_registry else None
        stdin = (secret[1].reveal() + "\n").encode() if login and secret is not None else None
        where = "mirror" if s.mirror else "registry"
        delay = s.backoff
        for attempt in range(s.retries + 1):
            out.attempts += 1
            r = run(
                pull_command(state, s.pull_ref, login, int(s.pull_timeout)),
                stdin=stdin,
                timeout=s.pull_timeout + 120,  # the host stops the pull at pull_timeout itself
                on_output=_progress_watcher(ctx, manifest),
            )
            if r.ok:
                out.pull_error = out.fail = None
                return "done"
            text = r.stdout + "\n" + r.stderr
            low = text.lower()
            if _PULL_TIMED_OUT in r.stderr:
                out.fail = pull_timed_out(s, manifest)
                return "stop"
            if login and _LOGIN_FAILED in text:
                why = last_line(text.split(_LOGIN_FAILED, 1)[0], r.exit_code)
                if not any(w in why.lower() for w in _NETWORK_ERRORS):
                    out.fail = f"login to {login[1]} failed: {why}"
                    return "stop"
                out.pull_error = f"the {where} {login[1]} is unreachable (login failed: {why})"
            elif "no space left on device" in low:
                root = state.info.storage_root or "the container runtime's storage root"
                diff = plan.diff or {}
                need, free = diff.get("needed_bytes"), state.free_bytes
                counted = (
                    f"; it needed more than the {format_bytes(need, binary=False)} counted on from the"
                    f" {diff.get('size_from', 'estimate')} ({format_bytes(free, binary=False)} was free"
                    " there before it), or the runtime's temporary download dir (podman: /var/tmp) is on"
                    " a fuller file system"
                    if need and free is not None
                    else ""
                )
                out.fail = (
                    f"pulling {s.pull_ref} failed with no space left on device: free space under {root}"
                    f" and run again{counted} (not retried: the disk stays full until space is freed)"
                )
                return "stop"
            elif "manifest unknown" in low:
                what = (
                    f"no image with the pinned digest {s.ref.digest} (its copy may be another version,"
                    " or none; have the mirror synced, or set pull_fallback_origin: true to pull from"
                    f" {s.ref.registry or 'Docker Hub'})"
                    if s.ref.digest and s.mirror
                    else "no such image or tag"
                )
                out.fail = (
                    f"pulling {s.pull_ref} failed: the {where} has {what} ({last_line(text, r.exit_code)});"
                    " not retried"
                )
                return "next"
            else:
                out.pull_error = last_line(text, r.exit_code)
            if attempt < s.retries:
                time.sleep(delay)
                delay *= 2
        return "next"

    def verify(self, ctx: StepContext, plan: Plan, applied: Any) -> str | None:
        """The image must be present (with the pinned digest) and the smoke run must pass."""
        s = plan.data[0]
        a: Applied = applied
        if a.fail:
            return a.fail
        if a.smoke_only:
            if a.smoke_error:
                return a.smoke_error
            digest = s.ref.digest or (a.digests[0] if a.digests else None)
            plan.msg = (
                f"{s.ref.canonical} is present ({digest or a.image_id}), nothing pulled; smoke run"
                f" (none had passed for it on this host): " + "; ".join(a.smoke)
            )
            plan.diff = {
                "image": s.image,
                "id": a.image_id,
                "digest": digest,
                "access": state_access(plan),
                "smoke": a.smoke,
            }
            return None
        if a.pull_error and s.fallbacks:
            return (
                f"pulling {s.ref.canonical} failed from each of its {len(s.sources())} sources, in order"
                f" ({a.attempts} attempts in all): {a.pull_error}"
            )
        if a.pull_error:
            where = f" from mirror {s.mirror}" if s.mirror else ""
            return f"pulling {s.pull_ref}{where} failed after {a.attempts} attempt(s): {a.pull_error}"
        s = a.source or s  # (the source the image came from: a fallback mirror, or none)
        if a.tag_error:
            return f"tagging {s.pull_ref} as {s.ref.tag_target} failed: {a.tag_error}"
        if not a.image_id:
            return f"{s.ref.canonical} is not present after the pull"
        if s.ref.digest and s.ref.digest not in a.digests:
            got = ", ".join(a.digests) or "unknown"
            return f"{s.ref.canonical} was pulled but its digest is {got}, not {s.ref.digest}"
        if a.smoke_error:
            return a.smoke_error
        digest = a.digests[0] if a.digests else None
        if s.mirror and not s.ref.digest:
            plan.checks.append(mirror_digest_check(s, digest or a.image_id or "?"))
        via = f" via mirror {s.mirror}" if s.mirror else ""
        tries = f" after {a.attempts} attempts" if a.attempts > 1 else ""
        plan.msg = f"pulled {s.image}{via}{tries} ({digest or a.image_id}); " + "; ".join(a.smoke)
        plan.diff = {
            "image": s.image,
            "before": None,
            "after": {"id": a.image_id, "digest": digest, "pulled_from": s.pull_ref, "attempts": a.attempts},
            "smoke": a.smoke,
        }
        return None


def state_access(plan: Plan) -> str:
    """How the runtime is reached, from the plan's probe state."""
    state: ContainerState = plan.data[1]
    return state.access


def mirror_digest_check(s: Settings, got: str) -> Check:
    """A tag pulled through a mirror is whatever the mirror serves under it (a stale copy, or
    another image): a `warn` saying so, until the image pins the digest its registry lists
    (a pinned digest is checked by the runtime itself)."""
    origin = s.ref.registry or "Docker Hub"
    return Check(
        "image digest from mirror",
        f"{s.ref.canonical} as {origin} serves it",
        f"{got} as mirror {s.mirror} serves it (not compared with {origin})",
        "warn",
        f"a mirror may serve a stale or different image under the tag {s.ref.tag or 'latest'}; compare"
        f" the digest with the one {origin} lists for it, then pin it: image: {s.ref.canonical}@sha256:...",
    )


def mirror_copy(state: ContainerState, s: Settings) -> tuple[Settings, str] | None:
    """Pure: (the mirror source, digest) when the present image, not pinned by digest, came
    through one of the configured mirrors (a repo digest names the mirror's copy of its
    repository); None when it is pinned or came from elsewhere."""
    if s.ref.digest:
        return None
    for d in state.repo_digests:
        repo, _, digest = d.rpartition("@")
        src = next((x for x in s.sources() if x.mirror and repo == f"{x.mirror}/{x.ref.repository}"), None)
        if src is not None:
            return src, digest
    return None


def pull_timed_out(s: Settings, manifest: Manifest | None) -> str:
    """The sentence for a pull the host stopped at pull_timeout: how slow the link must have
    been, that finished layers are kept, and the setting to raise."""
    t = s.pull_timeout
    limit = f"{t / 3600:g} h" if t >= 3600 else f"{t / 60:g} min" if t >= 60 else f"{t:g} s"
    size = manifest.size if manifest else None
    rate = (
        f" (below {format_bytes(int(size / s.pull_timeout), binary=False)}/s on average for its"
        f" {format_bytes(size, binary=False)} of layers)"
        if size
        else ""
    )
    return (
        f"pulling {s.pull_ref} did not finish within pull_timeout ({limit}) and was stopped: the"
        f" link is too slow{rate} or the download stalled; layers finished so far are kept, so a rerun"
        " continues from them; on a slow link set vars.pull_timeout higher (e.g. 12h)"
    )


def image_ready(state: ContainerState, s: Settings) -> bool:
    """The image is present locally (with the pinned digest, when one is pinned)."""
    return state.image_id is not None and (not s.ref.digest or s.ref.digest in state.digests)


def pull_command(
    state: ContainerState, pull_ref: str, login: tuple[str, str] | None, limit: int | None = None
) -> str:
    """One pull attempt (stderr folded into stdout). With `login` (user, registry): `login
    --password-stdin` (the password is this command's stdin) into a fresh 0700 temporary dir
    (DOCKER_CONFIG for docker, REGISTRY_AUTH_FILE for podman), used by the pull and removed by
    a trap when the command ends: no credential stays on the host. A failed login prints
    `##gpuonboard-login-failed` after its error.

    The pull stops when this session ends early (Ctrl-C or SIGTERM here, a dropped link): see
    _pull_until_session_ends. The channel's stderr is fd 3 inside, for its watcher, which also
    stops a pull running longer than `limit` seconds (printing `##gpuonboard-pull-timed-out` on
    that stderr)."""
    cli = state.cli or "docker"
    pre = "sudo -n " if state.sudo else ""
    pull = shell.join([cli, "pull", pull_ref])
    if login is None:
        # the first line is what the run log shows
        script = f": {pull}\n" + _pull_until_session_ends(state, pull, "", limit=limit)
        return shell.merge_stderr(f"{shell.sh_c(script)} 3>&2")
    user, registry = login
    env = 'env DOCKER_CONFIG="$d" REGISTRY_AUTH_FILE="$d/auth.json" '
    login_cmd = shell.join([cli, "login", "--username", user, "--password-stdin", registry])
    logout_cmd = shell.join([cli, "logout", registry])
    # docker keeps a login in the platform's default credential helper (secretservice, pass)
    # unless the config already holds an auth entry: start the temporary config with one, so
    # the login lands in the file that the trap removes (and log out in the trap as well)
    seed = json.dumps({"auths": {registry: {}}})
    script = (
        # the first line is what the run log shows: say what runs (no secret in it)
        f"umask 077; : {login_cmd} then {pull} with a temporary auth dir\n"
        'b=${XDG_RUNTIME_DIR:-/dev/shm}; { [ -d "$b" ] && [ -w "$b" ]; } || b=${TMPDIR:-/tmp}\n'
        'd=$(mktemp -d "$b/gpuonboard-auth.XXXXXX") || { echo "cannot create a temporary auth dir under $b";'
        f" echo '{_LOGIN_FAILED}'; exit 1; }}\n"
        f"printf '%s\\n' {shell.quote(seed)} > \"$d/config.json\"\n"
        + _pull_until_session_ends(
            state,
            f"{env}{pull}",
            f'{pre}{env}{logout_cmd} >/dev/null 2>&1; rm -rf "$d"',
            f"if ! {pre}{env}{login_cmd} 2>&1; then echo '{_LOGIN_FAILED}'; exit 1; fi\n",
            limit,
        )
    )
    return shell.merge_stderr(f"{shell.sh_c(script)} 3>&2")


def _pull_until_session_ends(
    state: ContainerState, pull: str, cleanup: str, before: str = "", limit: int | None = None
) -> str:
    """Shell text: run `before` (the login), then `pull` in the background (in its own process
    group when `setsid` exists) and wait for it; `cleanup` runs on exit however it comes.

    An SSH session's command outlives the client: sshd sends no signal to a command without
    a tty, and the pull's stdin (the password) is at its end already. So a watcher writes a
    newline to the channel's stderr (fd 3) every second; once this machine's run has gone
    (Ctrl-C, SIGTERM, a dropped link) sshd has closed that pipe, the write fails, and the
    watcher stops the pull (TERM, KILL 5 s later), whose end runs the exit trap (the logout,
    the temporary auth dir removed); so it does when this shell has gone (killed). Through
    sudo, `sudo -n kill` stops the root-owned pull. After `limit` seconds (its beats counted)
    the watcher says so on fd 3 and stops the pull the same way."""
    pre = "sudo -n " if state.sudo else ""
    sudo_kill = ' || sudo -n kill -s "$1" -- "-$p" 2>/dev/null' if state.sudo else ""
    return (
        "p=; w=\n"
        'gpo_stop_pull() { [ -n "$p" ] || return 0\n'
        f'  kill -s "$1" -- "-$p" 2>/dev/null{sudo_kill} || kill -s "$1" "$p" 2>/dev/null; }}\n'
        # KILL: a TERM reaching the watcher before it drops this shell's TERM trap is lost
        'gpo_end() { [ -z "$w" ] || kill -s KILL "$w" 2>/dev/null; gpo_stop_pull TERM'
        + (f"; {cleanup}" if cleanup else "")
        + "; }\n"
        "trap gpo_end EXIT\n"
        # a write to the closed channel (a marker, the shell's `Terminated` job note) would
        # kill this shell with SIGPIPE, skipping the exit trap: trapped, it exits through it
        "trap 'exit 130' HUP INT TERM; trap 'exit 141' PIPE\n"
        + before
        + "s=; command -v setsid >/dev/null 2>&1 && s=setsid\n"
        f"$s {pre}{pull} 3>&- 2>&1 &\n"
        "p=$!\n"
        "( trap '' PIPE; n=0\n"
        "  while sleep 1 </dev/null >/dev/null 2>&1 3>&- && kill -0 $$; do printf '\\n' >&3 || break\n"
        + (
            f"    n=$((n+1)); [ $n -lt {int(limit)} ] ||"
            f" {{ printf '%s\\n' '{_PULL_TIMED_OUT}' >&3; break; }}\n"
            if limit
            else ""
        )
        + "  done\n"
        "  gpo_stop_pull TERM; sleep 5 3>&-; gpo_stop_pull KILL ) </dev/null >/dev/null 2>&1 &\n"
        "w=$!\n"
        'wait "$p"; rc=$?; p=\n'
        'exit "$rc"'
    )


def _record_smoke(ctx: StepContext, state: ContainerState, local: str, out: Applied) -> None:
    """Record a passed smoke run on the host (no secrets), or drop the record after a failure."""
    path = smoke_file(local)
    if out.smoke_error:
        ctx.runner.run(shell.sh_c(f'rm -f "{path}"'), timeout=60)
        return
    key = smoke_key(state, host_gpu_count(ctx.facts))
    ctx.runner.run(
        shell.sh_c(f'f="{path}"; mkdir -p "${{f%/*}}" && printf \'%s\\n\' {shell.quote(key)} > "$f"'),
        timeout=60,
    )


def _credentials(s: Settings, project: Path) -> tuple[str, masking.Secret] | str | None:
    """(user, Secret password) for the login registry, from this machine's environment
    (registry_user_env/registry_password_env) else the credentials file; None when neither
    is configured (or the file has no entry for that registry); a message when unusable.

    The environment's credentials are for the image's own registry (e.g. nvcr.io): with a
    mirror they are never used (never sent to the mirror); only a credentials-file entry
    named for the mirror's host logs in to the mirror."""
    if s.user_env or s.password_env:
        if not (s.user_env and s.password_env):
            return "set both registry_user_env and registry_password_env (or neither)"
        if s.mirror:
            if not s.credentials_file:
                return None
            return read_credentials_file(Path(s.credentials_file).expanduser(), project, s.login_registry)
        user, password = os.environ.get(s.user_env), os.environ.get(s.password_env)
        if not user or not password:
            missing = s.user_env if not user else s.password_env
            return f"registry credentials: environment variable {missing} is not set on this machine"
        return user, masking.Secret(password)
    if not s.credentials_file:
        return None
    return read_credentials_file(Path(s.credentials_file).expanduser(), project, s.login_registry)


def read_credentials_file(
    path: Path, project: Path, registry: str | None
) -> tuple[str, masking.Secret] | str | None:
    """`{registry: {username, password}}` (YAML or JSON) from a file only its owner can read."""
    if not path.is_absolute():
        path = project / path
    try:
        mode = path.stat().st_mode & 0o777
    except OSError as exc:
        return f"registry credentials file {path}: {exc.strerror or exc}"
    if refused := machine.exposed("registry credentials file", str(path), mode, "passwords"):
        return refused
    try:
        # (numbers as YAML reads them: a password that is no text gets its own sentence below)
        data = load_yaml(path, StepArgsError, "registry credentials file", strict_numbers=False)
    except StepArgsError as exc:
        return _without_yaml_problem(str(exc))
    if not isinstance(data, dict):
        return f"registry credentials file {path}: expected a mapping of registry -> {{username, password}}"
    if registry is None:
        return None
    entry = None
    for key, value in data.items():
        # docker logs in per host: `HOST[:PORT]`, as written or with the mirror's /prefix (as in
        # registry_mirror), in any case
        if mirror_host(str(key)).split("/", 1)[0].lower() == registry.lower():
            entry = value
    if entry is None:
        return None  # no entry for this registry: pull anonymously
    if not (isinstance(entry, dict) and entry.get("username") and entry.get("password")):
        return f"registry credentials file {path}: the entry for {registry} needs username and password"
    for key in ("username", "password"):
        if not isinstance(entry[key], str):  # (the value is not shown: it may be the password)
            return (
                f"registry credentials file {path}: the {key} for {registry} is read as a"
                f" {_yaml_kind(entry[key])}, not as text (YAML turns 0123 into 83, yes into true);"
                f" put it in single quotes: {key}: '...'"
            )
    return str(entry["username"]), masking.Secret(str(entry["password"]))


def _yaml_kind(value: object) -> str:
    """What YAML made of an unquoted value: `number`, `true/false value`, `date`, ..."""
    if isinstance(value, bool):
        return "true/false value"
    if isinstance(value, int | float):
        return "number"
    return {"date": "date", "datetime": "date and time"}.get(type(value).__name__, type(value).__name__)


def _without_yaml_problem(message: str) -> str:
    """A YAML error about the credentials file without PyYAML's words for the problem: they
    quote the text it stopped at, and an unquoted password starting with `*` or `!` is read as
    an alias or a tag named by the password itself ("found undefined alias 'S3cret'")."""
    head, sep, _ = message.partition(": invalid YAML:")
    if not sep:
        return message
    return (
        f"registry credentials file {head}: invalid YAML (the problem is not shown, as it may quote a"
        " password); put each username and password in single quotes, e.g. password: '...' (a value"
        " starting with *, !, &, %, @ or ` is YAML syntax, not text)"
    )


def fetch_manifest(ctx: StepContext, s: Settings, creds: tuple[str, masking.Secret] | None) -> Manifest:
    """The image's manifest from the registry (the mirror when set), asked from the host with
    curl; an index is followed to its linux/amd64 image. Read-only; errors are in .error."""
    registry = s.mirror or (None if s.ref.docker_hub else s.ref.registry)
    host, repo = registry_api(registry, s.ref.repository)
    if s.mirror_scheme == "http":
        schemes: tuple[str, ...] = ("http",)
    elif host.split(":")[0] in ("localhost", "127.0.0.1", "::1"):
        schemes = ("https", "http")
    else:
        schemes = ("https",)
    stdin = b""
    if creds is not None:
        stdin = shell.curl_config({"user": masking.Secret(f"{creds[0]}:{creds[1].reveal()}")})
    reference = s.ref.digest or s.ref.tag or "latest"
    for _ in range(2):
        r = ctx.runner.run(manifest_command(host, repo, reference, schemes), stdin=stdin, timeout=180)
        m = parse_manifest(r.stdout)
        if m.platform_digest is None:
            return m
        reference = m.platform_digest
    return Manifest(error="the manifest list points to another list")


def _progress_watcher(ctx: StepContext, manifest: Manifest | None) -> Any:
    """An on_output callback turning the pull's output into the terminal's live line."""
    if ctx.progress is None:
        return None
    report = ctx.progress
    sizes = dict(manifest.layers) if manifest and manifest.layers else None
    start = time.monotonic()
    seen: list[str] = []
    last = [0.0]

    def on_output(chunk: bytes) -> None:
        seen.append(chunk.decode("utf-8", "replace"))
        now = time.monotonic()
        if now - last[0] < PROGRESS_EVERY:
            return
        last[0] = now
        p = parse_pull_progress("".join(seen).splitlines(), sizes)
        report(format_pull_progress(p, now - start))

    return on_output


_GPU_CHECK_OK = "##gpuonboard-gpu-check-ok"


def gpu_python_check(n: int) -> str:
    """The `python -c` text run in the image on a GPU host: torch sees exactly n GPUs, a small
    matmul on each gives the right answer, NCCL is available. Explicit checks that exit non-zero
    (never `assert`: an image with PYTHONOPTIMIZE set would skip them); the last line, printed
    only when every check passed, carries a marker the step requires."""
    return (
        "import sys, torch, torch.distributed as d\n"
        "n = torch.cuda.device_count()\n"
        f"if n != {int(n)}: sys.exit(f'torch sees {{n}} GPUs, nvidia-smi lists {int(n)}')\n"
        "for i in range(n):\n"
        "    a = torch.ones(256, 256, device=f'cuda:{i}')\n"
        "    s = (a @ a).sum().item()\n"
        "    if s != 256.0 ** 3: sys.exit(f'matmul on cuda:{i} gave {s}')\n"
        "if not d.is_nccl_available(): sys.exit('torch.distributed has no NCCL')\n"
        f"print(f'torch sees {{n}} GPUs; matmul ok on each; NCCL available {_GPU_CHECK_OK}')"
    )


def gpu_flags(state: ContainerState) -> list[str]:
    """How a container gets every GPU: docker's `--gpus all` (the NVIDIA toolkit's hook), podman's
    CDI device `nvidia.com/gpu=all` (podman before 5.0 accepts `--gpus` and ignores it, podman
    behind the `docker` shim included)."""
    if state.info.engine == "podman" or state.cli == "podman":
        return ["--device", "nvidia.com/gpu=all"]
    return ["--gpus", "all"]


def gpu_check_command(state: ContainerState, image: str, n: int) -> str:
    """`docker run --rm --gpus all IMAGE python -c CHECK` (torch sees n GPUs, matmul, NCCL)."""
    return state.command(
        [state.cli or "docker", "run", "--rm", *gpu_flags(state), image, "python", "-c", gpu_python_check(n)]
    )


def _smoke(ctx: StepContext, state: ContainerState, image: str, out: Applied) -> None:
    """Plain run, then on a GPU host: the container lists every GPU the host lists, and the
    python check passed (its marker line printed); any shortfall sets out.smoke_error."""
    cli = state.cli or "docker"
    r = ctx.runner.run(state.command([cli, "run", "--rm", image, "true"]), timeout=300)
    if not r.ok:
        out.smoke_error = (
            f"smoke run `{cli} run --rm {image} true` failed: {last_line(r.stderr, r.exit_code)}"
        )
        return
    out.smoke.append("plain container run ok")
    host_n = host_gpu_count(ctx.facts)
    if host_n is None:  # never "skipped": the GPUs may be there, unseen by a broken driver
        what, advice = driver_failure(ctx.facts)
        out.smoke_error = (
            f"GPU smoke run not possible: {what} on the host, so whether containers see its GPUs is"
            f" unknown; {advice}"
        )
        return
    if not host_n:
        out.smoke.append("GPU smoke run skipped: no NVIDIA GPU on this host (nvidia-smi lists none)")
        return
    r = ctx.runner.run(
        state.command([cli, "run", "--rm", *gpu_flags(state), image, "nvidia-smi", "-L"]), timeout=300
    )
    if not r.ok:
        out.smoke_error = (
            f"GPU smoke run (nvidia-smi -L in the container) failed: {last_line(r.stderr, r.exit_code)}"
        )
        return
    n = len([line for line in r.stdout.splitlines() if line.startswith("GPU ")])
    if n < host_n:
        out.smoke_error = (
            f"GPU smoke run: the container sees {n} of the {host_n} GPUs nvidia-smi lists on the host;"
            " check the NVIDIA container toolkit's configuration and NVIDIA_VISIBLE_DEVICES"
        )
        return
    out.smoke.append(f"container sees {n} GPUs")
    r = ctx.runner.run(gpu_check_command(state, image, host_n), timeout=600)
    if not r.ok:
        out.smoke_error = f"GPU python check in the container failed: {last_line(r.stderr, r.exit_code)}"
        return
    done = [line for line in r.stdout.splitlines() if _GPU_CHECK_OK in line]
    if not done:
        out.smoke_error = (
            "GPU python check in the container did not finish (exit 0 without its final line:"
            f" {last_line(r.stdout, r.exit_code)})"
        )
        return
    out.smoke.append(done[-1].replace(_GPU_CHECK_OK, "").strip())


def plan_from(state: ContainerState, s: Settings, facts: Facts, manifest: Manifest | None = None) -> Plan:
    """Pure: decide from the probe (and the registry's manifest, when fetched) what to do."""
    osr = facts.os_release
    who = state.user or "$USER"
    usermod = f"sudo usermod -aG docker {who} (then log in again)"
    if state.cli is None:
        why = ", ".join(f"{k}: {v}" for k, v in state.errors.items()) or "neither docker nor podman found"
        installed = [k for k, v in state.errors.items() if v != "not installed"]
        denied = [k for k, v in state.errors.items() if "permission denied" in v.lower()]
        if denied:
            fix = (
                f"{who} may not use {denied[0]} without sudo; add the user to the docker group: {usermod},"
                " or allow `sudo -n` for it and set vars.container_sudo: true"
            )
        elif installed:
            fix = (
                f"{installed[0]} is installed but does not answer; start it (sudo systemctl enable --now"
                f" {installed[0]}) or add the user to the docker group (sudo usermod -aG docker $USER)"
            )
        else:
            fix = "install Docker: " + install_hint(_DOCKER_INSTALL, osr)
        return Plan(False, f"no container runtime answered ({why}); {fix}", failed=True)
    engine = state.info.engine or state.cli
    version = state.info.server_version or "?"
    checks: list[Check] = []
    if state.sudo:
        if not s.container_sudo:
            return Plan(
                False,
                f"{who} can use {state.cli} only through sudo (permission denied on its socket); add the"
                f" user to the docker group: {usermod}, or set vars.container_sudo: true to run it"
                " through `sudo -n`",
                failed=True,
            )
        checks.append(
            Check(
                "container runtime without sudo",
                f"{who} can run {state.cli}",
                "only through sudo -n",
                "warn",
                f"training users will need sudo for every container; {usermod}",
            )
        )
    has_gpus = bool(facts.gpu and facts.gpu.gpus)
    if has_gpus and not state.nvidia_toolkit:
        configure = _TOOLKIT_CONFIGURE["podman" if engine == "podman" else "docker"]
        return Plan(
            False,
            f"{engine} {version} has no NVIDIA container toolkit (no 'nvidia' runtime, no nvidia CDI spec"
            f" under /etc/cdi or /var/run/cdi), so containers cannot use the GPUs; install it:"
            f" {install_hint(_TOOLKIT_INSTALL, osr)} && {configure}",
            failed=True,
        )
    present = state.image_id is not None
    if image_ready(state, s):
        digest = s.ref.digest if s.ref.digest else (state.digests[0] if state.digests else None)
        gpus = host_gpu_count(facts)
        found = {"image": s.image, "id": state.image_id, "digest": digest, "access": state.access}
        came = mirror_copy(state, s)
        if came is not None:  # (the pull's warning stays until the digest is pinned)
            checks.append(mirror_digest_check(came[0], came[1]))
        if s.smoke and state.smoke_record != smoke_key(state, gpus):
            return Plan(
                True,
                f"smoke run {s.ref.canonical}: present ({digest or state.image_id}), nothing to pull, but"
                " no smoke run has passed for it on this host",
                diff=found,
                checks=checks,
                data=(s, state),
            )
        return Plan(
            False,
            f"{s.ref.canonical} is present ({digest or state.image_id}) on {engine} {version};"
            " nothing pulled",
            diff=found,
            checks=checks,
        )
    size = manifest.size if manifest else None
    if size is not None:
        factor = s.manifest_factor
        basis = f"registry manifest: {format_bytes(size, binary=False)} compressed x {factor} for unpacking"
        need = int(size * factor)
    else:
        why_not = f" ({manifest.error})" if manifest and manifest.error else ""
        factor = s.unpack_factor
        basis = (
            f"image estimate {format_bytes(s.size_estimate, binary=False)} x {factor} for unpacking;"
            f" manifest size unavailable{why_not}"
        )
        need = int(s.size_estimate * factor)
    root = state.info.storage_root or "the storage root"
    if state.free_bytes is not None and state.free_bytes < need:
        return Plan(
            False,
            f"not enough space to pull {s.image}: {format_bytes(state.free_bytes, binary=False)} free under"
            f" {root}, {format_bytes(need, binary=False)} needed ({basis}); free space or set"
            f" vars.{'manifest_unpack_factor' if size is not None else 'image_size_estimate'}",
            failed=True,
            checks=checks,
        )
    via = f" via mirror {s.mirror}" if s.mirror else ""
    why = "digest differs, " if present else ""
    return Plan(
        True,
        f"pull {s.image}{via} ({why}{format_bytes(state.free_bytes, binary=False)} free under {root},"
        f" {format_bytes(need, binary=False)} needed from the {basis.split(':')[0] if size else 'estimate'})",
        diff={
            "image": s.image,
            "before": state.image_id,
            "pull": s.pull_ref,
            "size_from": "manifest" if size is not None else "estimate",
            "needed_bytes": need,
            "access": state.access,
        },
        checks=checks,
        data=(s, state),
    )
