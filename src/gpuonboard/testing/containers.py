"""Containers on test hosts: podman as the host's `docker`, a real local registry, a tiny image.

No Docker engine runs here. Debian's `podman` answers as a host's `docker` through a wrapper
first on that host's PATH, with the settings this machine needs (`--runtime runc
--cgroup-manager cgroupfs`, `--network host`, a containers.conf with `default_ulimits = []`,
isolated storage); Debian's `docker-registry` serves images on 127.0.0.1; an image is a busybox
rootfs imported with `podman import` and pushed there. These settings belong to test hosts and
the simulator, never to product behaviour on real servers (which use Docker).

Used by the integration tests (tests/integration/test_container.py) and by `sim.up`, whose
simulated server gets such a `docker` plus a stand-in for the NVIDIA container toolkit (see
`give_sim_docker`): the container step's pull and smoke run really run, in real containers.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

from gpuonboard.testing.hosts import process_alive
from gpuonboard.testing.toolbox import add_executable

REGISTRY_BIN = "/usr/bin/docker-registry"
START_TIMEOUT_S = 10.0
# what the simulator's containers need on this machine: command -> Debian package
SIM_TOOLS = {
    "podman": "podman",
    "runc": "runc",
    "docker-registry": "docker-registry",
    "busybox": "busybox-static",
}
# busybox applets linked in the image (a shell and what its scripts use)
APPLETS = ("sh", "true", "echo", "cat", "grep", "sed", "printf", "ls", "env")


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def port_free(port: int) -> bool:
    """Whether 127.0.0.1:port can be bound now (as a server binds it: a port a stopped one left
    in TIME_WAIT is free)."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


@dataclass
class Registry:
    """A real `docker-registry serve DIR/config.yml` on 127.0.0.1:port, in its own session (it
    may outlive the process that started it: sim.up's does), its pid in DIR/registry.pid;
    stopped by that pid, only when that process is this registry (see `running_pid`)."""

    dir: Path
    port: int
    proc: subprocess.Popen[bytes] | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.dir / "registry.log"

    @property
    def config_path(self) -> Path:
        return self.dir / "config.yml"

    @property
    def pid_path(self) -> Path:
        return self.dir / "registry.pid"

    def write_config(self, htpasswd: Path | None = None) -> None:
        """config.yml: storage under DIR/data, listening on the port; htpasswd auth if given."""
        config: dict[str, object] = {
            "version": 0.1,
            "log": {"level": "info"},
            "storage": {"filesystem": {"rootdirectory": str(self.dir / "data")}},
            "http": {"addr": self.address},
        }
        if htpasswd is not None:
            config["auth"] = {"htpasswd": {"realm": "test", "path": str(htpasswd)}}
        self.config_path.write_text(yaml.safe_dump(config))

    def running_pid(self) -> int | None:
        """The pid of this registry while it runs: the pid file's process, when its command line
        is `docker-registry serve` of exactly this config."""
        try:
            pid = int(self.pid_path.read_text().split()[0])
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().rstrip(b"\0").split(b"\0")
        except (OSError, ValueError, IndexError):
            return None
        ours = argv[:1] == [REGISTRY_BIN.encode()] and os.fsencode(self.config_path) in argv
        return pid if ours and process_alive(pid) else None

    def start(self) -> None:
        """Start it unless it runs; wait until it accepts connections."""
        if self.running_pid() is not None:
            return
        with self.log_path.open("ab") as log, open(os.devnull, "rb") as null:
            self.proc = subprocess.Popen(
                [REGISTRY_BIN, "serve", str(self.config_path)],
                stdin=null,
                stdout=log,
                stderr=log,
                start_new_session=True,
            )
        self.pid_path.write_text(f"{self.proc.pid}\n")
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline and self.proc.poll() is None:
            with contextlib.suppress(OSError):
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"registry did not start: {self.log_path.read_text(errors='replace')[-2000:]}")

    def stop(self) -> None:
        """Stop it by its pid (only this registry's process)."""
        pid = self.running_pid()
        self.pid_path.unlink(missing_ok=True)
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
            if self.proc is not None and self.proc.pid == pid:
                self.proc.wait(timeout=10)
            deadline = time.monotonic() + 10
            while process_alive(pid) and time.monotonic() < deadline:
                time.sleep(0.05)
        self.proc = None

    def blob_requests(self) -> int:
        """How many blob requests the registry has logged (a pull fetches blobs)."""
        return sum("/blobs/" in line for line in self.log_path.read_text(errors="replace").splitlines())


@dataclass
class Podman:
    """An isolated podman (own storage, registries.conf, auth file) as argv + env."""

    root: Path
    argv: list[str]
    env: dict[str, str]


def runroot_for(root: Path) -> Path:
    """A short runroot for `root`'s storage: podman refuses one longer than 50 characters."""
    return Path("/tmp") / f"gpo-rr-{hashlib.sha1(str(root).encode()).hexdigest()[:12]}"


def podman_env(root: Path, registry_address: str, runroot: Path | None = None) -> Podman:
    """podman with its storage under root, its registries.conf marking the registry insecure
    (plain http on loopback) and containers.conf without default ulimits (this machine's
    limits refuse podman's defaults)."""
    root.mkdir(parents=True, exist_ok=True)
    runroot = runroot or runroot_for(root)
    (root / "containers.conf").write_text("[containers]\ndefault_ulimits = []\n")
    (root / "registries.conf").write_text(f'[[registry]]\nlocation = "{registry_address}"\ninsecure = true\n')
    # podman fails every command when REGISTRY_AUTH_FILE names a missing file
    if not (root / "auth.json").exists():
        (root / "auth.json").write_text("{}\n")
    env = {
        "CONTAINERS_CONF": str(root / "containers.conf"),
        "CONTAINERS_REGISTRIES_CONF": str(root / "registries.conf"),
        "REGISTRY_AUTH_FILE": str(root / "auth.json"),
    }
    argv = ["podman", "--root", str(root / "storage"), "--runroot", str(runroot)]
    argv += ["--runtime", "runc", "--cgroup-manager", "cgroupfs", "--storage-driver", "vfs"]
    return Podman(root, argv, {**os.environ, **env})


