"""The simulated server's container runtime and its NVIDIA container toolkit stand-in (sim.up).

With podman, runc, docker-registry and busybox on this machine, a simulated server gets:
- a `docker` first on its PATH: podman (see containers.write_docker); its `docker info` names
  the `nvidia` runtime, as a Docker engine with the NVIDIA container toolkit does, and its
  version says that this runtime is simulated;
- for `docker run --gpus all`, the toolkit stand-in: a replayed `nvidia-smi -L` of the server's
  profile mounted into the container (the real toolkit mounts the host's nvidia-smi);
- a local registry (one per sim base) serving the inventory's image under the same repository
  path, as a mirror (the sim inventory's `registry_mirror`): the step pulls it through the
  mirror and tags it back to its NGC name. The image is busybox; its `python` is a stand-in that
  answers the step's GPU check saying that no torch ran.
So the container step's pull and smoke runs really run, in real containers; only the GPUs
and torch are simulated, and its result says so.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from collections.abc import Iterable
from pathlib import Path

from gpuonboard.testing.containers import (
    Podman,
    Registry,
    cleanup,
    free_port,
    info_json,
    missing_tools,
    podman_env,
    port_free,
    push_image,
    runroot_for,
    write_docker,
)

INFO_FILE = "docker-info.json"  # a host dir holding it has the simulated runtime
STANDIN_DIR = "nvidia-standin"
PODMAN_DIR = "podman"
REGISTRY_DIR = "registry"
RUNTIME_NOTE = "podman as docker; NVIDIA runtime simulated by gpuonboard sim"


def unavailable(path: str | None = None) -> str | None:
    """Why this machine cannot give a simulated server a container runtime (the packages it
    lacks and how to install them), or None when it can."""
    missing = missing_tools(path)
    if not missing:
        return None
    return f"the simulator needs {', '.join(missing)} for it (apt-get install {' '.join(missing)})"


def python_standin(marker: str) -> str:
    """The image's `python`: answers the container step's GPU check (`python -c CHECK`, which
    expects n GPUs) from the GPUs the toolkit stand-in's nvidia-smi lists, saying that no torch
    ran; anything else is refused (this image has no Python)."""
    return (
        "#!/bin/sh\n"
        "# gpuonboard simulator: this image is busybox, a stand-in for NGC PyTorch (no Python here)\n"
        "want=$(printf '%s\\n' \"$2\" | sed -n 's/^if n != \\([0-9]*\\):.*/\\1/p')\n"
        'if [ "$1" != -c ] || [ -z "$want" ]; then\n'
        '  echo "python stand-in (gpuonboard simulator): no Python in this image" >&2; exit 2\nfi\n'
        "n=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')\n"
        'if [ "$n" != "$want" ]; then\n'
        '  echo "simulated: the container lists $n GPUs, nvidia-smi on the host $want" >&2; exit 1\nfi\n'
        f'echo "simulated: the $n GPUs are replayed, no torch in the stand-in image (no matmul or NCCL'
        f' ran) {marker}"\n'
    )


def nvidia_smi_standin(gpu_list: str) -> str:
    """The toolkit stand-in's nvidia-smi inside a container: replays the server's `-L` list."""
    body = gpu_list if gpu_list.endswith("\n") or not gpu_list else gpu_list + "\n"
    return (
        "#!/bin/sh\n"
        "# gpuonboard simulator: the NVIDIA container toolkit's nvidia-smi, simulated (a replay)\n"
        "if [ \"$*\" = -L ]; then cat <<'GPUS'\n"
        f"{body}GPUS\nexit 0\nfi\n"
        'echo "nvidia-smi stand-in (gpuonboard simulator): only -L is replayed in a container" >&2\n'
        "exit 2\n"
    )


def gpu_list(host_dir: Path) -> str:
    """The server's `nvidia-smi -L`: its profile's replay, or lines built from its replayed
    `-q -x` (name and UUID of each GPU); empty without GPUs."""
    from gpuonboard.facts.nvidia_smi import parse_xml

    smi = host_dir / "bin" / "nvidia-smi"
    if not smi.is_file():
        return ""

    def run(*args: str) -> str:
        r = subprocess.run([str(smi), *args], capture_output=True, text=True, timeout=30)
        return r.stdout if r.returncode == 0 else ""

    listed = [line for line in run("-L").splitlines() if line.startswith("GPU ")]
    if listed:
        return "\n".join(listed)
    gpus = parse_xml(run("-q", "-x")).gpus
    return "\n".join(f"GPU {i}: {g.name} (UUID: {g.uuid or '?'})" for i, g in enumerate(gpus))


def registry(base: Path) -> Registry:
    """The sim base's registry, started unless it runs (on its earlier port when free)."""
    d = base / REGISTRY_DIR
    d.mkdir(parents=True, exist_ok=True)
    try:
        port = int((d / "port").read_text())
    except (OSError, ValueError):
        port = 0
    reg = Registry(d, port)
    if port and reg.running_pid() is not None:
        return reg
    if not port or not port_free(port):
        reg = Registry(d, free_port())
    reg.write_config()
    (d / "port").write_text(f"{reg.port}\n")
    reg.start()
    return reg


