"""The container runtime's state on a host: the ONE read-only probe (sh/container_probe.sh:
docker, else podman, through `sudo -n` when only that answers; CDI specs, free space under the
storage root, the local image under any of its names, the host's record of a passed smoke run),
its pure parser to `ContainerState`, and `Applied`, what the step's apply did."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any

from gpuonboard import sh, shell
from gpuonboard.connection.gather import Facts
from gpuonboard.facts.container import RuntimeInfo, parse_cdi_listing, parse_docker_info, parse_podman_info

_MARK = "##gpuonboard-container "

# `image inspect --format` of the probe and of the step after a pull: id, repo digests, platform
INSPECT_FORMAT = "{{.Id}} {{json .RepoDigests}} {{.Os}}/{{.Architecture}}"


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
    hook: str | None = None  # the NVIDIA Container Toolkit's nvidia-container-runtime-hook
    toolkit_mode: str | None = None  # its config.toml's `mode` (auto, legacy, csv, cdi), if set
    tegra: bool = False  # a Tegra system (Jetson, IGX iGPU): the toolkit's "auto" is csv there
    image_platform: str | None = None  # the local image's os/architecture (linux/amd64)
    others: tuple[str, ...] = ()  # runtimes the step does not drive found on PATH (apptainer, enroot)

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
    def podman(self) -> bool:
        """The engine is podman (itself, or behind a `docker` shim)."""
        return self.info.engine == "podman" or self.cli == "podman"

    @property
    def nvidia_cdi(self) -> bool:
        """An nvidia CDI spec under /etc/cdi or /var/run/cdi (podman, docker >= 25 with CDI)."""
        return any("nvidia" in s.rsplit("/", 1)[-1] for s in self.cdi_specs)

    @property
    def nvidia_toolkit(self) -> bool:
        """The NVIDIA Container Toolkit can give containers the GPUs: an nvidia CDI spec, the
        `nvidia` runtime, or (docker) only its hook on the host: docker's `--gpus` needs just
        `nvidia-container-runtime-hook` on dockerd's PATH (moby daemon/nvidia_linux.go), not
        the runtime entry that `nvidia-ctk runtime configure` writes. Except where the hook
        runs in another mode than legacy (csv on Tegra, cdi: see hook_mode): it refuses
        `--gpus`, so docker needs that `nvidia` runtime entry (gpu_flags' `--runtime nvidia`;
        without it docker says "unknown or invalid runtime name: nvidia")."""
        if self.info.nvidia_runtime:
            return True
        if self.needs_nvidia_runtime:
            return False
        return self.nvidia_cdi or (self.hook is not None and not self.podman)

    @property
    def needs_nvidia_runtime(self) -> bool:
        """docker (not podman) whose NVIDIA hook refuses `--gpus` (a mode other than legacy), so
        its containers get the GPUs only through the `nvidia` runtime entry."""
        return not self.podman and self.hook_mode != "legacy"

    @property
    def hook_mode(self) -> str:
        """The mode the toolkit's hook resolves to: the configured one, else (`auto`) csv on a
        Tegra system and legacy elsewhere (nvidia-container-toolkit internal/info/auto.go). Any
        mode but legacy refuses docker's `--gpus` ("invoking the NVIDIA Container Runtime Hook
        directly (e.g. specifying the docker --gpus flag) is not supported")."""
        if self.toolkit_mode and self.toolkit_mode != "auto":
            return self.toolkit_mode
        return "csv" if self.tegra else "legacy"

    @property
    def digests(self) -> tuple[str, ...]:
        """sha256 digests of the local image's manifests (from `repo@sha256:...`)."""
        return tuple(d.rpartition("@")[2] for d in self.repo_digests if "@" in d)


# container runtimes the probe looks for that the step does not drive (HPC boxes run these)
OTHER_RUNTIMES = ("apptainer", "singularity", "enroot")


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
    unreached = _server_errors(info_text) if cli else None
    if cli and unreached:  # (the probe itself says so; this guards an older probe's output)
        errors[cli], cli, info = unreached, None, RuntimeInfo()
    free = None
    df_fields = " ".join(sections.get("df", [])).split()
    if len(df_fields) >= 4 and df_fields[3].isdecimal():
        free = int(df_fields[3]) * 1024
    image_id, digests, platform = _image(" ".join(sections.get("image", [])).strip())
    cdi = parse_cdi_listing("\n".join(sections.get("cdi", [])))
    record = " ".join(sections.get("smoke", [])).strip() or None
    hook, mode, tegra = _toolkit(sections.get("toolkit", []))
    return ContainerState(
        cli,
        info,
        errors,
        cdi,
        free,
        image_id,
        digests,
        via_sudo,
        uid,
        user,
        groups,
        record,
        image_name,
        hook,
        mode,
        tegra,
        platform,
        tuple(w for w in (x.strip() for x in sections.get("other", [])) if w in OTHER_RUNTIMES),
    )


def _image(line: str) -> tuple[str | None, tuple[str, ...], str | None]:
    """The image part (INSPECT_FORMAT): id, repo digests, `os/architecture` (None when absent
    or not known: an image whose config gives no os and architecture prints a bare "/")."""
    if not line:
        return None, (), None
    image_id, _, rest = line.partition(" ")
    platform: str | None = None
    head, _, last = rest.rpartition(" ")
    # (the platform: a last word with a "/" that is no part of the digests' JSON)
    if "/" in last and not any(c in last for c in '"[]'):
        rest = head
        platform = last if re.fullmatch(r"[^/\s]+/[^/\s]+", last) else None
    try:
        parsed = json.loads(rest) if rest.strip() else []
        digests = tuple(str(d) for d in parsed or [])
    except ValueError:
        digests = ()
    return image_id, digests, platform


def _toolkit(lines: list[str]) -> tuple[str | None, str | None, bool]:
    """The probe's toolkit part: the hook's path, `mode WORD`, `tegra`."""
    hook = next((ln.strip() for ln in lines if ln.strip().startswith("/")), None)
    mode = next((ln.split()[1] for ln in lines if ln.startswith("mode ") and len(ln.split()) > 1), None)
    return hook, mode, any(ln.strip() == "tegra" for ln in lines)


def _server_errors(text: str) -> str | None:
    """docker's own words when its info reached no daemon: `docker info --format '{{json .}}'`
    exits 0 then, printing `{"ServerErrors":["Cannot connect to the Docker daemon ..."],
    "ClientInfo":{...}}` (docker/cli cli/command/system/info.go; docker/cli#5900). None when a
    server answered (or the text is no such JSON)."""
    try:
        data = json.loads(text)
    except ValueError:
        return None
    errs = data.get("ServerErrors") if isinstance(data, dict) else None
    if not errs or not isinstance(errs, list):
        return None
    return "; ".join(str(e) for e in errs)


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
