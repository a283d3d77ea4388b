"""The container runtime's state on a host: the ONE read-only probe (sh/container_probe.sh:
docker, else podman, through `sudo -n` when only that answers; CDI specs, free space under the
storage root, the local image under any of its names, the host's record of a passed smoke run),
its pure parser to `ContainerState`, and `Applied`, what the step's apply did."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from gpuonboard import sh, shell
from gpuonboard.connection.gather import Facts
from gpuonboard.facts.container import RuntimeInfo, parse_cdi_listing, parse_docker_info, parse_podman_info

_MARK = "##gpuonboard-container "


# where the host records a passed smoke run (no secrets): one file per image name
SMOKE_DIR = "${XDG_CACHE_HOME:-$HOME/.cache}/gpuonboard/container-smoke"


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
    """The read-only probe (sh/container_probe.sh): runtime info, CDI specs, df of the storage
    root, the local image (under `local_ref`, else the first of `also` the runtime holds: see
    local_names), and the host's record of a passed smoke run for it (kept under `local_ref`).
    Shell text (run as a probe, or with `sh -c`): its values first, the names as `set --`."""
    names = shell.join(dict.fromkeys((local_ref, *also)))
    # the record's path in double quotes: $HOME / $XDG_CACHE_HOME expand on the host
    values = f'M={shell.quote(_MARK)}; F="{smoke_file(local_ref)}"\nset -- {names}\n'
    return values + sh.load("container_probe")


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