def push_images(reg: Registry, images: Iterable[str], marker: str) -> None:
    """Push the stand-in image under each image's repository path on the registry, unless it is
    there (the same stand-in: a record per ref of its content's hash)."""
    from gpuonboard.steps.base import StepArgsError
    from gpuonboard.steps.container import parse_ref

    standin = python_standin(marker)
    digest = hashlib.sha256(standin.encode()).hexdigest()[:16]
    record = reg.dir / "pushed"
    done = set(record.read_text().split("\n")) if record.exists() else set()
    repos = reg.dir / "data" / "docker" / "registry" / "v2" / "repositories"
    wanted = []
    for image in images:
        try:
            ref = parse_ref(image)
        except StepArgsError:
            continue  # (the container step itself says what is wrong with it)
        tag_dir = repos / ref.repository / "_manifests" / "tags" / (ref.tag or "latest")
        if ref.digest is None and not (f"{ref.repository}:{ref.tag} {digest}" in done and tag_dir.is_dir()):
            wanted.append(ref)
    if not wanted:
        return
    pm = podman_env(reg.dir / "builder", reg.address)
    try:
        files = {"/usr/bin/python": standin, "/usr/bin/python3": standin}
        push_image(pm, [r.on(reg.address) for r in wanted], files)
    finally:
        cleanup(pm)
    done |= {f"{r.repository}:{r.tag} {digest}" for r in wanted}
    record.write_text("\n".join(sorted(x for x in done if x)) + "\n")


def give_host(host_dir: Path, reg: Registry) -> Podman:
    """The server's `docker` (podman) with the toolkit stand-in, pulling from `reg`."""
    pm = podman_env(host_dir / PODMAN_DIR, reg.address)
    standin = host_dir / STANDIN_DIR
    standin.mkdir(exist_ok=True)
    smi = standin / "nvidia-smi"
    smi.write_text(nvidia_smi_standin(gpu_list(host_dir)))
    smi.chmod(0o755)
    info = host_dir / INFO_FILE
    info.write_text(info_json(pm, {"nvidia": str(smi)}, RUNTIME_NOTE))
    write_docker(host_dir / "bin", pm, info, [f"{smi}:/usr/local/bin/nvidia-smi:ro"])
    return pm


def take_from_host(host_dir: Path) -> None:
    """The server without a container runtime: its `docker` wrapper and marker removed, podman's
    runroot (in /tmp) too; its storage stays with its dir."""
    wrapper = host_dir / "bin" / "docker"
    if wrapper.is_file() and "gpuonboard.testing.containers" in wrapper.read_text(errors="replace"):
        wrapper.unlink()
    (host_dir / INFO_FILE).unlink(missing_ok=True)
    release(host_dir)


def release(host_dir: Path) -> None:
    """Remove the server's podman runroot (in /tmp; sim.down): its storage stays with its dir."""
    shutil.rmtree(runroot_for(host_dir / PODMAN_DIR), ignore_errors=True)


def has_runtime(host_dir: Path) -> bool:
    """Whether sim.up gave this server the simulated runtime."""
    return (host_dir / INFO_FILE).is_file()


def stop_registry(base: Path) -> bool:
    """Stop the sim base's registry (by its pid, only that process); True if it ran."""
    d = base / REGISTRY_DIR
    try:
        reg = Registry(d, int((d / "port").read_text()))
    except (OSError, ValueError):
        return False
    ran = reg.running_pid() is not None
    reg.stop()
    return ran


def mirror_url(base: Path) -> str | None:
    """`http://127.0.0.1:PORT/`: the sim base's registry while it runs, else None."""
    d = base / REGISTRY_DIR
    try:
        reg = Registry(d, int((d / "port").read_text()))
    except (OSError, ValueError):
        return None
    return f"http://{reg.address}/" if reg.running_pid() is not None else None
