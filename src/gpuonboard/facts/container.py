"""Container runtime facts: `docker info` (text or JSON) and `podman info --format json`.

Pure parsers: which runtime, its version, the storage root (free space is checked there
before a pull), whether the NVIDIA runtime is registered (`nvidia` in docker's runtimes),
and registry mirrors. A format that is not recognised gives an empty result with a warning.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from gpuonboard.once import lazy_re

# PID 1 names (/proc/1/comm) of the init systems that boot a machine and power it off: systemd;
# sysvinit, busybox and upstart ("init"); runit, OpenRC's, dinit, s6 and Guix's shepherd. In a
# container PID 1 is the image's entry command (bash, sh, tini, dumb-init, docker-init, sleep,
# python ...).
INIT_SYSTEMS = frozenset(
    {"systemd", "init", "upstart", "runit", "openrc-init", "dinit", "s6-svscan", "shepherd"}
)


@dataclass(frozen=True)
class RuntimeInfo:
    """What the host's container engine says about itself."""

    engine: str | None = None  # "docker" | "podman"
    server_version: str | None = None
    storage_root: str | None = None
    storage_driver: str | None = None
    runtimes: tuple[str, ...] = ()
    default_runtime: str | None = None
    registry_mirrors: tuple[str, ...] = ()
    cgroup_version: str | None = None
    containers_running: int | None = None
    warnings: tuple[str, ...] = field(default_factory=tuple)

    @property
    def nvidia_runtime(self) -> bool:
        """True when docker has the `nvidia` runtime registered (nvidia-container-toolkit)."""
        return "nvidia" in self.runtimes


def parse_docker_info(text: str) -> RuntimeInfo:
    """`docker info` in its text form, or `docker info --format '{{json .}}'`."""
    stripped = text.strip()
    if stripped.startswith("{"):
        try:
            return _docker_json(json.loads(stripped))
        except (ValueError, TypeError, AttributeError) as exc:
            return RuntimeInfo(warnings=(f"docker info JSON could not be read ({exc})",))
    return _docker_text(text)


# docker info's ` Total Memory: 7.768GiB` (its daemon's machine's MemTotal, as go-units prints it)
_TOTAL_MEMORY = re.compile(r"^[ \t]*Total Memory:[ \t]*(\d+(?:\.\d+)?[KMGT]?i?B)[ \t]*$", re.M)


def docker_total_memory(text: str) -> str | None:
    """The `Total Memory` a `docker info` gives, as printed (`7.768GiB`; the JSON form's
    `MemTotal` in bytes), or None: the memory of the machine the daemon runs on, which may be a
    VM's (Docker Desktop, a Kata or Lima VM), not the box's."""
    if (m := _TOTAL_MEMORY.search(text)) is not None:
        return m.group(1)
    found = re.search(r'"MemTotal"\s*:\s*(\d+)', text)
    return f"{found.group(1)} bytes" if found else None


# docker info's ` CPUs: 2` (its daemon's machine's CPU count, runtime.NumCPU)
_CPUS = re.compile(r"^[ \t]*CPUs:[ \t]*(\d+)[ \t]*$", re.M)


def docker_cpus(text: str) -> str | None:
    """The `CPUs` a `docker info` gives (the JSON form's `NCPU`), or None: the CPUs (threads) of
    the machine the daemon runs on, which may be a VM's, not the box's, and never its cores."""
    found = _CPUS.search(text) or re.search(r'"NCPU"\s*:\s*(\d+)', text)
    return found.group(1) if found else None


def _docker_json(data: dict[str, Any]) -> RuntimeInfo:
    registry = data.get("RegistryConfig") or {}
    return RuntimeInfo(
        engine="docker",
        server_version=data.get("ServerVersion"),
        storage_root=data.get("DockerRootDir"),
        storage_driver=data.get("Driver"),
        runtimes=tuple(sorted((data.get("Runtimes") or {}).keys())),
        default_runtime=data.get("DefaultRuntime"),
        registry_mirrors=tuple(registry.get("Mirrors") or ()),
        cgroup_version=str(data["CgroupVersion"]) if data.get("CgroupVersion") else None,
        containers_running=data.get("ContainersRunning"),
    )


