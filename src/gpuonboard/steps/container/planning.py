"""The container step's plan (pure, from the probe's state, the settings and the registry's
manifest): which runtime answers and how the user reaches it, the NVIDIA container toolkit
(with the install commands for the host's OS family), the image present with the pinned digest
and a passed smoke run, free space for a pull; and the mirror-digest warning."""

from __future__ import annotations

from collections.abc import Mapping

from gpuonboard.connection.gather import Facts
from gpuonboard.steps.base import Check, Plan
from gpuonboard.steps.container.pull import Manifest, oci_arch
from gpuonboard.steps.container.settings import Settings
from gpuonboard.steps.container.state import ContainerState, host_gpu_count, smoke_key
from gpuonboard.units import format_bytes

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


def image_ready(state: ContainerState, s: Settings) -> bool:
    """The image is present locally (with the pinned digest, when one is pinned)."""
    return state.image_id is not None and (not s.ref.digest or s.ref.digest in state.digests)


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


def no_runtime_plan(state: ContainerState, os_release: Mapping[str, str], who: str, usermod: str) -> Plan:
    """The failed plan when neither docker nor podman answered: what each said, and the fix
    (the docker group or sudo for a refused socket, starting an installed runtime, installing)."""
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
        fix = "install Docker: " + install_hint(_DOCKER_INSTALL, os_release)
        if state.others:  # an HPC box: its own runtime is there, which this step does not drive
            fix = (
                f"this host has {' and '.join(state.others)}, which gpuonboard's container step does"
                " not drive (it runs docker or podman): run the image with it (apptainer / singularity:"
                " `exec --nv docker://IMAGE`; enroot: `enroot import docker://nvcr.io#nvidia/pytorch:TAG`"
                f" with Slurm's pyxis), or {fix}"
            )
    return Plan(False, f"no container runtime answered ({why}); {fix}", failed=True)


def no_toolkit_plan(state: ContainerState, os_release: Mapping[str, str], engine: str, version: str) -> Plan:
    """The failed plan for a GPU host whose containers cannot get the GPUs: no toolkit at all
    (install and configure it), docker whose toolkit hook refuses `--gpus` (csv, cdi mode) with
    no `nvidia` runtime entry (configure it), or podman with the toolkit's hook but no CDI
    spec, which its `--device nvidia.com/gpu=all` needs (generate one)."""
    configure = _TOOLKIT_CONFIGURE["podman" if state.podman else "docker"]
    if state.needs_nvidia_runtime and (state.hook is not None or state.nvidia_cdi):
        auto = state.toolkit_mode in (None, "auto")
        tegra = " (its 'auto' on a Tegra system)" if state.tegra and auto else ""
        return Plan(
            False,
            f"{engine} {version} cannot give containers the GPUs: the NVIDIA container toolkit's hook"
            f" runs in {state.hook_mode} mode{tegra}, which refuses docker's --gpus, and docker has no"
            " 'nvidia' runtime for `--runtime nvidia` (`nvidia-ctk runtime configure` has not run);"
            " run `sudo nvidia-ctk runtime configure --runtime=docker` and restart docker (sudo"
            " systemctl restart docker), then rerun",
            failed=True,
        )
    if state.hook is not None:
        return Plan(
            False,
            f"{engine} {version} cannot give containers the GPUs: the NVIDIA container toolkit is installed"
            f" ({state.hook}) but there is no nvidia CDI spec under /etc/cdi or /var/run/cdi, which"
            f" podman's GPU device needs; generate it: {configure}",
            failed=True,
        )
    return Plan(
        False,
        f"{engine} {version} has no NVIDIA container toolkit (no nvidia-container-runtime-hook, no"
        " 'nvidia' runtime, no nvidia CDI spec under /etc/cdi or /var/run/cdi), so containers cannot"
        f" use the GPUs; install it: {install_hint(_TOOLKIT_INSTALL, os_release)} && {configure}",
        failed=True,
    )


def present_plan(
    state: ContainerState, s: Settings, facts: Facts, checks: list[Check], engine: str, version: str
) -> Plan:
    """The plan for an image present with the pinned digest: nothing to do, or only the smoke
    run when none has passed for it on this host (for today's runtime, storage, id, GPUs)."""
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
        f"{s.ref.canonical} is present ({digest or state.image_id}) on {engine} {version}; nothing pulled",
        diff=found,
        checks=checks,
    )


