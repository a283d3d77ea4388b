"""Whether the rented box is a slice of a bigger machine: a container (Docker, Podman, a
Kubernetes pod; RunPod, Vast.ai, AutoDL) or a Slurm job, which sees only some of the host's GPUs
(NVML lists only the GPUs whose device nodes the slice may open) but may read the host's whole
kernel log. Told from facts the probe already gathers: df's `/` is an overlay (a container's
root) unless PID 1 is systemd with nothing beside it that says container (the container type
systemd saw, /run/systemd/container; Docker's /.dockerenv, Podman's /run/.containerenv,
Kubernetes' service account, a container's cgroup in /proc/1/cgroup): a diskless or live-booted
whole machine (Warewulf, xCAT, dracut's LiveOS_rootfs, a custom initrd) has an overlay root too,
with systemd as PID 1; or the cgroup the login runs in is a Slurm job's (the limit files the
cgroup probe read sit under `/slurm/uid_N/job_N/` (cgroup v1) or `.../slurmstepd.scope/job_N/`
(v2)).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from gpuonboard.facts.container import INIT_SYSTEMS

if TYPE_CHECKING:
    from gpuonboard.connection.gather import Facts

# a Slurm job's cgroup, as /proc/self/cgroup names it: v1 `/slurm/uid_2101171/job_280678/...`,
# v2 `/system.slice/slurmstepd.scope/job_1392969/step_0/...` (a node's own prefix allowed:
# `node_slurmstepd.scope`)
_SLURM_JOB = re.compile(r"/(?:slurm/uid_\d+|[\w.-]*slurmstepd\.scope)/job_(\d+)(?:/|$)")


# the files the cgroup probe reads first (connection/gather.py), as `FILE<TAB>VALUE` lines
_SIGNS = (
    "/proc/1/comm",
    "/run/systemd/container",
    "/.dockerenv",
    "/run/.containerenv",
    "/var/run/secrets/kubernetes.io",
)
_MARKS = _SIGNS[2:]  # files only a container has (the engines', Kubernetes' service account)
# The one PID 1 taken for a whole machine's: systemd, which, run in a container, says so
# (/run/systemd/container). The other inits run as a container's PID 1 with no mark: s6-svscan
# (s6-overlay, every linuxserver.io image), runit, OpenRC, busybox's `init`, and `init` is what
# `docker run --init` starts (docker-init mounted as /dev/init); so only systemd says "machine".
MACHINE_INIT = "systemd"
# a container's cgroup in /proc/1/cgroup: v1 `/docker/ID`, `/kubepods/burstable/podUID/ID`,
# `kubepods-besteffort-podUID.slice:cri-containerd:ID`, `/crio/ID`, `/lxc/NAME`; v2 without a
# cgroup namespace `/system.slice/docker-ID.scope`, `/machine.slice/libpod-ID.scope`. (With one,
# the default on cgroup v2, a container reads just `0::/`: no sign either way.)
_CONTAINER_CGROUP = re.compile(r"(?:^|[/:._-])(?:kubepods|docker|containerd|libpod|lxc|crio)(?:$|[/:._-])")


def container_signs(facts: Facts) -> dict[str, str]:
    """What the cgroup probe (or a saved `grep .` of the files) read of _SIGNS: file -> value;
    and, under "/proc/1/cgroup", the first of PID 1's cgroups that is a container's."""
    out = facts.raw.get("cgroup_limits")
    signs: dict[str, str] = {}
    for line in out.stdout.splitlines() if out is not None else ():
        path, tab, value = line.partition("\t")
        if tab and path in _SIGNS and value.strip():
            signs.setdefault(path, value.strip())
        elif tab and path == "/proc/1/cgroup" and _CONTAINER_CGROUP.search(value.split(":", 2)[-1]):
            signs.setdefault(path, value.split(":", 2)[-1].strip())
    return signs


def container_said(facts: Facts) -> str:
    """Why the login is inside a container ("/ is an overlay", "/ is an overlay and PID 1 is
    'bash', no init system"); "" where `/` is no overlay, or where it is one but PID 1 is
    systemd and nothing says container (no engine's mark, no Kubernetes service account, no
    container's cgroup in /proc/1/cgroup): a whole machine booted diskless or from a live image.
    A mark alone is no container: a Docker image booted as a microVM (Firecracker) keeps its
    /.dockerenv, with its own kernel and PID 1 its agent."""
    root = next((m for m in facts.mounts if m.mountpoint == "/"), None)
    if root is None or "overlay" not in (root.fstype or "", root.device):
        return ""
    signs = container_signs(facts)
    pid1 = signs.get("/proc/1/comm")
    if pid1 not in INIT_SYSTEMS:
        return "/ is an overlay" + (f" and PID 1 is {pid1!r}, no init system" if pid1 else "")
    if pid1 != MACHINE_INIT:
        return f"/ is an overlay and PID 1 is {pid1!r}, which containers run too (not systemd)"
    if kind := signs.get("/run/systemd/container"):
        return f"/ is an overlay and systemd runs in a container ({kind})"
    if mark := next((m for m in _MARKS if m in signs), None):
        return f"/ is an overlay and {mark} is there"
    if cgroup := signs.get("/proc/1/cgroup"):
        return f"/ is an overlay and PID 1's cgroup is a container's ({cgroup[:80]})"
    return ""


def container_root(facts: Facts) -> bool:
    """The login is inside a container (container_said)."""
    return bool(container_said(facts))


def slurm_job(facts: Facts) -> str | None:
    """The Slurm job whose cgroup the cgroup probe read limits in, or None."""
    out = facts.raw.get("cgroup_limits")
    if out is None or out.exit_code != 0:
        return None
    for line in out.stdout.splitlines():
        m = _SLURM_JOB.search(line.partition("\t")[0])
        if m:
            return m.group(1)
    return None


def slice_said(facts: Facts) -> str:
    """Why the box is a slice of a bigger machine ("/ is an overlay: a container", "the login
    runs in Slurm job 42's cgroup"); "" where nothing says so (bare metal, a VM, not known)."""
    if said := container_said(facts):
        return f"{said}: a container"
    job = slurm_job(facts)
    return f"the login runs in Slurm job {job}'s cgroup" if job is not None else ""


def whole_listing_slice(facts: Facts) -> str:
    """Why the box is a slice of a bigger machine (slice_said), where its GPU listing is whole
    (every GPU nvidia-smi says the box has is listed); "" otherwise."""
    report = facts.gpu
    if report is None or not report.complete or not report.gpus:
        return ""
    if report.attached_gpus is not None and report.attached_gpus > len(report.gpus):
        return ""
    return slice_said(facts)