def _docker_text(text: str) -> RuntimeInfo:
    """`docker info`'s text: docker 19.03+ prints the daemon's fields one blank in under a
    `Server:` line; before (18.06: no `Client:`/`Server:` lines), at the margin."""
    fields: dict[str, str] = {}
    mirrors: list[str] = []
    lines = text.splitlines()
    pad = " "  # (a field's indent)
    in_server = False
    if not any(line.startswith("Server:") for line in lines) and any(
        line.startswith("Server Version:") for line in lines
    ):
        pad, in_server = "", True
    in_mirrors = False
    field = re.compile(rf"^{pad}(\S[^:]*):\s*(.*)$")
    for line in lines:
        if pad and line.startswith("Server:"):
            in_server = True
            continue
        if not in_server:
            continue
        m = field.match(line)
        if m:
            in_mirrors = m.group(1) == "Registry Mirrors"
            fields[m.group(1)] = m.group(2).strip()
            continue
        if in_mirrors and line.startswith(pad + " ") and line.strip():
            mirrors.append(line.strip())
        else:
            in_mirrors = False
        running = re.match(rf"^{pad} Running:\s*(\d+)", line)
        if running:
            fields["_running"] = running.group(1)
    if not in_server and (grepped := _runtime_lines(lines)) is not None:
        return grepped
    if not in_server or "Server Version" not in fields:
        return RuntimeInfo(warnings=("docker info has no Server section (is the daemon running?)",))
    return RuntimeInfo(
        engine="docker",
        server_version=fields.get("Server Version"),
        storage_root=fields.get("Docker Root Dir"),
        storage_driver=fields.get("Storage Driver"),
        runtimes=tuple(sorted(fields.get("Runtimes", "").split())),
        default_runtime=fields.get("Default Runtime"),
        registry_mirrors=tuple(mirrors),
        cgroup_version=fields.get("Cgroup Version"),
        containers_running=int(fields["_running"]) if fields.get("_running", "").isdecimal() else None,
    )


_RUNTIME_FIELD = lazy_re(r"^ ?(Runtimes|Default Runtime):[ \t]*(.*)$")


def _runtime_lines(lines: list[str]) -> RuntimeInfo | None:
    """`docker info | grep -i runtime`: its `Runtimes:` and `Default Runtime:` lines read, no
    other field (None where the text holds neither)."""
    fields = {m.group(1): m.group(2).strip() for line in lines if (m := _RUNTIME_FIELD.match(line))}
    if not fields:
        return None
    return RuntimeInfo(
        engine="docker",
        runtimes=tuple(sorted(fields.get("Runtimes", "").split())),
        default_runtime=fields.get("Default Runtime") or None,
        warnings=("docker info narrowed to its runtime lines (a grep): no other field read",),
    )


def parse_podman_info(text: str) -> RuntimeInfo:
    """`podman info --format json` (podman 4.x)."""
    try:
        data = json.loads(text)
        store = data.get("store") or {}
        host = data.get("host") or {}
        version = (data.get("version") or {}).get("Version")
        runtime = (host.get("ociRuntime") or {}).get("name")
        return RuntimeInfo(
            engine="podman",
            server_version=version,
            storage_root=store.get("graphRoot"),
            storage_driver=store.get("graphDriverName"),
            runtimes=(runtime,) if runtime else (),
            default_runtime=runtime,
            registry_mirrors=(),
            cgroup_version=host.get("cgroupVersion"),
            containers_running=(store.get("containerStore") or {}).get("running"),
        )
    except (ValueError, TypeError, AttributeError) as exc:
        return RuntimeInfo(warnings=(f"podman info JSON could not be read ({exc})",))


def parse_cdi_listing(text: str) -> tuple[str, ...]:
    """CDI spec files found under /etc/cdi or /var/run/cdi (one path a line): nvidia ones count."""
    return tuple(
        line.strip() for line in text.splitlines() if line.strip().endswith((".yaml", ".yml", ".json"))
    )