def unknown_space_check(state: ContainerState, need: int) -> Check:
    """A `warn` for a pull whose free space could not be read (the runtime's info named no
    storage root, or `df` of it printed nothing): never passed over as if there were enough."""
    root = state.info.storage_root
    where = f"under {root}" if root else "under the runtime's storage root (its info named none)"
    look = root or "/var/lib/docker"
    return Check(
        "free space for the pull",
        f"{format_bytes(need, binary=False)} free {where}",
        "unknown: `df` of it gave nothing",
        "warn",
        f"the pull was not checked against free space; check it on the host with `df -h {look}`"
        " (docker: `docker info --format '{{.DockerRootDir}}'` names the root) and free space"
        " before a pull that could fill the disk",
    )


def host_platform(facts: Facts) -> tuple[str | None, str | None]:
    """(lscpu's machine name, its OCI architecture): ("aarch64", "arm64"); None when unknown."""
    machine = facts.cpu.architecture if facts.cpu else None
    return machine, oci_arch(machine)


def wrong_platform(s: Settings, has: tuple[str, ...], machine: str, want: str) -> str:
    """One sentence: the image (at the mirror, when pulled through one) has no build for this
    host's platform, what it has, and where to get one."""
    where = f"the image at {s.mirror} ({s.pull_ref})" if s.mirror else s.image
    listed = f" (it has {', '.join(has)})" if has else ""
    if s.mirror:
        multi = " (its -py3 tags are multi-arch)" if s.ref.registry == "nvcr.io" else ""
        fix = f"pull from {s.ref.registry or 'Docker Hub'}{multi} or have the mirror copy all platforms"
    else:
        fix = f"use an image or tag with a {want} build"
    return f"{where} has no {want} build{listed}; this host is {machine}: {fix}"


def platform_mismatch(facts: Facts, platform: str | None) -> tuple[str, str] | None:
    """(machine, linux/ARCH) when an image's `os/arch` is not this host's; None when it is, or
    either is unknown."""
    machine, arch = host_platform(facts)
    if not platform or not arch or not machine or platform.rpartition("/")[2] == arch:
        return None
    return machine, f"linux/{arch}"


def pull_plan(
    state: ContainerState,
    s: Settings,
    checks: list[Check],
    manifest: Manifest | None,
    machine: str | None = None,
) -> Plan:
    """The plan for a pull: refused when the image has no build for this host's platform (a
    pull would fail, or bring an image that cannot run); else the space it needs (the
    manifest's compressed size, else the estimate, times the unpack factor) against the free
    space under the storage root."""
    if manifest is not None and manifest.missing:
        where = machine or "another platform"
        return Plan(False, wrong_platform(s, manifest.platforms, where, manifest.missing), failed=True)
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
    if state.free_bytes is None:
        checks.append(unknown_space_check(state, need))
    via = f" via mirror {s.mirror}" if s.mirror else ""
    why = "digest differs, " if state.image_id is not None else ""
    free = (
        f"{format_bytes(state.free_bytes, binary=False)} free"
        if state.free_bytes is not None
        else "free space unknown (not checked)"
    )
    return Plan(
        True,
        f"pull {s.image}{via} ({why}{free} under {root},"
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


def plan_from(state: ContainerState, s: Settings, facts: Facts, manifest: Manifest | None = None) -> Plan:
    """Pure: decide from the probe (and the registry's manifest, when fetched) what to do."""
    osr = facts.os_release
    who = state.user or "$USER"
    usermod = f"sudo usermod -aG docker {who} (then log in again)"
    if state.cli is None:
        return no_runtime_plan(state, osr, who, usermod)
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
        return no_toolkit_plan(state, osr, engine, version)
    if image_ready(state, s):
        wrong = platform_mismatch(facts, state.image_platform)
        if wrong is not None:
            name = state.image_name or s.ref.canonical
            return Plan(
                False,
                f"{name} is present but is a {state.image_platform} image; this host is {wrong[0]}"
                f" ({wrong[1]}): remove it ({state.cli} rmi {name}) and use an image with a {wrong[1]} build",
                failed=True,
            )
        return present_plan(state, s, facts, checks, engine, version)
    return pull_plan(state, s, checks, manifest, host_platform(facts)[0])