def run_podman(pm: Podman, args: Sequence[str], stdin: bytes = b"") -> None:
    """Run podman; raise with its error's tail when it fails."""
    r = subprocess.run([*pm.argv, *args], input=stdin, env=pm.env, capture_output=True, timeout=120)
    if r.returncode != 0:
        raise RuntimeError(f"podman {args[0]}: {r.stderr.decode(errors='replace')[-2000:]}")


def busybox_tar(files: Mapping[str, str] = {}) -> bytes:  # noqa: B006 (read only)
    """A rootfs tarball: busybox with a few applets, plus `files` (path in the image -> text,
    made executable)."""
    import io
    import tarfile

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        tar.add(shutil.which("busybox") or "/bin/busybox", "bin/busybox")
        for name in APPLETS:
            link = tarfile.TarInfo(f"bin/{name}")
            link.type, link.linkname = tarfile.SYMTYPE, "busybox"
            tar.addfile(link)
        for path, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(path.lstrip("/"))
            info.size, info.mode = len(data), 0o755
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def push_image(pm: Podman, refs: Sequence[str], files: Mapping[str, str] = {}) -> None:  # noqa: B006
    """Import the busybox rootfs (with `files`) as refs[0], tag it with the other refs, push each."""
    run_podman(pm, ["import", "-", refs[0]], busybox_tar(files))
    for ref in refs[1:]:
        run_podman(pm, ["tag", refs[0], ref])
    for ref in refs:
        run_podman(pm, ["push", ref])


def wrapper_exports(pm: Podman) -> str:
    """`export ...` of podman's settings for a wrapper script (REGISTRY_AUTH_FILE only as a
    default: the container step's login sets its own temporary one)."""
    return " ".join(
        f'{k}="${{{k}:-{v}}}"' if k == "REGISTRY_AUTH_FILE" else f"{k}={v}"
        for k, v in pm.env.items()
        if k not in os.environ or os.environ[k] != v
    )


def missing_tools(path: str | None = None) -> list[str]:
    """The Debian packages the simulator's containers need that this machine lacks (commands
    looked up on `path`, default PATH)."""
    return sorted({pkg for cmd, pkg in SIM_TOOLS.items() if shutil.which(cmd, path=path) is None})


def cleanup(pm: Podman) -> None:
    """Remove podman's runroot (a small dir in /tmp); the storage stays with its root."""
    shutil.rmtree(pm.argv[pm.argv.index("--runroot") + 1], ignore_errors=True)


def info_json(pm: Podman, extra_runtimes: Mapping[str, str], note: str) -> str:
    """`docker info --format '{{json .}}'` as a Docker engine would answer it, from podman's own
    info: its version (with `note`, e.g. what is simulated), storage, and runtimes (runc plus
    `extra_runtimes`: name -> path)."""
    r = subprocess.run([*pm.argv, "info", "--format", "json"], env=pm.env, capture_output=True, timeout=60)
    data = json.loads(r.stdout) if r.returncode == 0 else {}
    version = (data.get("version") or {}).get("Version") or "?"
    store = data.get("store") or {}
    host = data.get("host") or {}
    runtimes = {"runc": {"path": "runc"}, **{k: {"path": v} for k, v in extra_runtimes.items()}}
    return json.dumps(
        {
            "ServerVersion": f"{version} ({note})",
            "DockerRootDir": store.get("graphRoot") or str(pm.root / "storage"),
            "Driver": store.get("graphDriverName") or "vfs",
            "Runtimes": runtimes,
            "DefaultRuntime": "runc",
            "CgroupVersion": str(host.get("cgroupVersion", "")).lstrip("v") or None,
            "ContainersRunning": 0,
        }
    )


def write_docker(bin_dir: Path, pm: Podman, info_file: Path, gpu_mounts: Sequence[str]) -> Path:
    """A host's `docker`: podman with `pm`'s settings, `docker info` answered from info_file;
    `run --gpus X` drops the flag and adds `gpu_mounts` (`-v` specs) instead."""
    g = " ".join(pm.argv[1:])
    mounts = " ".join(f"-v {m}" for m in gpu_mounts)
    return add_executable(
        bin_dir,
        "docker",
        "#!/bin/sh\n"
        "# `docker` of a test host: podman (no Docker engine here), see gpuonboard.testing.containers\n"
        f"export {wrapper_exports(pm)}\n"
        # podman fails every command when REGISTRY_AUTH_FILE names a missing file
        '[ -e "$REGISTRY_AUTH_FILE" ] || echo "{}" > "$REGISTRY_AUTH_FILE"\n'
        'case "$1" in\n'
        f"  info) cat {info_file} ;;\n"
        "  run) shift; gpus=; skip=\n"
        "    for a do shift\n"
        '      if [ -n "$skip" ]; then skip=; continue; fi\n'
        "      case $a in --gpus) gpus=1; skip=1; continue ;; --gpus=*) gpus=1; continue ;; esac\n"
        '      set -- "$@" "$a"\n'
        "    done\n"
        f'    [ -n "$gpus" ] && set -- {mounts} "$@"\n'
        f'    exec podman {g} run --network host "$@" ;;\n'
        f'  *) exec podman {g} "$@" ;;\n'
        "esac\n",
    )
